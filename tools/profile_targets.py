"""Where ecs_spatial's time goes in the suite's scenarios whose targets against the peers were
missed: ecs_spatial's contender alone (a profile, not a race), warm, the median over frames
of each phase's wall-clock time, and the tree's shape (leaves, entries per leaf, the share of
entries held by internal nodes: straddlers of split lines, re-tested in every child they
reach).

- ``all-moving``: N = 10,000 uniform, everything moving: the update split into building the
  boxes the caller hands over and ``move_many`` itself, then the all-pairs search;
- ``ten-percent``: 10% moving at N = 10,000 and 50,000: the update, then
  ``find_intersections_for`` per moved entity;
- ``radius``: radius-50 queries around 10% of the entities at N = 50,000, per query.

It wraps the index's methods on the class: with the compiled core it times them from Python.

    python -m tools.profile_targets               # all cases, about a minute
    python -m tools.profile_targets --case radius --threshold 64
"""

from __future__ import annotations

import argparse
import statistics
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
    """Wall-clock time per frame in chosen methods of ``QuadTree``, wrapped on the class
    (its instances have slots) until ``restore()``."""

    def __init__(self, **labels: str) -> None:
        self.frames: list[dict[str, float]] = []
        self._saved = [(name, inner) for name in labels
                       if (inner := getattr(QuadTree, name, None)) is not None]
        for name, inner in self._saved:
            setattr(QuadTree, name, self._timed(inner, labels[name]))

    def _timed(self, inner: Callable[..., Any], label: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = _clock()
            try:
                return inner(*args, **kwargs)
            finally:
                if self.frames:
                    frame = self.frames[-1]
                    frame[label] = frame.get(label, 0.0) + _clock() - started

        return timed

    def restore(self) -> None:
        for name, inner in self._saved:
            setattr(QuadTree, name, inner)

    def median(self, label: str) -> float:
        """Median ms per frame of ``label`` (0 where a frame did not run it)."""
        return statistics.median(f.get(label, 0.0) for f in self.frames) * 1e3


def shape(tree: QuadTree) -> str:
    """Leaves, mean entries per non-empty leaf, and the internal nodes' share of entries."""
    leaves = held = internal = 0
    infos = list(tree.nodes())
    for k, info in enumerate(infos):
        if k + 1 == len(infos) or infos[k + 1].depth <= info.depth:
            leaves += bool(info.entries)
            held += info.entries
        else:
            internal += info.entries
    return (f"{leaves} non-empty leaves, {held / max(leaves, 1):.1f} entries each, "
            f"{internal / max(len(tree), 1):.0%} of entries in internal nodes, depth "
            f"{max((i.depth for i in infos), default=0)}")


def warm(n: int, moving: float, threshold: int) -> tuple[World, QuadTreeContender]:
    world = World(n, seed=1, moving=moving)
    ours = QuadTreeContender(threshold=threshold)
    ours.build(world, Ask())
    for _ in range(3):
        ours.update(world, world.step())
        ours.pairs()
    return world, ours


def all_moving(frames: int, threshold: int) -> None:
    world, ours = warm(10_000, 1.0, threshold)
    phases = Phases(move_many="update", find_all_intersections="search")
    boxes_only = []
    xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
    for _ in range(frames):
        step = world.step()
        started = _clock()
        boxes = [(xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in step.moved]
        boxes_only.append(_clock() - started)
        del boxes
        phases.frames.append({})
        ours.update(world, step)
        ours.pairs()
    phases.restore()
    update, search = phases.median("update"), phases.median("search")
    build = statistics.median(boxes_only) * 1e3
    print(f"all-moving, N = 10,000 uniform\n  tree: {shape(ours.tree)}\n  update {update:.2f} "
          f"ms: building the boxes ~{build:.2f}, move_many itself ~{update - build:.2f} "
          f"({(update - build) * 100:.0f} ns a move)\n  all-pairs search {search:.2f} ms "
          f"({search * 100:.0f} ns per entity)")


def ten_percent(frames: int, threshold: int) -> None:
    for n in (10_000, 50_000):
        world, ours = warm(n, 0.1, threshold)
        phases = Phases(move_many="update", find_intersections_for="search")
        moved = 0
        for _ in range(frames):
            step = world.step()
            moved = len(step.moved)
            phases.frames.append({})
            ours.update(world, step)
            ours.tree.find_intersections_for(step.moved)
        phases.restore()
        update, search = phases.median("update"), phases.median("search")
        print(f"ten-percent, N = {n:,} uniform, {moved:,} moved\n  tree: {shape(ours.tree)}\n"
              f"  update {update:.2f} ms ({update / moved * 1e3:.2f} us a move)\n"
              f"  find_intersections_for {search:.2f} ms ({search / moved * 1e3:.2f} us per "
              "moved entity)")


def radius(frames: int, threshold: int) -> None:
    world, ours = warm(50_000, 1.0, threshold)
    per_query, hits, centres = [], 0, []
    for _ in range(frames):
        ours.update(world, world.step())
        centres = world.proximity_centres()  # as the suite's radius scenario asks them
        started = _clock()
        hits = sum(len(ours.tree.query_radius(x, y, 50.0)) for x, y in centres)
        per_query.append((_clock() - started) / len(centres))
    print(f"radius, N = 50,000 uniform, {len(centres):,} radius-50 queries a frame\n  tree: "
          f"{shape(ours.tree)}\n  {statistics.median(per_query) * 1e6:.1f} us per query, "
          f"{hits / len(centres):.1f} hits each")


CASES = {"all-moving": all_moving, "ten-percent": ten_percent, "radius": radius}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.profile_targets", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--case", choices=list(CASES), action="append")
    parser.add_argument("--frames", type=int, default=15)
    parser.add_argument("--threshold", type=int, default=16, help="the tree's leaf capacity")
    args = parser.parse_args(argv)
    print(f"ecs_spatial profile, threshold={args.threshold}; {machine()}")
    for name in args.case or list(CASES):
        CASES[name](args.frames, args.threshold)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
