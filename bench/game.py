"""ecs_spatial through esper: the SpatialProcessor's frame beside the game's own movement,
static worlds, the pair search's crossover, typed handlers, the whole stack, event delivery,
the overhead, saving.

Every part runs esper games (``bench.ours.EsperGame``) through the one frame loop, each
processor timed as its own phase. ``--parts`` (default: all):

- ``frame``: the user's ``Movement`` then the SpatialProcessor (enter and exit events to
  handlers that do nothing) beside a bare ``QuadTree`` making the same moves and finding all
  pairs; N = 10,000 and 50,000, 100%, 10% and 1% moving, CPU time.
- ``static``: 200,000 static + 100 moving against 1,000 static + 100 moving, each a world of
  its own, in turns of 10 frames, so that a change of load falls on both alike.
- ``crossover``: the incremental and the full pair search alternating at 2% to 30% moving:
  why ``pair_search = "auto"`` chooses by measured cost.
- ``handlers``: ``on_collision`` by component type against the plain events, every entity
  holding one of ten markers ``Ti``: ten ``(Ti, None)``, ten ``(Ti, Tj)``, ten on types
  nobody holds, and ``+churn`` (1% of the entities given or relieved of a component a frame).
- ``stack``: the SpatialProcessor, a CullingProcessor (a panning camera) and a
  ProximityProcessor (10% watching, radius 50).
- ``dispatch``: 1,000 pair events to a handler that does nothing: the Outbox, by role of
  event, against ``esper.dispatch_event``.
- ``overhead``: what adding ecs_spatial costs an esper game: the user's ``Movement`` in (1)
  the bare game on plain ``__slots__`` components, (2) ecs_spatial's ``Position`` and
  ``AABB``, (3) the same with the SpatialProcessor; beside them the index's buffer path. A
  game's frame is its movement plus its processor, CPU time; the overhead is (3 - 1) / 1, the
  tax on the user's loop the movement's time in 3 (or 2) / in 1. Instructions, where wall
  clock is noisy: ``python -m tools.frames overhead --callgrind``.
- ``save``: ``bench.saves``, the camera scene's world of 100,000 entities saved and loaded.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import esper

import ecs_spatial as es
from bench import record, saves
from bench.harness import Ask, Contender, Figures, Result, run, target
from bench.ours import (
    EsperGame,
    InEsper,
    QuadTreeContender,
    SlotAABB,
    SlotPosition,
    nothing,
    nothing_of,
)
from bench.queries import RADIUS, WINDOW
from bench.record import markdown_row, markdown_table
from bench.world import Step, World
from ecs_spatial.delivery import ENTER, EXIT, STAY, Outbox

SPATIAL = "SpatialProcessor"


@dataclass(frozen=True)
class Sizes:
    """What a run measures: the frame part's two sizes and their timed frames, the static
    worlds, and the other parts' frames."""

    small: int = 10_000
    large: int = 50_000
    small_frames: int = 15
    large_frames: int = 7
    warmup: int = 2
    static_big: int = 200_000
    static_small: int = 1_000
    static_movers: int = 100
    turn: int = 10
    turns: int = 4
    handlers_frames: int = 60
    stack_frames: int = 30
    events: int = 1_000
    dispatch_frames: int = 300
    #: The overhead part's worlds: N, the fraction moving, the timed frames.
    overhead: tuple[tuple[int, float, int], ...] = (
        (1_000, 1.0, 100), (10_000, 1.0, 300), (100_000, 1.0, 6), (10_000, 0.1, 30),
        (10_000, 0.01, 30))
    saved: int = 100_000
    save_repeats: int = 5


FULL = Sizes()
SHORT = replace(FULL, small_frames=6, large_frames=3, turns=2, handlers_frames=20,
                stack_frames=10, dispatch_frames=100)
QUICK = Sizes(small=1_000, large=2_000, small_frames=2, large_frames=2, warmup=1,
              static_big=2_000, static_small=200, static_movers=20, turn=2, turns=1,
              handlers_frames=3, stack_frames=2, events=100, dispatch_frames=5,
              overhead=((1_000, 1.0, 3), (10_000, 1.0, 3)), saved=2_000, save_repeats=1)


#: The SpatialProcessor of the plain events, enter and exit, each to a handler that does nothing.
PLAIN = {"events": (es.COLLISION_ENTER, es.COLLISION_EXIT)}


def _plain(game: EsperGame) -> None:
    esper.set_handler(es.COLLISION_ENTER, nothing)
    esper.set_handler(es.COLLISION_EXIT, nothing)


def user_game(name: str = "processor", *, world: World | None = None, turn: int = 1,
              kind: type[EsperGame] = EsperGame) -> EsperGame:
    """The user's game: Velocity and Movement, then the ``PLAIN`` SpatialProcessor."""
    return kind(name, movement="velocity", spatial=PLAIN, setup=_plain, world=world, turn=turn)


# -- frame, static, crossover -------------------------------------------------------------------


def frame_part(z: Sizes) -> list[list[str]]:
    print(markdown_table(["N", "moving", "movement ms", "processor ms", "bare tree ms",
                          "processor / bare", "pairs"]))
    results: dict[tuple[int, float], Result] = {}
    for n, frames in ((z.small, z.small_frames), (z.large, z.large_frames)):
        for frac in (1.0, 0.1, 0.01):
            r = results[n, frac] = run(
                "frame", World(n, moving=frac), [user_game(), QuadTreeContender(
                    "bare tree", feed="loop", bulk=True)],
                frames=frames, warmup=z.warmup, clock=time.process_time, keep=True)
            g, b = r["processor"], r["bare tree"]
            print(markdown_row([f"{n:,}", f"{frac:.0%}", f"{g.ms('movement'):.2f}",
                                f"{g.ms(SPATIAL):.2f}", f"{b.ms():.2f}",
                                f"{g.ratio(b, SPATIAL, 'frame'):.2f}", f"{r.answers:.0f}"]),
                  flush=True)
    g = results[z.small, 1.0]["processor"]
    print_phases(g, f"{z.small:,} all moving")
    share = results[z.large, 0.01]["processor"].ms(SPATIAL) / results[z.large, 1.0][
        "processor"].ms(SPATIAL)
    return [
        target(f"{z.small:,} all moving: processor / the user's movement",
               g.ratio(g, SPATIAL, "movement"), 1.0),
        target(f"{z.small:,} all moving: processor / bare tree",
               g.ratio(results[z.small, 1.0]["bare tree"], SPATIAL, "frame"), 1.5),
        target(f"{z.large:,}: 1% moving / all moving", share, 0.1),
    ]


def static_part(z: Sizes) -> list[list[str]]:
    games = [user_game(f"{static:,} static + {z.static_movers} moving", turn=z.turn,
                       world=World(static + z.static_movers,
                                   moving=z.static_movers / (static + z.static_movers)))
             for static in (z.static_big, z.static_small)]
    r = run("static", World(1), games, Ask("update"), frames=z.turns, warmup=0, verify=0,
            clock=time.process_time)
    big, small = r.contenders
    print(markdown_table(["world", "movement ms", "processor ms"], (
        [c.name, f"{c.ms('movement'):.3f}", f"{c.ms(SPATIAL):.3f}"] for c in r.contenders)))
    return [target(f"{big.name} / {small.name}", big.ratio(small, SPATIAL), 2.0)]


def print_phases(g: Figures, where: str) -> None:
    """The SpatialProcessor's phases in ``g`` (its ``timings``), median ms."""
    print(f"\n{where}, the processor's phases (`SpatialProcessor.timings`, median ms):\n")
    print(markdown_table(es.FrameTimings._fields,
                         [[f"{g.ms('spatial.' + f):.2f}" for f in es.FrameTimings._fields]]))


class Alternating(EsperGame):
    """The user's game whose pair search alternates frame by frame between the incremental
    and the full one, each frame's processor time a phase named after its search."""

    def before(self, world: World, step: Step) -> None:
        assert self.spatial is not None
        self.spatial.pair_search = ("incremental", "full")[world.frame % 2]

    def update(self, world: World, step: Step) -> None:
        super().update(world, step)
        assert self.spatial is not None
        self.phases[self.spatial.pair_search] = self.phases[SPATIAL]


def crossover_part(z: Sizes) -> list[list[str]]:
    print(markdown_table(["N", "moving", "incremental ms", "full ms", "incremental / full"]))
    for n, frames in ((z.small, z.small_frames), (z.large, z.large_frames)):
        for frac in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3):
            c = run("crossover", World(n, moving=frac), [user_game(kind=Alternating)],
                    Ask("update"), frames=2 * frames,
                    warmup=z.warmup, clock=time.process_time).contenders[0]
            inc, full = c.ms("incremental"), c.ms("full")
            print(markdown_row([f"{n:,}", f"{frac:.0%}", f"{inc:.1f}", f"{full:.1f}",
                                f"{inc / full:.2f}"]), flush=True)
    return []


# -- handlers -----------------------------------------------------------------------------------

TYPES: list[type[Any]] = [type(f"T{i}", (), {"__slots__": ()}) for i in range(10)]
UNHELD: list[type[Any]] = [type(f"U{i}", (), {"__slots__": ()}) for i in range(10)]


#: An unregistered component that the churn variants add and remove.
Status: type[Any] = type("Status", (), {"__slots__": ()})


class Churned(EsperGame):
    """A game whose entities, 1% a frame, are given or relieved of a ``Status`` (untimed)."""

    def before(self, world: World, step: Step) -> None:
        self.enter()
        for e in range(1 + world.frame % 100, world.n + 1, 100):
            if esper.has_component(e, Status):
                esper.remove_component(e, Status)
            else:
                esper.add_component(e, Status())


def handlers_contenders() -> list[EsperGame]:
    """The handlers part's games (``python -m tools.frames`` runs them too)."""
    def typed(pairs: list[tuple[type[Any], type[Any] | None]]) -> Callable[[EsperGame], None]:
        def setup(game: EsperGame) -> None:
            assert game.spatial is not None
            for a, b in pairs:
                game.spatial.on_collision(a, b, enter=nothing, exit=nothing)
        return setup

    def marker(e: int) -> list[object]:
        return [TYPES[e % 10]()]

    one = typed([(t, None) for t in TYPES])
    return [
        EsperGame("plain", spatial=PLAIN, setup=_plain, extra=marker),
        EsperGame("typed (Ti, None) x10", spatial={"events": ()}, setup=one, extra=marker),
        EsperGame("typed (Ti, Tj) x10", spatial={"events": ()}, extra=marker,
                  setup=typed([(TYPES[i // 2], TYPES[5 + i % 5]) for i in range(10)])),
        EsperGame("typed, none held x10", spatial={"events": ()}, extra=marker,
                  setup=typed([(u, None) for u in UNHELD])),
        Churned("plain +churn", spatial=PLAIN, setup=_plain, extra=marker),
        Churned("typed (Ti, None) x10 +churn", spatial={"events": ()}, setup=one, extra=marker),
    ]


def handlers_part(z: Sizes) -> list[list[str]]:
    r = run("handlers", World(z.small), handlers_contenders(), Ask("update"),
            frames=z.handlers_frames, warmup=z.warmup, collect=True)
    rows = []
    for c in r.contenders:
        base = r["plain +churn" if c.name.endswith("+churn") else "plain"]
        rows.append([c.name, f"{c.ms(SPATIAL):.2f}", f"{c.ratio(base, SPATIAL):.2f}"])
    print(markdown_table(["contender", "processor ms (median)", "/ plain (same frame)"], rows))
    return [target(f"{z.small:,} all moving: typed (Ti, None) x10 / plain",
                   r["typed (Ti, None) x10"].ratio(r["plain"], SPATIAL), 1.2)]


# -- the whole stack, and delivery --------------------------------------------------------------


def stack_part(z: Sizes) -> list[list[str]]:
    print(markdown_table(["N", "moving", "movement ms", "SpatialProcessor ms", "Culling ms",
                          "Proximity ms"]))
    for n in (z.small, z.large):
        for moving in (0.1, 0.01):
            world = World(n, moving=moving)
            watchers = set(world.watchers())

            def setup(game: EsperGame, world: World = world) -> None:
                assert game.spatial is not None
                for kind in (es.VIEW_ENTER, es.VIEW_EXIT, es.PROXIMITY_ENTER, es.PROXIMITY_EXIT):
                    esper.set_handler(kind, nothing_of)
                game.processors += [
                    es.CullingProcessor(game.spatial, lambda: es.Box(*world.camera(WINDOW, True))),
                    es.ProximityProcessor(game.spatial)]

            def watching(e: int, watchers: set[int] = watchers) -> list[object]:
                return [es.Proximity(RADIUS)] if e in watchers else []

            game = EsperGame("stack", spatial={}, setup=setup, extra=watching)
            c = run("stack", world, [game], frames=z.stack_frames, warmup=z.warmup).contenders[0]
            print(markdown_row([f"{n:,}", f"{moving:.0%}", *(f"{c.ms(p):.2f}" for p in (
                "movement", SPATIAL, "CullingProcessor", "ProximityProcessor"))]), flush=True)
    return []


class Delivery(InEsper):
    """Delivering the same pair events every frame to a handler that does nothing: a loop of
    ``esper.dispatch_event``, or an ``Outbox`` posted one role of event and delivered."""

    exact = None  # nothing to compare: the handler must stay empty

    def __init__(self, name: str, role: str, events: int) -> None:
        self.name, self.role, self.events = name, role, events

    def build(self, world: World, ask: Ask) -> None:
        self.enter()
        esper.set_handler("bench_event", nothing)
        ids = [esper.create_entity(object()) for _ in range(self.events + 1)]
        self.pairs = list(itertools.pairwise(ids))

    def update(self, world: World, step: Step) -> None:
        self.enter()
        if not self.role:
            dispatch = esper.dispatch_event
            for a, b in self.pairs:
                dispatch("bench_event", a, b)
            return
        box = Outbox()
        box.post("bench_event", self.role, self.pairs)
        box.deliver()


def dispatch_contenders(events: int) -> list[Contender]:
    return [Delivery("esper.dispatch_event", "", events), Delivery("Outbox, enters", ENTER, events),
            Delivery("Outbox, exits", EXIT, events), Delivery("Outbox, collisions", STAY, events)]


def dispatch_part(z: Sizes) -> list[list[str]]:
    r = run("dispatch", World(1), dispatch_contenders(z.events), Ask("update"),
            frames=z.dispatch_frames, warmup=z.warmup, quiet=True)
    base = r.contenders[0]
    print(markdown_table(["delivery", "ns/event", "/ esper.dispatch_event"], (
        [c.name, f"{c.ms() * 1e6 / z.events:.1f}", f"{c.ratio(base):.2f}"]
        for c in r.contenders), right=True))
    return []


# -- what ecs_spatial costs an esper game --------------------------------------------------------

BARE, COMPONENTS, PROCESSOR, BUFFERS = (
    "bare esper", "ecs_spatial components", "+ SpatialProcessor", "buffer path")


def overhead_contenders() -> list[Contender]:
    """The overhead part's worlds (``python -m tools.frames overhead`` runs them too)."""
    return [EsperGame(BARE, movement="velocity", position=SlotPosition, aabb=SlotAABB,
                      spatial=False),
            EsperGame(COMPONENTS, movement="velocity", spatial=False), user_game(PROCESSOR),
            QuadTreeContender(BUFFERS, feed="buffers", bulk=True, array_pairs=True)]


def overhead_part(z: Sizes) -> list[list[str]]:
    print(markdown_table(["N", "moving", *(f"{c} ms" for c in (BARE, COMPONENTS, PROCESSOR)),
                          "ns / moving entity (1, 2, 3)", "overhead (3 - 1) / 1",
                          "tax: movement 2 / 1", "tax: movement 3 / 1",
                          "processor / buffer path"]))
    results: dict[tuple[int, float], Result] = {}
    for n, frac, frames in z.overhead:
        r = results[n, frac] = run("overhead", World(n, moving=frac), overhead_contenders(),
                                   frames=frames, warmup=z.warmup, clock=time.process_time)
        for c in r.contenders[:3]:  # a game's frame: its movement, then its processor
            c.times["game"] = [m + s for m, s in zip(
                c.times["movement"], c.times.get(SPATIAL) or [0.0] * frames, strict=True)]
        bare, parts, full, buffers = r.contenders
        ns = [f"{c.ms('game') * 1e6 / (n * frac):,.0f}" for c in (bare, parts, full)]
        print(markdown_row([f"{n:,}", f"{frac:.0%}", *(f"{c.ms('game'):.3f}" for c in (
            bare, parts, full)), ", ".join(ns), f"{full.ratio(bare, 'game') - 1:.2f}",
            f"{parts.ratio(bare, 'movement'):.2f}", f"{full.ratio(bare, 'movement'):.2f}",
            f"{full.ratio(buffers, SPATIAL, 'frame'):.2f}"]), flush=True)
    head = results.get((10_000, 1.0))
    if head is None:
        return []
    full, bare = head[PROCESSOR], head[BARE]
    print_phases(full, "10,000 all moving")
    few = results.get((10_000, 0.01))
    return [
        target("10,000 all moving: overhead (3 - 1) / 1", full.ratio(bare, "game") - 1, 0.75),
        target("10,000 all moving: tax on the user's loop", full.ratio(bare, "movement"), 1.2),
        target("10,000 all moving: processor / buffer path",
               full.ratio(head[BUFFERS], SPATIAL, "frame"), 3.0),
        target("10,000: processor at 1% moving / all moving",
               few[PROCESSOR].ms(SPATIAL) / full.ms(SPATIAL) if few else None, 0.05),
    ]


PARTS: dict[str, Callable[[Sizes], list[list[str]]]] = {
    "frame": frame_part, "static": static_part, "crossover": crossover_part,
    "handlers": handlers_part, "stack": stack_part, "dispatch": dispatch_part,
    "overhead": overhead_part, "save": lambda z: saves.save_part(z.saved, z.save_repeats),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = record.command("esper", __doc__, parts=list(PARTS))
    parser.add_argument("--short", action="store_true", help="the same sizes, fewer frames")
    args = record.parse(parser, argv)
    with record.saved(args):
        print(f"{record.machine()}, esper {esper.__version__}")
        record.print_parts(args, PARTS, QUICK if args.quick else SHORT if args.short else FULL)
    return 0
