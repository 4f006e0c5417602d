"""Building an index of N boxes from scratch (a level loaded, a saved game restored), side by
side with the peers in one run.

Each contender builds its index on the benchmark world (``bench/world.py``, uniform, no
motion) ``--reps`` times, the contenders' order rotating every repetition so that the
machine's load falls on all of them alike; the figure is the median build time and its ratio
to ``insert_many``. The contenders: ecs_spatial's ``QuadTree`` filled by one ``insert`` per
box (plain tuples) and by one ``insert_many`` call; the ``SpatialProcessor`` through esper,
whose first ``process()`` indexes every new entity in one bulk insert (the entities' creation
in esper is counted too, as a game would pay it); and the peers of the ``bench`` extra as the
frame benchmarks build them: pyqtree (an insert per box), rtree (bulk-loaded from numpy
arrays by libspatialindex) and shapely's STRtree (built from numpy arrays, in C). pymunk is
left out: it indexes its shapes in its first ``step()``, which finds the pairs too.

    python -m bench build --n 10000,100000 --reps 5
"""

from __future__ import annotations

import argparse
import gc
import statistics
from collections.abc import Sequence
from functools import partial

from bench.baselines import sweep_pairs
from bench.contender import Contender
from bench.harness import rotated, wall_ms
from bench.ours import ProcessorContender, QuadTreeBulkContender, QuadTreeContender
from bench.peers import peer_contenders
from bench.record import add_output_options, machine, markdown_table, saved
from bench.world import World


def contenders() -> tuple[list[Contender], list[str]]:
    """Ours first (``insert_many``, the ratio base), then the peers that are installed."""
    ours: list[Contender] = [QuadTreeBulkContender(), QuadTreeContender(), ProcessorContender()]
    peers, missing = peer_contenders("radius")
    # pymunk's contender steps its space once in build() (pymunk indexes its shapes in
    # step()), so its figure would be a first collision pass, not a build: left out.
    return ours + [p for p in peers if not p.name.startswith("pymunk")], missing


def verify(world: World) -> None:
    """The bulk-built tree is the one the inserts build (same nodes, same pairs, and the
    pairs are the reference sort-and-sweep's), or the run stops here."""
    bulk, loop = QuadTreeBulkContender(), QuadTreeContender()
    bulk.build(world)
    loop.build(world)
    if sorted(bulk.tree.nodes()) != sorted(loop.tree.nodes()):
        raise AssertionError("insert_many built another tree than the inserts")
    if not bulk.pairs() == loop.pairs() == sweep_pairs(world.boxes()):
        raise AssertionError("insert_many's tree answers differently")


def measure(n: int, reps: int, seed: int) -> dict[str, float]:
    """Median ms to build each contender's index of the world with ``n`` boxes."""
    world = World(n, seed=seed, moving=0.0)
    verify(world)
    cs, missing = contenders()
    for line in missing:
        print(f"  {line}")
    times: dict[str, list[float]] = {c.name: [] for c in cs}
    for rep in range(reps):
        for c in rotated(cs, rep):
            gc.collect()
            times[c.name].append(wall_ms(partial(c.build, world)))
            c.close()
    return {name: statistics.median(ts) for name, ts in times.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench build", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--n", default="10000,100000", help="comma-separated world sizes")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: N=300, one repetition"
    )
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.reps = "300", 1
    with saved(args, "build", argv):
        print(f"index build from scratch; median of {args.reps}; {machine()}")
        for n in (int(v) for v in args.n.split(",")):
            result = measure(n, args.reps, args.seed)
            base = result[QuadTreeBulkContender.name]
            print(f"\nN = {n:,}\n")
            print(
                markdown_table(
                    ["contender", "build ms", "/ insert_many"],
                    ([name, f"{ms:.1f}", f"{ms / base:.2f}"] for name, ms in result.items()),
                    right=True,
                )
            )
    return 0
