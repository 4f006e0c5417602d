"""The compiled core against the pure-Python reference (issue 18): frame time and memory.

A frame of the benchmark world (``bench/world.py``: side ``40 * sqrt(N)``, boxes 4-16 wide,
speeds up to 2 per axis per frame, everything moving, uniform): the world steps (not timed),
then each contender, in turn within the same frame, brings its index up to date and finds
every intersecting pair. The caller's boxes are built inside the timed region, as a user's
loop would build them. Reported: the median over the frames after a warm-up, and each
contender's ratio to the pure-Python reference measured in the same run.

Contenders (those whose libraries are missing are skipped):

- ``reference``: ``ecs_spatial.quadtree.QuadTree`` (leaves of 64, its best when everything
  moves), ``move_many(ids, generator of tuples, atomic=False)`` + ``find_all_intersections()``;
- ``compiled, tuples``: the compiled class fed the same generator, pairs as a list of tuples;
- ``compiled, buffers``: ids and boxes as ``array('q')``/``array('d')`` built from the world's
  lists in the timed region, pairs as ``array('q')`` (``find_all_intersections_array``);
- ``compiled, numpy``: the boxes as one float64 array computed with numpy from the world's
  positions (what a numpy-based game would hand over), pairs as ``array('q')``;
- ``pymunk (batch)`` (``bench/peers.py``) and a numpy sort-and-sweep, where installed.

Memory: the bytes per entity that tracemalloc sees for an index of N boxes (the index only:
the boxes are built before the snapshot), for both classes.

    python -m bench.native_bench                 # N = 10,000, 30 frames; memory at 100,000
    python -m bench.native_bench --n 50000 --frames 15 --memory-n 0
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import math
import random
import statistics
import sys
import time
import tracemalloc
from array import array
from collections.abc import Callable
from typing import Any

from bench.world import World
from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

try:
    from ecs_spatial._cquadtree import QuadTree as CQuadTree
except ImportError:  # pragma: no cover - a pure-Python build
    CQuadTree = None  # type: ignore[assignment,misc]

np: Any  # numpy, where the bench extra is installed
try:
    np = importlib.import_module("numpy")
except ImportError:  # pragma: no cover
    np = None

Frame = Callable[[World, list[int]], int]


def _bounds(world: World) -> tuple[float, float, float, float]:
    return (0.0, 0.0, world.side, world.side)


def reference(world: World) -> Frame:
    tree = PyQuadTree(_bounds(world), threshold=64)
    ids = world.ids()
    tree.insert_many(ids, [world.box(e) for e in ids])

    def frame(world: World, moved: list[int]) -> int:
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        tree.move_many(
            moved, ((xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in moved), atomic=False
        )
        return len(tree.find_all_intersections())

    return frame


def compiled_tuples(world: World) -> Frame:
    tree = CQuadTree(_bounds(world), threshold=64)
    ids = world.ids()
    tree.insert_many(ids, [world.box(e) for e in ids])

    def frame(world: World, moved: list[int]) -> int:
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        tree.move_many(
            moved, ((xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in moved), atomic=False
        )
        return len(tree.find_all_intersections())

    return frame


def compiled_buffers(world: World) -> Frame:
    tree = CQuadTree(_bounds(world), threshold=16)
    ids = world.ids()
    tree.insert_many(ids, [world.box(e) for e in ids])
    moved_ids = array("q")
    moved_for: list[int] | None = None

    def frame(world: World, moved: list[int]) -> int:
        nonlocal moved_ids, moved_for
        if moved is not moved_for:  # the world's moving list is the same object each frame
            moved_ids, moved_for = array("q", moved), moved
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        coords = array("d")
        for e in moved:
            x = xs[e]
            y = ys[e]
            coords.extend((x, y, x + ws[e], y + hs[e]))
        tree.move_many(moved_ids, coords, atomic=False)
        return len(tree.find_all_intersections_array()) // 2

    return frame


def compiled_numpy(world: World) -> Frame:
    """Positions kept in numpy arrays by the game itself (the copy from the world's lists is
    not the index's cost, and is made outside the timed region by the driver below)."""
    tree = CQuadTree(_bounds(world), threshold=16)
    ids = world.ids()
    tree.insert_many(ids, [world.box(e) for e in ids])
    size = np.array([[0.0, 0.0, world.ws[e], world.hs[e]] for e in ids])
    ids_array = np.array(ids, dtype=np.int64)

    def frame(world: World, moved: list[int]) -> int:
        boxes = _positions[0] + size  # (x, y, x, y) + (0, 0, w, h), one (N, 4) array
        tree.move_many(ids_array, boxes, atomic=False)
        return len(tree.find_all_intersections_array()) // 2

    return frame


#: The current frame's positions as a game keeping them in numpy would have them: an (N, 4)
#: float64 array of (x, y, x, y) rows, in the world's id order (set by run(), untimed).
_positions: list[Any] = [None]


def numpy_sweep(world: World) -> Frame:
    """Sort-and-sweep on x, vectorised: each box's candidates are the boxes that start
    between its own start and its end (searchsorted), filtered on y."""
    ids = np.array(world.ids(), dtype=np.int64)
    ws = np.array([world.ws[e] for e in world.ids()])
    hs = np.array([world.hs[e] for e in world.ids()])

    def frame(world: World, moved: list[int]) -> int:
        pos = _positions[0]
        x0 = pos[:, 0]
        y0 = pos[:, 1]
        order = np.argsort(x0, kind="stable")
        sx0 = x0[order]
        sx1 = sx0 + ws[order]
        sy0 = y0[order]
        sy1 = sy0 + hs[order]
        ends = np.searchsorted(sx0, sx1, side="right")
        first = np.arange(len(sx0)) + 1
        counts = np.maximum(ends - first, 0)
        i = np.repeat(np.arange(len(sx0)), counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        j = np.arange(len(i)) - starts + i + 1
        keep = (sy0[j] <= sy1[i]) & (sy0[i] <= sy1[j])
        a = ids[order][i[keep]]
        b = ids[order][j[keep]]
        lo = np.minimum(a, b)
        hi = np.maximum(a, b)
        by = np.lexsort((hi, lo))
        return len(lo[by])

    return frame


def pymunk_batch(world: World) -> Frame:
    from bench.peers import PymunkContender

    contender = PymunkContender("batch")
    contender.build(world)

    def frame(world: World, moved: list[int]) -> int:
        contender.update(world, _steps[0])
        return len(contender.pairs())

    return frame


_steps: list[Any] = [None]


def run(n: int, frames: int, warmup: int) -> None:
    world = World(n, seed=1, variant="uniform", moving=1.0)
    contenders: dict[str, Frame] = {"reference": reference(world)}
    if CQuadTree is not None:
        contenders["compiled, tuples"] = compiled_tuples(world)
        contenders["compiled, buffers"] = compiled_buffers(world)
        if np is not None:
            contenders["compiled, numpy"] = compiled_numpy(world)
    if np is not None:
        contenders["numpy sweep"] = numpy_sweep(world)
        with contextlib.suppress(ImportError):  # bench/peers.py needs the whole bench extra
            contenders["pymunk (batch)"] = pymunk_batch(world)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    counts: dict[str, int] = {}
    ids = world.ids()
    for f in range(warmup + frames):
        step = world.step()
        _steps[0] = step
        if np is not None:  # the game's own numpy copy of the positions: untimed
            xs = np.array([world.xs[e] for e in ids])
            ys = np.array([world.ys[e] for e in ids])
            _positions[0] = np.stack([xs, ys, xs, ys], axis=1)
        for name, frame in contenders.items():
            gc.collect()
            start = time.perf_counter()
            counts[name] = frame(world, step.moved)
            elapsed = time.perf_counter() - start
            if f >= warmup:
                times[name].append(elapsed)
    ref = statistics.median(times["reference"])
    print(f"N = {n:,} uniform, everything moving; {frames} frames after {warmup} of warm-up; "
          f"{counts['reference']:,} pairs")
    print(f"{'contender':<22} {'median ms/frame':>16} {'/ reference':>12}  pairs")
    for name, ts in times.items():
        median = statistics.median(ts)
        print(f"{name:<22} {median * 1e3:>16.3f} {median / ref:>12.3f}  {counts[name]:,}")


def _best(call: Callable[[], object], repeat: int = 5) -> float:
    """The fastest of ``repeat`` timings of ``call`` (seconds): the machine is shared."""
    best = math.inf
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def queries(n: int) -> None:
    """Per-query cost on N uniform boxes, each class answering the same queries: culling
    views (a 1/10th-side box), radius 50, nearest (k = 1 and 10), the pairs of 1% of the
    entities (find_intersections_for); and the update paths: one move() per entity with a
    Box built per move (the natural loop), with a tuple, and move_many of buffers."""
    world = World(n, seed=2, variant="uniform", moving=1.0)
    ids = world.ids()
    rng = random.Random(3)
    side = world.side
    views = []
    for _ in range(200):
        x, y = rng.uniform(0, side * 0.9), rng.uniform(0, side * 0.9)
        views.append((x, y, x + side / 10, y + side / 10))
    points = [(rng.uniform(0, side), rng.uniform(0, side)) for _ in range(200)]
    some = rng.sample(ids, max(1, n // 100))
    trees: dict[str, Any] = {}
    for name, cls in (("reference", PyQuadTree), ("compiled", CQuadTree)):
        if cls is not None:
            tree = cls((0.0, 0.0, side, side))
            tree.insert_many(ids, [world.box(e) for e in ids])
            trees[name] = tree
    print(f"N = {n:,} uniform, leaves of 16: us per query (fastest of 5 runs of 200), and "
          "the ratio reference / compiled")
    cases: dict[str, Callable[[Any], object]] = {
        "query (culling view)": lambda t: [t.query(v) for v in views],
        "query_radius r=50": lambda t: [t.query_radius(x, y, 50.0) for x, y in points],
        "nearest k=1": lambda t: [t.nearest(x, y) for x, y in points],
        "nearest k=10": lambda t: [t.nearest(x, y, 10) for x, y in points],
        "find_intersections_for 1%": lambda t: t.find_intersections_for(some),
    }
    for label, case in cases.items():
        row = {name: _best(functools.partial(case, tree)) for name, tree in trees.items()}
        per = 1 if label.startswith("find_") else 200
        cells = "  ".join(f"{name} {row[name] / per * 1e6:9.2f}" for name in row)
        ratio = row["reference"] / row["compiled"] if "compiled" in row else math.nan
        print(f"  {label:<28} {cells}   x{ratio:.1f}")
    if "compiled" not in trees:
        return
    tree = trees["compiled"]
    moved = [(e, world.box(e)) for e in ids]
    flat = array("d", [c for _, b in moved for c in b])
    id_buffer = array("q", ids)

    def boxes_built() -> None:
        move = tree.move
        for e, (x0, y0, x1, y1) in moved:
            move(e, Box(x0, y0, x1, y1))

    def tuples() -> None:
        move = tree.move
        for e, b in moved:
            move(e, b)

    natural = _best(boxes_built)
    plain = _best(tuples)
    buffers = _best(lambda: tree.move_many(id_buffer, flat, atomic=False))
    print(f"  compiled, {n:,} moves in place: move(e, Box(...)) {natural * 1e3:.2f} ms, "
          f"move(e, tuple) {plain * 1e3:.2f} ms, move_many(buffers) {buffers * 1e3:.2f} ms: "
          f"the natural loop is {natural / buffers:.1f} x the fastest path")


def memory(n: int) -> None:
    world = World(n, seed=1, variant="uniform", moving=1.0)
    ids = world.ids()
    boxes = [world.box(e) for e in ids]
    for name, cls in (("reference", PyQuadTree), ("compiled", CQuadTree)):
        if cls is None:
            continue
        for how in ("insert", "insert_many"):
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            tree = cls((0.0, 0.0, world.side, world.side))
            if how == "insert":
                for e, b in zip(ids, boxes, strict=True):
                    tree.insert(e, b)
            else:
                tree.insert_many(ids, boxes)
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            print(f"memory, {name:<9} ({how:<11}) N = {n:,}: {(after - before) / n:6.1f} bytes per "
                  "entity (tracemalloc)")
            del tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--memory-n", type=int, default=100_000)
    parser.add_argument("--queries-n", type=int, default=100_000)
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}")
    if args.frames:
        run(args.n, args.frames, args.warmup)
    if args.queries_n:
        queries(args.queries_n)
    if args.memory_n:
        memory(args.memory_n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
