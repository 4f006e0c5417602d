"""Position, AABB and CollisionFilter: plain values when untracked, dirty flags when tracked,
and the bookkeeping for a component shared by several entities or worlds."""

from __future__ import annotations

import copy
import pickle

import pytest

from ecs_spatial.components import (
    AABB,
    CollisionFilter,
    Position,
    _attach,
    _detach,
    _rearm,
    _Shared,
    filters_accept,
)
from ecs_spatial.geometry import Box

# -- plain values -------------------------------------------------------------------------------


def test_position_is_a_mutable_value() -> None:
    """Fields read and write, equality is by value, repr shows the fields."""
    p = Position(1.0, 2.0)
    p.x += 2.5
    p.y = -1
    assert (p.x, p.y) == (3.5, -1)
    assert p == Position(3.5, -1)
    assert p != Position(3.5, 0)
    assert repr(p) == "Position(x=3.5, y=-1)"


def test_position_defaults_to_origin() -> None:
    """Position() is the origin."""
    assert Position() == Position(0.0, 0.0)


def test_components_are_not_equal_across_types() -> None:
    """A Position never equals an AABB or a tuple with the same numbers."""
    assert Position(1, 2) != (1, 2)
    assert AABB(1, 2) != Position(1, 2)
    assert CollisionFilter() != AABB(1, 1)


def test_components_are_unhashable() -> None:
    """Mutable values compared by value must not be hashable."""
    for comp in (Position(), AABB(1, 1), CollisionFilter()):
        with pytest.raises(TypeError):
            hash(comp)


def test_translate_and_move_to() -> None:
    """translate adds to both axes, move_to sets both."""
    p = Position(1, 1)
    p.translate(2, -3)
    assert p == Position(3, -2)
    p.move_to(10, 20)
    assert p == Position(10, 20)


def test_aabb_box_at_uses_lower_left_corner_by_default() -> None:
    """The position is the box's lower-left corner plus the offsets."""
    assert AABB(4, 2).box_at(10, 20) == Box(10, 20, 14, 22)
    assert AABB(4, 2, offset_x=-1, offset_y=3).box_at(10, 20) == Box(9, 23, 13, 25)


def test_aabb_centered_puts_the_position_at_the_centre() -> None:
    """AABB.centered(w, h) gives a box centred on the position."""
    aabb = AABB.centered(4, 2)
    assert (aabb.offset_x, aabb.offset_y) == (-2, -1)
    assert aabb.box_at(10, 20).center == (10, 20)


def test_aabb_fields_and_repr() -> None:
    """Every AABB field reads back what was assigned; repr shows them."""
    a = AABB(1, 2)
    a.width, a.height, a.offset_x, a.offset_y = 5, 6, 7, 8
    assert a == AABB(5, 6, 7, 8)
    assert repr(a) == "AABB(width=5, height=6, offset_x=7, offset_y=8)"


def test_aabb_box_at_refuses_a_negative_size() -> None:
    """box_at gives a ValueError for a size that makes an inverted box."""
    with pytest.raises(ValueError):
        AABB(-1, 2).box_at(0, 0)


def test_filter_fields_and_repr() -> None:
    """CollisionFilter defaults to category 1, every mask bit, no group."""
    f = CollisionFilter()
    assert (f.category, f.mask, f.group) == (1, 0xFFFFFFFF, 0)
    f.group = 3
    assert f == CollisionFilter(1, 0xFFFFFFFF, 3)
    assert repr(f) == "CollisionFilter(category=0x1, mask=0xffffffff, group=3)"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (CollisionFilter(), CollisionFilter(), True),
        (CollisionFilter(category=1, mask=2), CollisionFilter(category=2, mask=1), True),
        (CollisionFilter(category=1, mask=2), CollisionFilter(category=2, mask=2), False),
        (CollisionFilter(group=4), CollisionFilter(group=4), False),
        (CollisionFilter(group=4), CollisionFilter(group=5), True),
        (CollisionFilter(category=0), None, False),
        (CollisionFilter(mask=0), None, False),
        (CollisionFilter(category=8, mask=8), None, True),
        (None, None, True),
    ],
)
def test_filter_rule(a: CollisionFilter | None, b: CollisionFilter | None, expected: bool) -> None:
    """Both category & mask tests must pass, a shared non-zero group vetoes, no filter is a
    wildcard; the rule is symmetric."""
    va = None if a is None else (a.category, a.mask, a.group)
    vb = None if b is None else (b.category, b.mask, b.group)
    assert filters_accept(va, vb) is expected
    assert filters_accept(vb, va) is expected
    if a is not None:
        assert a.accepts(b) is expected


@pytest.mark.parametrize("make", [lambda: Position(1, 2), lambda: AABB(1, 2, 3, 4),
                                  lambda: CollisionFilter(2, 3, 4)])
def test_copies_and_pickles_are_untracked_equal_values(make: object) -> None:
    """copy, deepcopy and pickle give an equal value that no processor tracks."""
    comp = make()  # type: ignore[operator]
    sink: list[int] = []
    _attach(comp, sink, 7)
    _rearm(comp, sink, 7)
    for clone in (copy.copy(comp), copy.deepcopy(comp), pickle.loads(pickle.dumps(comp))):
        assert clone == comp and clone is not comp
        assert clone._owner is None and clone._sink is None


# -- dirty flags ----------------------------------------------------------------------------------


def test_untracked_component_reports_nothing() -> None:
    """Assigning to a component nobody tracks has no side effect."""
    p = Position()
    p.x = 5
    assert p._sink is None and p._owner is None


def test_tracked_component_reports_its_entity_once_until_rearmed() -> None:
    """The first change appends the entity id; more changes do not until re-armed."""
    sink: list[int] = []
    p = Position()
    _attach(p, sink, 3)
    _rearm(p, sink, 3)
    p.x = 1
    p.y = 2
    p.translate(1, 1)
    assert sink == [3]
    _rearm(p, sink, 3)
    p.move_to(0, 0)
    assert sink == [3, 3]


@pytest.mark.parametrize("field", ["width", "height", "offset_x", "offset_y"])
def test_every_aabb_field_marks_dirty(field: str) -> None:
    """Each AABB setter reports the change."""
    sink: list[int] = []
    a = AABB(1, 1)
    _attach(a, sink, 9)
    _rearm(a, sink, 9)
    setattr(a, field, 2.0)
    assert sink == [9]


@pytest.mark.parametrize("field", ["category", "mask", "group"])
def test_every_filter_field_marks_dirty(field: str) -> None:
    """Each CollisionFilter setter reports the change."""
    sink: list[int] = []
    f = CollisionFilter()
    _attach(f, sink, 4)
    _rearm(f, sink, 4)
    setattr(f, field, 2)
    assert sink == [4]


def test_detached_component_reports_nothing() -> None:
    """Once detached, a component is a plain value again."""
    sink: list[int] = []
    p = Position()
    _attach(p, sink, 3)
    _rearm(p, sink, 3)
    _detach(p, sink, 3)
    p.x = 1
    assert sink == []
    assert p._owner is None


def test_shared_component_reports_to_every_place_once() -> None:
    """A component on two entities of two processors reports each entity to its own list,
    once per re-arm of that place."""
    one: list[int] = []
    two: list[int] = []
    a = AABB(1, 1)
    _attach(a, one, 1)
    _rearm(a, one, 1)
    _attach(a, two, 5)
    _rearm(a, two, 5)
    assert type(a._owner) is _Shared
    a.width = 3
    a.width = 4
    assert (one, two) == ([1], [5])
    _rearm(a, one, 1)  # only the first processor has dealt with the change
    a.height = 2
    assert (one, two) == ([1, 1], [5])


def test_shared_component_in_one_list_reports_each_entity() -> None:
    """Two entities of one processor sharing a component are both reported."""
    sink: list[int] = []
    p = Position()
    for e in (1, 2):
        _attach(p, sink, e)
        _rearm(p, sink, e)
    p.x = 1
    assert sorted(sink) == [1, 2]


def test_shared_component_falls_back_to_the_fast_form() -> None:
    """When one place is left, the component points at that list directly again, keeping
    that place's armed state."""
    one: list[int] = []
    two: list[int] = []
    p = Position()
    _attach(p, one, 1)
    _rearm(p, one, 1)
    _attach(p, two, 2)
    _detach(p, two, 2)
    assert p._owner is one and p._eid == 1 and p._sink is one
    p.x = 3
    assert one == [1] and two == []
    _detach(p, one, 1)
    assert p._owner is None


def test_attach_twice_to_the_same_place_is_idempotent() -> None:
    """Attaching a component again where it already is changes nothing."""
    sink: list[int] = []
    p = Position()
    _attach(p, sink, 1)
    _attach(p, sink, 1)
    assert p._owner is sink


def test_detach_from_a_place_it_is_not_in_is_harmless() -> None:
    """Detaching from another list or entity leaves the component tracked where it is."""
    sink: list[int] = []
    other: list[int] = []
    p = Position()
    _attach(p, sink, 1)
    _detach(p, other, 1)
    _detach(p, sink, 2)
    assert p._owner is sink and p._eid == 1


def test_filter_repr_survives_a_bad_value() -> None:
    """repr shows a non-int field as it is instead of failing on the hex format."""
    f = CollisionFilter()
    f.mask = 1.5  # type: ignore[assignment]
    assert repr(f) == "CollisionFilter(category=0x1, mask=1.5, group=0)"
