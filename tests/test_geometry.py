"""Box: closed boxes, validation, and the predicates every other module relies on."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_spatial import Box, segment_entry

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
