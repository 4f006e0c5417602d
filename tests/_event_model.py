"""The event delivery rules, modelled from the issue's words, and a handler that injects faults.

The model knows nothing of the processors' code. Each processor has an :class:`OutboxModel`:
the events it worked out and has not delivered yet, and the keys whose enter was not
delivered. A frame's events are *expected* from brute-force truth; what the handlers were
really given is read back from a :class:`FaultyRecorder`'s log, in order, with the deletions
the handlers made and the exceptions they raised between the events, so the model knows at
each step which entities exist:

- an event is delivered once; if its handler raises, or switches to another world, the
  processor stops there, and what it had not delivered comes first at its next
  ``process()`` (in its own world);
- an enter or a ``collision`` is delivered only while every entity it names exists; an
  enter not delivered makes the pair's exit silent; exits are always delivered otherwise;
- a handler that clears the database (and makes entities, which take the old ids) ends the
  old world's arrivals at once: the enters and stays still to deliver are dropped, the
  enters' exits silent, the exits still delivered.

At the end, the brute-force truth of a world's pairs (:func:`model_pairs`), which the
collision models share.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import esper
from hypothesis import strategies as st
from hypothesis.stateful import rule

from ecs_spatial.components import AABB, CollisionFilter, Position
from ecs_spatial.events import (
    COLLISION,
    COLLISION_ENTER,
    COLLISION_EXIT,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    VIEW_ENTER,
    VIEW_EXIT,
)
from ecs_spatial.geometry import Box

Key = Any  # an entity id (view events) or a pair of ids
ENTER, EXIT, STAY = "enter", "exit", "stay"
ROLES = {
    COLLISION_ENTER: ENTER, COLLISION_EXIT: EXIT, COLLISION: STAY,
    VIEW_ENTER: ENTER, VIEW_EXIT: EXIT, PROXIMITY_ENTER: ENTER, PROXIMITY_EXIT: EXIT,
}


class InjectedFault(Exception):
    """What a FaultyRecorder raises from a handler."""


@dataclass
class Frame:
    """What the handlers did during one ``esper.process()``: their log, read in order, and
    the entities alive (``esper.entity_exists``) as the log is replayed."""

    log: list[tuple[Any, ...]]
    alive: set[int]
    deleted_now: set[int] = field(default_factory=set)  # immediately, during this process()
    cursor: int = 0
    #: How many databases the world has had, as of the point of the log replayed (a
    #: handler's clear counts one), and what the world held at the frame's start or, after a
    #: clear, what the handler that cleared it made (``FaultyRecorder.on_clear``'s return).
    database: int = 0
    world: Any = None
    #: Whether a handler switched to another world (the rest of the process() did nothing).
    left: bool = False

    def take(self, name: str, key: Key, context: str) -> bool:
        """Expect the next logged event to be ``name(key)``; replay what the handler did
        (deletions, a clear of the database); return whether the delivery stops there (it
        raised, or switched worlds)."""
        assert self.cursor < len(self.log), f"{context}: expected {name}{key} but no more events"
        got = self.log[self.cursor]
        assert got == ("event", name, key), f"{context}: expected {name}{key}, got {got}"
        self.cursor += 1
        stops = False
        while self.cursor < len(self.log) and self.log[self.cursor][0] != "event":
            what = self.log[self.cursor]
            if what[0] == "delete":
                self.alive.discard(what[1])
                if what[2]:
                    self.deleted_now.add(what[1])
            elif what[0] == "clear":
                self.database += 1
                self.world = what[1]
                self.alive = set(what[2])
                self.deleted_now = set()
            elif what[0] == "leave":
                self.left = stops = True
            else:
                stops = True
            self.cursor += 1
        return stops

    def done(self, context: str) -> None:
        assert self.cursor == len(self.log), (
            f"{context}: unexpected events delivered: {self.log[self.cursor:]}"
        )


class OutboxModel:
    """One processor's undelivered events and silent keys, by the rules above."""

    def __init__(self) -> None:
        self.pending: deque[tuple[str, Key]] = deque()
        self.silent: set[Key] = set()
        #: Keys told entered and not yet exited, per event family: for the balance check.
        self.open: set[tuple[str, Key]] = set()

    def post(self, name: str, keys: Iterable[Key]) -> None:
        self.pending.extend((name, key) for key in keys)

    def forget_arrivals(self) -> None:
        """A new database: queued enters become silent, queued stays are dropped."""
        kept: deque[tuple[str, Key]] = deque()
        for name, key in self.pending:
            if ROLES[name] == ENTER:
                self.silent.add(key)
            elif ROLES[name] == EXIT:
                kept.append((name, key))
        self.pending = kept

    def deliver(self, frame: Frame, context: str) -> bool:
        """Deliver in order against the log; False if a handler raised or left the world
        (the rest pends)."""
        while self.pending:
            name, key = self.pending.popleft()
            role = ROLES[name]
            ids = key if isinstance(key, tuple) else (key,)
            if role == EXIT:
                if key in self.silent:
                    self.silent.discard(key)
                    continue
            elif not all(e in frame.alive for e in ids):
                if role == ENTER:
                    self.silent.add(key)
                continue
            elif role == STAY and key in self.silent:
                continue
            family = name.split("_")[0]
            if role == ENTER:
                assert (family, key) not in self.open, f"{context}: second enter {name}{key}"
                self.open.add((family, key))
            elif role == EXIT:
                assert (family, key) in self.open, f"{context}: exit {name}{key} with no enter"
                self.open.discard((family, key))
            database = frame.database
            stops = frame.take(name, key, context)
            if frame.database != database:
                self.forget_arrivals()
            if stops:
                return False
        return True


class FaultyRecorder:
    """The handler of every event name: logs each call as ``("event", name, key)``; then, as
    planned, deletes an entity the event names (``("delete", e, immediate)``), visits
    another world and comes back (``detour_rate``: nothing to log, nothing may change),
    clears the database (``("clear", world, alive)``, with what ``on_clear``, if set, makes
    and returns, and the ids alive then), and raises (``("raise",)``) or else switches to
    another world and stays there (``("leave",)``; :attr:`left` names the world left, for
    the test to switch back). Each at random (``*_rate``), at the call numbered ``*_at``
    since the last :meth:`take` (0 for the first), or, for a raise, at the first call of an
    event named in ``raise_on`` (which is then emptied). It handles the events ``names``
    (by default all of the package's). Holds its handlers (esper keeps weak references)."""

    NAMES = (
        COLLISION_ENTER, COLLISION_EXIT, COLLISION,
        VIEW_ENTER, VIEW_EXIT, PROXIMITY_ENTER, PROXIMITY_EXIT,
    )

    def __init__(self, rng: random.Random, names: tuple[str, ...] = NAMES) -> None:
        self.rng = rng
        self.log: list[tuple[Any, ...]] = []
        self.raise_rate = 0.0
        self.delete_rate = 0.0
        self.detour_rate = 0.0
        self.clear_rate = 0.0
        self.leave_rate = 0.0
        self.raise_at: int | None = None
        self.clear_at: int | None = None
        self.leave_at: int | None = None
        self.raise_on: frozenset[str] = frozenset()
        #: Called right after a handler clears the database: makes the new world's
        #: entities, and returns what the test's model needs of them.
        self.on_clear: Any = None
        #: The world a handler left (None while none did).
        self.left: str | None = None
        self.calls = 0  # since the last take()
        self._handlers = {name: self._handler(name) for name in names}
        self.register()

    def register(self) -> None:
        """Set the handlers in the current world (again, after a world is made anew)."""
        for name, handler in self._handlers.items():
            esper.set_handler(name, handler)

    def _handler(self, name: str) -> Any:
        def handle(*key: int) -> None:
            self.log.append(("event", name, key[0] if len(key) == 1 else key))
            call = self.calls
            self.calls += 1
            rng = self.rng
            if self.delete_rate and rng.random() < self.delete_rate:
                victim = rng.choice(key)
                if esper.entity_exists(victim):
                    immediate = rng.random() < 0.5
                    esper.delete_entity(victim, immediate=immediate)
                    self.log.append(("delete", victim, immediate))
            if self.detour_rate and rng.random() < self.detour_rate:
                self.detour()
            if call == self.clear_at or (self.clear_rate and rng.random() < self.clear_rate):
                esper.clear_database()
                world = self.on_clear() if self.on_clear is not None else None
                alive = {e for e in esper.get_entities() if esper.entity_exists(e)}
                self.log.append(("clear", world, alive))
            planned = call == self.raise_at or name in self.raise_on
            if planned or (self.raise_rate and rng.random() < self.raise_rate):
                if name in self.raise_on:
                    self.raise_on = frozenset()
                self.log.append(("raise",))
                raise InjectedFault(f"{name}{key}")
            if call == self.leave_at or (self.leave_rate and rng.random() < self.leave_rate):
                self.left = esper.current_world
                esper.switch_world(self.left + "_away")
                self.log.append(("leave",))

        return handle

    @staticmethod
    def detour() -> None:
        """Make an entity in another world, and come back: the delivery must not notice."""
        home = esper.current_world
        esper.switch_world(home + "_detour")
        esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
        esper.switch_world(home)
        esper.delete_world(home + "_detour")

    def come_back(self) -> None:
        """If a handler left the world, switch back to it (and drop the one it went to)."""
        if self.left is not None:
            away = esper.current_world
            esper.switch_world(self.left)
            esper.delete_world(away)
            self.left = None

    def take(self) -> list[tuple[Any, ...]]:
        log, self.log = self.log, []
        self.calls = 0
        return log


class DiffModel:
    """A follower's events (culling, proximity) modelled as the difference of its state from
    one ``process()`` to the next, delivered through an :class:`OutboxModel`: what a raise
    left owed first; then the frame's exits and enters, each sorted, queued behind it
    whatever its delivery raised (the frame is worked out all the same), unless a handler
    of what was owed switched to another world (the frame then waits for the next
    ``process()``)."""

    def __init__(self, exit_name: str, enter_name: str) -> None:
        self.exit_name = exit_name
        self.enter_name = enter_name
        self.outbox = OutboxModel()
        #: The state as of the last process(): visible entities, or (watcher, other) pairs.
        self.previous: set[Key] = set()
        #: Whether the last process() worked out its frame (not left for later by a switch).
        self.worked_out = True

    def frame(self, log: list[tuple[Any, ...]], expected: set[Key], context: str) -> set[Key]:
        """Check one ``process()``: ``log`` is what its handlers were given (a
        :class:`FaultyRecorder`'s, no deletions), ``expected`` the state it must have
        worked out if it did. Returns the state it must hold now."""
        alive = {e for e in esper.get_entities() if esper.entity_exists(e)}
        frame = Frame(log, alive)
        owed_delivered = self.outbox.deliver(frame, f"{context} (owed)")
        self.worked_out = not frame.left
        if self.worked_out:
            self.outbox.post(self.exit_name, sorted(self.previous - expected))
            self.outbox.post(self.enter_name, sorted(expected - self.previous))
            if owed_delivered:
                self.outbox.deliver(frame, context)
            self.previous = expected
        frame.done(context)
        return self.previous


# -- brute-force truth of a world's pairs -------------------------------------------------------


def model_box(pos: Position, aabb: AABB) -> Box:
    """The box the issue defines, with the same float operations in the same order."""
    x0 = pos.x + aabb.offset_x
    y0 = pos.y + aabb.offset_y
    return Box(x0, y0, x0 + aabb.width, y0 + aabb.height)


def accepts(fa: CollisionFilter | None, fb: CollisionFilter | None) -> bool:
    """The collision rule, written from the issue's words; no filter = CollisionFilter()."""
    ca, ma, ga = (1, 0xFFFFFFFF, 0) if fa is None else (fa.category, fa.mask, fa.group)
    cb, mb, gb = (1, 0xFFFFFFFF, 0) if fb is None else (fb.category, fb.mask, fb.group)
    return (ca & mb) != 0 and (cb & ma) != 0 and not (ga != 0 and ga == gb)


def model_pairs() -> set[tuple[int, int]]:
    """Every accepted overlapping pair of the current world, by brute force."""
    boxes: dict[int, Box] = {}
    filters: dict[int, CollisionFilter | None] = {}
    for entity in list(esper.get_entities()):
        pos = esper.try_component(entity, Position)
        aabb = esper.try_component(entity, AABB)
        if pos is not None and aabb is not None:
            boxes[entity] = model_box(pos, aabb)
            filters[entity] = esper.try_component(entity, CollisionFilter)
    ids = sorted(boxes)
    out: set[tuple[int, int]] = set()
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if boxes[a].intersects(boxes[b]) and accepts(filters[a], filters[b]):
                out.add((a, b))
    return out


class FaultRules:
    """The fault rules a follower's state machine shares (mix into a
    ``RuleBasedStateMachine`` whose ``rec`` is a :class:`FaultyRecorder`)."""

    rec: FaultyRecorder

    @rule(call=st.integers(0, 6))
    def handler_raises(self, call: int) -> None:
        """At call number ``call`` of the next frame: in what an earlier raise left owed,
        or in the frame's own events."""
        self.rec.raise_at = call

    @rule(call=st.integers(0, 6), back=st.booleans())
    def handler_switches_worlds(self, call: int, back: bool) -> None:
        """At call number ``call`` of the next frame, a handler switches to another world
        and stays there (the test comes back after the frame); or (``back``) every handler
        of the next frame visits another world and comes back."""
        if back:
            self.rec.detour_rate = 1.0
        else:
            self.rec.leave_at = call
