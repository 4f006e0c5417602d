"""The compiled core's speed and memory targets for the index alone: one command, one table.

    python -m bench native                 # every target at the targets' sizes (~2 min)
    python -m bench native --c-box-new     # also: what installing _box_new would gain
    python -m bench native --quick         # a smoke run of a few seconds (the test suite)

Figures, and where the time goes for each target missed:
``bench/results/amd-epyc-2026-11-24/native.md``.

Sections, each measured in this one run (the targets table at the end judges them):

- **frames** (N = 10,000, then N = 100,000): the benchmark world (``bench/world.py``: side
  ``40 * sqrt(N)``, boxes 4-16 wide, speeds up to 2 per axis per frame, uniform, everything
  moving) steps untimed; then every contender, in an order that rotates frame by frame,
  brings its index up to date and finds every intersecting pair. Ratios are the median over
  frames of the per-frame ratio (the two were timed within milliseconds of each other, so the
  shared machine's drift cancels). Contenders:

  - ``reference``: the pure-Python ``ecs_spatial.quadtree.QuadTree`` (leaves of 64, its best
    when everything moves), ``move_many`` of a generator of tuples made from the world's lists
    in the timed region, ``find_all_intersections()``;
  - ``compiled, tuples``: the compiled class, fed the same way;
  - ``compiled, numpy``: the positions as a game keeping them in numpy would have them (an
    (N, 4) float64 array, copied from the world's lists untimed, as for every numpy-fed
    contender); boxes = positions + sizes, one vector add, then ``move_many`` of the id and
    box buffers, pairs as ``array('q')`` (``find_all_intersections_array``);
  - ``numpy sweep``: sort on x, then one vectorised comparison of each box with the box
    ``d`` places further in x order, for d = 1, 2, ... while any still overlap in x, filtered
    on y; the pairs sorted as the index sorts them. The strongest numpy sweep we wrote (about 4
    times faster at N = 10,000 than ``numpy sweep, lists``, the one this file used before,
    which builds every x-candidate pair with ``searchsorted`` + ``repeat``; kept for comparison);
  - ``pymunk batch, numpy``: ``bench/adapters.py``'s space of sensor boxes, set from the same
    numpy positions with ``pymunk.batch.set_space_bodies``, ``space.step``, the pairs read
    with ``get_space_arbiters`` (``PymunkContender.pairs``); ``pymunk batch, lists``:
    ``PymunkContender.update`` as it is, converting the world's lists each frame.

  Answers are checked on the first frames: every exact contender's pairs equal the
  reference's; pymunk decides contact with its own narrow phase, so only its count is shown.
- **queries** (N = 100,000, leaves of 16): a culling view (``bench.queries.WINDOW`` square,
  ~1,000 boxes inside) and ``query_radius`` (``bench.queries.RADIUS``) from random points,
  200 of each; each repetition times both classes on the same queries in alternating order.
- **moves** (N = 10,000, compiled): the same 10,000 moves (every box to its next frame's
  box) by a loop of ``move(e, Box(...))`` (the natural path), a loop of ``move(e, (x0, y0,
  x1, y1))``, ``move_many`` of a list of tuples, and ``move_many`` of ``array('q')`` ids and
  ``array('d')`` coordinates (the fastest path); each path is given its input in the container
  it takes, built before the timing; the loops build their box or tuple inside it.
  ``--c-box-new`` adds the natural loop with ``Box.__new__`` replaced by the core's
  ``_box_new`` (monkeypatched for that row only, then restored), and ``Box(...)`` alone.
- **memory** (N = 100,000, leaves of 16): the bytes per entity that tracemalloc sees for an
  index built by ``insert_many``, by a loop of ``insert``, and by ``insert_many`` followed by a
  frame (every box moved, all pairs found: the pair search keeps its working memory). The C
  core allocates only through ``PyMem_*`` (``_cquadtree.c``), which tracemalloc traces; the
  table checks that what it saw covers at least the slot arrays (52 bytes a slot).

Peers that are not installed (the ``bench`` extra) are skipped, and their targets say so.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import random
import statistics
import time
import tracemalloc
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bench.harness import median_ratio, rotated, time_in_turn
from bench.queries import RADIUS, WINDOW
from bench.record import add_output_options, machine, markdown_row, markdown_table, saved
from bench.world import Step, World
from ecs_spatial import Box, PyQuadTree

cq: Any  # the compiled module, or None in a pure-Python build
try:
    cq = importlib.import_module("ecs_spatial._cquadtree")
except ImportError:  # pragma: no cover - a build without a compiler
    cq = None

np: Any  # numpy, where the bench extra is installed
try:
    np = importlib.import_module("numpy")
except ImportError:  # pragma: no cover
    np = None

Pairs = list[tuple[int, int]]
#: Bytes per slot of the compiled core's parallel arrays: id 8, box 32, node, next, prev 4 each.
SLOT_BYTES = 52


# -- frames -----------------------------------------------------------------------------------


@dataclass
class Now:
    """What a contender's frame is given: the world after its step, and the numpy copy of
    the positions ((N, 4) rows of (x, y, x, y) in ``ids`` order) where numpy is installed."""

    world: World
    moved: list[int]
    positions: Any = None


@dataclass
class Entrant:
    """One way to run a frame here: its frame, how to read its pairs (untimed), its times."""

    name: str
    frame: Callable[[Now], object]
    pairs: Callable[[object], Pairs]
    exact: bool = True
    times: list[float] = field(default_factory=list)
    count: int = 0


def _bounds(world: World) -> tuple[float, float, float, float]:
    return (0.0, 0.0, world.side, world.side)


def _list_pairs(result: object) -> Pairs:
    assert isinstance(result, list)
    return sorted(result)


def _array_pairs(result: object) -> Pairs:
    assert isinstance(result, array)
    return sorted(zip(result[0::2], result[1::2], strict=True))


def _numpy_pairs(result: object) -> Pairs:
    both: Any = result
    lo, hi = both
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


def tree_from_lists(cls: Any, name: str, threshold: int) -> Callable[[World], Entrant]:
    def make(world: World) -> Entrant:
        tree = cls(_bounds(world), threshold=threshold)
        ids = world.ids()
        tree.insert_many(ids, [world.box(e) for e in ids])
        move_many = tree.move_many
        find = tree.find_all_intersections

        def frame(now: Now) -> object:
            w = now.world
            xs, ys, ws, hs = w.xs, w.ys, w.ws, w.hs
            moved = now.moved
            move_many(
                moved, ((xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in moved), atomic=False
            )
            return find()

        return Entrant(name, frame, _list_pairs)

    return make


def compiled_numpy(world: World) -> Entrant:
    tree = cq.QuadTree(_bounds(world), threshold=16)
    ids = world.ids()
    tree.insert_many(ids, [world.box(e) for e in ids])
    size = np.array([[0.0, 0.0, world.ws[e], world.hs[e]] for e in ids])
    ids_array = np.array(ids, dtype=np.int64)
    move_many = tree.move_many
    find = tree.find_all_intersections_array

    def frame(now: Now) -> object:
        move_many(ids_array, now.positions + size, atomic=False)
        return find()

    return Entrant("compiled, numpy", frame, _array_pairs)


def _sweep_arrays(world: World) -> tuple[Any, Any, Any]:
    ids = world.ids()
    return (
        np.array(ids, dtype=np.int64),
        np.array([world.ws[e] for e in ids]),
        np.array([world.hs[e] for e in ids]),
    )


def numpy_sweep(world: World) -> Entrant:
    ids, ws, hs = _sweep_arrays(world)

    def frame(now: Now) -> object:
        pos = now.positions
        x0 = pos[:, 0]
        order = np.argsort(x0)
        sx0 = x0[order]
        sx1 = sx0 + ws[order]
        sy0 = pos[:, 1][order]
        sy1 = sy0 + hs[order]
        sid = ids[order]
        firsts: list[Any] = []
        seconds: list[Any] = []
        d = 1
        # Box i against box i + d of the x order, for all i at once: whole-array slices, no
        # gathers; d stops at the largest number of boxes starting inside one box's x extent.
        while d < len(sx0):
            hit = sx0[d:] <= sx1[:-d]
            if not hit.any():
                break
            hit &= sy0[d:] <= sy1[:-d]
            hit &= sy0[:-d] <= sy1[d:]
            k = np.flatnonzero(hit)
            firsts.append(sid[k])
            seconds.append(sid[k + d])
            d += 1
        return _sorted_id_pairs(firsts, seconds)

    return Entrant("numpy sweep", frame, _numpy_pairs)


def _sorted_id_pairs(firsts: list[Any], seconds: list[Any]) -> tuple[Any, Any]:
    a = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    b = np.concatenate(seconds) if seconds else np.zeros(0, dtype=np.int64)
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    by = np.lexsort((hi, lo))
    return lo[by], hi[by]


def numpy_sweep_lists(world: World) -> Entrant:
    ids, ws, hs = _sweep_arrays(world)

    def frame(now: Now) -> object:
        pos = now.positions
        x0 = pos[:, 0]
        order = np.argsort(x0, kind="stable")
        sx0 = x0[order]
        sx1 = sx0 + ws[order]
        sy0 = pos[:, 1][order]
        sy1 = sy0 + hs[order]
        ends = np.searchsorted(sx0, sx1, side="right")
        first = np.arange(len(sx0)) + 1
        counts = np.maximum(ends - first, 0)
        i = np.repeat(np.arange(len(sx0)), counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        j = np.arange(len(i)) - starts + i + 1
        keep = (sy0[j] <= sy1[i]) & (sy0[i] <= sy1[j])
        sid = ids[order]
        return _sorted_id_pairs([sid[i[keep]]], [sid[j[keep]]])

    return Entrant("numpy sweep, lists", frame, _numpy_pairs)


def _pymunk(world: World) -> Any:
    from bench.adapters import PymunkContender

    contender = PymunkContender("batch")
    contender.build(world)
    return contender


def pymunk_batch_lists(world: World) -> Entrant:
    contender = _pymunk(world)
    empty: list[int] = []

    def frame(now: Now) -> object:
        contender.update(now.world, Step(now.moved, empty, empty))
        return contender.pairs()

    return Entrant("pymunk batch, lists", frame, _list_pairs, exact=False)


def pymunk_batch_numpy(world: World) -> Entrant:
    import pymunk.batch

    contender = _pymunk(world)
    ids = world.ids()
    row_of = np.zeros(max(ids) + 1, dtype=np.int64)
    row_of[ids] = np.arange(len(ids))
    rows = row_of[contender._order]  # the space's body order, as rows of the positions
    half = np.array([[world.ws[e] * 0.5, world.hs[e] * 0.5] for e in ids])[rows]
    space = contender._space
    buffer = contender._pos_buffer
    position = pymunk.batch.BodyFields.POSITION

    def frame(now: Now) -> object:
        centres = now.positions[rows, :2] + half
        buffer.set_float_buf(centres.ravel())
        pymunk.batch.set_space_bodies(space, position, buffer)
        space.step(1.0 / 60.0)
        return contender.pairs()

    return Entrant("pymunk batch, numpy", frame, _list_pairs, exact=False)


def run_frames(
    n: int, frames: int, warmup: int, makers: list[Callable[[World], Entrant]], verify: int = 2
) -> dict[str, Entrant]:
    """Time every contender on the same frames, interleaved, the order rotating each frame."""
    world = World(n, seed=1, variant="uniform", moving=1.0)
    contenders = [make(world) for make in makers]
    ids = world.ids()
    for f in range(warmup + frames):
        step = world.step()
        now = Now(world, step.moved)
        if np is not None:  # the game's own numpy copy of the positions: untimed
            xs = np.array(world.xs)[ids]
            ys = np.array(world.ys)[ids]
            now.positions = np.stack([xs, ys, xs, ys], axis=1)
        answers: dict[str, Pairs] = {}
        timed = time_in_turn(f, {c.name: partial(c.frame, now) for c in contenders}, collect=True)
        for c in contenders:
            elapsed, result = timed[c.name]
            if f >= warmup:
                c.times.append(elapsed)
            pairs = c.pairs(result)
            c.count = len(pairs)
            if f < verify and c.exact:
                answers[c.name] = pairs
        first = next(iter(answers.values()), None)
        for name, pairs in answers.items():
            if pairs != first:
                raise SystemExit(f"frame {f}: {name} disagrees with {next(iter(answers))}")
    return {c.name: c for c in contenders}


def frame_ratio(a: Entrant, b: Entrant) -> float:
    """The median over frames of a's time / b's time in the same frame."""
    return median_ratio(a.times, b.times)


def print_frames(title: str, contenders: dict[str, Entrant], base: str) -> None:
    print(f"\n## {title}\n")
    print(markdown_table(
        ["contender", "median ms/frame", f"/ {base} (median of per-frame ratios)", "pairs"],
        (
            [c.name, f"{statistics.median(c.times) * 1e3:.3f}",
             f"{frame_ratio(c, contenders[base]):.3f}",
             f"{c.count:,}" + ("" if c.exact else " (own narrow phase)")]
            for c in contenders.values()
        ),
    ))


# -- queries ----------------------------------------------------------------------------------


def run_queries(n: int, reps: int, count: int = 200) -> dict[str, dict[str, float]]:
    """Median over repetitions of the mean us per query, per case and class."""
    world = World(n, seed=2, variant="uniform", moving=1.0)
    ids = world.ids()
    boxes = [world.box(e) for e in ids]
    rng = random.Random(3)
    side = world.side
    window = min(WINDOW, side)
    views = []
    for _ in range(count):
        x, y = rng.uniform(0, side - window), rng.uniform(0, side - window)
        views.append((x, y, x + window, y + window))
    points = [(rng.uniform(0, side), rng.uniform(0, side)) for _ in range(count)]
    trees: dict[str, Any] = {}
    for name, cls in (("reference", PyQuadTree), ("compiled", cq.QuadTree if cq else None)):
        if cls is not None:
            tree = cls((0.0, 0.0, side, side))
            tree.insert_many(ids, boxes)
            trees[name] = tree
    if len(trees) == 2:  # the same answers, or the figures mean nothing
        for v, (x, y) in zip(views[:20], points[:20], strict=True):
            a, b = trees.values()
            assert sorted(a.query(v)) == sorted(b.query(v))
            assert sorted(a.query_radius(x, y, RADIUS)) == sorted(b.query_radius(x, y, RADIUS))
    cases: dict[str, Callable[[Any], object]] = {
        "culling view": lambda t: [t.query(v) for v in views],
        "query_radius": lambda t: [t.query_radius(x, y, RADIUS) for x, y in points],
    }
    times: dict[str, dict[str, list[float]]] = {c: {t: [] for t in trees} for c in cases}
    for rep in range(reps):
        for label, case in cases.items():
            runners = {name: partial(case, tree) for name, tree in trees.items()}
            for name, (seconds, _) in time_in_turn(rep, runners, collect=True).items():
                times[label][name].append(seconds / count)
    return {
        label: {name: statistics.median(ts) * 1e6 for name, ts in by.items()}
        for label, by in times.items()
    }


# -- moves ------------------------------------------------------------------------------------


@contextlib.contextmanager
def c_box_new() -> Iterator[None]:
    """``Box.__new__`` is the core's ``_box_new`` inside the block (what geometry would do if
    it installed it), the reference's own afterwards."""
    original = Box.__dict__["__new__"]
    setattr(Box, "__new__", staticmethod(cq._box_new))  # noqa: B010 - mypy refuses the plain form
    try:
        yield
    finally:
        setattr(Box, "__new__", original)  # noqa: B010


def run_moves(n: int, reps: int, with_c_box_new: bool) -> dict[str, float]:
    """Median ms of each way to make the same n moves on the compiled tree."""
    world = World(n, seed=4, variant="uniform", moving=1.0)
    ids = world.ids()
    tree = cq.QuadTree(_bounds(world), threshold=16)
    tree.insert_many(ids, [world.box(e) for e in ids])
    frames = []  # two frames of boxes: the moves alternate between them, each a real change
    for _ in range(2):
        world.step()
        boxes = [world.box(e) for e in ids]
        frames.append(
            (
                [(e, *b) for e, b in zip(ids, boxes, strict=True)],
                boxes,
                array("d", [c for b in boxes for c in b]),
            )
        )
    id_buffer = array("q", ids)
    move = tree.move
    move_many = tree.move_many

    def natural(k: int) -> None:
        for e, x0, y0, x1, y1 in frames[k][0]:
            move(e, Box(x0, y0, x1, y1))

    def natural_c(k: int) -> None:
        with c_box_new():
            natural(k)

    def tuples(k: int) -> None:
        for e, x0, y0, x1, y1 in frames[k][0]:
            move(e, (x0, y0, x1, y1))

    def boxes_alone(k: int) -> None:
        for _, x0, y0, x1, y1 in frames[k][0]:
            Box(x0, y0, x1, y1)

    def boxes_alone_c(k: int) -> None:
        with c_box_new():
            boxes_alone(k)

    paths: dict[str, Callable[[int], None]] = {
        "loop of move(e, Box(...))": natural,
        "loop of move(e, (x0, y0, x1, y1))": tuples,
        "move_many(ids, list of tuples)": lambda k: move_many(ids, frames[k][1], atomic=False),
        "move_many(array('q'), array('d'))": lambda k: move_many(
            id_buffer, frames[k][2], atomic=False
        ),
    }
    if with_c_box_new:
        paths["loop of move(e, Box(...)), Box.__new__ = _box_new"] = natural_c
        paths["Box(...) alone, no move"] = boxes_alone
        paths["Box(...) alone, Box.__new__ = _box_new"] = boxes_alone_c
    times: dict[str, list[float]] = {p: [] for p in paths}
    names = list(paths)
    for rep in range(reps + 1):  # the first round warms up
        for k in (0, 1):
            for name in rotated(names, rep):
                move_many(id_buffer, frames[1 - k][2], atomic=False)  # from the other frame
                gc.collect()
                start = time.perf_counter()
                paths[name](k)
                if rep:
                    times[name].append(time.perf_counter() - start)
    tree.check()
    return {p: statistics.median(ts) * 1e3 for p, ts in times.items()}


# -- memory -----------------------------------------------------------------------------------


def run_memory(n: int) -> dict[str, dict[str, float]]:
    """Bytes per entity that tracemalloc sees, per class and way of building."""
    world = World(n, seed=1, variant="uniform", moving=1.0)
    ids = world.ids()
    boxes = [world.box(e) for e in ids]
    world.step()
    later = [world.box(e) for e in ids]
    out: dict[str, dict[str, float]] = {}
    for name, cls in (("reference", PyQuadTree), ("compiled", cq.QuadTree if cq else None)):
        if cls is None:
            continue
        out[name] = {}
        for how in ("insert_many", "insert loop", "insert_many + a frame"):
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            tree = cls((0.0, 0.0, world.side, world.side))
            if how == "insert loop":
                for e, b in zip(ids, boxes, strict=True):
                    tree.insert(e, b)
            else:
                tree.insert_many(ids, boxes)
            if how.endswith("frame"):
                tree.move_many(ids, later, atomic=False)
                pairs = tree.find_all_intersections()
                del pairs
                gc.collect()
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            out[name][how] = (after - before) / n
            del tree
    return out


# -- the targets ------------------------------------------------------------------------------


@dataclass
class Target:
    what: str
    figure: float | None  # None: not measured (a peer missing)
    limit: float
    at_most: bool  # figure <= limit (else figure >= limit)
    unit: str = "x"
    note: str = ""

    def row(self) -> str:
        if self.figure is None:
            measured, verdict = "-", f"skipped ({self.note})"
        else:
            ok = self.figure <= self.limit if self.at_most else self.figure >= self.limit
            shown = f"{self.figure:.3f}"
            measured = shown if self.unit == "x" else f"{self.figure:.1f} {self.unit}"
            verdict = "ok" if ok else "MISSED"
        sign = "<=" if self.at_most else ">="
        limit = f"{self.limit:g} {self.unit}" if self.unit != "x" else f"{self.limit:g}"
        return markdown_row([self.what, measured, f"{sign} {limit}", verdict])


def _ratio(cs: dict[str, Entrant], a: str, b: str) -> float | None:
    return frame_ratio(cs[a], cs[b]) if a in cs and b in cs else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench native",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=10_000, help="frames and moves (10,000)")
    parser.add_argument("--big-n", type=int, default=100_000, help="frames against the reference")
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--big-frames", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--queries-n", type=int, default=100_000)
    parser.add_argument("--memory-n", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=9, help="repetitions of queries and moves")
    parser.add_argument(
        "--c-box-new", action="store_true", help="also time Box.__new__ = _cquadtree._box_new"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.big_n, args.frames, args.big_frames, args.warmup = 1_000, 2_000, 2, 2, 1
        args.queries_n, args.memory_n, args.reps = 2_000, 2_000, 2
    with saved(args, "native", argv):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    print(machine())
    if cq is None:
        print("\nThe compiled core is not built: nothing to measure.")
        return 0
    numpy_makers: list[Callable[[World], Entrant]] = []
    pymunk_missing = "pymunk or the bench extra not installed"
    if np is not None:
        numpy_makers = [compiled_numpy, numpy_sweep, numpy_sweep_lists]
        try:
            importlib.import_module("bench.adapters")
            numpy_makers += [pymunk_batch_numpy, pymunk_batch_lists]
            pymunk_missing = ""
        except ImportError:
            pass
    reference = tree_from_lists(PyQuadTree, "reference", 64)
    tuples = tree_from_lists(cq.QuadTree, "compiled, tuples", 64)

    small = run_frames(args.n, args.frames, args.warmup, [reference, tuples, *numpy_makers])
    print_frames(f"frames, N = {args.n:,} uniform, all moving: {args.frames} frames after "
                 f"{args.warmup} of warm-up", small, "reference")
    big_makers = [reference, tuples, *([compiled_numpy] if np is not None else [])]
    big = run_frames(args.big_n, args.big_frames, 2 if args.big_frames > 2 else 1, big_makers)
    print_frames(f"frames, N = {args.big_n:,} uniform, all moving: {args.big_frames} frames",
                 big, "reference")

    q = run_queries(args.queries_n, args.reps)
    print(f"\n## queries, N = {args.queries_n:,} uniform, leaves of 16: us per query "
          f"(median of {args.reps} repetitions of 200)\n")
    print(markdown_table(
        ["query", "reference", "compiled", "reference / compiled"],
        (
            [label, f"{row['reference']:.2f}", f"{row['compiled']:.2f}",
             f"{row['reference'] / row['compiled']:.1f}"]
            for label, row in q.items()
        ),
    ))

    moves = run_moves(args.n, args.reps, args.c_box_new)
    fastest = moves["move_many(array('q'), array('d'))"]
    print(f"\n## moves, compiled, N = {args.n:,}: ms for every box moved once "
          f"(median of {2 * args.reps})\n")
    print(markdown_table(
        ["path", "ms", "/ move_many of buffers"],
        ([path, f"{ms:.2f}", f"{ms / fastest:.2f}"] for path, ms in moves.items()),
    ))

    mem = run_memory(args.memory_n)
    print(f"\n## memory, N = {args.memory_n:,}, leaves of 16: bytes per entity (tracemalloc)\n")
    print(markdown_table(
        ["built by", "reference", "compiled"],
        (
            [how, f"{mem['reference'][how]:.1f}", f"{mem['compiled'][how]:.1f}"]
            for how in mem["compiled"]
        ),
    ))
    seen = min(mem["compiled"].values()) >= SLOT_BYTES
    print(f"\ntracemalloc sees the C allocations: {'yes' if seen else 'NO'} (at least the "
          f"{SLOT_BYTES} bytes a slot of the parallel arrays)")

    numpy_missing = "" if np is not None else "numpy not installed"
    pm = pymunk_missing or numpy_missing
    at = f"N = {args.n:,}"
    targets = [
        Target(f"{at}, all moving: compiled, numpy / pymunk batch, numpy",
               _ratio(small, "compiled, numpy", "pymunk batch, numpy"), 0.1, True, note=pm),
        Target(f"{at}, all moving: compiled, tuples / pymunk batch, lists",
               _ratio(small, "compiled, tuples", "pymunk batch, lists"), 0.1, True, note=pm),
        Target(f"{at}, all moving: compiled, numpy / numpy sweep",
               _ratio(small, "compiled, numpy", "numpy sweep"), 0.2, True, note=numpy_missing),
        Target(f"N = {args.big_n:,}, all moving: compiled, tuples / reference",
               _ratio(big, "compiled, tuples", "reference"), 0.1, True),
        Target(f"N = {args.big_n:,}, all moving: compiled, numpy / reference",
               _ratio(big, "compiled, numpy", "reference"), 0.1, True, note=numpy_missing),
        *(
            Target(f"N = {args.queries_n:,}: {label}, reference / compiled",
                   row["reference"] / row["compiled"], 5.0, False)
            for label, row in q.items()
        ),
        *(
            Target(f"N = {args.memory_n:,}: compiled, {how}", bpe, 100.0, True, "bytes/entity")
            for how, bpe in mem["compiled"].items()
        ),
        Target(f"{at}: loop of move(e, Box(...)) / move_many of buffers",
               moves["loop of move(e, Box(...))"] / fastest, 2.0, True),
    ]
    print("\n## targets (the index alone)\n")
    if args.quick:
        print("(--quick: sizes far below the targets'; the verdicts mean nothing)\n")
    print(markdown_table(["target", "measured", "limit", "verdict"]))
    for t in targets:
        print(t.row())
    return 0

