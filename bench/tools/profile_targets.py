"""Where ecs_spatial's time goes in the scenarios whose targets against the peers are missed.

For each case, ecs_spatial's own contender alone (no peers: this is a profile, not a race)
on the benchmark world, warm, the median over frames of the wall-clock time of each phase:

- ``all-moving``: N = 10,000 uniform, every box moving (target: within 1.0x pymunk). The
  update is split into building the boxes the caller hands over (a generator over the
  world's lists, as the bench contender does) and ``move_many`` itself; then the all-pairs
  search, per sweep record (own entries plus straddlers inherited from ancestors).
- ``ten-percent``: 10% moving at N = 10,000 and 50,000 (target: ahead of pymunk). The
  update, then ``find_intersections_for`` per moved entity, with the snapshot rebuilds it
  triggers (every straddler that moved invalidates its node's snapshot).
- ``radius``: radius-50 queries around 10% of the entities at N = 50,000 (target: ahead of
  rtree): microseconds per query, and the hits it returns.

Also the tree's shape: leaves, entries per leaf, the share of entries held by internal nodes
(straddlers of split lines: each is re-tested in every child it reaches).

    python -m bench.tools.profile_targets               # all cases, about a minute
    python -m bench.tools.profile_targets --case radius
    python -m bench.tools.profile_targets --case all-moving --threshold 64
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.harness import Ask
from bench.ours import QuadTreeContender
from bench.record import machine
from bench.world import World
from ecs_spatial import QuadTree

_clock = time.perf_counter


class Phases:
    """Wall-clock time spent per frame in chosen methods of ``QuadTree`` (wrapped on the
    class, since its instances have slots; ``restore()`` unwraps them)."""

    def __init__(self) -> None:
        self.frames: list[dict[str, float]] = []
        self._saved: list[tuple[str, Any]] = []

    def new_frame(self) -> None:
        self.frames.append({})

    def wrap(self, name: str, label: str) -> None:
        """Time ``QuadTree.<name>`` under ``label``; a method this build of the class does
        not have (the compiled core keeps its helpers in C) reads as 0 ms."""
        inner: Callable[..., Any] | None = getattr(QuadTree, name, None)
        if inner is None:
            return
        self._saved.append((name, inner))

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = _clock()
            try:
                return inner(*args, **kwargs)
            finally:
                if self.frames:
                    frame = self.frames[-1]
                    frame[label] = frame.get(label, 0.0) + _clock() - started
                    frame[label + " calls"] = frame.get(label + " calls", 0.0) + 1

        setattr(QuadTree, name, timed)

    def restore(self) -> None:
        for name, inner in reversed(self._saved):
            setattr(QuadTree, name, inner)
        self._saved.clear()

    def median(self, label: str) -> float:
        """Median ms per frame of ``label`` (0 where a frame did not run it)."""
        return statistics.median(f.get(label, 0.0) for f in self.frames) * 1e3

    def calls(self, label: str) -> float:
        """Median calls per frame of ``label``."""
        return statistics.median(f.get(label + " calls", 0.0) for f in self.frames)


def shape(tree: QuadTree) -> str:
    """Leaves, mean entries per non-empty leaf, and the internal nodes' share of entries."""
    leaves = held = internal = 0
    infos = list(tree.nodes())
    depths = {info.depth for info in infos}
    deepest = max(depths, default=0)
    for index, info in enumerate(infos):
        is_leaf = index + 1 == len(infos) or infos[index + 1].depth <= info.depth
        if is_leaf:
            if info.entries:
                leaves += 1
                held += info.entries
        else:
            internal += info.entries
    return (
        f"{leaves} non-empty leaves, {held / max(leaves, 1):.1f} entries each, "
        f"{internal / max(len(tree), 1):.0%} of entries in internal nodes, depth {deepest}"
    )


def warm(n: int, moving: float, frames: int, threshold: int) -> tuple[World, QuadTreeContender]:
    world = World(n, seed=1, moving=moving)
    ours = QuadTreeContender(threshold=threshold)
    ours.build(world, Ask())
    for _ in range(frames):
        ours.update(world, world.step())
        ours.pairs()
    return world, ours


def all_moving(frames: int, threshold: int) -> None:
    world, ours = warm(10_000, 1.0, 3, threshold)
    tree = ours.tree
    phases = Phases()
    phases.wrap("move_many", "move_many (boxes from a generator)")
    phases.wrap("find_all_intersections", "find_all_intersections")
    boxes_only: list[float] = []
    xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
    for _ in range(frames):
        step = world.step()
        moved = step.moved
        started = _clock()
        boxes = [(xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in moved]
        boxes_only.append(_clock() - started)
        del boxes
        phases.new_frame()
        ours.update(world, step)
        ours.pairs()
    phases.restore()
    update = phases.median("move_many (boxes from a generator)")
    build = statistics.median(boxes_only) * 1e3
    search = phases.median("find_all_intersections")
    print("all-moving, N = 10,000 uniform (target: within 1.0x pymunk's batch)")
    print(f"  tree: {shape(tree)}")
    print(f"  update {update:.2f} ms: building the 10,000 boxes ~{build:.2f}, "
          f"move_many itself ~{update - build:.2f} ({(update - build) * 100:.0f} ns a move)")
    print(f"  all-pairs search {search:.2f} ms ({search * 100:.0f} ns per entity)")


def ten_percent(frames: int, threshold: int) -> None:
    for n in (10_000, 50_000):
        world, ours = warm(n, 0.1, 3, threshold)
        tree = ours.tree
        phases = Phases()
        phases.wrap("move_many", "update")
        phases.wrap("find_intersections_for", "search")
        phases.wrap("_build_snapshot", "snapshots")
        moved = 0
        for _ in range(frames):
            step = world.step()
            moved = len(step.moved)
            phases.new_frame()
            ours.update(world, step)
            tree.find_intersections_for(step.moved)
        phases.restore()
        search = phases.median("search")
        snaps = phases.median("snapshots")
        print(f"ten-percent, N = {n:,} uniform, {moved:,} moved (target: ahead of pymunk)")
        print(f"  tree: {shape(tree)}")
        print(f"  update {phases.median('update'):.2f} ms "
              f"({phases.median('update') / moved * 1e3:.2f} us a move)")
        print(f"  find_intersections_for {search:.2f} ms ({search / moved * 1e3:.2f} us per "
              f"moved entity), of which {phases.calls('snapshots'):.0f} snapshot rebuilds "
              f"{snaps:.2f} ms")


def radius(frames: int, threshold: int) -> None:
    world, ours = warm(50_000, 1.0, 2, threshold)
    tree = ours.tree
    per_query: list[float] = []
    hits = 0
    query_radius = tree.query_radius
    centres: list[tuple[float, float]] = []
    for _ in range(frames):
        ours.update(world, world.step())
        centres = world.proximity_centres()  # as the suite's radius scenario asks them
        started = _clock()
        hits = 0
        for x, y in centres:
            hits += len(query_radius(x, y, 50.0))
        per_query.append((_clock() - started) / len(centres))
    print(f"radius, N = 50,000 uniform, {len(centres):,} radius-50 queries a frame "
          f"(target: ahead of rtree)")
    print(f"  tree: {shape(tree)}")
    print(f"  {statistics.median(per_query) * 1e6:.1f} us per query, "
          f"{hits / len(centres):.1f} hits each")


CASES = {"all-moving": all_moving, "ten-percent": ten_percent, "radius": radius}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tools.profile_targets", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("--case", choices=list(CASES), action="append")
    parser.add_argument("--frames", type=int, default=15)
    parser.add_argument("--threshold", type=int, default=16, help="the tree's leaf capacity")
    args = parser.parse_args(argv)
    print(f"ecs_spatial profile of the missed targets, threshold={args.threshold}; {machine()}")
    for name in args.case or list(CASES):
        CASES[name](args.frames, args.threshold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
