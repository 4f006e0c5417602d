"""Delivering a processor's events exactly once, whatever the handlers do.

Every processor of ecs_spatial works out its events for a frame first (its state already
describes the frame), then hands them to its :class:`Outbox`, which calls the esper handlers.
The outbox holds the three delivery rules, once for all processors:

Exactly once
    Each event is delivered once to each handler set for it. If a handler raises, the
    exception propagates unchanged out of ``process()``; the outbox keeps what it had not yet
    delivered (the other handlers of that event, then the later events), and the processor's
    next ``process()`` delivers it first, before that frame's own events.

Every frame is worked out
    A ``process()`` delivers what is owed, then works out its frame, then delivers the
    frame's events (:meth:`Outbox.run_frame`). If a handler raises in the owed delivery,
    the frame is worked out all the same and its events are queued behind what is still
    owed, to come at the next ``process()``; then the exception propagates. So a raise
    never costs a frame: the processor's state describes it, and the events of a pair that
    began and ended while handlers raised still come, in order.

The deletion rule
    An *enter* (``collision_enter``, ``view_enter``, ``proximity_enter``) or a ``collision``
    is delivered only while every entity it names exists (``esper.entity_exists``: an entity
    deleted with esper's deferred ``delete_entity`` no longer does). An enter not delivered
    makes its *exit* silent too; every enter delivered gets exactly one exit, also when an
    entity it names was deleted, so an exit handler may be handed an id that no longer exists.

No re-entry
    While an outbox delivers, no processor of this package runs in the same esper world:
    ``esper.process()`` called from a handler raises ``RuntimeError`` instead of interleaving
    two frames' events (as Box2D locks its world during callbacks).

A handler set or removed by a handler takes effect from the next event, as with
``esper.dispatch_event``.
"""

from __future__ import annotations

import copy
import pickle
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import esper

__all__ = ["ENTER", "EXIT", "ONCE", "STAY", "Outbox", "delivering_in"]

#: The role of a batch of events, which decides the delivery rule applied to each. ONCE is
#: an event of its own, keyed ``(a, b, value)``, with no enter or exit to balance: like a
#: stay, it is delivered only while ``a`` and ``b`` exist.
ENTER, EXIT, STAY, ONCE = "enter", "exit", "stay", "once"

#: The esper worlds in which some outbox is delivering now (a stack: nested worlds).
_delivering: list[str] = []


def delivering_in(world: str) -> bool:
    """Whether an outbox is delivering events in the esper world ``world`` right now (a
    processor's ``process()`` was called from one of that world's event handlers)."""
    return world in _delivering


class Outbox:
    """A processor's events not yet delivered, in order, and the keys of the enters that were
    not delivered (their exits are to stay silent).

    A *key* is what an event names: an entity id for the view events, a pair of ids for the
    others. Each batch is ``[event name, role, keys, position of the next key]``; in place of
    the event name, a batch may name an object with a ``deliver(batch)`` method (a typed
    :class:`~ecs_spatial.collision_handlers.CollisionHandler`), which delivers it by its own
    rules and records its position the same way.
    """

    __slots__ = ("_batches", "_holding", "_owed", "_silent")

    def __init__(self) -> None:
        self._batches: deque[list[Any]] = deque()
        # True while run_frame works out a frame behind a raise: deliver() then waits.
        self._holding = False
        # Keys whose enter was not delivered (an entity did not exist): their exit is dropped.
        self._silent: set[Any] = set()
        # The rest of a half-delivered event: (name, key, esper's weak references to the
        # handlers still owed it, its role). A pickle holds the handlers themselves instead
        # (those that pickle), found again among the handlers set for the event when it is
        # delivered. The role is None for one saved by an older version.
        self._owed: tuple[str, Any, list[Any] | tuple[Any, ...], str | None] | None = None

    def __bool__(self) -> bool:
        """Whether anything is waiting to be delivered."""
        return bool(self._batches) or self._owed is not None

    def __getstate__(
        self,
    ) -> tuple[list[list[Any]], set[Any], tuple[str, Any, list[Any], str | None] | None]:
        return [list(batch) for batch in self._batches], set(self._silent), _saved(self._owed)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        batches, silent = state[:2]
        self._batches = deque(batches)
        self._holding = False
        self._silent = silent
        # (0.2.0 saved no owed event, and later versions no role.) Marked by a tuple of
        # handlers: see deliver().
        owed = state[2] if len(state) > 2 else None
        if owed is not None:
            role = owed[3] if len(owed) > 3 else None
            self._owed = (owed[0], owed[1], tuple(owed[2]), role)
        else:
            self._owed = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Outbox:
        """A copy in the same process: the same handlers are still owed, by the same weak
        references (which deepcopy cannot copy)."""
        twin = Outbox()
        memo[id(self)] = twin
        twin._batches = deque(copy.deepcopy(list(map(list, self._batches)), memo))
        twin._silent = copy.deepcopy(self._silent, memo)
        owed = self._owed
        if owed is not None:
            name, key, owed_to, role = owed  # weak references (a list), or loaded handlers
            twin._owed = (name, copy.deepcopy(key, memo), owed_to[:], role)
        return twin

    def post(self, name: Any, role: str, keys: list[Any]) -> None:
        """Queue ``keys`` as events ``name`` (an event name, or an object that delivers its
        own batches) of ``role`` (ENTER, EXIT or STAY), after what is queued already. The
        list is the outbox's from now on: do not change it."""
        if keys:
            self._batches.append([name, role, keys, 0])

    def forget_arrivals(self) -> None:
        """For a world whose entities are gone at once (``esper.clear_database``, a world
        deleted and made again): the queued enters and ``collision`` events are dropped, never
        to be delivered, and so their exits will be silent; queued exits stay. An enter or
        an exit that a raise cut off half-way stays owed to the handlers after the raising
        one: it balances what the handlers before them were given."""
        if self._owed is not None and self._owed[3] not in (ENTER, EXIT):
            self._owed = None
        kept: deque[list[Any]] = deque()
        for batch in self._batches:
            name, role, keys, start = batch
            if type(name) is not str:  # a typed registration keeps its own balance
                if role != ENTER and role != STAY:
                    kept.append(batch)
            elif role == ENTER:
                self._silent.update(keys[start:])
            elif role == EXIT:
                kept.append(batch)
        self._batches = kept

    def queued(self) -> Iterator[tuple[Any, str, list[Any]]]:
        """``(name, role, keys)`` of each batch still queued, in order, ``keys`` only those
        not yet delivered (for a typed registration, which plans a frame by what it will
        hold once they are). Complexity: O(batches + keys)."""
        for name, role, keys, start in self._batches:
            yield name, role, keys[start:]

    def run_frame(self, frame: Callable[[], object]) -> None:
        """Deliver what an earlier ``process()`` left owed, then call ``frame()``, which
        works out the processor's frame, posts its events and delivers them (it calls
        :meth:`deliver` itself): every processor's ``process()`` runs its frame through here.

        If a handler raises an ``Exception`` in the owed delivery (the raising call counts
        as delivered), ``frame()`` is still called, and its :meth:`deliver` waits: the
        frame's events stay queued behind what is still owed, for the next ``process()``.
        Then that exception propagates, unchanged. If ``frame()`` raises too (a bad
        component value: it changes nothing then), its own error propagates instead, with
        the handler's exception as its ``__context__``, as Python chains an error raised
        while another is handled. A ``BaseException`` that is not an ``Exception``
        (``KeyboardInterrupt``, ``SystemExit``) asks to stop now: it propagates at once, the
        frame left to the next ``process()``, which works out the world as it is then.

        Complexity: nothing beyond ``frame()`` and the deliveries (a check of the queue).
        """
        if not (self._batches or self._owed is not None):
            frame()
            return
        try:
            self.deliver()
        except Exception:
            self._holding = True
            try:
                frame()
            finally:
                self._holding = False
            raise
        frame()

    def deliver(self) -> None:
        """Deliver everything queued, in order, by the rules of the module docstring
        (nothing while :meth:`run_frame` holds the frame's events back).

        Complexity: O(events x handlers), plus one dict and set look-up per entity named by
        an enter or a ``collision`` (the deletion rule).
        """
        if not (self._batches or self._owed is not None) or self._holding:
            return
        world = esper.current_world
        _delivering.append(world)
        try:
            owed = self._owed
            if owed is not None:
                name, key, owed_to, role = owed
                self._owed = None
                if isinstance(owed_to, tuple):  # loaded: the handlers, found among those set now
                    refs = [
                        ref for ref in esper.event_registry.get(name) or ()
                        if any(ref() == handler for handler in owed_to)
                    ]
                else:
                    refs = owed_to
                self._call(name, key, refs, role)
            batches = self._batches
            while batches:
                self._deliver_batch(batches[0])
                batches.popleft()
        finally:
            _delivering.pop()

    def _call(self, name: str, key: Any, refs: list[Any], role: str | None) -> None:
        """Call the handlers behind ``refs`` with ``key``; if one raises, owe the key to the
        handlers after it."""
        args = key if type(key) is tuple else (key,)
        ref = None
        try:
            for ref in refs:
                handler = ref()
                if handler is not None:
                    handler(*args)
        except BaseException:
            self._owe(name, key, refs, ref, role)
            raise

    def _owe(
        self, name: str, key: Any, refs: list[Any], raised: Any, role: str | None
    ) -> None:
        """Record that the handlers after ``raised`` in ``refs`` are still owed ``key``, an
        event of ``role``."""
        rest = refs[refs.index(raised) + 1 :]
        if rest:
            self._owed = (name, key, rest, role)

    def _deliver_once(self, batch: list[Any]) -> None:
        """Deliver a batch of ONCE events ``(a, b, value)``, each while ``a`` and ``b``
        exist, by the same resume rule as :meth:`_deliver_batch` (not its hot loop: these
        are few)."""
        name, _, keys, start = batch
        i = start
        ref = None
        key: Any = None
        try:
            for i in range(start, len(keys)):
                key = keys[i]
                if not (esper.entity_exists(key[0]) and esper.entity_exists(key[1])):
                    continue
                handlers = esper.event_registry.get(name)
                refs = list(handlers) if handlers else []
                for ref in refs:
                    handler = ref()
                    if handler is not None:
                        handler(*key)
        except BaseException:
            batch[3] = i + 1
            if ref is not None:
                self._owe(name, key, refs, ref, ONCE)
            raise

    def _deliver_batch(self, batch: list[Any]) -> None:
        """Deliver one batch from its recorded position; on an exception, record where to
        resume (the raising handler's event counts as delivered to it, the handlers after it
        are owed it).

        The hot loop of every frame's events, written out per shape of key (a pair or one
        id) with esper's ``dispatch_event`` inlined: with a method call per event it cost
        2.1 times esper's own dispatch; in this shape 1.02 to 1.03 times its instructions
        per enter or ``collision``, 0.83 per exit (``python -m bench dispatch`` under callgrind).
        """
        name, role, keys, start = batch
        if type(name) is not str:  # a CollisionHandler's batch: it keeps its own rules
            name.deliver(batch)
            return
        if role == ONCE:
            self._deliver_once(batch)
            return
        silent = self._silent
        registry = esper.event_registry
        get = registry.get
        handlers = get(name)
        if not handlers:
            if role == STAY:
                return  # nobody listens, and a stay leaves no trace to keep in step
            if role == EXIT:
                if silent:
                    silent.difference_update(keys[start:])
                return
        refs = list(handlers) if handlers else []
        count = len(refs)
        entities = esper._entities  # esper.entity_exists, inlined: it is called per event
        dead = esper._dead_entities
        is_exit = role == EXIT
        is_enter = role == ENTER
        i = start
        ref = None
        key: Any = None
        try:
            if type(keys[0]) is tuple:
                for i in range(start, len(keys)):
                    key = keys[i]
                    a, b = key
                    if is_exit:
                        if silent and key in silent:
                            silent.discard(key)
                            continue
                    elif not (
                        a in entities and b in entities
                        and (not dead or (a not in dead and b not in dead))
                    ):
                        if is_enter:
                            silent.add(key)
                        continue
                    elif silent and not is_enter and key in silent:
                        continue
                    now = get(name)  # a handler may set or remove handlers
                    if now is not handlers or (now is not None and len(now) != count):
                        handlers = now
                        refs = list(now) if now else []
                        count = len(refs)
                    for ref in refs:
                        handler = ref()
                        if handler is not None:
                            handler(a, b)
            else:
                for i in range(start, len(keys)):
                    key = keys[i]
                    if is_exit:
                        if silent and key in silent:
                            silent.discard(key)
                            continue
                    elif key not in entities or key in dead:
                        if is_enter:
                            silent.add(key)
                        continue
                    elif silent and not is_enter and key in silent:
                        continue
                    now = get(name)
                    if now is not handlers or (now is not None and len(now) != count):
                        handlers = now
                        refs = list(now) if now else []
                        count = len(refs)
                    for ref in refs:
                        handler = ref()
                        if handler is not None:
                            handler(key)
        except BaseException:
            batch[3] = i + 1
            if ref is not None:
                self._owe(name, key, refs, ref, role)
            raise


def _saved(
    owed: tuple[str, Any, Any, str | None] | None,
) -> tuple[str, Any, list[Any], str | None] | None:
    """What a pickle keeps of a half-delivered event: its name, its key, the handlers still
    owed it that are alive and can be pickled (a module-level function, a bound method of a
    picklable object; the others, a lambda or a window's method, lose that one event), and
    its role.
    """
    if owed is None:
        return None
    name, key, refs, role = owed
    handlers = [ref() for ref in refs] if type(refs) is list else list(refs)
    kept = []
    for handler in handlers:
        if handler is None:
            continue
        try:
            pickle.dumps(handler)
        except Exception:  # whatever pickle refuses is left behind
            continue
        kept.append(handler)
    return (name, key, kept, role) if kept else None
