"""Collision handlers by component type (``SpatialProcessor.on_collision``) against the plain
events: the frame of the processor, through esper, in the benchmark world.

Every contender is the same world of N boxes (all moving by default), each entity holding one
of ten marker components ``T0``..``T9``, in an esper world of its own; each frame moves every
world the same way (outside the timing), then times ``esper.process()``, the contenders in
turn, rotated frame by frame. Reported: the median frame and the median of each contender's
frame over the plain events' frame in the same frame.

- ``plain``: esper handlers for ``collision_enter`` and ``collision_exit`` (no-ops);
- ``typed (Ti, None) x10``: ``events=()``, ten registrations ``(Ti, None)`` with enter and exit;
  every pair that starts or ends is routed to the one or two registrations its entities' types
  name;
- ``typed (Ti, Tj) x10``: ten registrations over pairs of the ten types;
- ``typed, none held x10``: ten registrations on types no entity holds: pairs start and end,
  but no registered pair changes;
- ``... +churn``: the same two (plain and typed x10), with 1% of the entities given or
  relieved of an unregistered component each frame, so that every frame compares the
  registered types' holders.

    python -m bench handlers                 # N = 10,000, 60 frames
    python -m bench handlers --quick         # a smoke run
    python -m bench handlers --save

The target: with 10 registrations the frame costs at most 1.2 times the plain events'
frame, and typed routing adds nothing to frames in which no registered pair changes.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import esper

from bench.harness import median_ratio, time_in_turn
from bench.record import add_output_options, machine, markdown_table, saved
from bench.world import World
from ecs_spatial import AABB, COLLISION_ENTER, COLLISION_EXIT, Position, SpatialProcessor

TYPES: list[type[Any]] = [type(f"T{i}", (), {"__slots__": ()}) for i in range(10)]
UNHELD: list[type[Any]] = [type(f"U{i}", (), {"__slots__": ()}) for i in range(10)]


class Status:
    """An unregistered component that the churn variants add and remove."""

    __slots__ = ()


def nothing(a: int, b: int) -> None:
    """Every handler: does nothing, so the figures are the routing's and delivery's own."""


def build(world: World, name: str, setup: Callable[[SpatialProcessor], None], typed: bool) -> None:
    """An esper world ``name`` holding ``world``'s boxes, its SpatialProcessor set up."""
    esper.switch_world(name)
    spatial = SpatialProcessor(events=() if typed else (COLLISION_ENTER, COLLISION_EXIT))
    esper.add_processor(spatial)
    if not typed:
        esper.set_handler(COLLISION_ENTER, nothing)
        esper.set_handler(COLLISION_EXIT, nothing)
    for e in world.alive:
        esper.create_entity(
            Position(world.xs[e], world.ys[e]), AABB(world.ws[e], world.hs[e]), TYPES[e % 10]()
        )
    setup(spatial)
    esper.process()


def step(world: World) -> None:
    """One step of ``world``, and the current esper world's positions made to follow it (a
    component is assigned only if its value changed, as a game's movement would)."""
    world.step()
    xs, ys = world.xs, world.ys
    for e, pos in esper.get_component(Position):
        if pos.x != xs[e]:
            pos.x = xs[e]
        if pos.y != ys[e]:
            pos.y = ys[e]


def by_one_type(spatial: SpatialProcessor) -> None:
    for kind in TYPES:
        spatial.on_collision(kind, None, enter=nothing, exit=nothing)


def by_two_types(spatial: SpatialProcessor) -> None:
    for i in range(10):
        spatial.on_collision(TYPES[i // 2], TYPES[5 + i % 5], enter=nothing, exit=nothing)


def by_unheld_types(spatial: SpatialProcessor) -> None:
    for kind in UNHELD:
        spatial.on_collision(kind, None, enter=nothing, exit=nothing)


CONTENDERS: dict[str, tuple[Callable[[SpatialProcessor], None], bool, bool]] = {
    # name: (registrations, typed (events=()), churn)
    "plain": (lambda spatial: None, False, False),
    "typed (Ti, None) x10": (by_one_type, True, False),
    "typed (Ti, Tj) x10": (by_two_types, True, False),
    "typed, none held x10": (by_unheld_types, True, False),
    "plain +churn": (lambda spatial: None, False, True),
    "typed (Ti, None) x10 +churn": (by_one_type, True, True),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench handlers", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--moving", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: N = 500, 4 frames")
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.frames = 500, 4
    with saved(args, "handlers", argv):
        run(args.n, args.frames, args.moving)
    return 0


def run(n: int, frames: int, moving: float) -> None:
    print(f"{machine()}\n\nN = {n:,}, {moving:.0%} moving, {frames} frames; ms per frame\n")
    previous = esper.current_world
    worlds = {name: World(n, moving=moving) for name in CONTENDERS}
    names = {name: f"bench_handlers_{i}" for i, name in enumerate(CONTENDERS)}
    for name, (setup, typed, _) in CONTENDERS.items():
        build(worlds[name], names[name], setup, typed)
    seconds: dict[str, list[float]] = {name: [] for name in CONTENDERS}

    def runner(name: str) -> Callable[[], None]:
        world = worlds[name]
        churn = CONTENDERS[name][2]

        def frame() -> None:
            esper.switch_world(names[name])
            step(world)  # outside the timed part
            if churn:
                for e in range(1 + world.frame % 100, n + 1, 100):
                    if esper.has_component(e, Status):
                        esper.remove_component(e, Status)
                    else:
                        esper.add_component(e, Status())
            gc.collect()
            t0 = time.perf_counter()
            esper.process()
            seconds[name].append(time.perf_counter() - t0)

        return frame

    runners = {name: runner(name) for name in CONTENDERS}
    for frame in range(frames):
        time_in_turn(frame, runners)
    plain = seconds["plain"]
    rows = []
    for name in CONTENDERS:
        against = seconds["plain +churn"] if name.endswith("+churn") else plain
        rows.append([
            name,
            f"{statistics.median(seconds[name]) * 1e3:.2f}",
            f"{median_ratio(seconds[name], against):.2f}",
        ])
    print(markdown_table(["contender", "frame ms (median)", "/ plain (same frame)"], rows))
    esper.switch_world(previous)
    for name in names.values():
        esper.delete_world(name)


if __name__ == "__main__":
    raise SystemExit(main())
