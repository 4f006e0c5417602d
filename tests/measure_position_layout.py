"""The guide's flock of 100,000 (docs/guide.md, "A flock of 100,000 on a torus") stepped with
its agents placed by a BoxArray of (n, 4) boxes written from the positions each step (the
guide's ``np.concatenate``), and by a BoxArray of the positions themselves, read in place
(``BoxArray.of_positions(pos, size=(0, 0))``): CPU ms a step (``time.process_time``: the
machine is shared), the two alternated in rounds.

    python tests/measure_position_layout.py [--agents 100000] [--steps 300] [--rounds 3]

Not a test (heavy): a measurement for the record of issue 28.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # run as a script: the checkout's package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import esper
import numpy as np

from ecs_spatial import BoxArray, NeighbourArrays, SpatialProcessor


def flock(n: int, layout: str) -> tuple[Callable[[], None], Callable[[], float]]:
    """A new world of the guide's flock in ``layout`` ("boxes" or "positions"): its step,
    and the time its last step spent in ``esper.process()``."""
    world = f"{layout}_{n}"
    esper.switch_world(world)
    side, radius, dt = 40 * n**0.5, 10.0, 1 / 60
    rng = np.random.default_rng(7)
    pos = rng.uniform(0, side, (n, 2))
    vel = rng.uniform(-60, 60, (n, 2))
    if layout == "boxes":
        boxes = np.hstack([pos, pos])
        rows = BoxArray(boxes)
    else:
        rows = BoxArray.of_positions(pos, size=(0.0, 0.0))  # read in place: no boxes
    spatial = SpatialProcessor(wrap=(0, 0, side, side), events=())
    nb = NeighbourArrays(spatial, radius=radius)
    esper.add_processor(spatial, priority=2)
    esper.add_processor(nb, priority=1)
    for i in range(n):
        esper.create_entity(rows.row(i))
    esper.process()
    spent = [0.0]

    def step() -> None:
        esper.switch_world(world)
        got = nb.in_rows(rows)
        offsets = np.frombuffer(got.offsets, dtype=np.int64)
        them = np.frombuffer(got.ids, dtype=np.int64)
        busy = np.flatnonzero(np.diff(offsets))
        me = np.frombuffer(got.watchers, dtype=np.int64)[busy]
        start, count = offsets[busy], np.diff(offsets)[busy, None]
        d = pos[them] - pos[np.repeat(me, count[:, 0])]
        d -= side * np.round(d / side)
        centre = np.add.reduceat(d, start) / count
        heading = np.add.reduceat(vel[them], start) / count
        vel[me] += (0.5 * centre + 0.5 * (heading - vel[me])) * dt
        pos[:] += vel * dt
        pos[pos >= side] -= side
        pos[pos < 0] += side
        if layout == "boxes":
            np.concatenate((pos, pos), axis=1, out=boxes)
        began = time.process_time()
        esper.process()
        spent[0] = time.process_time() - began

    return step, lambda: spent[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    worlds = {layout: flock(args.agents, layout) for layout in ("boxes", "positions")}
    steps: dict[str, list[float]] = {layout: [] for layout in worlds}
    processes: dict[str, list[float]] = {layout: [] for layout in worlds}
    per_round = max(args.steps // args.rounds, 1)
    for step, _ in worlds.values():
        step()  # the first step finds which entity each row places, once
    for _ in range(args.rounds):
        for layout, (step, spent) in worlds.items():
            for _ in range(per_round):
                began = time.process_time()
                step()
                steps[layout].append(time.process_time() - began)
                processes[layout].append(spent())
    for layout in worlds:
        print(
            f"{layout:9} {args.agents:,} agents, {len(steps[layout])} steps: "
            f"step median {statistics.median(steps[layout]) * 1e3:.2f} ms "
            f"(mean {statistics.fmean(steps[layout]) * 1e3:.2f}), esper.process() median "
            f"{statistics.median(processes[layout]) * 1e3:.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
