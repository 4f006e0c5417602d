"""The collision filter's rules, each written once: which pairs may collide, which entities a
``mask`` selects, and what a filter field may hold.

The rules work on a filter's checked values, the triple ``(category, mask, group)`` that the
SpatialProcessor puts in effect at each ``process()`` (its ``filters`` mapping); an entity
without a ``CollisionFilter`` has :data:`DEFAULT_FILTER`'s values, those of
``CollisionFilter()`` (Box2D's default filter), for every rule and every processor alike:

- **collide**: two entities may collide only if ``a.category & b.mask`` and
  ``b.category & a.mask`` are both non-zero and they do not share a non-zero ``group``
  (the Box2D and pymunk rules): :func:`filters_accept`, :func:`accepted`;
- **mask**: a query's ``mask=``, or a ``Proximity`` mask, selects the entities whose
  category it shares a bit with (``category & mask != 0``): :func:`in_mask`,
  :func:`sensed`;
- **fields**: every field of a filter, and a mask, is an ``int`` that is not a ``bool``:
  :func:`is_bits`, :func:`check_fields`.

A per-pair or per-entity loop that cannot afford a call carries an inlined copy of a rule,
labelled ``# inlined copy of filtering.<function>``, with the measurement that justifies it
in the decisions section of ``docs/design.md``. Nothing here knows esper or the components.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeGuard

from .geometry import shown

__all__ = [
    "DEFAULT_FILTER",
    "FilterValues",
    "accepted",
    "category",
    "check_fields",
    "filters_accept",
    "in_mask",
    "is_bits",
    "sensed",
]

#: A filter's checked ``(category, mask, group)``.
FilterValues = tuple[int, int, int]

#: The ``(category, mask, group)`` of an entity without a CollisionFilter: those of
#: ``CollisionFilter()``, the one filter rule of every processor.
DEFAULT_FILTER: FilterValues = (0x1, 0xFFFFFFFF, 0)


def is_bits(value: object) -> TypeGuard[int]:
    """Whether ``value`` may be a filter field or a mask: an ``int``, not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_fields(owner: object, **fields: object) -> None:
    """``TypeError`` naming the first of ``fields`` that is not an ``int``, or is a ``bool``
    (:func:`is_bits`), as ``<class of owner>.<field> must be an int, got <value>``: the
    rule of ``CollisionFilter(...)`` and of the values the SpatialProcessor puts in
    effect."""
    for name, value in fields.items():
        if not is_bits(value):
            raise TypeError(f"{type(owner).__name__}.{name} must be an int, got {shown(value)}")


def filters_accept(a: FilterValues | None, b: FilterValues | None) -> bool:
    """The collision rule on ``(category, mask, group)`` triples, ``None`` for no filter
    (which is :data:`DEFAULT_FILTER`)."""
    if a is None:
        a = DEFAULT_FILTER
    if b is None:
        b = DEFAULT_FILTER
    return bool(a[0] & b[1] and b[0] & a[1] and not (a[2] and a[2] == b[2]))


def accepted(
    found: list[tuple[int, int]], values: Mapping[int, FilterValues]
) -> list[tuple[int, int]]:
    """The pairs of ``found`` that :func:`filters_accept` lets collide, in the same order,
    by the filter ``values`` in effect (an entity not in them has none). ``found`` itself
    when no entity has a filter.

    The per-pair loop of every frame's pair search: the rule is written out here, once, for
    the whole list, rather than called per pair (docs/design.md, "Decisions")."""
    if not values:
        return found
    get = values.get
    default = DEFAULT_FILTER
    out: list[tuple[int, int]] = []
    append = out.append
    for pair in found:
        fa = get(pair[0], default)
        fb = get(pair[1], default)
        if fa is fb is default or (
            fa[0] & fb[1] and fb[0] & fa[1] and not (fa[2] and fa[2] == fb[2])
        ):
            append(pair)
    return out


def category(values: Mapping[int, FilterValues], entity: int) -> int:
    """``entity``'s category by the filter ``values`` in effect (1 without a filter)."""
    return values.get(entity, DEFAULT_FILTER)[0]


def in_mask(values: Mapping[int, FilterValues], mask: object) -> Callable[[int], bool]:
    """The test ``category & mask != 0`` for an entity, by the filter ``values`` in effect;
    ``TypeError`` for a ``mask`` that is not an int (a bool is not)."""
    if not is_bits(mask):
        raise TypeError(f"mask must be an int, got {mask!r}")
    bits = mask
    get = values.get

    def selected(entity: int) -> bool:
        return (get(entity, DEFAULT_FILTER)[0] & bits) != 0

    return selected


def sensed(found: Iterable[int], values: Mapping[int, FilterValues], mask: int) -> set[int]:
    """The entities of ``found`` whose category shares a bit with ``mask``, by the filter
    ``values`` in effect: every one, or none, without any filter in effect (every category
    is then 1)."""
    if not values:
        return set(found) if mask & DEFAULT_FILTER[0] else set()
    get = values.get
    default = DEFAULT_FILTER
    return {entity for entity in found if get(entity, default)[0] & mask}
