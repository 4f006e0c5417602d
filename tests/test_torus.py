"""Wrapped (toroidal) trees, ``QuadTree(wrap=...)`` (issue 28), against a brute-force model
of the torus in exact arithmetic.

The model keeps each entity's box as given, as ``Fraction``s, and decides every answer by the
rules of the class docstring: two boxes overlap when one meets the other shifted by whole
periods (``_overlap``, on each axis on its own), a query box likewise, a point's distance to
a box is the least over the box's images. The tests draw coordinates on a grid of 1/64 of the
period (many periods away from it, and far past it), so that every float the tree computes
(a canonical corner, a shifted image) is exact and the model's answers are the tree's to
the bit; what the floats round (a period of 1e-3, coordinates near the float range) has
tests of its own below.

Both classes run every test (``CLASSES``: the reference, and the compiled class when it is
built); tests/test_native_quadtree.py drives the two side by side on a torus as well.
"""

from __future__ import annotations

import copy
import math
import pickle
import random
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from math import ceil, floor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ecs_spatial
from ecs_spatial.geometry import Box, floats_segment_entry, floats_sweep_time
from ecs_spatial.quadtree import QuadTree

#: The classes every test runs on: the reference, and the compiled twin when it is in use.
CLASSES: list[type[QuadTree]] = [QuadTree] + (
    [ecs_spatial.QuadTree] if ecs_spatial.NATIVE else []
)
both = pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__module__)

F = Fraction
BoxT = tuple[float, float, float, float]

#: (x0, y0, x1, y1) periods: plain, offset and unequal, tiny (2**-10, about 1e-3) and huge
#: (1e15 is an exact float, and so is every 1/64 of it).
PERIODS = [
    (0.0, 0.0, 10.0, 10.0),
    (-3.0, 5.0, 9.5, 13.0),
    (0.0, 0.0, 2.0**-10, 2.0**-9),
    (0.0, -1e15, 1e15, 1e15),
]


def _overlap(a0: F, a1: F, b0: F, b1: F, p: F) -> bool:
    """Whether [a0, a1] meets [b0 + k p, b1 + k p] for some integer k."""
    return ceil((a0 - b1) / p) <= floor((a1 - b0) / p)


def _axis_distance(x: F, b0: F, b1: F, p: F) -> F:
    """The least distance from x to an image of [b0, b1]."""
    k = floor((x - b0) / p)  # the image starting at or left of x, and the next one
    best = None
    for j in (k - 1, k, k + 1):
        lo, hi = b0 + j * p, b1 + j * p
        d = lo - x if x < lo else (x - hi if x > hi else F(0))
        best = d if best is None or d < best else best
    assert best is not None
    return best


class Model:
    """The torus, in exact arithmetic: each id's box as given."""

    def __init__(self, period: BoxT) -> None:
        x0, y0, x1, y1 = period
        self.x0, self.y0 = F(x0), F(y0)
        self.w, self.h = F(x1) - F(x0), F(y1) - F(y0)
        self.boxes: dict[int, tuple[F, F, F, F]] = {}

    def set(self, entity: int, box: BoxT) -> None:
        self.boxes[entity] = tuple(F(c) for c in box)  # type: ignore[assignment]

    def meets(self, a: tuple[F, F, F, F], b: tuple[F, F, F, F]) -> bool:
        return _overlap(a[0], a[2], b[0], b[2], self.w) and _overlap(a[1], a[3], b[1], b[3], self.h)

    def pairs(self) -> list[tuple[int, int]]:
        ids = sorted(self.boxes)
        return [
            (a, b) for i, a in enumerate(ids) for b in ids[i + 1:]
            if self.meets(self.boxes[a], self.boxes[b])
        ]

    def query(self, box: BoxT) -> list[int]:
        q = tuple(F(c) for c in box)
        return sorted(e for e, b in self.boxes.items() if self.meets(q, b))  # type: ignore[arg-type]

    def distance(self, entity: int, x: float, y: float) -> float:
        b = self.boxes[entity]
        dx = _axis_distance(F(x), b[0], b[2], self.w)
        dy = _axis_distance(F(y), b[1], b[3], self.h)
        return math.hypot(float(dx), float(dy))

    def radius(self, x: float, y: float, r: float) -> list[int]:
        return sorted(e for e in self.boxes if self.distance(e, x, y) <= r)

    def nearest(self, x: float, y: float, k: int) -> list[int]:
        return [e for _, e in sorted((self.distance(e, x, y), e) for e in self.boxes)[:k]]

    def canonical(self, entity: int) -> tuple[F, F, F, F]:
        x0, y0, x1, y1 = self.boxes[entity]
        sx = floor((x0 - self.x0) / self.w) * self.w
        sy = floor((y0 - self.y0) / self.h) * self.h
        return x0 - sx, y0 - sy, x1 - sx, y1 - sy


@st.composite
def scenes(draw: st.DrawFn) -> tuple[BoxT, list[tuple[str, int, BoxT]]]:
    """A period and a history of inserts, moves and removes of boxes on its grid: most near
    the period, some many periods away, widths from 0 to exactly half the period."""
    period = draw(st.sampled_from(PERIODS))
    x0, y0, x1, y1 = period
    gx, gy = (x1 - x0) / 64, (y1 - y0) / 64

    def box() -> BoxT:
        far = draw(st.sampled_from([(-1, 2), (-1, 2), (-300, 300)]))
        mx = draw(st.integers(64 * far[0], 64 * far[1]))
        my = draw(st.integers(64 * far[0], 64 * far[1]))
        wx = draw(st.sampled_from([0, 1, 3, 10, 32]) | st.integers(0, 32))
        wy = draw(st.sampled_from([0, 1, 3, 10, 32]) | st.integers(0, 32))
        return (x0 + mx * gx, y0 + my * gy, x0 + (mx + wx) * gx, y0 + (my + wy) * gy)

    ops: list[tuple[str, int, BoxT]] = []
    live: set[int] = set()
    for _ in range(draw(st.integers(1, 30))):
        entity = draw(st.integers(0, 12))
        if entity not in live:
            ops.append(("insert", entity, box()))
            live.add(entity)
        elif draw(st.booleans()):
            ops.append(("move", entity, box()))
        else:
            ops.append(("remove", entity, (0.0, 0.0, 0.0, 0.0)))
            live.discard(entity)
    return period, ops


def _apply(tree: QuadTree, model: Model, ops: list[tuple[str, int, BoxT]], how: int) -> None:
    for op, entity, box in ops:
        if op == "remove":
            tree.remove(entity)
            del model.boxes[entity]
            continue
        model.set(entity, box)
        if op == "insert":
            if how == 0:
                tree.insert(entity, box)
            elif how == 1:
                tree.insert_many([entity], [box])
            else:
                tree.insert_records([(*box, entity)])
        elif how == 0:
            tree.move(entity, box)
        elif how == 1:
            tree.move_many([entity], [box], atomic=entity % 2 == 0)
        else:
            tree.move_records([(*box, entity)])
        tree.check()


@both
@settings(max_examples=150, deadline=None)
@given(scene=scenes(), how=st.integers(0, 2), threshold=st.sampled_from([1, 2, 16]),
       data=st.data())
def test_every_answer_is_the_torus_model(
    cls: type[QuadTree],
    scene: tuple[BoxT, list[tuple[str, int, BoxT]]], how: int, threshold: int,
    data: st.DataObject,
) -> None:
    period, ops = scene
    tree = cls(wrap=period, threshold=threshold, max_depth=4)
    model = Model(period)
    _apply(tree, model, ops, how)
    x0, y0, x1, y1 = period
    w, h = x1 - x0, y1 - y0
    # The boxes, canonical.
    assert list(tree) == sorted(model.boxes)
    for entity in model.boxes:
        assert tuple(F(c) for c in tree[entity]) == model.canonical(entity)
    # Pairs, each once, sorted, in all three shapes.
    pairs = model.pairs()
    assert tree.find_all_intersections() == pairs
    assert list(tree.find_all_intersections_array()) == [e for p in pairs for e in p]
    some = data.draw(st.sets(st.integers(0, 13)))
    assert tree.find_intersections_for(some) == [p for p in pairs if p[0] in some or p[1] in some]
    for entity in model.boxes:
        assert tree.query_entity(entity) == sorted(
            {a if b == entity else b for a, b in pairs if entity in (a, b)}
        )
    # Window queries: any size (as wide as the period or wider covers the axis), anywhere.
    gx, gy = w / 64, h / 64
    for _ in range(3):
        mx = data.draw(st.integers(-64 * 5, 64 * 5))
        my = data.draw(st.integers(-64 * 5, 64 * 5))
        wx = data.draw(st.sampled_from([0, 1, 32, 63, 64, 65, 200]))
        wy = data.draw(st.sampled_from([0, 1, 32, 63, 64, 65, 200]))
        q = (x0 + mx * gx, y0 + my * gy, x0 + (mx + wx) * gx, y0 + (my + wy) * gy)
        assert tree.query(q) == model.query(q), q
        assert tree.query_point(q[0], q[1]) == model.query((q[0], q[1], q[0], q[1]))
    # Radius and nearest: the minimum-image distance.
    points = [
        (x0 + data.draw(st.integers(-64 * 5, 64 * 5)) * gx,
         y0 + data.draw(st.integers(-64 * 5, 64 * 5)) * gy)
        for _ in range(3)
    ]
    half = min(w, h) / 2
    radii = [0.0, half / 8, half / 2, half]
    for px, py in points:
        for r in radii:
            assert tree.query_radius(px, py, r) == model.radius(px, py, r), (px, py, r)
        for k in (1, 3):
            assert tree.nearest(px, py, k) == model.nearest(px, py, k)
            even = [e for e in model.nearest(px, py, len(model.boxes)) if e % 2 == 0]
            near = [e for e in even if model.distance(e, px, py) <= half / 2][:k]
            assert near == tree.nearest(
                px, py, k, where=lambda e: e % 2 == 0, max_distance=half / 2
            )
    offsets, ids = tree.query_radius_many(points, half / 2)
    assert list(ids) == [e for px, py in points for e in model.radius(px, py, half / 2)]
    assert len(offsets) == len(points) + 1
    # The state carries the period.
    for other in (pickle.loads(pickle.dumps(tree)), copy.copy(tree), copy.deepcopy(tree)):
        other.check()
        assert other.wrap == tree.wrap
        assert other.find_all_intersections() == pairs
        assert other.state_hash() == tree.state_hash()


@both
@pytest.mark.parametrize("period", PERIODS)
@pytest.mark.parametrize("shape", [(2, 3), (16, 8)])
def test_hundreds_of_boxes_across_the_seams(
    cls: type[QuadTree], period: BoxT, shape: tuple[int, int]
) -> None:
    # The compiled search carries the images of the boxes that reach a seam down the tree
    # with the boxes: hundreds of them here (the root's list of them long enough to be sorted
    # and swept, and nodes that test each pair), across one seam or both, on the period's
    # grid so that many touch exactly, some identical; moved, and searched again.
    rng = random.Random(31)
    x0, y0, x1, y1 = period
    gx, gy = (x1 - x0) / 64, (y1 - y0) / 64
    tree = cls(wrap=period, threshold=shape[0], max_depth=shape[1])
    model = Model(period)
    for step in range(3):
        for e in range(150):
            mx = rng.choice([rng.randrange(56, 64), rng.randrange(0, 64)])
            my = rng.choice([rng.randrange(56, 64), rng.randrange(0, 64), 63])
            wx, wy = rng.choice([0, 1, 4, 8]), rng.choice([0, 1, 4, 8])
            box = (x0 + mx * gx, y0 + my * gy, x0 + (mx + wx) * gx, y0 + (my + wy) * gy)
            model.set(e, box)
            if step == 0:
                tree.insert(e, box)
            else:
                tree.move(e, box)
        pairs = model.pairs()
        assert len(pairs) > 300
        assert tree.find_all_intersections() == pairs
        assert list(tree.find_all_intersections_array()) == [e for p in pairs for e in p]


@both
def test_a_pair_across_both_seams_at_once(cls: type[QuadTree]) -> None:
    """A box across the right seam at the bottom meets one across the top seam at the left
    through their corner images alone (the shift (-W, +H) of the first): the image set of
    the brief, (-W, 0), (0, -H) and (-W, -H), misses it."""
    tree = cls(wrap=(0, 0, 10, 10))
    tree.insert(1, (9, 0, 11, 1))
    tree.insert(2, (0, 9, 1, 11))
    tree.insert(3, (9.5, 9.5, 10.5, 10.5))  # the corner: across both seams
    tree.insert(4, (5, 5, 5, 5))
    assert tree.find_all_intersections() == [(1, 2), (1, 3), (2, 3)]
    assert tree.query_point(0, 0) == [1, 2, 3]
    assert tree.query_point(10, 10) == [1, 2, 3]
    assert tree.query_point(-10, 30) == [1, 2, 3]


@both
def test_boxes_are_kept_canonical(cls: type[QuadTree]) -> None:
    tree = cls(wrap=Box(-5, 10, 5, 30))
    tree.insert(1, (5, 30, 6, 31))  # the min exactly at the seam goes to the period's start
    assert tree[1] == Box(-5, 10, -4, 11)
    tree.insert(2, (-5 - 10 * 1000, 10 - 20 * 7, -4 - 10 * 1000, 11 - 20 * 7))
    assert tree[2] == Box(-5, 10, -4, 11)
    tree.insert(3, (4.5, 29.5, 5.5, 30.5))  # across both seams: kept as it is
    assert tree.get(3) == Box(4.5, 29.5, 5.5, 30.5)
    tree.insert(4, (0, 0, 5, 10))  # exactly half the period each way
    assert tree[4] == Box(0, 20, 5, 30)
    tree.move(4, (-1e6, 0, -1e6, 0))  # zero size, far away
    assert tree[4] == Box(0, 20, 0, 20)
    assert tree.bounds is not None and tree.wrap == Box(-5, 10, 5, 30)
    tree.check()


@both
def test_the_defaults_and_a_plain_tree_far_from_the_seams(cls: type[QuadTree]) -> None:
    """bounds defaults to the wrap box; boxes far from the seams get a plain tree's answers."""
    assert cls(wrap=(0, 0, 100, 50)).bounds == Box(0, 0, 100, 50)
    assert cls((0, 0, 1, 1), wrap=(0, 0, 100, 50)).bounds == Box(0, 0, 1, 1)
    assert cls().wrap is None
    boxes = [(10 + i % 7 * 9, 10 + i // 7 * 4, 14 + i % 7 * 9, 13 + i // 7 * 4) for i in range(40)]
    wrapped, plain = cls(wrap=(0, 0, 100, 50)), cls((0, 0, 100, 50))
    for tree in (wrapped, plain):
        tree.insert_many(range(40), boxes)
    assert wrapped.find_all_intersections() == plain.find_all_intersections()
    for q in [(20, 20, 30, 30), (50, 25, 50, 25), (12, 11, 80, 12)]:
        assert wrapped.query(q) == plain.query(q)
        assert wrapped.query_radius(q[0], q[1], 5) == plain.query_radius(q[0], q[1], 5)
        assert wrapped.nearest(q[0], q[1], 4) == plain.nearest(q[0], q[1], 4)


@both
@pytest.mark.parametrize("wrap", [
    (0, 0, 0, 1), (0, 0, 1, 0), (0, 0, -1, 1), (0, 0, math.inf, 1), (0, 0, math.nan, 1),
    (-1e308, 0, 1e308, 1), (0, 0, 1), "box", 5,
])
def test_bad_periods_are_refused(cls: type[QuadTree], wrap: object) -> None:
    with pytest.raises(ValueError, match=r"wrap must be a box \(x0, y0, x1, y1\) of finite"):
        cls(wrap=wrap)  # type: ignore[arg-type]


@both
def test_boxes_wider_than_half_the_period_are_refused(cls: type[QuadTree]) -> None:
    tree = cls(wrap=(0, 0, 10, 20))
    tree.insert(1, (0, 0, 1, 1))
    text = r"entity 2: box \(0\.0, 0\.0, 5\.5, 1\.0\) is wider than half the period .*5\.0.*10\.0"
    with pytest.raises(ValueError, match=text):
        tree.insert(2, (0, 0, 5.5, 1))
    with pytest.raises(ValueError, match=r"entity 2: box .* wider than half"):
        tree.insert_many([3, 2], [(0, 0, 1, 1), (0, 0, 1, 10.5)])
    with pytest.raises(ValueError, match=r"entity 1: box .* wider than half"):
        tree.move(1, (3, 3, 9, 4))
    with pytest.raises(ValueError, match=r"entity 1: box .* wider than half"):
        tree.move_many([1], [(3, 3, 9, 4)])
    with pytest.raises(ValueError, match=r"entity 1: box .* wider than half"):
        tree.move_records([(3.0, 3.0, 9.0, 4.0, 1)])
    with pytest.raises(ValueError, match=r"entity 4: box .* wider than half"):
        tree.insert_records([(3.0, 3.0, 9.0, 4.0, 4)])
    with pytest.raises(KeyError):  # the id before the box, as a plain tree checks them
        tree.move(9, (3, 3, 9, 4))
    assert list(tree) == [1] and tree[1] == Box(0, 0, 1, 1)
    tree.check()


@both
def test_move_many_undoes_on_a_refusal(cls: type[QuadTree]) -> None:
    tree = cls(wrap=(0, 0, 10, 10))
    tree.insert_many([1, 2], [(1, 1, 2, 2), (3, 3, 4, 4)])
    with pytest.raises(ValueError, match="entity 2"):
        tree.move_many([1, 2], [(19, 19, 21, 21), (0, 0, 9, 9)])
    assert tree[1] == Box(1, 1, 2, 2)
    with pytest.raises(ValueError, match="moves before it stand"):
        tree.move_many([1, 2], [(19, 19, 21, 21), (0, 0, 9, 9)], atomic=False)
    assert tree[1] == Box(9, 9, 11, 11)
    tree.check()


@both
def test_radii_over_half_the_smaller_period_are_refused(cls: type[QuadTree]) -> None:
    tree = cls(wrap=(0, 0, 10, 4))
    tree.insert(1, (1, 1, 2, 2))
    assert tree.query_radius(0, 0, 2.0) == [1]
    text = r"radius 2\.5 is over half the smaller period \(2\.0\) .* through two of its images"
    with pytest.raises(ValueError, match=text):
        tree.query_radius(0, 0, 2.5)
    with pytest.raises(ValueError, match=text):
        tree.query_radius_many([(0, 0)], 2.5)
    with pytest.raises(ValueError, match=r"point 1: radius 3\.0 is over half"):
        tree.query_radius_many([(0, 0), (1, 1)], [1.0, 3.0])


@both
def test_a_tiny_period(cls: type[QuadTree]) -> None:
    """A period of 1e-3 (not a float multiple of its coordinates): every box is kept
    canonical and within the limit, and a pair across the seam is found."""
    tree = cls(wrap=(0, 0, 1e-3, 1e-3))
    tree.insert(1, (0.00095, 0.0001, 0.00105, 0.0002))
    tree.insert(2, (0.00001, 0.00015, 0.00002, 0.00016))
    tree.insert(3, (-7.0005, 3.0005, -7.0004, 3.0006))
    tree.check()
    assert tree.find_all_intersections() == [(1, 2)]
    assert 1 in tree.query_point(0.0, 0.00015)
    for entity in tree:
        assert 0.0 <= tree[entity].min_x < 1e-3


@both
def test_extreme_coordinates(cls: type[QuadTree]) -> None:
    """A zero-size box near the float range has an image in the period; a box whose
    distance from the period is past the float range is refused, naming it."""
    tree = cls(wrap=(0, 0, 10, 10))
    tree.insert(1, (1e300, -1e300, 1e300, -1e300))
    tree.insert(2, (1.7e308, 1.7e308, 1.7e308, 1.7e308))
    tree.check()
    box = tree[1]
    assert 0 <= box.min_x < 10 and 0 <= box.min_y < 10 and box.min_x == box.max_x
    assert tree[2].min_x == math.fmod(1.7e308, 10)
    assert tree.query_point(1e300, -1e300) == [1]
    with pytest.raises(ValueError, match="wider than half"):
        tree.insert(3, (1e300, 0, 1e300 * (1 + 2**-50), 1))
    far = cls(wrap=(-1e308, 0, -1e308 + 1e300, 10))
    with pytest.raises(ValueError, match=r"entity 4: box .* has no image in the period"):
        far.insert(4, (1.7e308, 0, 1.7e308, 0))
    assert len(far) == 0


def _images(model: Model, entity: int, reach: int) -> list[BoxT]:
    """The images of an entity's box, ``reach`` periods either way."""
    x0, y0, x1, y1 = model.canonical(entity)
    return [
        (float(x0 + k * model.w), float(y0 + j * model.h),
         float(x1 + k * model.w), float(y1 + j * model.h))
        for k in range(-reach, reach + 1) for j in range(-reach, reach + 1)
    ]


def _model_hits(model: Model, hit: Callable[[BoxT], float | None]) -> list[tuple[int, float]]:
    """(entity, t) of the least t over every image within 8 periods, by t then id."""
    best: dict[int, float] = {}
    for entity in model.boxes:
        times = [t for image in _images(model, entity, 8) if (t := hit(image)) is not None]
        if times:
            best[entity] = min(times)
    return sorted(best.items(), key=lambda h: (h[1], h[0]))


@both
@settings(max_examples=60, deadline=None)
@given(scene=scenes(), data=st.data())
def test_casts_follow_the_segment_across_the_seams(
    cls: type[QuadTree],
    scene: tuple[BoxT, list[tuple[str, int, BoxT]]], data: st.DataObject
) -> None:
    """raycast, cast_box and their _first forms against every image of every box: t is
    the least over the images, continuous over the whole segment, however many seams it
    crosses (up to a few periods from the period here)."""
    period, ops = scene
    tree = cls(wrap=period, threshold=2, max_depth=4)
    model = Model(period)
    _apply(tree, model, ops, 0)
    x0, y0, x1, y1 = period
    gx, gy = (x1 - x0) / 64, (y1 - y0) / 64

    def point() -> tuple[float, float]:
        return (x0 + data.draw(st.integers(-64 * 3, 64 * 3)) * gx,
                y0 + data.draw(st.integers(-64 * 3, 64 * 3)) * gy)

    for _ in range(2):
        (ax, ay), (bx, by) = point(), point()
        hits = _model_hits(model, partial(floats_segment_entry, x0=ax, y0=ay, x1=bx, y1=by))
        assert tree.raycast(ax, ay, bx, by) == hits
        assert tree.raycast_first(ax, ay, bx, by) == (hits[0] if hits else None)
        odd = [h for h in hits if h[0] % 2]
        assert tree.raycast_first(ax, ay, bx, by, where=lambda e: e % 2) == (
            odd[0] if odd else None
        )
        bw, bh = data.draw(st.integers(0, 40)) * gx, data.draw(st.integers(0, 40)) * gy
        moving = (ax, ay, ax + bw, ay + bh)
        dx, dy = bx - ax, by - ay
        hits = _model_hits(model, partial(floats_sweep_time, moving, dx, dy))
        assert tree.cast_box(moving, dx, dy) == hits
        assert tree.cast_box_first(moving, dx, dy) == (hits[0] if hits else None)


@both
def test_a_ray_across_many_seams(cls: type[QuadTree]) -> None:
    """A ray across three periods meets one box at each of its images, first at the
    first; a cast across more cells than the limit is refused, saying why."""
    tree = cls(wrap=(0, 0, 10, 10))
    tree.insert(1, (4, 4, 6, 6))
    assert tree.raycast(0, 5, 40, 5) == [(1, 0.1)]
    assert tree.raycast(-28, 5, 0, 5) == [(1, 0.0 + 2 / 28)]
    assert tree.raycast_first(9, 5, 12, 5) is None
    assert tree.cast_box((4.5, 9, 5.5, 11), 0, -20) == [(1, 0.15)]
    assert tree.cast_box_first((4.5, 7, 5.5, 9), 0, 20) == (1, 0.25)
    with pytest.raises(ValueError, match=r"a cast across .* cells .* at most 100000"):
        tree.raycast(0, 0, 1e7, 1)


@both
def test_the_state(cls: type[QuadTree]) -> None:
    """The period travels in the state under "wrap"; a state without it is a plain tree's;
    a bad period or a box too wide for it is refused, the tree as it was."""
    tree = cls(wrap=(0, 0, 10, 10))
    tree.insert(1, (9, 9, 11, 11))
    state = tree.__getstate__()
    assert state["wrap"] == (0.0, 0.0, 10.0, 10.0)
    plain = cls((0, 0, 10, 10))
    plain.insert(1, (9, 9, 11, 11))
    assert "wrap" not in plain.__getstate__()
    assert plain.state_hash() != tree.state_hash()
    other = cls()
    other.__setstate__(state)
    assert other.wrap == Box(0, 0, 10, 10) and other.query_point(0, 0) == [1]
    for bad, text in (((0, 0, 0, 10), "wrap must be a box"), ((0, 0, 3, 10), "wider than half")):
        target = cls((0, 0, 1, 1))
        with pytest.raises(ValueError, match=f"QuadTree state: .*{text}"):
            target.__setstate__({**state, "wrap": bad})
        assert target.wrap is None and target.bounds == Box(0, 0, 1, 1)
