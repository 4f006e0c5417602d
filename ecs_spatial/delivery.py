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

One world
    An outbox delivers only in the esper world its processor serves. A handler that switches
    worlds (``esper.switch_world``: a scene change on a hit) stops the delivery there, as a
    raise would, but without an exception: its event counts as delivered to it, and the rest
    (the handlers after it, then the later events) waits, queued, for the processor's next
    ``process()`` in its own world, which delivers it first. The processors that the old
    world's ``esper.process()`` runs after that handler, now that another world is current,
    do nothing (their frames wait too). A handler that switches worlds and back before it
    returns changes nothing.

A replaced database
    A handler that replaces the database of the world being delivered in
    (``esper.clear_database()``, or the world deleted and made again; esper then hands out
    the old ids again) ends that world's arrivals at once, by the rule a processor applies
    when it finds a new database at its next ``process()``: the enters, ``collision`` events
    and other stays still queued are dropped (so the exits of those enters stay silent);
    the exits still queued are delivered; the handlers after this one get its event if it
    is an enter or an exit (it balances what the handlers before them got). No event of the
    old world reaches an entity that took an old id. The processor itself starts afresh at
    its next ``process()``: an exit for everything it had reported, then the new world's
    enters.

A save made by a handler
    The outbox's record of what it has still to deliver is kept current at every handler
    call, so that a world saved by a handler (``save_world``, ``pickle``, ``copy.deepcopy``:
    an autosave on a checkpoint hit) restores to exactly the events not yet delivered: the
    event being handled counts as delivered to the handler that saves and those before it
    (as for a raise), and owed to the handlers after it.

A handler set or removed by a handler takes effect from the next event, as with
``esper.dispatch_event``.
"""

from __future__ import annotations

import copy
import pickle
from collections import deque
from collections.abc import Callable, Iterator
from itertools import chain
from operator import length_hint
from typing import Any

import esper

from ._esper_tables import DATABASE_SLOT, _Stamp, existence, processors
from ._versions import OUTBOX

__all__ = [
    "ENTER", "EXIT", "ONCE", "STAY", "Outbox", "Replaced", "delivering_in", "exist", "left_by",
    "returned",
]

#: The role of a batch of events, which decides the delivery rule applied to each. ONCE is
#: an event of its own, keyed ``(a, b, value)``, with no enter or exit to balance: like a
#: stay, it is delivered only while ``a`` and ``b`` exist.
ENTER, EXIT, STAY, ONCE = "enter", "exit", "stay", "once"

#: The esper worlds in which some outbox is delivering now (a stack: nested worlds).
_delivering: list[str] = []
#: The esper worlds that a handler left (``esper.switch_world``) while an outbox was
#: delivering there, each with its processors, until a processor runs in it again (see
#: :func:`left_by`). At most one entry per world name.
_left: dict[str, list[Any]] = {}


def _compiled_loop() -> Callable[..., int] | None:
    """``_cpair_set.deliver_pairs``, the compiled twin of :meth:`Outbox._deliver_batch`'s
    loop over pairs with one handler, with the compiled core (not in a pure-Python build,
    nor under ``ECS_SPATIAL_PURE=1``, where the Python loop runs: the reference)."""
    from .index import NATIVE

    if not NATIVE:
        return None
    try:
        from ._cpair_set import deliver_pairs
    except ImportError:
        return None
    return deliver_pairs


#: See :func:`_compiled_loop`; tests set it to None to run the reference loop.
_deliver_pairs: Callable[..., int] | None = _compiled_loop()


def exist(*ids: int) -> bool:
    """The deletion rule's test: whether every entity of ``ids`` exists in the current world
    (``esper.entity_exists`` of each: held by the world, and not marked for esper's deferred
    deletion). An enter, a stay or a ONCE event is delivered only while every entity it
    names does. The loops that deliver each event inline it, labelled as copies of it."""
    entities, dead = existence()
    for entity in ids:  # noqa: SIM110 (all() of a generator costs one more frame a call)
        if entity not in entities or entity in dead:
            return False
    return True


def delivering_in(world: str) -> bool:
    """Whether an outbox is delivering events in the esper world ``world`` right now (a
    processor's ``process()`` was called from one of that world's event handlers)."""
    return world in _delivering


def left_by(processor: object, world: str | None) -> bool:
    """Whether ``processor``, which serves ``world`` (None: it has not run yet), belongs to
    a world other than the current one that a handler switched away from, in the middle of
    a delivery, and in which no processor has run since: it is being run by that world's
    ``esper.process()``, going on with another world current, and is to leave its frame
    for later. O(1) for a processor that has run (and while no handler left a world)."""
    if not _left:
        return False
    current = esper.current_world
    if world is not None:
        return world != current and world in _left
    return any(
        p is processor for name, running in _left.items() if name != current for p in running
    )


def returned(world: str) -> None:
    """A processor runs in ``world``: it is no longer a world left by a handler."""
    if _left:
        _left.pop(world, None)


class Replaced(Exception):
    """Raised by a delivery loop, right after a handler returns, when the handler switched
    worlds or replaced the database (see :data:`~ecs_spatial._esper_tables.DATABASE_SLOT`);
    :meth:`Outbox.deliver` handles it (the position and the owed handlers recorded as for
    a raise). Never reaches a caller."""


class Outbox:
    """A processor's events not yet delivered, in order, and the keys of the enters that were
    not delivered (their exits are to stay silent).

    A *key* is what an event names: an entity id for the view events, a pair of ids for the
    others. Each batch is ``[event name, role, keys, position of the next key]``; in place of
    the event name, a batch may name an object with a ``deliver(batch, cursor)`` method (a
    typed :class:`~ecs_spatial.collision_handlers.CollisionHandler`), which delivers it by
    its own rules, at the positions ``cursor`` yields, and records its position the same way
    on an exception.

    Positions are kept current as events are delivered (each batch's before each of its
    events is handed out; for the handlers of one event, the one being called), so that a
    copy or a pickle made by a handler holds exactly what is still to deliver.
    """

    __slots__ = ("_batches", "_calling", "_cursor", "_holding", "_owed", "_refs", "_silent")

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
        # While an event batch is delivered (not a typed registration's, which keeps its
        # position in the batch itself): the iterator over its positions, whose length
        # left tells the position a copy made now must record (no store per event), the
        # references to the handlers of the event being delivered, and, where it has
        # more than one, the one being called.
        self._cursor: Any = None
        self._refs: list[Any] = []
        self._calling: Any = None

    def __bool__(self) -> bool:
        """Whether anything is waiting to be delivered."""
        return bool(self._batches) or self._owed is not None

    def __getstate__(
        self,
    ) -> tuple[list[list[Any]], set[Any], tuple[str, Any, list[Any], str | None] | None]:
        return self._batches_now(), set(self._silent), _saved(self._owed_now())

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        batches, silent, owed = OUTBOX.upgraded(self, state)
        self._batches = deque(batches)
        self._holding = False
        self._cursor = None
        self._refs = []
        self._calling = None
        self._silent = silent
        # Marked as loaded by a tuple of handlers: see deliver().
        self._owed = None if owed is None else (owed[0], owed[1], tuple(owed[2]), owed[3])

    def __deepcopy__(self, memo: dict[int, Any]) -> Outbox:
        """A copy in the same process: the same handlers are still owed, by the same weak
        references (which deepcopy cannot copy)."""
        twin = Outbox()
        memo[id(self)] = twin
        twin._batches = deque(copy.deepcopy(self._batches_now(), memo))
        twin._silent = copy.deepcopy(self._silent, memo)
        owed = self._owed_now()
        if owed is not None:
            name, key, owed_to, role = owed  # weak references (a list), or loaded handlers
            twin._owed = (name, copy.deepcopy(key, memo), owed_to[:], role)
        return twin

    def _batches_now(self) -> list[list[Any]]:
        """The batches, each a new list, with the position of the one being delivered as
        of now (a copy made by one of its handlers resumes after the event handled)."""
        batches = [batch[:4] for batch in self._batches]  # the stamp is this process's
        cursor = self._cursor
        if cursor is not None and batches:
            head = batches[0]
            head[3] = len(head[2]) - cursor.__length_hint__()
        return batches

    def _owed_now(
        self,
    ) -> tuple[str, Any, list[Any] | tuple[Any, ...], str | None] | None:
        """The half-delivered event as a copy made now must owe it: while a handler of an
        event of the first batch is called (a copy made by that handler), the handlers
        after it (a typed registration's event has one); else the one a raise cut off, if
        any."""
        cursor = self._cursor
        if cursor is None:
            return self._owed
        name, role, keys, _ = self._batches[0][:4]
        refs = self._refs
        if type(name) is not str or len(refs) < 2 or self._calling not in refs:
            return None
        rest = refs[refs.index(self._calling) + 1 :]
        key = keys[len(keys) - cursor.__length_hint__() - 1]
        return (name, key, rest, role) if rest else None

    def _cursor_from(self, start: int, stop: int) -> Iterator[int]:
        """The positions of the batch about to be delivered, as an iterator the outbox reads
        its position from (its length left) when a copy is made: no store per event."""
        cursor = self._cursor = iter(range(start, stop))
        return cursor

    def post(self, name: Any, role: str, keys: list[Any], stamp: object = None) -> None:
        """Queue ``keys`` as events ``name`` (an event name, or an object that delivers its
        own batches) of ``role`` (ENTER, EXIT or STAY), after what is queued already. The
        list is the outbox's from now on: do not change it.

        ``stamp``: for pairs whose entities all exist now, the world's stamp
        (``_esper_tables.world_stamp()``) if it has not changed since it was taken: while
        it stays esper's, no entity has been deleted, and the compiled loop passes the
        deletion rule without looking each entity up (the same answer; a batch keeps it
        as its fifth item, never saved or copied)."""
        if keys:
            self._batches.append([name, role, keys, 0] if stamp is None
                                 else [name, role, keys, 0, stamp])

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
            name, role, keys, start = batch[:4]
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
        for batch in self._batches:
            name, role, keys, start = batch[:4]
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
        frame left to the next ``process()``, which works out the world as it is then. So
        does a handler of the owed delivery that switched worlds (with its exception, if
        it raised one): the frame waits for the next ``process()`` in this world.

        Complexity: nothing beyond ``frame()`` and the deliveries (a check of the queue).
        """
        if not (self._batches or self._owed is not None):
            frame()
            return
        world = esper.current_world
        try:
            self.deliver()
        except Exception:
            if esper.current_world != world:
                raise
            self._holding = True
            try:
                frame()
            finally:
                self._holding = False
            raise
        if esper.current_world == world:
            frame()

    def deliver(self) -> None:
        """Deliver everything queued, in order, by the rules of the module docstring
        (nothing while :meth:`run_frame` holds the frame's events back). Returns early,
        the rest still queued, if a handler switches worlds.

        Complexity: O(events x handlers), plus one dict and set look-up per entity named by
        an enter or a ``collision`` (the deletion rule), and one look-up after each handler
        call (the world and its database).
        """
        if not (self._batches or self._owed is not None) or self._holding:
            return
        world = esper.current_world
        running = processors()
        space, slot = DATABASE_SLOT
        database = space[slot]
        _delivering.append(world)
        try:
            while True:
                try:
                    self._deliver_all()
                    return
                except Replaced:
                    if esper.current_world != world:  # switched: the rest waits, queued
                        _left[world] = running
                        return
                    self.forget_arrivals()  # replaced: the old world's arrivals end here
                    database = space[slot]
                except BaseException:
                    if space[slot] is not database:
                        if esper.current_world != world:
                            _left[world] = running
                        else:
                            self.forget_arrivals()
                    raise
        finally:
            # esper's weak references die with the delivery: held on, one would call esper's
            # clean-up callback when its handler died, after the handlers were dropped.
            self._cursor = self._calling = None
            self._refs = []
            _delivering.pop()

    def _deliver_all(self) -> None:
        """Deliver the owed event, then the batches, in order; :class:`Replaced` comes out
        of the loop that called the handler after which the world or its database
        changed."""
        self._cursor = None
        owed = self._owed
        if owed is not None:
            name, key, owed_to, role = owed
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
            self._cursor = None
            self._deliver_batch(batches[0])
            batches.popleft()

    def _call(self, name: str, key: Any, refs: list[Any], role: str | None) -> None:
        """Call the handlers behind ``refs`` with ``key``, the owed event: each one owed
        the handlers after it while it runs (in case it raises, or saves the world)."""
        args = key if type(key) is tuple else (key,)
        space, slot = DATABASE_SLOT
        database = space[slot]
        for j, ref in enumerate(refs):
            rest = refs[j + 1 :]
            self._owed = (name, key, rest, role) if rest else None
            handler = ref()
            if handler is not None:
                handler(*args)
                if space[slot] is not database:
                    raise Replaced
        self._owed = None

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
        name, _, keys, start = batch[:4]
        space, slot = DATABASE_SLOT
        database = space[slot]
        i = start
        ref = None
        key: Any = None
        refs: list[Any] = []
        cursor = self._cursor_from(start, len(keys))
        try:
            for i in cursor:
                key = keys[i]
                if not exist(key[0], key[1]):
                    continue
                handlers = esper.event_registry.get(name)
                refs = self._refs = list(handlers) if handlers else []
                for ref in refs:
                    handler = ref()
                    if handler is not None:
                        self._calling = ref
                        handler(*key)
                        if space[slot] is not database:
                            raise Replaced
        except BaseException:
            batch[3] = i + 1
            if ref is not None:
                self._owe(name, key, refs, ref, ONCE)
            raise

    def _deliver_batch(self, batch: list[Any]) -> None:
        """Deliver one batch from its recorded position, the position readable at any time
        from the cursor (a save made by a handler holds what follows: :meth:`_batches_now`);
        on an exception, record where to resume (the raising handler's event counts as
        delivered to it, the handlers after it are owed it). After each handler call,
        :class:`Replaced` if the world or its database is no longer the one delivered in.

        The hot loop of every frame's events, written out per shape of key (a pair or one
        id) with esper's ``dispatch_event`` and the deletion rule (:func:`exist`) inlined,
        and an event with one handler (the usual case) called without the inner loop, so
        that it costs what esper's own dispatch costs (docs/design.md, "Decisions").
        """
        name, role, keys, start = batch[:4]
        if type(name) is not str:  # a CollisionHandler's batch: it keeps its own rules
            name.deliver(batch, self._cursor_from(start, len(keys)))
            return
        if role == ONCE:
            self._deliver_once(batch)
            return
        silent = self._silent
        registry = esper.event_registry
        get = registry.get
        # () for no handlers: the same object at every look-up, with a length, so that the
        # loops below see a change of the handlers by one identity and one length test
        handlers = get(name, ())
        if handlers:
            refs = self._refs = list(handlers)
            count = len(refs)
        else:
            if role == STAY:
                return  # nobody listens, and a stay leaves no trace to keep in step
            if role == EXIT:
                if silent:
                    silent.difference_update(keys[start:])
                return
            refs = self._refs = []
            count = 0
        only = refs[0] if count == 1 else None  # the usual case: no store per call
        entities, dead = existence()  # for the deletion rule, inlined below
        space, slot = DATABASE_SLOT
        database = space[slot]
        is_exit = role == EXIT
        is_enter = role == ENTER
        i = start
        ref = None  # the handler being called, where the event has more than one
        key: Any = None
        # _cursor_from's cursor, made here (a call less in every frame's batches)
        cursor = self._cursor = iter(range(start, len(keys)))
        compiled = False  # while the compiled loop runs: the position is the cursor's
        try:
            if type(keys[0]) is tuple:
                events: Iterator[int] = cursor
                if only is not None and _deliver_pairs is not None:
                    # The loop below while the event has one handler, compiled. It stops at
                    # an event whose handlers changed, nothing called for it: the loop below
                    # delivers that event (whose rules it finds as the compiled loop left
                    # them: nothing ran since), then the rest of the batch.
                    compiled = True
                    i = _deliver_pairs(
                        cursor, keys, registry, name, handlers, only, entities, dead,
                        silent, space, slot, database, 0 if is_exit else 1 if is_enter else 2,
                        None if len(batch) < 5 else (batch[4], _Stamp),
                    )
                    if i == -1:
                        return
                    if i == -2:
                        raise Replaced
                    compiled = False
                    events = chain((i,), cursor)
                for i in events:
                    key = keys[i]
                    a, b = key
                    if is_exit:
                        if silent and key in silent:
                            silent.discard(key)
                            continue
                    # inlined copy of delivery.exist (speed: see docs/design.md#decisions)
                    elif not (
                        a in entities and b in entities
                        and (not dead or (a not in dead and b not in dead))
                    ):
                        if is_enter:
                            silent.add(key)
                        continue
                    elif silent and not is_enter and key in silent:
                        continue
                    now = get(name, ())  # a handler may set or remove handlers
                    if now is not handlers or len(now) != count:
                        handlers = now
                        refs = self._refs = list(now) if now else []
                        count = len(refs)
                        only = refs[0] if count == 1 else None
                        ref = None
                    if only is not None:
                        handler = only()
                        if handler is not None:
                            handler(a, b)
                            if space[slot] is not database:
                                raise Replaced
                    else:
                        for ref in refs:
                            handler = ref()
                            if handler is not None:
                                self._calling = ref
                                handler(a, b)
                                if space[slot] is not database:
                                    raise Replaced
            else:
                for i in cursor:
                    key = keys[i]
                    if is_exit:
                        if silent and key in silent:
                            silent.discard(key)
                            continue
                    # inlined copy of delivery.exist (speed: see docs/design.md#decisions)
                    elif key not in entities or key in dead:
                        if is_enter:
                            silent.add(key)
                        continue
                    elif silent and not is_enter and key in silent:
                        continue
                    now = get(name, ())
                    if now is not handlers or len(now) != count:
                        handlers = now
                        refs = self._refs = list(now) if now else []
                        count = len(refs)
                        only = refs[0] if count == 1 else None
                        ref = None
                    if only is not None:
                        handler = only()
                        if handler is not None:
                            handler(key)
                            if space[slot] is not database:
                                raise Replaced
                    else:
                        for ref in refs:
                            handler = ref()
                            if handler is not None:
                                self._calling = ref
                                handler(key)
                                if space[slot] is not database:
                                    raise Replaced
        except BaseException:
            if compiled:  # the event at the cursor's position (its handler raised)
                i = len(keys) - length_hint(cursor) - 1
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
