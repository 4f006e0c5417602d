"""What the compiled all-pairs search costs, on the two workloads that its targets name.

- ``game``: the benchmark world (``bench.world.World``, N = 10,000 uniform, all moving) in a
  ``QuadTree`` of the world's bounds and leaves of 16, as the SpatialProcessor keeps it
  (issue 27's frame);
- ``torus``: N = 100,000 agents uniform on a torus of side ``40 * sqrt(N)``, each a box of
  side 10 centred on it, moved by a velocity in [-2, 2) per axis and wrapped, in a
  ``QuadTree(wrap=...)`` (issue 28's step, ``bench agents``'s "ours, pairs, torus");
- ``plain``: the same agents in a plain world of the same bounds.

Each frame's boxes are made before any timing and moved in with ``move_many`` of buffers,
then ``find_all_intersections_array`` is timed alone (a search after a move, as a frame
makes it: what the search reorders, a move disturbs). Wall clock, best and median of the
frames, ``--threshold`` the leaves' capacity::

    python -m tools.pair_cost game torus

or the searches alone counted by callgrind (instructions and, with ``--branch-sim=yes``,
the mispredicted branches, in ``all_pairs_sorted``, the search's C entry)::

    valgrind --tool=callgrind --branch-sim=yes --collect-atstart=no \\
        --toggle-collect=all_pairs_sorted python -m tools.pair_cost game --frames 5

divided by the frames run (the tool prints them).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from array import array

from bench.world import World
from ecs_spatial import Box, QuadTree

WORKLOADS = ("game", "torus", "plain")
AGENT_SIDE = 10.0


def game_frames(n: int, frames: int) -> tuple[tuple[float, float, float, float],
                                                array[int], list[array[float]]]:
    """The benchmark world's bounds, ids and ``frames + 1`` frames of boxes (the first one
    inserted)."""
    world = World(n, moving=1.0)
    ids = list(world.boxes())
    out = []
    for _ in range(frames + 1):
        boxes = world.boxes()
        out.append(array("d", [c for e in ids for c in boxes[e]]))
        world.step()
    return (0.0, 0.0, world.side, world.side), array("q", ids), out


def agent_frames(n: int, frames: int) -> tuple[float, array[int], list[array[float]]]:
    """The agents' side, ids and ``frames + 1`` frames of boxes (the first one inserted)."""
    rng = random.Random(1)
    side = 40.0 * math.sqrt(n)
    xs = [rng.uniform(0.0, side) for _ in range(n)]
    ys = [rng.uniform(0.0, side) for _ in range(n)]
    vx = [rng.uniform(-2.0, 2.0) for _ in range(n)]
    vy = [rng.uniform(-2.0, 2.0) for _ in range(n)]
    h = AGENT_SIDE / 2
    out = []
    for _ in range(frames + 1):
        out.append(array("d", [c for x, y in zip(xs, ys, strict=True)
                               for c in (x - h, y - h, x + h, y + h)]))
        xs = [(x + v) % side for x, v in zip(xs, vx, strict=True)]
        ys = [(y + v) % side for y, v in zip(ys, vy, strict=True)]
    return side, array("q", range(n)), out


def prepare(workload: str, n: int | None, frames: int,
            threshold: int) -> tuple[QuadTree, array[int], list[array[float]]]:
    """The tree of ``workload`` with its first frame inserted, its ids and the frames to
    move in."""
    if workload == "game":
        bounds, ids, boxes = game_frames(n or 10_000, frames)
        tree = QuadTree(bounds, threshold=threshold)
    else:
        side, ids, boxes = agent_frames(n or 100_000, frames)
        world = Box(0.0, 0.0, side, side)
        tree = (QuadTree(wrap=world, threshold=threshold) if workload == "torus"
                else QuadTree(world, threshold=threshold))
    tree.insert_many(ids, boxes[0])
    return tree, ids, boxes[1:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.pair_cost", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("workloads", nargs="*", choices=WORKLOADS, default=["game", "torus"])
    parser.add_argument("--n", type=int, help="N (10,000 for game, 100,000 for the agents)")
    parser.add_argument("--frames", type=int, default=30, help="frames, each searched once")
    parser.add_argument("--threshold", type=int, default=16, help="the leaves' capacity")
    args = parser.parse_args(argv)
    for workload in args.workloads:
        tree, ids, frames = prepare(workload, args.n, args.frames, args.threshold)
        times, pairs = [], 0
        for boxes in frames:
            tree.move_many(ids, boxes, atomic=False)
            started = time.perf_counter()
            found = tree.find_all_intersections_array()
            times.append(time.perf_counter() - started)
            pairs = len(found) // 2
        print(f"{workload:6} N = {len(ids):,}, leaves of {args.threshold}, {pairs:,} pairs: "
              f"{len(frames)} searches, best {min(times) * 1e3:.3f} ms, median "
              f"{statistics.median(times) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
