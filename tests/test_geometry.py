"""Box: closed boxes, validation, and the predicates every other module relies on."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_spatial import Box, segment_entry
from ecs_spatial.geometry import midpoint

small = st.integers(min_value=-20, max_value=20)


@st.composite
def int_boxes(draw: st.DrawFn) -> Box:
    """Boxes on a small integer grid: touching and zero-size boxes are common."""
    x0, y0 = draw(small), draw(small)
    return Box(x0, y0, x0 + draw(st.integers(0, 8)), y0 + draw(st.integers(0, 8)))


def test_fields_and_derived_values() -> None:
    """A Box unpacks as a tuple and derives width, height, area and centre."""
    box = Box(1, 2, 5, 10)
    assert tuple(box) == (1, 2, 5, 10)
    assert (box.min_x, box.min_y, box.max_x, box.max_y) == (1, 2, 5, 10)
    assert (box.width, box.height, box.area, box.center) == (4, 8, 32, (3.0, 6.0))


def test_constructors() -> None:
    """from_center and from_size build the boxes their names say."""
    assert Box.from_center(10, 20, 4, 6) == Box(8, 17, 12, 23)
    assert Box.from_size(10, 20, 4, 6) == Box(10, 20, 14, 26)


def test_closed_boxes_touching_edges_and_corners_intersect() -> None:
    """Boxes sharing only an edge or a corner intersect, as in Box2D and pymunk."""
    a = Box(0, 0, 10, 10)
    assert a.intersects(Box(10, 0, 20, 10))  # shared edge
    assert a.intersects(Box(10, 10, 20, 20))  # shared corner
    assert not a.intersects(Box(10.000001, 0, 20, 10))


def test_zero_size_boxes_are_valid_and_intersect_what_they_touch() -> None:
    """A point or a segment is a valid box and intersects whatever it touches."""
    point = Box(5, 5, 5, 5)
    assert point.area == 0
    assert point.intersects(Box(0, 0, 5, 5))
    assert point.intersects(point)
    assert Box(0, 5, 10, 5).intersects(Box(5, 0, 5, 10))  # crossing segments


@pytest.mark.parametrize(
    ("coords", "message"),
    [
        ((math.nan, 0, 1, 1), "min_x is NaN"),
        ((0, 0, 1, math.nan), "max_y is NaN"),
        ((0, -math.inf, 1, 1), "min_y is infinite"),
        ((0, 0, math.inf, 1), "max_x is infinite"),
        ((2, 0, 1, 1), "min_x=2 is greater than max_x=1"),
        ((0, 3, 1, 2), "min_y=3 is greater than max_y=2"),
    ],
)
def test_invalid_boxes_are_refused_naming_the_value(
    coords: tuple[float, float, float, float], message: str
) -> None:
    """NaN, infinite coordinates and inverted extents raise ValueError naming the value."""
    with pytest.raises(ValueError, match=message):
        Box(*coords)


def test_replace_and_make_validate_too() -> None:
    """_replace and _make cannot build an invalid Box behind __new__'s back."""
    with pytest.raises(ValueError, match="greater than max_x"):
        Box(0, 0, 1, 1)._replace(max_x=-1)
    with pytest.raises(ValueError, match="NaN"):
        Box._make([0, 0, math.nan, 1])
    assert Box(0, 0, 1, 1)._replace(max_y=5) == Box(0, 0, 1, 5)


def test_non_numbers_are_refused_with_type_error() -> None:
    """A coordinate that is not a number raises TypeError naming it."""
    with pytest.raises(TypeError, match="min_x must be a real number, got 'a'"):
        Box("a", 0, 1, 1)  # type: ignore[arg-type]


def test_contains_and_contains_point_are_closed() -> None:
    """Edges count for containment of boxes and of points."""
    a = Box(0, 0, 10, 10)
    assert a.contains(Box(0, 0, 10, 10))
    assert a.contains(Box(10, 10, 10, 10))
    assert not a.contains(Box(5, 5, 11, 6))
    assert a.contains_point(10, 0)
    assert not a.contains_point(10.5, 0)


def test_distance_to_point() -> None:
    """Distance to the nearest point of the box; zero inside or on the edge."""
    a = Box(0, 0, 10, 10)
    assert a.distance_to_point(5, 5) == 0
    assert a.distance_to_point(10, 3) == 0
    assert a.distance_to_point(13, 14) == 5.0
    assert a.distance_to_point(-3, 5) == 3.0


def test_union_and_expanded() -> None:
    """union covers both boxes; expanded grows every side and refuses to invert."""
    assert Box(0, 0, 1, 1).union(Box(5, -2, 6, 0)) == Box(0, -2, 6, 1)
    assert Box(0, 0, 2, 2).expanded(1) == Box(-1, -1, 3, 3)
    with pytest.raises(ValueError):
        Box(0, 0, 2, 2).expanded(-2)


@given(int_boxes(), int_boxes())
def test_intersects_is_symmetric_and_matches_overlap_of_intervals(a: Box, b: Box) -> None:
    """intersects is symmetric and true exactly when both intervals overlap."""
    overlap_x = max(a.min_x, b.min_x) <= min(a.max_x, b.max_x)
    overlap_y = max(a.min_y, b.min_y) <= min(a.max_y, b.max_y)
    assert a.intersects(b) == b.intersects(a) == (overlap_x and overlap_y)


@given(int_boxes(), int_boxes())
def test_contains_implies_intersects_and_union_contains_both(a: Box, b: Box) -> None:
    """A contained box intersects its container; the union contains both boxes."""
    if a.contains(b):
        assert a.intersects(b)
    assert a.union(b).contains(a) and a.union(b).contains(b)


def _exact_segment_entry(box: Box, x0: int, y0: int, x1: int, y1: int) -> Fraction | None:
    """The slab test in exact rational arithmetic, as the reference for the float one."""
    lo, hi = Fraction(0), Fraction(1)
    for p0, p1, b0, b1 in ((x0, x1, box.min_x, box.max_x), (y0, y1, box.min_y, box.max_y)):
        d = p1 - p0
        if d == 0:
            if not b0 <= p0 <= b1:
                return None
            continue
        ta, tb = (Fraction(b0) - p0) / d, (Fraction(b1) - p0) / d
        ta, tb = min(ta, tb), max(ta, tb)
        lo, hi = max(lo, ta), min(hi, tb)
        if lo > hi:
            return None
    return lo


@given(int_boxes(), small, small, small, small)
def test_segment_entry_matches_exact_arithmetic(
    box: Box, x0: int, y0: int, x1: int, y1: int
) -> None:
    """The float slab test hits exactly when the exact one does, at the nearest float t."""
    got = segment_entry(box, x0, y0, x1, y1)
    exact = _exact_segment_entry(box, x0, y0, x1, y1)
    if exact is None:
        assert got is None
    else:
        assert got is not None
        assert got == pytest.approx(float(exact), abs=1e-12)
        assert 0.0 <= got <= 1.0


def test_segment_entry_cases() -> None:
    """Starting inside gives 0; grazing a corner hits; parallel misses stay misses."""
    box = Box(10, 10, 20, 20)
    assert segment_entry(box, 15, 15, 100, 100) == 0.0
    assert segment_entry(box, 0, 15, 40, 15) == 0.25
    assert segment_entry(box, 0, 0, 10, 10) == 1.0  # reaches the corner at its very end
    assert segment_entry(box, 0, 30, 40, 30) is None
    assert segment_entry(box, 15, 15, 15, 15) == 0.0  # a point inside
    assert box.segment_entry(0, 20, 40, 20) == 0.25  # along the top edge


# ---------------------------------------------------------------------------- the float range

MAX = sys.float_info.max
finite = st.floats(allow_nan=False, allow_infinity=False)
extreme = st.one_of(
    finite,
    st.sampled_from([-MAX, -1.7e308, -1e308, 1e308, 1.7e308, MAX, 5e-324, -5e-324, 0.0]),
    st.integers(-6, 6).map(lambda n: n * 5e-324),
)


def test_coordinates_are_stored_as_floats() -> None:
    """Box(1, 2, 3, 4) holds floats; an int a float cannot hold is rounded to the nearest,
    as float() rounds it; any other real number (a Fraction) is converted too."""
    box = Box(1, 2, 3, 4)
    assert [type(v) for v in box] == [float] * 4
    assert Box(2**53 + 1, 0, 2**53 + 3, 0) == (2.0**53, 0.0, 2.0**53 + 4, 0.0)
    assert Box(Fraction(1, 3), 0, 1, 1).min_x == 1 / 3  # type: ignore[arg-type]
    assert Box(0, 0, 1, 1)._replace(max_x=2).max_x.__class__ is float


@pytest.mark.parametrize(
    ("coords", "error", "message"),
    [
        ((True, 0, 1, 1), TypeError, r"Box min_x must be a real number, got True"),
        ((0, 0, 1, Decimal(2)), TypeError, r"Box max_y must be a real number, got Decimal"),
        ((0, 0, 10**400, 1), ValueError, r"Box max_x is too large for a float \(1000"),
        ((-(10**400), 0, 1, 1), ValueError, r"Box min_x is too large for a float \(-1000"),
        ((0, 0, 10**5000, 1), ValueError, r"max_x is too large for a float \(an int of 16610"),
        ((0, 2**53 + 1, 1, 5), ValueError, r"min_y=9007199254740993 is greater than max_y=5"),
        ((2**60, 0, 2**59, 0), ValueError, r"min_x=1152921504606846976 is greater than max_x"),
    ],
)
def test_coordinates_that_are_no_float_are_refused_by_name(
    coords: tuple[object, ...], error: type[Exception], message: str
) -> None:
    """A bool or a non-real is a TypeError, an int too large for a float (10**400 was stored
    as an int, and crashed distances later) a ValueError, each naming the field and value."""
    with pytest.raises(error, match=message):
        Box(*coords)  # type: ignore[arg-type]


@given(extreme, extreme)
def test_midpoint_is_the_nearest_float_to_the_exact_centre(a: float, b: float) -> None:
    """midpoint never overflows (1e308 and 1.7e308) nor leaves [a, b], and is the exact
    centre rounded once, from subnormals to the largest floats."""
    a, b = min(a, b), max(a, b)
    m = midpoint(a, b)
    assert a <= m <= b
    assert m == float((Fraction(a) + Fraction(b)) / 2)


def test_center_area_and_widths_at_the_edges() -> None:
    """center is the midpoint (it overflowed to inf at 1e308); the area of a segment longer
    than the largest float is 0 (it was inf * 0, NaN); widths beyond the range are inf."""
    assert Box(1e308, 0, 1e308, 0).center == (1e308, 0.0)
    assert Box(1e308, -MAX, 1.7e308, -1e308).center == (1.35e308, midpoint(-MAX, -1e308))
    assert Box(-MAX, 0, MAX, 0).area == 0.0
    assert Box(0, -MAX, 0, MAX).area == 0.0
    assert Box(-MAX, -MAX, MAX, MAX).width == math.inf
    assert Box(-MAX, -MAX, MAX, MAX).area == math.inf


def _exact_distance(box: Box, x: float, y: float) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 80
        ctx.Emin, ctx.Emax = -2000, 2000
        dx = max(Decimal(box.min_x) - Decimal(x), Decimal(x) - Decimal(box.max_x), Decimal(0))
        dy = max(Decimal(box.min_y) - Decimal(y), Decimal(y) - Decimal(box.max_y), Decimal(0))
        return (dx * dx + dy * dy).sqrt()


@given(extreme, extreme, extreme, extreme, extreme, extreme)
def test_distance_to_point_is_exact_over_the_whole_range(
    a: float, b: float, c: float, d: float, x: float, y: float
) -> None:
    """Gaps past 1.3e154 (whose squares overflow) and below 1e-154 (whose squares vanish)
    are measured within an ulp; only a distance past the largest float is inf."""
    box = Box(min(a, c), min(b, d), max(a, c), max(b, d))
    got = box.distance_to_point(x, y)
    exact = _exact_distance(box, x, y)
    if exact > Decimal(MAX):
        assert got == math.inf or got == MAX
        return
    assert abs(Decimal(got) - exact) <= Decimal(math.ulp(float(exact)))


@given(extreme, extreme, extreme, extreme, extreme, extreme, st.floats(0, MAX))
def test_around_holds_every_box_within_the_radius(
    a: float, b: float, c: float, d: float, x: float, y: float, r: float
) -> None:
    """Box.around(x, y, r) meets every box whose distance_to_point is at most r (the index
    prunes with it: a box it misses must really be beyond r)."""
    box = Box(min(a, c), min(b, d), max(a, c), max(b, d))
    reach = Box.around(x, y, r)
    assert reach.contains_point(x, y)
    if box.distance_to_point(x, y) <= r:
        assert reach.intersects(box)


def test_around_reaches_a_float_step_past_the_rounded_radius() -> None:
    """x + r is rounded: a box one float step beyond it is still within r by the definition,
    and Box.around must meet it."""
    x, r = -999.5328041548872, 17268.530820213113
    right = math.nextafter(x + r, math.inf)
    box = Box(right, 0, right + 1, 1)
    assert box.distance_to_point(x, 0.5) <= r
    assert Box.around(x, 0.5, r).intersects(box)


def _halved(v: float) -> float:
    return v * 0.5


normal = st.floats(min_value=-MAX, max_value=MAX).filter(lambda v: v == 0 or abs(v) > 1e-300)


@given(normal, normal, normal, normal, normal, normal, normal, normal)
def test_segment_entry_is_the_same_on_halved_coordinates(
    a: float, b: float, c: float, d: float, x0: float, y0: float, x1: float, y1: float
) -> None:
    """Halving every coordinate (exact away from subnormals) halves every difference, so the
    fractions cannot change; a segment whose length overflows (-1e308 -> 1e308, where every
    fraction came out 0, a division by inf) is thus held to the halved segment, which does
    not overflow. The fraction always lies in [0, 1]."""
    box = Box(min(a, c), min(b, d), max(a, c), max(b, d))
    got = segment_entry(box, x0, y0, x1, y1)
    half = Box(*map(_halved, box))
    assert got == segment_entry(half, x0 * 0.5, y0 * 0.5, x1 * 0.5, y1 * 0.5)
    assert got is None or 0.0 <= got <= 1.0


def test_segment_entry_across_the_whole_range() -> None:
    """The fractions of a segment longer than the largest float, worked by hand."""
    assert segment_entry(Box(0, -1, 1, 1), -1e308, 0, 1e308, 0) == 0.5
    assert segment_entry(Box(5e307, -1, 6e307, 1), -1e308, 0, 1e308, 0) == 0.75
    assert segment_entry(Box(0, 5e307, 1, 6e307), 0.5, -1e308, 0.5, 1e308) == 0.75
    assert segment_entry(Box(1.5e308, -1, MAX, 1), -1e308, 0, 1e308, 0) is None
    assert segment_entry(Box(-MAX, -1, -1e308, 1), 1e308, 0, -1e308, 0) == 1.0
    assert segment_entry(Box(-1, -1, 1, 1), -MAX, -MAX, MAX, MAX) == 0.5


def test_segment_entry_takes_coordinates_as_box_does() -> None:
    """Ints are the nearest floats (2**53 + 1 and 2**53 + 3 were subtracted exactly, as
    ints, a step of 2 where the floats have 4); NaN, infinite, too large or non-numeric
    endpoints are refused by name (NaN gave a fraction)."""
    big = 2**53
    box = (big + 2, -1, big + 2, 1)
    assert segment_entry(box, big + 1, 0, big + 3, 0) == segment_entry(
        Box(*box), float(big + 1), 0.0, float(big + 3), 0.0
    ) == 0.5
    for bad, error, message in [
        (math.nan, ValueError, r"segment x1 must be finite, got nan"),
        (math.inf, ValueError, r"segment x1 must be finite, got inf"),
        (10**400, ValueError, r"segment x1 is too large for a float"),
        ("1", TypeError, r"segment x1 must be a real number, got '1'"),
    ]:
        with pytest.raises(error, match=message):
            segment_entry(Box(0, 0, 1, 1), 0, 0, bad, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Box min_x is NaN"):
        segment_entry((math.nan, 0, 1, 1), 0, 0, 1, 1)


def test_measures_refuse_what_a_box_refuses() -> None:
    """A NaN point is at NaN from every box, never "touching" it (it measured 0.0); an int
    past the float range is refused by name in every measure and constructor, not with
    the OverflowError of the arithmetic."""
    box = Box(0, 0, 1, 1)
    assert math.isnan(box.distance_to_point(math.nan, 0.5))
    assert math.isnan(box.distance_to_point(0.5, math.nan))
    assert not box.distance_to_point(math.nan, math.nan) <= 1e308
    assert box.distance_to_point(2**53 + 1, 0) == 2.0**53 - 1
    checks: list[tuple[Callable[[], object], str]] = [
        (lambda: box.distance_to_point(10**400, 0), r"^x is too large for a float"),
        (lambda: box.expanded(10**400), r"^margin is too large for a float"),
        (lambda: Box.from_center(0, 0, 10**400, 1), r"^width is too large for a float"),
        (lambda: Box.from_size(0.5, 0, 10**400, 1), r"^width is too large for a float"),
    ]
    for call, message in checks:
        with pytest.raises(ValueError, match=message):
            call()
    with pytest.raises(TypeError, match=r"^y must be a real number, got '1'"):
        box.distance_to_point(0, "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Box max_x is infinite"):
        Box.from_size(1e308, 0, 1e308, 0)  # finite arguments whose sum overflows
