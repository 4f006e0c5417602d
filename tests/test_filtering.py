"""``ecs_spatial.filtering``: the collision filter's rules, held to the definition each
states, and the rule that they are written once in the package (an inlined copy carries a
label naming its original)."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_spatial import filtering
from ecs_spatial.components import CollisionFilter
from ecs_spatial.filtering import (
    DEFAULT_FILTER,
    FilterValues,
    accepted,
    category,
    check_fields,
    filters_accept,
    in_mask,
    is_bits,
    sensed,
)

PACKAGE = Path(filtering.__file__).parent

bits = st.integers(min_value=0, max_value=0b1111)
values = st.tuples(bits, bits, st.integers(min_value=0, max_value=2))
#: A world's filter values: some entities of 0..19 with a filter, the others without.
tables = st.dictionaries(st.integers(0, 19), values, max_size=20)
pairs = st.lists(st.tuples(st.integers(0, 19), st.integers(0, 19)), max_size=40)


def _collide(a: FilterValues, b: FilterValues) -> bool:
    """The rule as the docs state it."""
    return (a[0] & b[1]) != 0 and (b[0] & a[1]) != 0 and not (a[2] != 0 and a[2] == b[2])


@given(tables, pairs)
def test_accepted_keeps_the_pairs_the_rule_lets_collide(
    found_values: dict[int, FilterValues], found: list[tuple[int, int]]
) -> None:
    """``accepted`` is ``filters_accept`` pair by pair, in order, an entity without values
    having the default filter's; with no values at all, ``found`` itself."""
    view = types.MappingProxyType(found_values)
    expected = [
        (a, b) for a, b in found
        if _collide(found_values.get(a, DEFAULT_FILTER), found_values.get(b, DEFAULT_FILTER))
    ]
    assert accepted(found, view) == expected
    assert [p for p in found if filters_accept(found_values.get(p[0]), found_values.get(p[1]))] \
        == expected
    if not found_values:
        assert accepted(found, view) is found


@given(tables, st.lists(st.integers(0, 19), max_size=20), bits)
def test_mask_rules_select_by_category(
    found_values: dict[int, FilterValues], found: list[int], mask: int
) -> None:
    """``in_mask``, ``sensed`` and ``category`` give ``category & mask != 0``, the category
    1 for an entity without a filter."""
    expected = {e for e in found if found_values.get(e, DEFAULT_FILTER)[0] & mask}
    assert sensed(found, found_values, mask) == expected
    selected = in_mask(found_values, mask)
    assert {e for e in found if selected(e)} == expected
    assert all(category(found_values, e) == found_values.get(e, (1, 0, 0))[0] for e in found)


def test_the_default_filter_is_collision_filter_defaults() -> None:
    """An entity without a filter counts as one with ``CollisionFilter()``."""
    default = CollisionFilter()
    assert (default.category, default.mask, default.group) == DEFAULT_FILTER


@pytest.mark.parametrize("value", [True, 1.0, "1", None])
def test_fields_and_masks_are_ints_not_bools(value: object) -> None:
    """``is_bits`` refuses what is not an int, and a bool; ``check_fields`` and ``in_mask``
    raise ``TypeError`` naming the field and the value."""
    assert not is_bits(value) and is_bits(3) and is_bits(-1)
    with pytest.raises(TypeError, match=r"^CollisionFilter\.mask must be an int, got "):
        check_fields(CollisionFilter(), category=1, mask=value)
    with pytest.raises(TypeError, match=r"^mask must be an int, got "):
        in_mask({}, value)


# -- one home ------------------------------------------------------------------------------

LABEL = "inlined copy of filtering."


def _rule_shapes(function: ast.AST) -> list[int]:
    """The lines of ``function`` that apply a filter rule by hand: a bitwise and with a
    ``mask`` (or the ``category`` or ``bits`` read for it), or ``DEFAULT_FILTER``
    read."""
    lines = []
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            names = {
                n.id if isinstance(n, ast.Name) else n.attr
                for n in (node.left, node.right)
                if isinstance(n, (ast.Name, ast.Attribute))
            }
            if names & {"mask", "_mask", "category", "bits"}:
                lines.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "DEFAULT_FILTER":
            lines.append(node.lineno)
    return lines


def test_every_copy_of_a_filter_rule_is_labelled() -> None:
    """Outside ``filtering.py``, a function that applies a filter rule by hand says, in a
    comment, which function of ``filtering`` it copies (and the design page says why)."""
    unlabelled = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name == "filtering.py":
            continue
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            found = _rule_shapes(node)
            body = "\n".join(lines[node.lineno - 1 : node.end_lineno])
            if found and LABEL not in body:
                unlabelled.append(f"{path.name}:{found[0]} in {node.name}()")
    assert unlabelled == []
