"""The SpatialProcessor's frame cost through esper (issue 3's Speed section).

The world of the foundation issue: N boxes in a square of side ``40 * sqrt(N)``, sizes
uniform in [4, 16], velocities uniform in [-2, 2] per axis per frame, bouncing off the edges,
a fixed seed; a fixed subset of them moves (100%, 10% or 1%). It is built here with its own
small generator, so this file depends on nothing else in ``bench/``.

Each entity has ``Position`` and ``AABB``; the moving ones also have a ``Velocity``, and a
user's ``Movement`` processor moves them by plain assignment (``p.x = x``), as a game would.
Every frame the movement is timed apart from ``SpatialProcessor.process()`` (dirty
re-placement, pairs, enter and exit events to counting handlers). In the same frame, on the
same boxes, a bare ``QuadTree`` does the same moves (``Box(...)`` for each, as a user of the
index would) and ``find_all_intersections()``: the processor's ratio to it is the overhead
of the esper layer. Figures are medians of CPU time (``time.process_time``, so that other
load on a shared machine does not count) over the measured frames, after warm-up frames; the
order of the two contenders alternates frame by frame, and a ratio is the median of the
per-frame ratios.

Reports and targets:

- ms per frame at N = 10,000 and 50,000 with 100%, 10%, 1% moving, and the processor's
  phases (``timings``) at 10,000 all moving;
- at 10,000 all moving, the processor's frame <= the user's movement processor's (issue 18;
  the median of the per-frame ratios);
- at 10,000 all moving, processor / bare tree <= 1.5 (issue 3; the bare tree is whichever
  ``QuadTree`` is in use, so with the compiled core it is a loop of Python ``move`` calls);
- at 50,000, the 1%-moving frame <= 1/10 of the all-moving frame;
- 200,000 static + 100 moving <= 2x 1,000 static + 100 moving (static entities cost nothing),
  the two worlds run in turn, in blocks of frames;
- with ``--crossover``: the incremental and the full pair search timed frame by frame at
  several moving fractions (why ``SpatialProcessor.pair_search`` chooses by measured cost
  rather than by a fixed fraction).

Run from the repository root:

    .venv/bin/python bench/processor_bench.py              # the issue's table (~3 minutes)
    .venv/bin/python bench/processor_bench.py --quick      # fewer frames
    .venv/bin/python bench/processor_bench.py --crossover  # the strategy crossover
"""

from __future__ import annotations

import argparse
import gc
import itertools
import math
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import esper

from ecs_spatial.components import AABB, Position
from ecs_spatial.events import COLLISION_ENTER, COLLISION_EXIT
from ecs_spatial.geometry import Box
from ecs_spatial.index import QuadTree
from ecs_spatial.processors import FrameTimings, SpatialProcessor

_worlds = itertools.count(1)


class Velocity:
    """The user's own component: plain slots."""

    __slots__ = ("vx", "vy")

    def __init__(self, vx: float, vy: float) -> None:
        self.vx = vx
        self.vy = vy


class Movement(esper.Processor):
    """The user's movement processor: every entity with a Velocity moves and bounces off the
    world's edges, by plain assignment to its Position."""

    def __init__(self, side: float) -> None:
        self.side = side

    def process(self, *args: Any, **kwargs: Any) -> None:
        side = self.side
        for _, (vel, pos, aabb) in esper.get_components(Velocity, Position, AABB):
            x = pos.x + vel.vx
            if x < 0.0:
                x = -x
                vel.vx = -vel.vx
            else:
                lim = side - aabb.width
                if x > lim:
                    x = lim + lim - x
                    vel.vx = -vel.vx
            y = pos.y + vel.vy
            if y < 0.0:
                y = -y
                vel.vy = -vel.vy
            else:
                lim = side - aabb.height
                if y > lim:
                    y = lim + lim - y
                    vel.vy = -vel.vy
            pos.x = x
            pos.y = y


class Counter:
    """Counts enter and exit events (its bound methods are the handlers: keep it alive)."""

    def __init__(self) -> None:
        self.enters = 0
        self.exits = 0
        esper.set_handler(COLLISION_ENTER, self.enter)
        esper.set_handler(COLLISION_EXIT, self.exit)

    def enter(self, a: int, b: int) -> None:
        self.enters += 1

    def exit(self, a: int, b: int) -> None:
        self.exits += 1


class Scene:
    """An esper world of the benchmark, with its processors and a bare tree beside it."""

    def __init__(
        self, n_static: int, n_moving: int, *, seed: int = 1, bare: bool = True,
        side_n: int | None = None,
    ) -> None:
        n = n_static + n_moving
        self.side = side = 40.0 * math.sqrt(side_n or n)
        self.world = f"processor-bench-{next(_worlds)}"
        esper.switch_world(self.world)
        rng = random.Random(seed)
        moving = set(rng.sample(range(n), n_moving))
        self.moving: list[tuple[int, Position, AABB]] = []
        boxes: list[tuple[int, Box]] = []
        for i in range(n):
            w = rng.uniform(4.0, 16.0)
            h = rng.uniform(4.0, 16.0)
            x = rng.uniform(0.0, side - w)
            y = rng.uniform(0.0, side - h)
            vx = rng.uniform(-2.0, 2.0)
            vy = rng.uniform(-2.0, 2.0)
            pos = Position(x, y)
            aabb = AABB(w, h)
            if i in moving:
                e = esper.create_entity(pos, aabb, Velocity(vx, vy))
                self.moving.append((e, pos, aabb))
            else:
                e = esper.create_entity(pos, aabb)
            boxes.append((e, Box(x, y, x + w, y + h)))
        self.spatial = SpatialProcessor(
            Box(0.0, 0.0, side, side), events=(COLLISION_ENTER, COLLISION_EXIT)
        )
        self.movement = Movement(side)
        esper.add_processor(self.movement, priority=1)
        esper.add_processor(self.spatial)
        self.counter = Counter()
        self.spatial.process()  # the initial insertion, not timed
        self.bare: QuadTree | None = None
        if bare:
            self.bare = QuadTree(Box(0.0, 0.0, side, side))
            for e, box in boxes:
                self.bare.insert(e, box)
        gc.collect()

    def bare_frame(self) -> list[tuple[int, int]]:
        """The same moves on the bare tree, then the pair search. Boxes are passed as plain
        tuples, the index's cheapest input (a ``Box(...)`` each would cost 0.8 us more)."""
        tree = self.bare
        assert tree is not None
        move = tree.move
        for e, pos, aabb in self.moving:
            x = pos._x
            y = pos._y
            move(e, (x, y, x + aabb._w, y + aabb._h))
        return tree.find_all_intersections()

    def close(self) -> None:
        esper.event_registry.clear()
        esper.switch_world("default")
        esper.delete_world(self.world)
        gc.collect()


def _timed(fn: Callable[[], Any]) -> float:
    """CPU milliseconds of this process spent in ``fn()``: on a shared machine the wall
    clock also counts the time other processes held the CPU."""
    t0 = time.process_time()
    fn()
    return (time.process_time() - t0) * 1e3


def run_scene(
    n_static: int, n_moving: int, frames: int, warmup: int, *, bare: bool = True,
    side_n: int | None = None,
) -> dict[str, float]:
    """Median ms per frame of the movement, the processor and (if ``bare``) the bare tree."""
    scene = Scene(n_static, n_moving, bare=bare, side_n=side_n)
    try:
        move_ms: list[float] = []
        proc_ms: list[float] = []
        bare_ms: list[float] = []
        ratios: list[float] = []
        own_ratios: list[float] = []  # processor / the user's movement, frame by frame
        phases: list[tuple[float, ...]] = []
        for frame in range(warmup + frames):
            m = _timed(scene.movement.process)
            if bare and frame % 2:
                b = _timed(scene.bare_frame)
                p = _timed(scene.spatial.process)
            else:
                p = _timed(scene.spatial.process)
                b = _timed(scene.bare_frame) if bare else 0.0
            if frame == warmup and bare:
                # The two must agree: same boxes, same pairs.
                assert set(scene.bare_frame()) == set(scene.spatial.pairs)
            if frame >= warmup:
                move_ms.append(m)
                proc_ms.append(p)
                bare_ms.append(b)
                own_ratios.append(p / m)
                phases.append(tuple(scene.spatial.timings))
                if bare:
                    ratios.append(p / b)
        return {
            "movement": statistics.median(move_ms),
            "processor": statistics.median(proc_ms),
            "bare": statistics.median(bare_ms) if bare else math.nan,
            "ratio": statistics.median(ratios) if bare else math.nan,
            "per_movement": statistics.median(own_ratios),
            **{
                f"phase_{name}": statistics.median(frame[i] for frame in phases) * 1e3
                for i, name in enumerate(FrameTimings._fields)
            },
            "pairs": float(len(scene.spatial.pairs)),
        }
    finally:
        scene.close()


def static_pair(frames: int, warmup: int, block: int = 10) -> tuple[
    dict[str, float], dict[str, float], float
]:
    """200,000 static entities + 100 moving against 1,000 static + the same 100: both worlds
    alive, run in turn in blocks of ``block`` frames, so that a change in the machine's load
    falls on both (run one after the other, the ratio swung from 2 to 5 between runs minutes
    apart); blocks rather than single frames, so that the big world does not evict the small
    one's data before each of its frames. Returns each world's medians over its measured
    frames and the median ratio of adjacent blocks."""
    big = Scene(200_000, 100, bare=False)
    small = Scene(1_000, 100, bare=False)
    move_ms: dict[Scene, list[float]] = {big: [], small: []}
    proc_ms: dict[Scene, list[float]] = {big: [], small: []}
    block_medians: dict[Scene, list[float]] = {big: [], small: []}
    try:
        for k in range(2 * -(-frames // block)):
            scene = big if k % 2 == 0 else small
            esper.switch_world(scene.world)
            times = []
            for frame in range(warmup + block):
                m = _timed(scene.movement.process)
                p = _timed(scene.spatial.process)
                if frame >= warmup:  # the first frames of a block find a cold cache
                    move_ms[scene].append(m)
                    proc_ms[scene].append(p)
                    times.append(p)
            block_medians[scene].append(statistics.median(times))
    finally:
        big.close()
        small.close()
    ratios = [b / s for b, s in zip(block_medians[big], block_medians[small], strict=True)]
    out = [
        {"movement": statistics.median(move_ms[s]), "processor": statistics.median(proc_ms[s])}
        for s in (big, small)
    ]
    return out[0], out[1], statistics.median(ratios)


def table(quick: bool) -> int:
    frames = {10_000: 6 if quick else 15, 50_000: 3 if quick else 7}
    print("| N | moving | movement ms | processor ms | bare tree ms | processor / bare | pairs |")
    print("|---|---|---|---|---|---|---|")
    results: dict[tuple[int, float], dict[str, float]] = {}
    for n in (10_000, 50_000):
        for frac in (1.0, 0.1, 0.01):
            k = round(n * frac)
            r = run_scene(n - k, k, frames[n], 2)
            results[(n, frac)] = r
            print(
                f"| {n:,} | {frac:.0%} | {r['movement']:.2f} | {r['processor']:.2f} | "
                f"{r['bare']:.2f} | {r['ratio']:.2f} | {r['pairs']:.0f} |",
                flush=True,
            )
    big, small, static_ratio = static_pair(15 if quick else 40, 3)
    print()
    print("| world | movement ms | processor ms |")
    print("|---|---|---|")
    print(f"| 200,000 static + 100 moving | {big['movement']:.3f} | {big['processor']:.3f} |")
    print(f"| 1,000 static + 100 moving | {small['movement']:.3f} | {small['processor']:.3f} |")

    all_10k = results[(10_000, 1.0)]
    print()
    print("10k all moving, the processor's phases (`SpatialProcessor.timings`, median ms):")
    print()
    print("| " + " | ".join(FrameTimings._fields) + " |")
    print("|" + "---|" * len(FrameTimings._fields))
    print("| " + " | ".join(f"{all_10k['phase_' + f]:.2f}" for f in FrameTimings._fields) + " |")

    ratio_10k = all_10k["ratio"]
    share_50k = results[(50_000, 0.01)]["processor"] / results[(50_000, 1.0)]["processor"]
    print()
    print("| target | measured | limit | |")
    print("|---|---|---|---|")
    checks = [
        ("10k all moving: processor / the user's movement", all_10k["per_movement"], 1.0),
        ("10k all moving: processor / bare tree", ratio_10k, 1.5),
        ("50k: 1% moving / all moving", share_50k, 0.1),
        ("200k static + 100 / 1k static + 100", static_ratio, 2.0),
    ]
    ok = True
    for name, value, limit in checks:
        passed = value <= limit
        ok &= passed
        print(f"| {name} | {value:.3f} | {limit} | {'ok' if passed else 'MISSED'} |")
    return 0 if ok else 1


def crossover(quick: bool) -> int:
    """Incremental against full pair search, alternating frame by frame in one world."""
    print("| N | moving | incremental ms | full ms | incremental / full |")
    print("|---|---|---|---|---|")
    for n in (10_000, 50_000):
        for frac in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3):
            k = round(n * frac)
            scene = Scene(n - k, k, bare=False)
            try:
                inc: list[float] = []
                full: list[float] = []
                frames = (4 if quick else 10) if n > 10_000 else (8 if quick else 20)
                for frame in range(2 + 2 * frames):
                    scene.movement.process()
                    use_incremental = frame % 2 == 0
                    scene.spatial.pair_search = "incremental" if use_incremental else "full"
                    t = _timed(scene.spatial.process)
                    if frame >= 2:
                        (inc if use_incremental else full).append(t)
                a = statistics.median(inc)
                b = statistics.median(full)
                print(f"| {n:,} | {frac:.0%} | {a:.1f} | {b:.1f} | {a / b:.2f} |", flush=True)
            finally:
                scene.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer frames")
    parser.add_argument("--crossover", action="store_true", help="incremental vs full pairs")
    args = parser.parse_args(argv)
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, esper {esper.__version__}"
    )
    print()
    if args.crossover:
        return crossover(args.quick)
    return table(args.quick)


if __name__ == "__main__":
    sys.exit(main())
