"""The compiled index's all-moving frame against the reference, where its fast paths decide.

move_many of buffers on a wrapped tree takes a box that is already canonical as given,
without the reference's copy and canonical step, and find_all_intersections on a wrapped
tree reads only the nodes at the tree's far edges for the boxes that reach a seam. Each
shortcut must give the reference's answer to the bit: these tests drive the compiled class
(buffers) and the reference (lists) side by side with boxes on every boundary the
shortcuts test (a min corner at the period's origin, one float below its end, at its end, a
size of exactly half the period and one float more, -0.0, NaN, infinities, inverted boxes)
and boxes on the seams and the nodes' split lines, comparing each answer, error and state.
"""

from __future__ import annotations

import math
import random
from array import array
from functools import partial
from typing import Any

import pytest

import ecs_spatial
from ecs_spatial.quadtree import QuadTree as PyQuadTree

pytestmark = pytest.mark.skipif(not ecs_spatial.NATIVE, reason="the compiled core is not built")

BoxT = tuple[float, float, float, float]

#: (x0, y0, x1, y1) periods: plain, offset and unequal, tiny, and negative.
PERIODS: list[BoxT] = [
    (0.0, 0.0, 64.0, 64.0),
    (-3.0, 5.0, 9.5, 13.0),
    (0.0, 0.0, 2.0**-10, 2.0**-9),
    (-100.0, -70.0, -20.0, 30.0),
]


def canon(value: object) -> object:
    """``value`` with every float as its exact bits (-0.0 != 0.0), containers kept."""
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, tuple):
        return ("tuple", tuple(canon(v) for v in value))
    if isinstance(value, list):
        return [canon(v) for v in value]
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, array):
        return ("array", value.typecode, value.tolist())
    return value


def outcome(call: Any) -> object:
    """A call's canonical answer, or its error's type and message."""
    try:
        return canon(call())
    except Exception as error:  # the error is the answer here
        return ("raised", type(error).__name__, str(error))


def edge_coord(rng: random.Random, lo: float, hi: float) -> float:
    """A coordinate on or beside a boundary of [lo, hi) (its ends, a float either side, the
    middle and quarter lines where nodes split), or anywhere in or near it."""
    w = hi - lo
    pick = rng.randrange(9)
    if pick == 0:
        return lo
    if pick == 1:
        return math.nextafter(hi, -math.inf)
    if pick == 2:
        return hi
    if pick == 3:
        return math.nextafter(lo, -math.inf)
    if pick == 4:
        k = rng.choice([1, 2, 3, 4, 5, 6, 7]) / 8
        return lo + w * k
    if pick == 5:
        return lo + w * rng.uniform(-2.5, 2.5)
    if pick == 6:
        return -0.0 if lo == 0.0 else lo
    return lo + w * rng.random()


def edge_box(rng: random.Random, period: BoxT) -> BoxT:
    """A box whose min corner is an edge coordinate and whose size is on or beside the
    period's half, small, zero, negative, or not a number at all."""
    x0, y0, x1, y1 = period
    corner = [edge_coord(rng, x0, x1), edge_coord(rng, y0, y1)]
    box = list(corner)
    for axis, w in ((0, x1 - x0), (1, y1 - y0)):
        pick = rng.randrange(8)
        if pick == 0:
            size = w * 0.5
        elif pick == 1:
            size = math.nextafter(w * 0.5, math.inf)
        elif pick == 2:
            size = 0.0
        elif pick == 3:
            size = -w * 0.01
        else:
            size = w * rng.choice([0.01, 0.05, 0.1, 0.2])
        box.append(corner[axis] + size)
    if rng.random() < 0.03:
        box[rng.randrange(4)] = rng.choice([math.nan, math.inf, -math.inf, 1e308])
    return (box[0], box[1], box[2], box[3])


def make_pair(period: BoxT, threshold: int, boxes: list[BoxT]) -> tuple[Any, PyQuadTree]:
    """The compiled tree and the reference, each wrapped on period, holding boxes (ids 1..)."""
    ours = ecs_spatial.QuadTree(threshold=threshold, max_depth=6, wrap=period)
    ref = PyQuadTree(threshold=threshold, max_depth=6, wrap=period)
    ids = list(range(1, len(boxes) + 1))
    ours.insert_many(ids, boxes)
    ref.insert_many(ids, boxes)
    return ours, ref


def small_box(rng: random.Random, period: BoxT) -> BoxT:
    """A valid box, a tenth of the period at most, its min corner anywhere in the period."""
    x0, y0, x1, y1 = period
    w, h = x1 - x0, y1 - y0
    ax, ay = x0 + w * rng.random(), y0 + h * rng.random()
    return (ax, ay, ax + w * 0.1 * rng.random(), ay + h * 0.1 * rng.random())


def assert_same(ours: Any, ref: PyQuadTree) -> None:
    """The same state, bit for bit, and the same pairs, as tuples and as an array."""
    ours.check()
    assert canon(ours.__getstate__()) == canon(ref.__getstate__())
    assert canon(ours.find_all_intersections()) == canon(ref.find_all_intersections())
    assert canon(ours.find_all_intersections_array()) == canon(
        ref.find_all_intersections_array()
    )


@pytest.mark.parametrize("period", PERIODS)
@pytest.mark.parametrize("seed", range(4))
def test_buffered_wrapped_moves_on_the_edges_agree(period: BoxT, seed: int) -> None:
    """move_many of buffers on a wrapped tree, the boxes on the period's edges, a size of
    half the period and one float more, invalid ones among them: the reference's answer,
    error and tree after every call, atomic or not."""
    rng = random.Random(seed)
    n = 120
    ours, ref = make_pair(period, 2, [small_box(rng, period) for _ in range(n)])
    for step in range(25):
        movers = rng.sample(range(1, n + 1), rng.randrange(1, n + 1))
        boxes = [edge_box(rng, period) if rng.random() < 0.6 else small_box(rng, period)
                 for _ in movers]
        atomic = rng.random() < 0.5
        flat = array("d", [c for b in boxes for c in b])
        got = outcome(partial(ours.move_many, array("q", movers), flat, atomic=atomic))
        want = outcome(partial(ref.move_many, movers, boxes, atomic=atomic))
        assert got == want, (step, got, want)
        assert_same(ours, ref)


@pytest.mark.parametrize("period", PERIODS)
@pytest.mark.parametrize("threshold", [1, 3, 16])
def test_wrapped_pairs_across_the_seams_agree(period: BoxT, threshold: int) -> None:
    """find_all_intersections on a wrapped tree with many boxes reaching a seam (and its
    corner), held deep in the tree's far-edge nodes and near the root: the reference's
    pairs, through every frame of moves."""
    rng = random.Random(threshold)
    x0, y0, x1, y1 = period
    w, h = x1 - x0, y1 - y0

    def seam_box() -> BoxT:
        if rng.random() < 0.3:  # a max corner on the seam itself: it fits a far-edge leaf
            sx, sy = w * rng.choice([0.0, 0.01, 0.1]), h * rng.choice([0.0, 0.01, 0.1])
            if rng.random() < 0.5:
                ay = rng.choice([y1 - sy, y0 + (h - sy) * rng.random()])
                return (x1 - sx, ay, x1, y1 if ay == y1 - sy else ay + sy)
            ax = rng.choice([x1 - sx, x0 + (w - sx) * rng.random()])
            return (ax, y1 - sy, x1 if ax == x1 - sx else ax + sx, y1)
        ax = rng.choice([x1 - w * 0.05 * rng.random(), x0 + w * rng.random(),
                         math.nextafter(x1, -math.inf), x0])
        ay = rng.choice([y1 - h * 0.05 * rng.random(), y0 + h * rng.random(),
                         math.nextafter(y1, -math.inf), y0])
        return (ax, ay, ax + w * rng.choice([0.0, 0.01, 0.1, 0.45]),
                ay + h * rng.choice([0.0, 0.01, 0.1, 0.45]))

    n = 300
    ours, ref = make_pair(period, threshold, [seam_box() for _ in range(n)])
    assert_same(ours, ref)
    ids = list(range(1, n + 1))
    for _ in range(6):
        boxes = [seam_box() if rng.random() < 0.5 else small_box(rng, period) for _ in ids]
        ours.move_many(array("q", ids), array("d", [c for b in boxes for c in b]))
        ref.move_many(ids, boxes)
        assert_same(ours, ref)


@pytest.mark.parametrize("period", PERIODS)
@pytest.mark.parametrize("threshold", [1, 4])
@pytest.mark.parametrize("grown", [False, True])
def test_small_boxes_on_the_seams_meet_through_them(
    period: BoxT, threshold: int, grown: bool
) -> None:
    """Small boxes whose max corner lies on a seam (they fit the leaves along the tree's far
    edges, not only the root) meet small boxes whose min corner lies on the period's origin
    across it: every such pair is the reference's, frame after frame. With grown, boxes
    reaching past the seams grow the root, and the seams become split lines inside it."""
    rng = random.Random(threshold)
    x0, y0, x1, y1 = period
    w, h = x1 - x0, y1 - y0

    def frame() -> list[BoxT]:
        boxes: list[BoxT] = []
        for _ in range(40):
            s, t = w * 0.01, h * 0.01
            ay, ax = y0 + (h - 3 * t) * rng.random(), x0 + (w - 3 * s) * rng.random()
            boxes += [(x1 - s, ay, x1, ay + t), (x0, ay + t / 2, x0 + s, ay + 2 * t),
                      (ax, y1 - t, ax + s, y1), (ax + s / 2, y0, ax + 2 * s, y0 + t)]
        return boxes + [small_box(rng, period) for _ in range(80 if grown else 0)]

    boxes = frame()
    ours, ref = make_pair(period, threshold, boxes)
    assert_same(ours, ref)
    ids = list(range(1, len(boxes) + 1))
    for _ in range(3):
        boxes = frame()
        ours.move_many(array("q", ids), array("d", [c for b in boxes for c in b]))
        ref.move_many(ids, boxes)
        assert_same(ours, ref)


@pytest.mark.parametrize("wrapped", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_small_steps_onto_split_lines_agree(wrapped: bool, seed: int) -> None:
    """Boxes on a grid of the deepest nodes' split lines, each frame a step of one grid line:
    a box that stays in its leaf is stored at once, and one that comes to touch its leaf's
    fit bounds (a split line) must leave it, as in the reference. Plain and wrapped, buffered
    moves against the reference's lists, the states and pairs compared every frame."""
    rng = random.Random(seed)
    side, g = 64.0, 0.25  # max_depth 8: the deepest split lines lie 64 / 2**8 apart
    world = (0.0, 0.0, side, side)
    ours = ecs_spatial.QuadTree(threshold=2, max_depth=8, wrap=world) if wrapped else \
        ecs_spatial.QuadTree(world, threshold=2, max_depth=8)
    ref = PyQuadTree(threshold=2, max_depth=8, wrap=world) if wrapped else \
        PyQuadTree(world, threshold=2, max_depth=8)
    n = 150
    corners = [[g * rng.randrange(1, 255), g * rng.randrange(1, 255)] for _ in range(n)]
    sizes = [g * rng.choice([0, 1, 2]) for _ in range(n)]

    def boxes() -> list[BoxT]:
        return [(x, y, x + s, y + s) for (x, y), s in zip(corners, sizes, strict=True)]

    ids = list(range(1, n + 1))
    ours.insert_many(ids, boxes())
    ref.insert_many(ids, boxes())
    for _ in range(12):
        for c in corners:
            axis = rng.randrange(2)
            c[axis] = min(max(c[axis] + g * rng.choice([-1, 1]), g), side - 3 * g)
        frame = boxes()
        ours.move_many(array("q", ids), array("d", [v for b in frame for v in b]))
        ref.move_many(ids, frame)
        assert_same(ours, ref)


@pytest.mark.parametrize("period", PERIODS)
@pytest.mark.parametrize("seed", range(6))
def test_row_read_on_a_torus_refuses_as_the_reference(period: BoxT, seed: int) -> None:
    """``_cmembers.read_rows`` on a torus takes a box canonical as it is without the
    period's full rule: rows of boxes on the period's edges, of half its size and one float
    more, give the reference's moves and the same first refused place."""
    from ecs_spatial import _cmembers, _wrap, arrays
    from ecs_spatial.geometry import Box

    rng = random.Random(seed)
    p = _wrap.period_of(Box(*period))
    n = 200

    def valid(b: BoxT) -> bool:
        return all(-math.inf < v < math.inf for v in b) and b[0] <= b[2] and b[1] <= b[3]

    last = array("d", [v for _ in range(n) for v in small_box(rng, period)])
    rows: list[BoxT] = []
    while len(rows) < n:
        b = edge_box(rng, period) if rng.random() < 0.5 else small_box(rng, period)
        if valid(b):
            rows.append(b)
    now = array("d", [v for b in rows for v in b])
    state: list[Any] = [last.tobytes(), array("q"), {}, 0]
    for entity in range(1, n + 1):
        arrays.link(state, entity - 1, entity)
    answers: list[object] = []
    for read in (arrays.read_rows, _cmembers.read_rows):
        ids, boxes, at = bytearray(), bytearray(), bytearray()
        made, refused = read(now.tobytes(), state[0], state[1], state[2], set(), ids, boxes,
                             at, 0, arrays.checked_row, p)
        answers.append((made, refused, ids[:8 * made], boxes[:32 * made], at[:8 * made]))
    assert answers[0] == answers[1]
