"""Seeded stress test of the QuadTree against a brute-force model.

Random sequences of insert, insert_many, move and remove over several kinds of worlds
(integer grids full of exactly touching boxes, stacks of identical points on split lines,
huge and far-away boxes, clustered boxes, degenerate bounds, and the whole float range:
boxes at +-1.7e308, wider than the range, subnormal, and int coordinates past 2**53 that
only round to floats), checking ``check()`` after every step and every query against brute
force at regular intervals. The test suite runs a few hundred seeds against each QuadTree
class; run it longer from the command line, on ``ecs_spatial.QuadTree`` (the compiled core
when it is built) or with ``--reference`` on the pure-Python reference:

    python tests/stress_quadtree.py --seeds 20000
    python tests/stress_quadtree.py --seeds 20000 --reference

Any failure prints the seed, so that ``--first SEED --seeds 1`` replays it.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ecs_spatial import Box, PyQuadTree, QuadTree, segment_entry

Pair = tuple[int, int]
WORLDS = ("grid", "points", "huge", "clustered", "uniform", "extreme")
MAX = sys.float_info.max
EDGES = (-MAX, -1.7e308, -1e308, -4.5e307, 0.0, 4.5e307, 1e308, 1.6e308, MAX)


def brute_pairs(boxes: dict[int, Box]) -> list[Pair]:
    """Every intersecting pair (a < b), sorted: the definition, by brute force."""
    ids = sorted(boxes)
    return [
        (a, b) for i, a in enumerate(ids) for b in ids[i + 1 :] if boxes[a].intersects(boxes[b])
    ]


def extreme_coordinate(rng: random.Random) -> float:
    """A float anywhere in the finite range, an edge of it, or a subnormal."""
    kind = rng.random()
    if kind < 0.3:
        return rng.choice(EDGES)
    if kind < 0.5:
        return rng.randint(-6, 6) * 5e-324
    if kind < 0.8:
        return rng.uniform(-1.0, 1.0) * MAX
    return rng.uniform(-110, 110)


def raw_box(rng: random.Random, world: str) -> tuple[float, float, float, float]:
    """A box as a caller may pass it: in the extreme world, a third of them with int
    coordinates past 2**53, which the index must round to floats as ``Box`` does."""
    if world == "extreme" and rng.random() < 0.3:
        x0, y0, x1, y1 = (2**53 + rng.randint(-9, 9) for _ in range(4))
        return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
    return (*random_box(rng, world),)


def random_box(rng: random.Random, world: str) -> Box:
    """A box of the given kind of world."""
    x: float
    y: float
    w: float
    h: float
    if world == "extreme":
        a, b = extreme_coordinate(rng), extreme_coordinate(rng)
        c, d = extreme_coordinate(rng), extreme_coordinate(rng)
        return Box(min(a, c), min(b, d), max(a, c), max(b, d))
    if world == "grid":  # small integers: many boxes touch exactly, on split lines too
        x, y = rng.randint(-5, 105), rng.randint(-5, 105)
        w, h = rng.randint(0, 12), rng.randint(0, 12)
    elif world == "points":  # identical points, more than a leaf holds, on split lines
        x, y = rng.choice((25.0, 50.0, 75.0)), rng.choice((25.0, 50.0, 50.0, 75.0))
        w = h = 0.0
    elif world == "huge":  # far outside the bounds, and huge
        x, y = rng.uniform(-1e6, 1e6), rng.uniform(-1e6, 1e6)
        w, h = rng.uniform(0, 1e5), rng.uniform(0, 10)
    elif world == "clustered":
        cx, cy = rng.choice(((20.0, 20.0), (70.0, 40.0), (50.0, 90.0)))
        x, y = rng.gauss(cx, 3.0), rng.gauss(cy, 3.0)
        w, h = rng.uniform(0, 4), rng.uniform(0, 4)
    else:
        x, y = rng.uniform(0, 100), rng.uniform(0, 100)
        w, h = rng.uniform(0, 10), rng.uniform(0, 10)
    return Box(x, y, x + w, y + h)


def check_queries(rng: random.Random, tree: QuadTree, boxes: dict[int, Box], world: str) -> None:
    """Every query of the tree against its brute-force definition."""
    assert tree.find_all_intersections() == brute_pairs(boxes)
    q = random_box(rng, world)
    assert sorted(tree.query(q)) == sorted(e for e, b in boxes.items() if b.intersects(q))
    if world == "extreme":
        x, y = extreme_coordinate(rng), extreme_coordinate(rng)
    else:
        x, y = rng.uniform(-10, 110), rng.uniform(-10, 110)
    assert sorted(tree.query_point(x, y)) == sorted(
        e for e, b in boxes.items() if b.contains_point(x, y)
    )
    r = rng.choice((0.0, 1.0, 5.0, 30.0, 1e154, 1e300, 5e-324, 1e-160))
    assert sorted(tree.query_radius(x, y, r)) == sorted(
        e for e, b in boxes.items() if b.distance_to_point(x, y) <= r
    )
    k = rng.randint(1, 5)
    expected = sorted(boxes, key=lambda e: (boxes[e].distance_to_point(x, y), e))[:k]
    assert tree.nearest(x, y, k) == expected
    if world == "extreme":
        x1, y1 = extreme_coordinate(rng), extreme_coordinate(rng)
    else:
        x1, y1 = rng.uniform(-10, 110), rng.uniform(-10, 110)
    hits = []
    for e, b in boxes.items():
        t = segment_entry(b, x, y, x1, y1)
        if t is not None:
            hits.append((e, t))
    assert tree.raycast(x, y, x1, y1) == sorted(hits, key=lambda hit: (hit[1], hit[0]))
    if boxes:
        e = rng.choice(list(boxes))
        assert sorted(tree.query_entity(e)) == sorted(
            f for f, b in boxes.items() if f != e and b.intersects(boxes[e])
        )
        # A few entities, and half of them.
        for k in (min(3, len(boxes)), (len(boxes) + 1) // 2):
            some = set(rng.sample(list(boxes), k))
            assert tree.find_intersections_for(some) == [
                p for p in brute_pairs(boxes) if p[0] in some or p[1] in some
            ]


def run_seed(seed: int, steps: int = 150, tree_class: type[QuadTree] = QuadTree) -> None:
    """One random history of a ``tree_class`` tree; raises AssertionError on the first
    disagreement."""
    rng = random.Random(seed)
    world = rng.choice(WORLDS)
    bounds = rng.choice((None, Box(0, 0, 100, 100), Box(0, 0, 0, 0), Box(40, 40, 41, 41),
                         Box(1e308, 1e308, 1.7e308, 1.7e308), Box(0, 0, 5e-324, 5e-324)))
    tree = tree_class(
        bounds, threshold=rng.choice((1, 2, 4, 16)), max_depth=rng.choice((0, 1, 3, 8))
    )
    boxes: dict[int, Box] = {}
    for step in range(rng.randint(1, steps)):
        op = rng.random()
        if op < 0.07:
            # A batch (a level loaded at once), often enough to overflow leaves and grow
            # the root in one call.
            size = rng.randint(1, 40)
            raw = {rng.randint(1, 10**6): raw_box(rng, world) for _ in range(size)}
            raw = {e: b for e, b in raw.items() if e not in boxes}
            tree.insert_many(raw, raw.values())
            boxes.update((e, Box(*b)) for e, b in raw.items())
        elif op < 0.45 or not boxes:
            e = rng.randint(1, 10**6)
            if e not in boxes:
                given = raw_box(rng, world)
                boxes[e] = Box(*given)
                tree.insert(e, given)
        elif op < 0.8:
            e = rng.choice(list(boxes))
            given = raw_box(rng, world)
            boxes[e] = Box(*given)
            # Half the moves pass a plain tuple, the cheap form the index also accepts.
            tree.move(e, boxes[e] if rng.random() < 0.5 else given)
        else:
            e = rng.choice(list(boxes))
            del boxes[e]
            tree.remove(e)
        tree.check()
        assert len(tree) == len(boxes)
        assert all(tree[e] == b for e, b in boxes.items())
        assert all(type(v) is float for e in boxes for v in tree[e])
        if step % 10 == 0:
            check_queries(rng, tree, boxes, world)
    check_queries(rng, tree, boxes, world)


def main(argv: list[str] | None = None, run: Callable[..., None] = run_seed) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--reference", action="store_true",
                        help="run the pure-Python reference (default: ecs_spatial.QuadTree)")
    args = parser.parse_args(argv)
    tree_class = PyQuadTree if args.reference else QuadTree
    for seed in range(args.first, args.first + args.seeds):
        try:
            run(seed, tree_class=tree_class)
        except AssertionError:
            print(f"seed {seed} failed (replay: --first {seed} --seeds 1)")
            raise
    print(f"{args.seeds} seeds ok ({tree_class.__module__}.{tree_class.__qualname__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
