"""Fresh esper worlds for tests, state machines and the stress scripts.

Every test that touches esper runs in a world of its own, created here and deleted after,
so tests never see each other's entities, processors or handlers.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
from collections.abc import Callable, Iterator

import esper

from ecs_spatial.events import COLLISION, COLLISION_ENTER, COLLISION_EXIT

_ids = itertools.count()

#: A collision event as a Recorder keeps it: (kind, a, b).
Event = tuple[str, int, int]


@contextlib.contextmanager
def fresh_world(prefix: str = "test") -> Iterator[str]:
    """Switch to a new, empty esper world named ``{prefix}_{n}`` and yield its name; on
    leaving, drop its handlers, switch back to the world that was current and delete it.

    The handlers are dropped while the test's world is current (switching back into it
    first, in case the test left it): esper's weak-reference callbacks clean up the registry
    of whichever world is current when a handler dies.
    """
    previous = esper.current_world
    name = f"{prefix}_{next(_ids)}"
    esper.switch_world(name)
    try:
        yield name
    finally:
        esper.switch_world(name)
        esper.event_registry.clear()
        esper.switch_world(previous)
        esper.delete_world(name)


def stress_main(
    description: str, run: Callable[[int, int], None], argv: list[str] | None = None
) -> int:
    """The command line of the differential stress scripts: ``run(seed, frames)`` for
    ``--seeds`` seeds from ``--start``, each in a fresh world; the seed of a failure is
    printed so that ``--start SEED --seeds 1`` replays it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--start", type=int, default=0)
    args = parser.parse_args(argv)
    for seed in range(args.start, args.start + args.seeds):
        with fresh_world("stress"):
            try:
                run(seed, args.frames)
            except AssertionError:
                print(f"seed {seed} failed (replay: --start {seed} --seeds 1)")
                raise
    print(f"ok: {args.seeds} seeds x {args.frames} frames")
    return 0


class Recorder:
    """Records pair events in order, as ``(kind, a, b)`` with kind ``"enter"``, ``"exit"``
    or ``"collision"``: by default the collision events, or the ``enter`` / ``exit`` /
    ``each`` event names given (``each=None`` for none). Its bound methods are the handlers,
    so it must stay referenced (esper holds handlers by weak reference)."""

    def __init__(
        self,
        enter: str = COLLISION_ENTER,
        exit: str = COLLISION_EXIT,
        each: str | None = COLLISION,
    ) -> None:
        self.events: list[Event] = []
        esper.set_handler(enter, self.enter)
        esper.set_handler(exit, self.exit)
        if each is not None:
            esper.set_handler(each, self.collision)

    def enter(self, a: int, b: int) -> None:
        self.events.append(("enter", a, b))

    def exit(self, a: int, b: int) -> None:
        self.events.append(("exit", a, b))

    def collision(self, a: int, b: int) -> None:
        self.events.append(("collision", a, b))

    def take(self, kinds: tuple[str, ...] = ("enter", "exit", "collision")) -> list[Event]:
        events, self.events = self.events, []
        return [ev for ev in events if ev[0] in kinds]
