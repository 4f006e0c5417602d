"""The compiled core against its targets, for the index alone: frames, queries, the ways to
feed moves, memory.

Each section is a run of the one frame loop, a full garbage collection before each
contender's frame; the targets table at the end judges them:

- frames (uniform, all moving, every pair): the reference (leaves of 64) and the compiled
  class fed tuples or numpy positions (``bench.ours.FEEDS``), the numpy sweeps
  (``bench/baselines.py``) and pymunk's batch path (``bench/adapters.py``);
- queries (still, leaves of 16): 200 culling views and 200 ``query_radius`` a frame;
- moves: the same moves by four of ``bench.ours.FEEDS``, each against ``move_many`` of
  buffers and of tuples;
- memory: bytes per entity after building and after a frame (``bench.peers.memory_one``).
"""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Sequence

from bench import record
from bench.baselines import NumpySweep
from bench.harness import Ask, Contender, Result, run, table, target
from bench.ours import QuadTreeContender
from bench.peers import measure_memory
from bench.queries import WINDOW
from bench.record import markdown_table
from bench.world import World
from ecs_spatial import NATIVE, PyQuadTree

#: The moves' feeds, by the name the tables give them.
MOVES = {
    "loop of move(e, Box(...))": "boxes",
    "loop of move(e, (x0, y0, x1, y1))": "tuples",
    "move_many(ids, list of tuples)": "list",
    "move_many(array('q'), array('d'))": "buffers",
}
MEMORY = ("reference, insert_many", "reference, insert loop", "compiled, insert_many",
          "compiled, insert loop")


def frame_contenders(big: bool) -> tuple[list[Contender], str]:
    """The frames' contenders (``big``: those against the reference alone), and what of the
    ``bench`` extra is missing."""
    cs: list[Contender] = [
        QuadTreeContender("reference", cls=PyQuadTree, threshold=64, bulk=True),
        QuadTreeContender("compiled, tuples", threshold=64, bulk=True),
    ]
    if importlib.util.find_spec("numpy") is None:
        return cs, "numpy not installed"
    cs.append(QuadTreeContender("compiled, numpy", bulk=True, feed="numpy"))
    if big:
        return cs, ""
    cs += [NumpySweep(), NumpySweep(lists=True)]
    try:
        from bench.adapters import PymunkContender
    except ImportError:
        return cs, "pymunk not installed"
    return [*cs, PymunkContender("numpy", "pymunk batch, numpy"),
            PymunkContender("batch", "pymunk batch, lists")], ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = record.command("native", __doc__)
    parser.add_argument("--n", type=int, default=10_000, help="N of the frames and the moves")
    parser.add_argument("--big-n", type=int, default=100_000, help="N of the frames against "
                        "the reference alone")
    parser.add_argument("--frames", type=int, default=30, help="timed frames at --n")
    parser.add_argument("--big-frames", type=int, default=10, help="timed frames at --big-n")
    parser.add_argument("--queries-n", type=int, default=100_000, help="N of the queries")
    parser.add_argument("--memory-n", type=int, default=100_000, help="N of the memory")
    parser.add_argument("--reps", type=int, default=9, help="frames of the queries, moves x 2")
    args = record.parse(parser, argv, quick={
        "n": 1_000, "big_n": 2_000, "frames": 2, "big_frames": 2, "queries_n": 2_000,
        "memory_n": 2_000, "reps": 2})
    with record.saved(args):
        measure(args)
    return 0


def measure(args: argparse.Namespace) -> None:
    print(record.machine())
    if not NATIVE:
        print("\nThe compiled core is not built: nothing to measure.")
        return
    contenders, why = frame_contenders(False)
    small = run("frames", World(args.n), contenders, frames=args.frames, warmup=5, collect=True,
                keep=True)
    print(f"\n## frames, N = {args.n:,} uniform, all moving: {args.frames} frames after 5 of "
          f"warm-up; {small.answers:,.0f} pairs a frame\n\n{table(small)}")
    big = run("frames", World(args.big_n), frame_contenders(True)[0],
              frames=args.big_frames, collect=True, keep=True)
    print(f"\n## frames, N = {args.big_n:,} uniform, all moving: {args.big_frames} frames\n\n"
          f"{table(big)}")

    still = World(args.queries_n, seed=2, moving=0.0)
    queries: dict[str, Result] = {}  # the same 200 queries every frame
    for label, ask in (("culling view", Ask.fixed("view", still.views(200, WINDOW))),
                       ("query_radius", Ask.fixed("radius", still.points(200)))):
        queries[label] = run(label, still, [
            QuadTreeContender("reference", cls=PyQuadTree, bulk=True),
            QuadTreeContender("compiled", bulk=True),
        ], ask, frames=args.reps, warmup=1, collect=True, keep=True)
    print(f"\n## queries, N = {args.queries_n:,} uniform, leaves of 16: us per query (median "
          f"of {args.reps} frames of 200)\n")
    print(markdown_table(["query", "reference", "compiled", "reference / compiled"], (
        [label, f"{r['reference'].ms('answer') * 5:.2f}", f"{r['compiled'].ms('answer') * 5:.2f}",
         f"{r['reference'].ratio(r['compiled'], 'answer'):.1f}"] for label, r in queries.items()
    )))

    moves = run("moves", World(args.n, seed=4), [
        QuadTreeContender(name, bulk=True, feed=feed) for name, feed in MOVES.items()
    ], Ask("update"), frames=2 * args.reps, warmup=1, collect=True)
    fastest = moves["move_many(array('q'), array('d'))"]
    tuples = moves["move_many(ids, list of tuples)"]
    print(f"\n## moves, compiled, N = {args.n:,}: ms for every box moved once (median of "
          f"{2 * args.reps} frames)\n")
    print(markdown_table(["path", "ms", "/ move_many of buffers", "/ move_many of tuples"], (
        [c.name, f"{c.ms():.2f}", f"{c.ratio(fastest):.2f}", f"{c.ratio(tuples):.2f}"]
        for c in moves.contenders
    )))

    print(f"\n## memory, N = {args.memory_n:,}, leaves of 16: bytes per entity (tracemalloc)\n")
    mem = {r["name"]: r for r in measure_memory(MEMORY, args.memory_n, rss=False)["rows"]}
    print("\n" + markdown_table(["built by", "reference", "compiled"], (
        [how, *(f"{mem[f'{cls}, {build}'][key]:.1f}" for cls in ("reference", "compiled"))]
        for how, build, key in (("insert_many", "insert_many", "traced_per_entity"),
                                ("insert loop", "insert loop", "traced_per_entity"),
                                ("insert_many + a frame", "insert_many",
                                 "traced_frame_per_entity"))
    )))

    at = f"N = {args.n:,}, all moving"

    def ratio(r: Result, a: str, b: str) -> float | None:
        return r[a].ratio(r[b]) if r.get(a) and r.get(b) else None

    compiled = [f"compiled, {build}" for build in ("insert_many", "insert loop")]
    rows = [
        target(f"{at}: compiled, numpy / pymunk batch, numpy",
               ratio(small, "compiled, numpy", "pymunk batch, numpy"), 0.1, why_not=why),
        target(f"{at}: compiled, tuples / pymunk batch, lists",
               ratio(small, "compiled, tuples", "pymunk batch, lists"), 0.1, why_not=why),
        target(f"{at}: compiled, numpy / numpy sweep",
               ratio(small, "compiled, numpy", "numpy sweep"), 0.2, why_not=why),
        target(f"N = {args.big_n:,}, all moving: compiled, tuples / reference",
               ratio(big, "compiled, tuples", "reference"), 0.1),
        target(f"N = {args.big_n:,}, all moving: compiled, numpy / reference",
               ratio(big, "compiled, numpy", "reference"), 0.1, why_not=why),
        *(target(f"N = {args.queries_n:,}: {label}, reference / compiled",
                 r["reference"].ratio(r["compiled"], "answer"), 5.0, at_most=False)
          for label, r in queries.items()),
        *(target(f"N = {args.memory_n:,}: {name}{then}, bytes per entity", mem[name][key], 100.0)
          for name in compiled for then, key in (("", "traced_per_entity"),
                                                 (" + a frame", "traced_frame_per_entity"))),
        target(f"N = {args.n:,}: loop of move(e, Box(...)) / move_many of buffers",
               moves["loop of move(e, Box(...))"].ratio(fastest), 2.0),
        target(f"N = {args.n:,}: loop of move(e, Box(...)) / move_many of tuples",
               moves["loop of move(e, Box(...))"].ratio(tuples), 1.5),
    ]
    record.print_targets(rows, args.quick, "targets (the index alone)")
