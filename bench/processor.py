"""The SpatialProcessor's frame cost through esper, beside the user's movement and a bare tree.

The benchmark world (``bench/world.py``: side ``40 * sqrt(N)``, boxes 4-16 wide, speeds up
to 2 per axis per frame, uniform, a fixed subset moving) becomes an esper world: every
entity has ``Position`` and ``AABB``, the moving ones also a ``Velocity``, and a user's
``Movement`` processor moves them by plain assignment (``p.x = x``), as a game would. Every
frame the movement is timed apart from ``SpatialProcessor.process()`` (dirty re-placement,
pairs, enter and exit events to counting handlers). In the same frame, on the same boxes, a
bare ``QuadTree`` does the same moves and ``find_all_intersections()``: it reads them from
the world's own lists, stepped in step with the movement (untimed; the same arithmetic, so
the same boxes, and the first measured frame checks that both find the same pairs). The
processor's ratio to it is the overhead of the esper layer. Figures are medians of CPU time
(``time.process_time``, so that other load on a shared machine does not count) over the
measured frames, after warm-up frames; the processor and the bare tree swap order frame by
frame, and a ratio is the median of the per-frame ratios.

Reports and targets:

- ms per frame at N = 10,000 and 50,000 with 100%, 10%, 1% moving, and the processor's
  phases (``timings``) at 10,000 all moving;
- at 10,000 all moving, the processor's frame <= the user's movement processor's (the
  median of the per-frame ratios);
- at 10,000 all moving, processor / bare tree <= 1.5 (the bare tree is whichever
  ``QuadTree`` is in use, so with the compiled core it is a loop of Python ``move`` calls);
- at 50,000, the 1%-moving frame <= 1/10 of the all-moving frame;
- 200,000 static + 100 moving <= 2x 1,000 static + 100 moving (static entities cost nothing),
  the two worlds run in turn, in blocks of frames;
- with ``--crossover``: the incremental and the full pair search timed frame by frame at
  several moving fractions (why ``SpatialProcessor.pair_search`` chooses by measured cost
  rather than by a fixed fraction).

    python -m bench processor              # the table and the targets (~3 minutes)
    python -m bench processor --short      # the same sizes, fewer frames
    python -m bench processor --crossover  # the search crossover
    python -m bench processor --quick      # a smoke run on tiny worlds (seconds)
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import esper

from bench.harness import cpu_ms, time_in_turn
from bench.record import add_output_options, machine, markdown_row, markdown_table, saved
from bench.world import World
from ecs_spatial import (
    AABB,
    COLLISION_ENTER,
    COLLISION_EXIT,
    Box,
    FrameTimings,
    Position,
    QuadTree,
    SpatialProcessor,
)

_worlds = itertools.count(1)


class Velocity:
    """The user's own component: plain slots."""

    __slots__ = ("vx", "vy")

    def __init__(self, vx: float, vy: float) -> None:
        self.vx = vx
        self.vy = vy


class Movement(esper.Processor):
    """The user's movement processor: every entity with a Velocity moves and bounces off the
    world's edges, by plain assignment to its Position (the world's own step, in esper)."""

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
    """The benchmark world as an esper world with its processors, and a bare tree beside it."""

    def __init__(self, n_static: int, n_moving: int, *, seed: int = 1, bare: bool = True) -> None:
        n = n_static + n_moving
        self.world = World(n, seed=seed, moving=n_moving / n)
        w = self.world
        self.side = side = w.side
        self.name = f"processor-bench-{next(_worlds)}"
        esper.switch_world(self.name)
        moving = set(w.moving)
        for e in w.ids():
            pos = Position(w.xs[e], w.ys[e])
            aabb = AABB(w.ws[e], w.hs[e])
            if e in moving:
                made = esper.create_entity(pos, aabb, Velocity(w.vxs[e], w.vys[e]))
            else:
                made = esper.create_entity(pos, aabb)
            if made != e:  # esper numbers entities from 1 in a fresh world, as World does
                raise RuntimeError(f"esper gave id {made} to world entity {e}")
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
            self.bare.insert_many(w.ids(), [w.box(e) for e in w.ids()])
        gc.collect()

    def step_world(self) -> None:
        """Move the world's own lists as ``Movement`` moved the components (untimed): the
        bare tree reads its boxes from them, as a user without esper would keep them."""
        self.world.step()

    def bare_frame(self) -> list[tuple[int, int]]:
        """The same moves on the bare tree, then the pair search. Boxes are passed as plain
        tuples, the index's cheapest input (a ``Box(...)`` each costs more)."""
        tree = self.bare
        assert tree is not None
        w = self.world
        xs, ys, ws, hs = w.xs, w.ys, w.ws, w.hs
        move = tree.move
        for e in w.moving:
            x = xs[e]
            y = ys[e]
            move(e, (x, y, x + ws[e], y + hs[e]))
        return tree.find_all_intersections()

    def close(self) -> None:
        esper.event_registry.clear()
        esper.switch_world("default")
        esper.delete_world(self.name)
        gc.collect()


def run_scene(n_static: int, n_moving: int, frames: int, warmup: int) -> dict[str, float]:
    """Median ms per frame of the movement, the processor and the bare tree, the median
    per-frame ratios, the processor's phases and its pairs."""
    scene = Scene(n_static, n_moving)
    try:
        move_ms: list[float] = []
        proc_ms: list[float] = []
        bare_ms: list[float] = []
        ratios: list[float] = []
        own_ratios: list[float] = []  # processor / the user's movement, frame by frame
        phases: list[tuple[float, ...]] = []
        runners: dict[str, Callable[[], object]] = {
            "processor": scene.spatial.process,
            "bare": scene.bare_frame,
        }
        for frame in range(warmup + frames):
            m = cpu_ms(scene.movement.process)
            scene.step_world()
            timed = time_in_turn(frame, runners, clock=time.process_time)
            p = timed["processor"][0] * 1e3
            b = timed["bare"][0] * 1e3
            if frame == warmup:  # the two must agree: same boxes, same pairs
                assert set(scene.bare_frame()) == set(scene.spatial.pairs)
            if frame >= warmup:
                move_ms.append(m)
                proc_ms.append(p)
                bare_ms.append(b)
                own_ratios.append(p / m)
                ratios.append(p / b)
                phases.append(tuple(scene.spatial.timings))
        return {
            "movement": statistics.median(move_ms),
            "processor": statistics.median(proc_ms),
            "bare": statistics.median(bare_ms),
            "ratio": statistics.median(ratios),
            "per_movement": statistics.median(own_ratios),
            **{
                f"phase_{name}": statistics.median(frame[i] for frame in phases) * 1e3
                for i, name in enumerate(FrameTimings._fields)
            },
            "pairs": float(len(scene.spatial.pairs)),
        }
    finally:
        scene.close()


def static_pair(
    big: int, small: int, movers: int, frames: int, warmup: int, block: int = 10
) -> tuple[dict[str, float], dict[str, float], float]:
    """``big`` static entities + ``movers`` moving against ``small`` static + the same number:
    both worlds alive, run in turn in blocks of ``block`` frames, so that a change in the
    machine's load falls on both (run one after the other, the ratio swung from 2 to 5
    between runs minutes apart); blocks rather than single frames, so that the big world does
    not evict the small one's data before each of its frames. Returns each world's medians
    over its measured frames and the median ratio of adjacent blocks."""
    scenes = (Scene(big, movers, bare=False), Scene(small, movers, bare=False))
    move_ms: tuple[list[float], list[float]] = ([], [])
    proc_ms: tuple[list[float], list[float]] = ([], [])
    block_medians: tuple[list[float], list[float]] = ([], [])
    try:
        for k in range(2 * -(-frames // block)):
            which = k % 2
            scene = scenes[which]
            esper.switch_world(scene.name)
            times = []
            for frame in range(warmup + block):
                m = cpu_ms(scene.movement.process)
                p = cpu_ms(scene.spatial.process)
                if frame >= warmup:  # the first frames of a block find a cold cache
                    move_ms[which].append(m)
                    proc_ms[which].append(p)
                    times.append(p)
            block_medians[which].append(statistics.median(times))
    finally:
        for scene in scenes:
            scene.close()
    ratios = [b / s for b, s in zip(*block_medians, strict=True)]
    out = [
        {"movement": statistics.median(move_ms[i]), "processor": statistics.median(proc_ms[i])}
        for i in (0, 1)
    ]
    return out[0], out[1], statistics.median(ratios)


@dataclass(frozen=True)
class Sizes:
    """What a run measures: the two world sizes of the table with their timed frames, and
    the static worlds' sizes and frames."""

    small: int = 10_000
    large: int = 50_000
    small_frames: int = 15
    large_frames: int = 7
    static_big: int = 200_000
    static_small: int = 1_000
    static_movers: int = 100
    static_frames: int = 40
    static_block: int = 10
    warmup: int = 2


FULL = Sizes()
SHORT = Sizes(small_frames=6, large_frames=3, static_frames=15)
QUICK = Sizes(
    small=1_000,
    large=2_000,
    small_frames=2,
    large_frames=2,
    static_big=2_000,
    static_small=200,
    static_movers=20,
    static_frames=2,
    static_block=2,
    warmup=1,
)


def table(z: Sizes) -> int:
    frames = {z.small: z.small_frames, z.large: z.large_frames}
    print(
        markdown_table(
            [
                "N",
                "moving",
                "movement ms",
                "processor ms",
                "bare tree ms",
                "processor / bare",
                "pairs",
            ]
        )
    )
    results: dict[tuple[int, float], dict[str, float]] = {}
    for n in (z.small, z.large):
        for frac in (1.0, 0.1, 0.01):
            k = max(1, round(n * frac))
            r = run_scene(n - k, k, frames[n], z.warmup)
            results[(n, frac)] = r
            print(
                markdown_row(
                    [
                        f"{n:,}",
                        f"{frac:.0%}",
                        f"{r['movement']:.2f}",
                        f"{r['processor']:.2f}",
                        f"{r['bare']:.2f}",
                        f"{r['ratio']:.2f}",
                        f"{r['pairs']:.0f}",
                    ]
                ),
                flush=True,
            )
    big, small, static_ratio = static_pair(
        z.static_big,
        z.static_small,
        z.static_movers,
        z.static_frames,
        3 if z.warmup > 1 else 1,
        z.static_block,
    )
    print()
    print(
        markdown_table(
            ["world", "movement ms", "processor ms"],
            [
                [
                    f"{z.static_big:,} static + {z.static_movers} moving",
                    f"{big['movement']:.3f}",
                    f"{big['processor']:.3f}",
                ],
                [
                    f"{z.static_small:,} static + {z.static_movers} moving",
                    f"{small['movement']:.3f}",
                    f"{small['processor']:.3f}",
                ],
            ],
        )
    )

    all_small = results[(z.small, 1.0)]
    print()
    print(
        f"{z.small:,} all moving, the processor's phases (`SpatialProcessor.timings`, median ms):"
    )
    print()
    print(
        markdown_table(
            FrameTimings._fields,
            [[f"{all_small['phase_' + f]:.2f}" for f in FrameTimings._fields]],
        )
    )

    share = results[(z.large, 0.01)]["processor"] / results[(z.large, 1.0)]["processor"]
    checks = [
        (
            f"{z.small:,} all moving: processor / the user's movement",
            all_small["per_movement"],
            1.0,
        ),
        (f"{z.small:,} all moving: processor / bare tree", all_small["ratio"], 1.5),
        (f"{z.large:,}: 1% moving / all moving", share, 0.1),
        (
            f"{z.static_big:,} static + {z.static_movers} / {z.static_small:,} static + "
            f"{z.static_movers}",
            static_ratio,
            2.0,
        ),
    ]
    rows = []
    ok = True
    for name, value, limit in checks:
        passed = value <= limit
        ok &= passed
        rows.append([name, f"{value:.3f}", limit, "ok" if passed else "MISSED"])
    print()
    print(markdown_table(["target", "measured", "limit", ""], rows))
    return 0 if ok else 1


def crossover(z: Sizes) -> int:
    """Incremental against full pair search, alternating frame by frame in one world."""
    print(markdown_table(["N", "moving", "incremental ms", "full ms", "incremental / full"]))
    for n in (z.small, z.large):
        frames = z.small_frames if n == z.small else z.large_frames
        for frac in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3):
            k = round(n * frac)
            scene = Scene(n - k, k, bare=False)
            try:
                inc: list[float] = []
                full: list[float] = []
                for frame in range(2 + 2 * frames):
                    scene.movement.process()
                    use_incremental = frame % 2 == 0
                    scene.spatial.pair_search = "incremental" if use_incremental else "full"
                    t = cpu_ms(scene.spatial.process)
                    if frame >= 2:
                        (inc if use_incremental else full).append(t)
                a = statistics.median(inc)
                b = statistics.median(full)
                print(
                    markdown_row([f"{n:,}", f"{frac:.0%}", f"{a:.1f}", f"{b:.1f}", f"{a / b:.2f}"]),
                    flush=True,
                )
            finally:
                scene.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench processor",
        description=(__doc__ or "").split("\n", 1)[0],
        epilog="The targets' exit status: 1 if one is missed (0 with --quick).",
    )
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--short", action="store_true", help="the same sizes, fewer frames")
    how.add_argument("--quick", action="store_true", help="a smoke run: tiny worlds, 2 frames")
    parser.add_argument("--crossover", action="store_true", help="incremental vs full pairs")
    add_output_options(parser)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else SHORT if args.short else FULL
    with saved(args, "processor", argv):
        print(f"{machine()}, esper {esper.__version__}")
        print()
        if args.crossover:
            return crossover(sizes)
        status = table(sizes)
    if args.quick:
        print("\n(--quick: worlds far below the targets' sizes; the verdicts mean nothing)")
        return 0
    return status
