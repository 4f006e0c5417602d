"""Collision handlers by component type: what ``SpatialProcessor.on_collision`` registers.

pymunk routes its contacts to handlers by integer collision types
(``space.on_collision(type_a, type_b, begin=..., separate=...)``); here the types are esper
component classes, as an esper game already labels its entities by what they hold.

A registration ``(type_a, type_b)`` *holds* a pair while the two boxes overlap (and the
filters let them collide) and one entity holds a ``type_a`` component and the other a
``type_b`` one (``None`` matches any tracked entity; classes match exactly, as esper's
``has_component`` does). Its handlers are called ``f(entity_a, entity_b)``, ``entity_a``
holding ``type_a`` (the smaller id first where both orders fit; the order is fixed when
the pair is entered):

- ``enter`` when the registration comes to hold a pair: the boxes began to overlap, or an
  entity gained the component that makes the pair match, or the registration is new and
  the pair overlaps already;
- ``exit`` when it stops holding one: the boxes parted, an entity was deleted, lost its
  ``Position`` or ``AABB`` or the matching component, or was filtered out;
- ``stay`` every frame it holds one, after that frame's enters.

Balance is kept per registration, at delivery: an enter is delivered only while both
entities exist (the deletion rule of :mod:`ecs_spatial.delivery`), and only a pair whose
enter was delivered gets an exit, exactly one. :meth:`CollisionHandler.remove` ends a
registration: it gets no enter or stay from then on (queued ones included), and each pair
it holds gets its exit, queued behind the events already queued (delivered before the next
``process()``'s own events, or at the end of the current dispatch when ``remove()`` is
called from a handler).

Cost: nothing for a processor with no registration. Otherwise, per frame, a set look-up or
two per registration for each pair that began or ended; in a frame in which some component
was added to or removed from an entity, a comparison of the registered types' holder sets
(in C) and a look at the partners of the entities whose holdings changed; a full pass over
the pairs only for a new registration or a cleared world; and, for a registration with a
``stay`` handler, a sort of the pairs it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from typing import Any, NamedTuple

from ._esper_tables import DATABASE_SLOT, existence, tables
from ._versions import COLLISION_HANDLER, HANDLER_ROUTES
from .delivery import ENTER, EXIT, Replaced
from .pair_set import Pair

__all__ = ["FORCED_EXIT", "CollisionHandler", "HandlerRoutes", "Routed"]

Handler = Callable[[int, int], object]

#: The role of the exits a registration owes because it was removed or its world was
#: cleared: delivered without the check that the pair is still held (it was just let go).
FORCED_EXIT = "forced_exit"

_NO_HOLDERS: frozenset[int] = frozenset()


class CollisionHandler:
    """One registration made by :meth:`SpatialProcessor.on_collision
    <ecs_spatial.spatial_processor.SpatialProcessor.on_collision>`: the component types it
    matches, its handlers, and the pairs it holds. Call :meth:`remove` to end it.

    The processor keeps it, and its handlers, by strong reference: a lambda works.
    """

    __slots__ = (
        "_held", "_removed", "_resync", "_routes", "enter", "exit", "stay", "type_a", "type_b",
    )

    def __init__(
        self,
        routes: HandlerRoutes,
        type_a: type[Any] | None,
        type_b: type[Any] | None,
        enter: Handler | None,
        exit: Handler | None,
        stay: Handler | None,
    ) -> None:
        self.type_a = type_a
        self.type_b = type_b
        self.enter = enter
        self.exit = exit
        self.stay = stay
        self._routes = routes
        # The pairs held, as delivered: (smaller id, larger id) -> (entity_a, entity_b).
        self._held: dict[Pair, Pair] = {}
        self._removed = False
        # A new registration (or one whose world was cleared) compares every pair once.
        self._resync = True

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        """Its slots, from a state in any layout ``_versions`` reads."""
        for name, value in COLLISION_HANDLER.upgraded(self, state)[1].items():
            setattr(self, name, value)

    def __repr__(self) -> str:
        def name(kind: type[Any] | None) -> str:
            return "None" if kind is None else kind.__qualname__

        state = ", removed" if self._removed else ""
        return f"<CollisionHandler {name(self.type_a)}, {name(self.type_b)}{state}>"

    @property
    def removed(self) -> bool:
        """Whether :meth:`remove` was called."""
        return self._removed

    @property
    def held(self) -> Set[Pair]:
        """The pairs this registration holds now, each as ``(entity_a, entity_b)``: those
        whose enter it was delivered and whose exit it was not. A new set each call."""
        return set(self._held.values())

    def remove(self) -> None:
        """End the registration: no enter or stay from now on, and an exit for each pair it
        holds (see the module docstring for when). Calling it again does nothing."""
        if self._removed:
            return
        self._removed = True
        self._routes.unregister(self)

    # -- delivery (called by the Outbox) -------------------------------------------------

    def deliver(self, batch: list[Any], cursor: Iterator[int]) -> None:
        """Deliver one batch of this registration's events from its recorded position, by
        the rules of the module docstring, taking the positions from ``cursor`` (the
        outbox's, which reads from it the position a save made by a handler records: the
        call being made counts as delivered, as on an exception); on an exception, record
        where to resume. After each call, :class:`~ecs_spatial.delivery.Replaced` if the
        world or its database changed (the outbox handles it).

        One loop per role, each with only its own tests."""
        _, role, keys, start = batch
        if role != EXIT and role != FORCED_EXIT:
            # Enters and stays: _arrive records its own position (here it was overwritten
            # with the batch's first, and the stays up to the raise came again).
            if not self._removed:
                self._arrive(batch, role == ENTER, cursor)
            return
        space, slot = DATABASE_SLOT
        database = space[slot]
        i = start
        try:
            if role == EXIT:  # keys: canonical pairs, each called with its held order
                held = self._held  # swapped only by a remove(), which leaves nothing held
                call = self.exit
                for i in cursor:
                    args = held.pop(keys[i], None)
                    if args is not None and call is not None:
                        call(*args)
                        if space[slot] is not database:
                            raise Replaced
                        held = self._held
            else:  # FORCED_EXIT; keys: held orders, let go already
                call = self.exit
                if call is not None:
                    for i in cursor:
                        call(*keys[i])
                        if space[slot] is not database:
                            raise Replaced
        except BaseException:
            batch[3] = i + 1
            raise

    def _arrive(self, batch: list[Any], entering: bool, cursor: Iterator[int]) -> None:
        """Deliver a batch of enters (keys: pairs in handler order) or stays (keys:
        canonical pairs), each only while both entities exist and the registration lasts."""
        keys = batch[2]
        i = batch[3]
        entities, dead = existence()  # for the deletion rule, inlined below
        space, slot = DATABASE_SLOT
        database = space[slot]
        held = self._held
        call = self.enter if entering else self.stay
        try:
            for i in cursor:
                key = keys[i]
                a, b = key
                # inlined copy of delivery.exist (speed: see docs/design.md#decisions)
                if not (
                    a in entities and b in entities
                    and (not dead or (a not in dead and b not in dead))
                ):
                    continue
                if entering:
                    pair = key if a < b else (b, a)
                    if pair in held:
                        continue
                    held[pair] = key
                    args = key
                else:
                    args = held.get(key)
                    if args is None:
                        continue
                if call is not None:
                    call(*args)
                    if space[slot] is not database:
                        raise Replaced
                    if self._removed:  # the handler ended this registration
                        break
        except BaseException:
            batch[3] = i + 1
            raise

    def matching(
        self, by_type: Mapping[type[Any], Set[int]], pairs: Iterable[Pair]
    ) -> dict[Pair, Pair]:
        """The pairs of ``pairs`` (each ``(a, b)``, ``a < b``) this registration matches
        in a world whose holders are ``by_type``, each mapped to its handlers' order.

        A comprehension per shape of registration, each with only its own tests (the
        measurement: docs/design.md, "Decisions")."""
        kind_a, kind_b = self.type_a, self.type_b
        if kind_a is None and kind_b is None:
            return {pair: pair for pair in pairs}
        if kind_b is None:
            held_a = by_type.get(kind_a, _NO_HOLDERS)  # type: ignore[arg-type]
            return {
                p: p if p[0] in held_a else (p[1], p[0])
                for p in pairs
                if p[0] in held_a or p[1] in held_a
            }
        held_b = by_type.get(kind_b, _NO_HOLDERS)
        if kind_a is None:
            return {
                p: p if p[1] in held_b else (p[1], p[0])
                for p in pairs
                if p[0] in held_b or p[1] in held_b
            }
        held_a = by_type.get(kind_a, _NO_HOLDERS)
        found: dict[Pair, Pair] = {}
        for p in pairs:
            a, b = p
            if a in held_a and b in held_b:
                found[p] = p
            elif b in held_a and a in held_b:
                found[p] = (b, a)
        return found


class Routed(NamedTuple):
    """A frame's events for the registrations, by kind: ``(registration, keys)`` each, in
    the order of the registrations, for the processor to post in the frame's order."""

    exits: list[tuple[CollisionHandler, list[Pair]]]
    enters: list[tuple[CollisionHandler, list[Pair]]]
    stays: list[tuple[CollisionHandler, list[Pair]]]


class HandlerRoutes:
    """A SpatialProcessor's registrations, and what each is owed in a frame.

    The processor calls :meth:`plan` once a frame with the frame's pair changes, then posts
    each kind of event it returns in its place in the frame's order. (A pickle or copy keeps
    the world stamp as a new object, so the copy's first frame compares the holders.)
    """

    __slots__ = ("_holders", "_stamp", "handlers", "post")

    def __init__(self, post: Callable[[Any, str, list[Any]], None]) -> None:
        #: The registrations, in the order they were made (their events come in this order).
        self.handlers: list[CollisionHandler] = []
        #: ``Outbox.post`` of the processor.
        self.post = post
        # A copy of each registered type's holders as of the last frame planned, and the
        # world stamp then: a frame with another stamp compares them with the world's.
        self._holders: dict[type[Any], set[int]] = {}
        self._stamp: object = None

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        """Its slots, from a state in any layout ``_versions`` reads."""
        for name, value in HANDLER_ROUTES.upgraded(self, state)[1].items():
            setattr(self, name, value)

    def register(
        self,
        type_a: type[Any] | None,
        type_b: type[Any] | None,
        enter: Handler | None,
        exit: Handler | None,
        stay: Handler | None,
    ) -> CollisionHandler:
        """A new registration, checked, added last; its first frame compares every pair."""
        for name, kind in (("type_a", type_a), ("type_b", type_b)):
            if kind is not None and not isinstance(kind, type):
                raise TypeError(
                    f"on_collision: {name} must be a component class or None, got {kind!r}"
                )
        for name, call in (("enter", enter), ("exit", exit), ("stay", stay)):
            if call is not None and not callable(call):
                raise TypeError(f"on_collision: {name} must be callable or None, got {call!r}")
        handler = CollisionHandler(self, type_a, type_b, enter, exit, stay)
        by_type = tables(*(kind for kind in (type_a, type_b) if kind is not None))[0]
        for kind in (type_a, type_b):
            if kind is not None and kind not in self._holders:
                self._holders[kind] = set(by_type.get(kind, ()))
        self.handlers.append(handler)
        return handler

    def unregister(self, handler: CollisionHandler) -> None:
        """Drop ``handler`` and queue the exits of the pairs it holds."""
        self.handlers.remove(handler)
        self._let_go(handler)
        used = {kind for h in self.handlers for kind in (h.type_a, h.type_b)}
        for kind in list(self._holders):
            if kind not in used:
                del self._holders[kind]

    def _let_go(self, handler: CollisionHandler) -> None:
        held = handler._held
        if held:
            handler._held = {}
            self.post(handler, FORCED_EXIT, [held[pair] for pair in sorted(held)])

    def forget_world(self) -> None:
        """The world was cleared: each registration lets go of its pairs (their exits are
        queued) and compares every pair of the new world at the next frame."""
        for handler in self.handlers:
            self._let_go(handler)
            handler._resync = True
        self._stamp = None

    def plan(
        self,
        stamp: object,
        pairs: Iterable[Pair],
        partners: Callable[[int], Iterable[int]],
        exits: list[Pair],
        enters: list[Pair],
        queued: Iterable[tuple[Any, str, list[Any]]] = (),
    ) -> Routed:
        """Each registration's exits, enters and stays for this frame, from the frame's pair
        ``exits`` and ``enters`` (sorted), the current ``pairs`` and each entity's
        ``partners`` in them. ``queued``: the events still queued before this frame's
        (``Outbox.queued``: a raise in the owed delivery left them), by which a
        registration plans from the pairs it will hold once they are delivered."""
        ahead = _held_once_delivered(queued) if queued else None  # () on most frames
        by_type = tables(*self._holders)[0]
        changed: set[int] = set()
        if stamp is not self._stamp:
            self._stamp = stamp
            holders = self._holders
            for kind, seen in holders.items():
                now = by_type.get(kind, _NO_HOLDERS)
                if now != seen:  # a set comparison in C; most frames' changes are elsewhere
                    changed.update(seen.symmetric_difference(now))
                    holders[kind] = set(now)
        routed = Routed([], [], [])
        for handler in self.handlers:
            held = handler._held if ahead is None else ahead.get(handler, handler._held)
            if handler._resync:
                handler._resync = False
                target = handler.matching(by_type, pairs)
                gone = sorted(held.keys() - target.keys())
                fresh = {pair: args for pair, args in target.items() if pair not in held}
            else:
                gone = [pair for pair in exits if pair in held] if held else []
                fresh = handler.matching(by_type, enters) if enters else {}
                if changed:
                    near = set()
                    for entity in changed:
                        for other in partners(entity):
                            near.add((entity, other) if entity < other else (other, entity))
                    matched = handler.matching(by_type, near)
                    lost = [pair for pair in near if pair in held and pair not in matched]
                    fresh.update(
                        (pair, args) for pair, args in matched.items() if pair not in held
                    )
                    if lost:
                        gone = sorted(set(gone).union(lost))
            if gone:
                routed.exits.append((handler, gone))
            if fresh:
                routed.enters.append((handler, [fresh[pair] for pair in sorted(fresh)]))
            if handler.stay is not None and (held or fresh):
                now_held = held.keys() | fresh.keys()
                now_held.difference_update(gone)
                if now_held:
                    routed.stays.append((handler, sorted(now_held)))
        return routed


def _held_once_delivered(
    queued: Iterable[tuple[Any, str, list[Any]]],
) -> dict[CollisionHandler, dict[Pair, Pair]] | None:
    """The pairs each registration with queued events will hold once they are delivered
    (by :meth:`CollisionHandler.deliver`'s rules, every entity still existing: an enter not
    delivered then makes the exit planned after it silent, as it should be), or None when
    nothing is queued."""
    ahead: dict[CollisionHandler, dict[Pair, Pair]] | None = None
    for name, role, keys in queued:
        if type(name) is str or not keys or role not in (ENTER, EXIT):
            continue  # plain events; stays change nothing; forced exits were let go already
        if ahead is None:
            ahead = {}
        held = ahead.get(name)
        if held is None:
            held = ahead[name] = dict(name._held)
        if role == ENTER:  # keys: pairs in handler order
            for key in keys:
                a, b = key
                held.setdefault(key if a < b else (b, a), key)
        else:  # keys: canonical pairs
            for pair in keys:
                held.pop(pair, None)
    return ahead
