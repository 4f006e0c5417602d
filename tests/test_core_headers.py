"""The compiled core's generated headers (scripts/gen_core_headers.py): each is what the script
writes from the reference today, so a changed docstring, signature or shared constant of the
reference fails here until the headers are regenerated; and the compiled class documents
itself with them: every method's ``inspect.signature`` is the reference's, parameter by
parameter, and every docstring is the reference's (plus the script's addendum, if any).
"""

from __future__ import annotations

import codecs
import importlib.util
import inspect
import math
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ecs_spatial import _growth, _snapshots, _tree_state, quadtree
from ecs_spatial.quadtree import QuadTree as PyQuadTree

try:
    from ecs_spatial import _cquadtree
except ImportError:  # a pure-Python build: only the headers' text is checked
    _cquadtree = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
native = pytest.mark.skipif(_cquadtree is None, reason="the C core is not built")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_core_headers", ROOT / "scripts" / "gen_core_headers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
headers: Callable[[], dict[Path, str]] = GEN.headers
ADDENDA: dict[str, str] = GEN.ADDENDA
DUNDERS: tuple[str, ...] = GEN.DUNDERS


def test_the_committed_headers_are_what_the_script_writes() -> None:
    written = headers()
    assert sorted(path.relative_to(ROOT).as_posix() for path in written) == [
        "ecs_spatial/_cquadtree_src/constants.h", "ecs_spatial/_cquadtree_src/docstrings.h"]
    for path, text in written.items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is stale: run scripts/gen_core_headers.py")


def test_a_changed_docstring_or_constant_changes_the_headers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: the headers follow the reference, not a copy of it."""
    before = headers()
    monkeypatch.setattr(PyQuadTree.query, "__doc__", "Changed.")
    monkeypatch.setattr(_snapshots, "SNAP_MIN", _snapshots.SNAP_MIN + 1)
    after = headers()
    for path in before:
        assert after[path] != before[path], path.name


def _c_literal_value(literal: str) -> str:
    """What C reads from ``c_string``'s output: its pieces joined, the escapes decoded."""
    assert "??" not in literal  # a trigraph under -std=c11
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', literal)
    raw = "".join(pieces).replace("\\?", "?")
    value: bytes = codecs.escape_decode(raw.encode("ascii"))[0]
    return value.decode("utf-8")


@pytest.mark.parametrize("text", [
    "plain", "two\nlines\n", 'a "quote" and a \\ backslash', "what??) no trigraph ???",
    "non-ASCII: \u00d7 \u2264 \U0001f600, and digits after one: \u00d7123", "",
])
def test_c_string_is_read_back_as_the_text(text: str) -> None:
    c_string: Callable[[str], str] = GEN.c_string
    literal = c_string(text)
    assert literal.isascii()
    assert _c_literal_value(literal) == text


def test_the_constants_are_the_references() -> None:
    text = (ROOT / "ecs_spatial" / "_cquadtree_src" / "constants.h").read_text(encoding="utf-8")
    defined = dict(re.findall(r"^#define (\w+) (\d+)$", text, re.M))
    assert defined == {
        "MAX_GROWTH": str(_growth.MAX_GROWTH),
        "SNAP_MIN": str(_snapshots.SNAP_MIN),
        "DEFAULT_THRESHOLD": str(quadtree.DEFAULT_THRESHOLD),
        "DEFAULT_MAX_DEPTH": str(quadtree.DEFAULT_MAX_DEPTH),
        "WRAP_SALT": str(_tree_state._WRAP_SALT),
    }
    init = inspect.signature(PyQuadTree.__init__).parameters
    assert init["threshold"].default == quadtree.DEFAULT_THRESHOLD
    assert init["max_depth"].default == quadtree.DEFAULT_MAX_DEPTH
    # ... and the C states none of them again by hand
    units = sorted((ROOT / "ecs_spatial" / "_cquadtree_src").glob("*.[ch]"))
    source = "\n".join(path.read_text(encoding="utf-8") for path in units
                       if path.name != "constants.h")
    for name in defined:
        assert not re.search(rf"^\s*#\s*define\s+{name}\b", source, re.M), name


def test_the_state_keys_are_the_references() -> None:
    """The pickled state's keys, which the core writes, are the reference's, stated once."""
    text = (ROOT / "ecs_spatial" / "_cquadtree_src" / "constants.h").read_text(encoding="utf-8")
    defined = dict(re.findall(r'^#define ((?:STATE|OWN)_KEY_\w+) "(\w+)"$', text, re.M))
    assert sorted(defined.values()) == sorted(
        (*_tree_state._STATE_KEYS, *_tree_state._OWN_KEYS, _tree_state._WRAP_KEY)
    )
    source = (ROOT / "ecs_spatial" / "_cquadtree_src" / "tree_state.c").read_text(encoding="utf-8")
    for key in defined.values():
        assert f'"{key}"' not in source, key


def _bare(signature: inspect.Signature, self_positional_only: bool) -> inspect.Signature:
    """``signature`` as a text signature can state it: no annotations; ``self``, if first,
    positional-only where asked (a method descriptor takes it only by position)."""
    params = []
    for i, param in enumerate(signature.parameters.values()):
        param = param.replace(annotation=param.empty)
        if i == 0 and param.name == "self" and self_positional_only:
            param = param.replace(kind=param.POSITIONAL_ONLY)
        params.append(param)
    return signature.replace(parameters=params, return_annotation=inspect.Signature.empty)


def _documented() -> list[str]:
    """The compiled class's public methods and properties, and the dunders of its table."""
    assert _cquadtree is not None
    public = [name for name in dir(_cquadtree.QuadTree) if not name.startswith("_")]
    return public + list(DUNDERS)


def _reference_doc(name: str) -> str:
    value: Any = getattr(PyQuadTree, name) if name else PyQuadTree
    return inspect.cleandoc(value.__doc__)


@native
def test_every_method_has_the_reference_signature() -> None:
    assert _cquadtree is not None
    tree, reference = _cquadtree.QuadTree(), PyQuadTree()
    for name in _documented():
        compiled = getattr(_cquadtree.QuadTree, name)
        if isinstance(getattr(PyQuadTree, name), property):
            assert type(compiled).__name__ == "getset_descriptor", name
            continue
        expected = _bare(inspect.signature(getattr(PyQuadTree, name)), True)
        assert inspect.signature(compiled) == expected, name
        assert list(inspect.signature(compiled).parameters) == list(expected.parameters), name
        bound = _bare(inspect.signature(getattr(reference, name)), False)
        assert inspect.signature(getattr(tree, name)) == bound, name
    # the class: __init__'s, which the reference's catch-all __new__ hides from inspect
    init = _bare(inspect.signature(PyQuadTree.__init__), False)
    assert inspect.signature(_cquadtree.QuadTree) == init.replace(
        parameters=list(init.parameters.values())[1:])


@native
def test_the_default_that_is_no_literal_is_still_the_references() -> None:
    assert _cquadtree is not None
    default = inspect.signature(_cquadtree.QuadTree.nearest).parameters["max_distance"].default
    assert isinstance(default, float) and math.isinf(default) and default > 0


@native
def test_every_docstring_is_the_references() -> None:
    assert _cquadtree is not None
    for name in ["", *_documented()]:
        compiled: Any = getattr(_cquadtree.QuadTree, name) if name else _cquadtree.QuadTree
        doc = compiled.__doc__
        assert inspect.getdoc(compiled) == doc, name or "the class"
        reference = _reference_doc(name)
        assert doc.startswith(reference), name or "the class"
        if name not in ADDENDA:
            assert doc == reference, name or "the class"
            continue
        # then the addendum as its own paragraph, filled to the reference's width
        assert doc[len(reference):len(reference) + 2] == "\n\n", name or "the class"
        addendum = doc[len(reference) + 2:]
        assert " ".join(addendum.split()) == ADDENDA[name], name or "the class"
        assert max(len(line) for line in addendum.splitlines()) <= 88, name or "the class"


@native
def test_nothing_in_the_class_goes_undocumented() -> None:
    """Every method and property of the compiled class's own, beyond CPython's slot wrappers
    (``__len__``, ``__iter__``...: CPython documents those), is one the script documents."""
    assert _cquadtree is not None
    own = {name for name, value in vars(_cquadtree.QuadTree).items()
           if type(value).__name__ in ("method_descriptor", "getset_descriptor")}
    assert own == set(_documented())
    for name in own:
        value = getattr(_cquadtree.QuadTree, name)
        if type(value).__name__ == "method_descriptor":
            assert value.__text_signature__ is not None, name
