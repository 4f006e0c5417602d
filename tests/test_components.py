"""Position, AABB and CollisionFilter: plain values when untracked, dirty flags when tracked,
and the bookkeeping for a component shared by several entities or worlds.

Every test here runs on both twins, the references (``PyPosition``...) and the compiled
types (``_ccomponents``, when built): the module-scoped fixture ``twin`` binds this
module's ``Position``, ``AABB`` and ``CollisionFilter`` to one pair or the other.
"""

from __future__ import annotations

import copy
import math
import pickle
import sys
from collections.abc import Callable
from decimal import Decimal
from enum import IntEnum, IntFlag
from fractions import Fraction
from typing import Any

import pytest
from _budget import budget
from hypothesis import given
from hypothesis import strategies as st

from ecs_spatial import components
from ecs_spatial.components import (
    AABB,
    CollisionFilter,
    Position,
    PyAABB,
    PyCollisionFilter,
    PyPosition,
    _Shared,
    rearm,
    track,
    untrack,
)
from ecs_spatial.filtering import filters_accept
from ecs_spatial.geometry import Box

#: The classes each test runs on, by twin.
TWINS: dict[str, tuple[type, type, type]] = {
    "reference": (PyPosition, PyAABB, PyCollisionFilter),
}
if components._twins is not None:
    TWINS["compiled"] = (
        components._twins.Position, components._twins.AABB, components._twins.CollisionFilter
    )


@pytest.fixture(scope="module", autouse=True, params=list(TWINS))
def twin(request: pytest.FixtureRequest) -> Any:
    """Bind ``Position``, ``AABB`` and ``CollisionFilter`` to one twin for the module's tests
    (module-scoped, so hypothesis's tests may use it), and back afterwards."""
    names = ("Position", "AABB", "CollisionFilter")
    namespace = globals()
    saved = [namespace[name] for name in names]
    namespace.update(zip(names, TWINS[request.param], strict=True))
    yield request.param
    namespace.update(zip(names, saved, strict=True))


def _made(name: str) -> Callable[..., Any]:
    """``Position``, ``AABB``, ``AABB.centered`` or ``CollisionFilter`` of the twin in use."""
    owner, _, method = name.partition(".")
    found = globals()[owner]
    return getattr(found, method) if method else found  # type: ignore[no-any-return]


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
    """box_at gives a ValueError for a size, assigned after construction, that makes an
    inverted box."""
    aabb = AABB(1, 2)
    aabb.width = -1
    with pytest.raises(ValueError):
        aabb.box_at(0, 0)


def test_filter_fields_and_repr() -> None:
    """CollisionFilter defaults to category 1, every mask bit, no group."""
    f = CollisionFilter()
    assert (f.category, f.mask, f.group) == (1, 0xFFFFFFFF, 0)
    f.group = 3
    assert f == CollisionFilter(1, 0xFFFFFFFF, 3)
    assert repr(f) == "CollisionFilter(category=0x1, mask=0xffffffff, group=3)"


@pytest.mark.parametrize(
    ("a_fields", "b_fields", "expected"),
    [
        ({}, {}, True),
        ({"category": 1, "mask": 2}, {"category": 2, "mask": 1}, True),
        ({"category": 1, "mask": 2}, {"category": 2, "mask": 2}, False),
        ({"group": 4}, {"group": 4}, False),
        ({"group": 4}, {"group": 5}, True),
        ({"category": 0}, None, False),
        ({"mask": 0}, None, False),
        ({"category": 8, "mask": 8}, None, False),  # None is category 1
        ({"category": 8, "mask": 9}, None, True),
        ({"category": 0b10, "mask": 0b10}, None, False),  # the wall case
        (None, None, True),
    ],
)
def test_filter_rule(
    a_fields: dict[str, int] | None, b_fields: dict[str, int] | None, expected: bool
) -> None:
    """Both category & mask tests must pass, a shared non-zero group vetoes, no filter is
    CollisionFilter() (category 1, every mask bit); the rule is symmetric."""
    a = None if a_fields is None else CollisionFilter(**a_fields)
    b = None if b_fields is None else CollisionFilter(**b_fields)
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
    track(comp, sink, 7)
    rearm(comp, sink, 7)
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
    track(p, sink, 3)
    rearm(p, sink, 3)
    p.x = 1
    p.y = 2
    p.translate(1, 1)
    assert sink == [3]
    rearm(p, sink, 3)
    p.move_to(0, 0)
    assert sink == [3, 3]


@pytest.mark.parametrize("field", ["width", "height", "offset_x", "offset_y"])
def test_every_aabb_field_marks_dirty(field: str) -> None:
    """Each AABB setter reports the change."""
    sink: list[int] = []
    a = AABB(1, 1)
    track(a, sink, 9)
    rearm(a, sink, 9)
    setattr(a, field, 2.0)
    assert sink == [9]


@pytest.mark.parametrize("field", ["category", "mask", "group"])
def test_every_filter_field_marks_dirty(field: str) -> None:
    """Each CollisionFilter setter reports the change."""
    sink: list[int] = []
    f = CollisionFilter()
    track(f, sink, 4)
    rearm(f, sink, 4)
    setattr(f, field, 2)
    assert sink == [4]


def test_detached_component_reports_nothing() -> None:
    """Once detached, a component is a plain value again."""
    sink: list[int] = []
    p = Position()
    track(p, sink, 3)
    rearm(p, sink, 3)
    untrack(p, sink, 3)
    p.x = 1
    assert sink == []
    assert p._owner is None


def test_shared_component_reports_to_every_place_once() -> None:
    """A component on two entities of two processors reports each entity to its own list,
    once per re-arm of that place."""
    one: list[int] = []
    two: list[int] = []
    a = AABB(1, 1)
    track(a, one, 1)
    rearm(a, one, 1)
    track(a, two, 5)
    rearm(a, two, 5)
    assert type(a._owner) is _Shared
    a.width = 3
    a.width = 4
    assert (one, two) == ([1], [5])
    rearm(a, one, 1)  # only the first processor has dealt with the change
    a.height = 2
    assert (one, two) == ([1, 1], [5])


def test_shared_component_in_one_list_reports_each_entity() -> None:
    """Two entities of one processor sharing a component are both reported."""
    sink: list[int] = []
    p = Position()
    for e in (1, 2):
        track(p, sink, e)
        rearm(p, sink, e)
    p.x = 1
    assert sorted(sink) == [1, 2]


def test_shared_component_falls_back_to_the_fast_form() -> None:
    """When one place is left, the component points at that list directly again, keeping
    that place's armed state."""
    one: list[int] = []
    two: list[int] = []
    p = Position()
    track(p, one, 1)
    rearm(p, one, 1)
    track(p, two, 2)
    untrack(p, two, 2)
    assert p._owner is one and p._eid == 1 and p._sink is one
    p.x = 3
    assert one == [1] and two == []
    untrack(p, one, 1)
    assert p._owner is None


def test_attach_twice_to_the_same_place_is_idempotent() -> None:
    """Attaching a component again where it already is changes nothing."""
    sink: list[int] = []
    p = Position()
    track(p, sink, 1)
    track(p, sink, 1)
    assert p._owner is sink


def test_detach_from_a_place_it_is_not_in_is_harmless() -> None:
    """Detaching from another list or entity leaves the component tracked where it is."""
    sink: list[int] = []
    other: list[int] = []
    p = Position()
    track(p, sink, 1)
    untrack(p, other, 1)
    untrack(p, sink, 2)
    assert p._owner is sink and p._eid == 1


def test_filter_repr_survives_a_bad_value() -> None:
    """repr shows a non-int field as it is instead of failing on the hex format."""
    f = CollisionFilter()
    f.mask = 1.5  # type: ignore[assignment]
    assert repr(f) == "CollisionFilter(category=0x1, mask=1.5, group=0)"


# -- values checked where they are made ---------------------------------------------------------

_LARGEST_ROUNDED_DOWN = 2**1024 - 2**970 - 1  # the largest int float() rounds to the largest float


@pytest.mark.parametrize(
    ("make", "args", "error", "message"),
    [
        ("Position", (math.nan, 0.0), ValueError, r"^Position\.x is NaN$"),
        ("Position", (0.0, math.inf), ValueError, r"^Position\.y is infinite \(inf\)$"),
        ("Position", (-math.inf, 0.0), ValueError, r"^Position\.x is infinite \(-inf\)$"),
        ("Position", (0, 10**400), ValueError, r"^Position\.y is too large for a float \(1000"),
        ("Position", (_LARGEST_ROUNDED_DOWN + 1, 0), ValueError, r"^Position\.x is too large"),
        ("Position", (Fraction(10**400), 0), ValueError, r"^Position\.x is too large"),
        ("Position", (1.5, "2"), TypeError, r"^Position\.y must be a real number, got '2'$"),
        ("Position", (None, 0), TypeError, r"^Position\.x must be a real number, got None$"),
        ("Position", (True, 0), TypeError, r"^Position\.x must be a real number, got True$"),
        ("Position", (1j, 0), TypeError, r"^Position\.x must be a real number, got 1j$"),
        ("Position", (Decimal(1), 0), TypeError, r"^Position\.x must be a real number"),
        ("AABB", (-5, 10), ValueError, r"^AABB\.width is negative \(-5\)$"),
        ("AABB", (5, -1e-300), ValueError, r"^AABB\.height is negative \(-1e-300\)$"),
        ("AABB", (math.nan, 1), ValueError, r"^AABB\.width is NaN$"),
        ("AABB", (1, math.inf), ValueError, r"^AABB\.height is infinite \(inf\)$"),
        ("AABB", (1, 1, -math.inf), ValueError, r"^AABB\.offset_x is infinite \(-inf\)$"),
        ("AABB", (1, 1, 0, math.nan), ValueError, r"^AABB\.offset_y is NaN$"),
        ("AABB", (1, 1, 0, 10**400), ValueError, r"^AABB\.offset_y is too large for a"),
        ("AABB", (1, "1"), TypeError, r"^AABB\.height must be a real number, got '1'$"),
        ("AABB", (False, 1), TypeError, r"^AABB\.width must be a real number, got False$"),
        ("AABB.centered", (-4, 2), ValueError, r"^AABB\.width is negative \(-4\)$"),
        ("AABB.centered", (4, "2"), TypeError, r"^AABB\.height must be a real number"),
        ("AABB.centered", (4, 10**400), ValueError, r"^AABB\.height is too large for a"),
        ("AABB.centered", ("4", 2), TypeError, r"^AABB\.width must be a real number, got '4'$"),
        ("AABB.centered", (10**400, 2), ValueError, r"^AABB\.width is too large for a float"),
        ("AABB.centered", (math.nan, 2), ValueError, r"^AABB\.width is NaN$"),
        ("CollisionFilter", (1.5,), TypeError,
         r"^CollisionFilter\.category must be an int, got 1\.5$"),
        ("CollisionFilter", (1, True), TypeError,
         r"^CollisionFilter\.mask must be an int, got True$"),
        ("CollisionFilter", (1, 2, "2"), TypeError,
         r"^CollisionFilter\.group must be an int, got '2'$"),
        ("CollisionFilter", (1, 2, None), TypeError,
         r"^CollisionFilter\.group must be an int, got None$"),
    ],
)
def test_bad_values_are_refused_at_construction(
    make: str, args: tuple[Any, ...], error: type[Exception], message: str
) -> None:
    """Construction refuses a bad value with an error naming the class, field and value."""
    with pytest.raises(error, match=message):
        _made(make)(*args)


def test_refusal_names_the_subclass() -> None:
    """A subclass is named by its own name, in __init__ and in AABB.centered."""

    class Spot(Position):
        __slots__ = ()

    class Hitbox(AABB):
        __slots__ = ()

    with pytest.raises(ValueError, match=r"^Spot\.y is NaN$"):
        Spot(0, math.nan)
    with pytest.raises(ValueError, match=r"^Hitbox\.height is negative"):
        Hitbox.centered(1, -1)


def test_an_int_too_long_to_print_is_refused_by_its_size() -> None:
    """An int beyond the interpreter's int-to-str digit limit still gets our message."""
    message = r"^Position\.x is too large for a float \(an int of 16610 bits\)$"
    with pytest.raises(ValueError, match=message):
        Position(10**5000, 0)


def test_a_wide_real_that_rounds_to_infinity_is_too_large() -> None:
    """A finite real of a wider type that float() rounds to infinity (a NumPy longdouble;
    here a stand-in) is called too large, not infinite."""

    class Wide(Fraction):
        def __float__(self) -> float:
            return math.inf

    with pytest.raises(ValueError, match=r"^Position\.x is too large for a float \(Wide"):
        Position(Wide(10**400), 0)  # type: ignore[arg-type]


def test_real_numbers_are_stored_as_floats() -> None:
    """ints, int and float subclasses and Fractions are converted, exactly where float() is."""

    class Level(IntEnum):
        HIGH = 7

    class Metres(float):
        pass

    quarter: Any = Fraction(1, 4)
    p = Position(1, quarter)
    assert (p.x, p.y) == (1.0, 0.25) and type(p.x) is float is type(p.y)
    a = AABB(Level.HIGH, Metres(2.5), 3, -4)
    assert [type(v) for v in (a.width, a.height, a.offset_x, a.offset_y)] == [float] * 4
    assert a == AABB(7.0, 2.5, 3.0, -4.0)
    assert repr(AABB.centered(4, 2)) == "AABB(width=4.0, height=2.0, offset_x=-2.0, offset_y=-1.0)"
    assert Position(_LARGEST_ROUNDED_DOWN, 0).x == sys.float_info.max


@pytest.mark.parametrize(
    "value", [0.0, -0.0, 5e-324, -5e-324, sys.float_info.max, -sys.float_info.max, 2**1023]
)
def test_extreme_finite_values_are_accepted(value: float) -> None:
    """Subnormals, signed zeros and the largest floats are valid coordinates and offsets,
    and valid sizes when not negative."""
    p = Position(value, value)
    assert p.x == value and p.y == value
    a = AABB(abs(value), abs(value), value, value)
    assert a == AABB(abs(value), abs(value), value, value) and a.offset_x == value


def test_negative_zero_is_a_valid_size() -> None:
    """-0.0 is not negative: a zero-width box."""
    assert AABB(-0.0, -0.0).box_at(1, 2) == Box(1, 2, 1, 2)


def test_filter_fields_are_stored_as_given() -> None:
    """Any int is accepted, negative or an int subclass such as IntFlag, and kept as is (the
    processor's rule): filters are bit masks, never converted."""

    class Layer(IntFlag):
        WALLS = 4

    f = CollisionFilter(category=Layer.WALLS, mask=-1, group=2**70)
    assert f.category is Layer.WALLS and f.mask == -1 and f.group == 2**70


def test_assignment_is_not_checked() -> None:
    """Assignment stays a plain store (the processor checks it): only construction refuses."""
    p = Position()
    p.x = math.nan
    a = AABB(1, 1)
    a.width = -1
    f = CollisionFilter()
    f.mask = 1.5  # type: ignore[assignment]
    assert math.isnan(p.x) and a.width == -1 and f.mask == 1.5


finite = st.floats(allow_nan=False, allow_infinity=False)
reals = st.floats() | st.integers(min_value=-(2**1100), max_value=2**1100) | st.fractions()


def _is_valid_real(value: float | int | Fraction) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


@budget(300)
@given(reals, reals)
def test_position_accepts_exactly_the_finite_reals(x: float, y: float) -> None:
    """Position(x, y) constructs if and only if both are finite as floats, and then holds
    float(x), float(y)."""
    if _is_valid_real(x) and _is_valid_real(y):
        p = Position(x, y)
        assert p.x == float(x) and p.y == float(y) and type(p.x) is float is type(p.y)
    else:
        with pytest.raises(ValueError, match=r"^Position\.[xy] "):
            Position(x, y)


@budget(300)
@given(reals, reals, reals, reals)
def test_aabb_accepts_exactly_finite_sizes_not_negative(
    width: float, height: float, offset_x: float, offset_y: float
) -> None:
    """AABB constructs if and only if every field is finite and the sizes are >= 0; the
    first bad field is named."""
    fields = {"width": width, "height": height, "offset_x": offset_x, "offset_y": offset_y}
    bad = [
        name
        for name, value in fields.items()
        if not _is_valid_real(value) or (name in ("width", "height") and float(value) < 0)
    ]
    if not bad:
        a = AABB(width, height, offset_x, offset_y)
        assert a == AABB(float(width), float(height), float(offset_x), float(offset_y))
    else:
        with pytest.raises(ValueError, match=rf"^AABB\.{bad[0]} "):
            AABB(width, height, offset_x, offset_y)


@budget(100)
@given(finite, finite)
def test_centered_offsets_are_half_the_size(width: float, height: float) -> None:
    """AABB.centered accepts every finite size not negative (its offsets never overflow)."""
    if width < 0 or height < 0:
        with pytest.raises(ValueError, match="negative"):
            AABB.centered(width, height)
    else:
        a = AABB.centered(width, height)
        assert (a.offset_x, a.offset_y) == (-width * 0.5, -height * 0.5)


# -- copies and pickles -------------------------------------------------------------------------

# Written by the components before they checked values: `pickle.dumps(c, protocol=2)` of
# Position(1.5, -2), AABB(4, 2.5, -2, -1.25), CollisionFilter(2, 3, 4), and a Position whose
# x was assigned NaN.
_OLD_PICKLES = [
    b"\x80\x02cecs_spatial.components\nPosition\nq\x00G?\xf8\x00\x00\x00\x00\x00\x00J\xfe"
    b"\xff\xff\xff\x86q\x01Rq\x02.",
    b"\x80\x02cecs_spatial.components\nAABB\nq\x00(K\x04G@\x04\x00\x00\x00\x00\x00\x00J\xfe"
    b"\xff\xff\xffG\xbf\xf4\x00\x00\x00\x00\x00\x00tq\x01Rq\x02.",
    b"\x80\x02cecs_spatial.components\nCollisionFilter\nq\x00K\x02K\x03K\x04\x87q\x01Rq\x02.",
]
_OLD_NAN_PICKLE = (
    b"\x80\x02cecs_spatial.components\nPosition\nq\x00G\x7f\xf8\x00\x00\x00\x00\x00\x00G\x00"
    b"\x00\x00\x00\x00\x00\x00\x00\x86q\x01Rq\x02."
)


def test_pickles_from_before_the_checks_still_load() -> None:
    """A pickle that calls the class (the old format) loads, and is checked on the way."""
    loaded = [pickle.loads(data) for data in _OLD_PICKLES]
    assert loaded == [Position(1.5, -2), AABB(4, 2.5, -2, -1.25), CollisionFilter(2, 3, 4)]
    for comp in loaded:
        assert comp._owner is None and comp._sink is None and comp._eid == 0
    with pytest.raises(ValueError, match=r"^Position\.x is NaN$"):
        pickle.loads(_OLD_NAN_PICKLE)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_bad_value_assigned_since_survives_copies_and_pickles(protocol: int) -> None:
    """A copy holds what the component holds, unchecked and untracked: copying a world
    that holds a value the processor will refuse does not fail."""
    p = Position(1, 2)
    p.x = math.nan
    a = AABB(1, 1)
    a.width = -3
    f = CollisionFilter()
    f.group = 1.5  # type: ignore[assignment]
    sink: list[int] = []
    for comp in (p, a, f):
        track(comp, sink, 1)
        rearm(comp, sink, 1)
    def pickled(comp: object) -> Any:
        return pickle.loads(pickle.dumps(comp, protocol))

    copiers: list[Callable[[Any], Any]] = [copy.copy, copy.deepcopy, pickled]
    for copier in copiers:
        cp, ca, cf = copier(p), copier(a), copier(f)
        assert math.isnan(cp.x) and cp.y == 2.0
        assert (ca.width, ca.height, cf.group) == (-3, 1.0, 1.5)
        for clone in (cp, ca, cf):
            assert clone._owner is None and clone._sink is None and clone._eid == 0
        cp.x = 5.0  # an untracked clone reports nothing
    assert sink == []


def test_the_components_do_not_depend_on_the_index() -> None:
    """``components`` imports, of the package, only ``geometry`` and ``filtering`` (which
    imports only ``geometry``): the processor's read loop lives in ``_members``, so a
    ``Position`` needs neither the index nor esper."""
    import ast
    from pathlib import Path

    import ecs_spatial

    package = Path(ecs_spatial.__file__).parent
    allowed = {
        "components.py": {"geometry", "filtering", "_ccomponents"},
        "filtering.py": {"geometry"},
    }
    for name, modules in allowed.items():
        imported = set()
        for node in ast.walk(ast.parse((package / name).read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                imported.update([node.module] if node.module else [a.name for a in node.names])
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                roots = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""])
                assert all(r.split(".")[0] != "esper" for r in roots), (name, roots)
        assert imported <= modules, (name, imported - modules)
