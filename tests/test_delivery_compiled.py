"""The compiled delivery loop (``_cpair_set.deliver_pairs``, which ``Outbox._deliver_batch``
runs for pairs with one handler) against the Python loop, its reference: the same random
batches of enters, exits and stays, delivered to handlers that raise, delete entities (at
once or deferred), set and remove handlers, save the outbox, clear the database, must give
the same calls, the same exceptions and the same outbox after each ``deliver()``."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import esper
import pytest
from _leaks import assert_loop_keeps_nothing

from ecs_spatial import delivery
from ecs_spatial._esper_tables import _Stamp, existence, world_stamp
from ecs_spatial.delivery import ENTER, EXIT, STAY, Outbox

COMPILED = delivery._deliver_pairs

pytestmark = pytest.mark.skipif(
    COMPILED is None, reason="no compiled delivery loop (pure-Python build or ECS_SPATIAL_PURE=1)"
)

NAMES = {ENTER: "t_enter", EXIT: "t_exit", STAY: "t_stay"}


class Boom(Exception):
    """What the test handlers raise."""


def _state(outbox: Outbox) -> tuple[Any, ...]:
    """What a copy of ``outbox`` made now would hold, and what it keeps of the silent keys."""
    return (outbox._batches_now(), sorted(outbox._silent), _owed(outbox._owed_now()))


def _owed(owed: Any) -> Any:
    if owed is None:
        return None
    name, key, refs, role = owed
    return (name, key, [getattr(ref(), "__name__", None) for ref in refs], role)


def story(
    seed: int, loop: Callable[..., int] | None, faults: bool = True, stamps: bool = True
) -> list[Any]:
    """A random story of batches delivered by ``loop`` (None: the Python loop), its log;
    with ``stamps``, some of the enters and stays posted with the world's stamp, as the
    SpatialProcessor posts its own."""
    rng = random.Random(seed)
    log: list[Any] = []
    outbox = Outbox()
    keep: list[Any] = []  # esper holds its handlers weakly
    calls = [0]

    made = [0]

    class Handler:
        """A handler hashed by its label, not its id: esper keeps the handlers of an event
        in a set, and both stories must call them in the same order."""

        def __init__(self, label: str) -> None:
            made[0] += 1
            self.label = label
            self.__name__ = f"{label}#{made[0]}"

        def __hash__(self) -> int:
            return hash(self.__name__)

        def __call__(self, *args: int) -> None:
            calls[0] += 1
            log.append((self.__name__, args, esper.entity_exists(args[0])))
            roll = rng.random() if faults else 1.0
            if roll < 0.04:
                raise Boom(self.__name__)
            if roll < 0.08:
                victim, at_once = rng.randint(1, 30), rng.random() < 0.5
                if esper.entity_exists(victim):
                    esper.delete_entity(victim, immediate=at_once)
            elif roll < 0.10:
                extra = make(self.label + "+")
                keep.append(extra)
                esper.set_handler(rng.choice(list(NAMES.values())), extra)
            elif roll < 0.12:
                name = rng.choice(list(NAMES.values()))
                for ref in sorted(esper.event_registry.get(name, ()), key=lambda r: r().__name__):
                    if rng.random() < 0.5 and ref() is not None:
                        esper.remove_handler(name, ref())
            elif roll < 0.14:
                log.append(("saved", _state(copy.deepcopy(outbox))))
            elif roll < 0.145:
                esper.clear_database()
                for _ in range(rng.randint(0, 30)):
                    esper.create_entity()

    def make(label: str) -> Callable[..., None]:
        return Handler(label)

    for name in NAMES.values():
        h = make(name)
        keep.append(h)
        esper.set_handler(name, h)
    for _ in range(30):
        esper.create_entity()
    saved, delivery._deliver_pairs = delivery._deliver_pairs, loop
    try:
        for _ in range(12):
            for _ in range(rng.randint(0, 4)):
                role = rng.choice([ENTER, ENTER, EXIT, EXIT, STAY])
                keys = sorted({
                    (a, b) for a, b in (sorted(rng.sample(range(1, 36), 2))
                                        for _ in range(rng.randint(0, 40)))
                })
                if role != EXIT and stamps and rng.random() < 0.6:
                    # as a processor posts its frame's pairs: of entities that exist, with
                    # the stamp the world has now (dead ones too: deferred, they still do)
                    keys = [(a, b) for a, b in keys
                            if a in existence()[0] and b in existence()[0]]
                    outbox.post(NAMES[role], role, keys, world_stamp())
                    continue
                outbox.post(NAMES[role], role, keys)
            for _ in range(6):
                try:
                    outbox.deliver()
                    log.append(("done", _state(outbox)))
                    break
                except Boom as e:
                    log.append(("raised", str(e), _state(outbox)))
            if rng.random() < 0.3:
                esper.clear_dead_entities()
            for name in NAMES.values():  # each event keeps at least one handler
                if not esper.event_registry.get(name):
                    h = make(name + "'")
                    keep.append(h)
                    esper.set_handler(name, h)
    finally:
        delivery._deliver_pairs = saved
    log.append(("calls", calls[0]))
    return log


@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_loop_delivers_as_the_python_loop(world: str, seed: int) -> None:
    """Same calls, exceptions, saves and outbox state, whatever the handlers do."""
    used = [0]

    def counted(*args: Any) -> int:
        used[0] += 1
        assert COMPILED is not None
        return COMPILED(*args)

    compiled = story(seed, counted)
    esper.clear_database()
    esper.event_registry.clear()
    reference = story(seed, None)
    assert used[0] > 0
    assert compiled == reference


def test_the_compiled_loop_runs_a_quiet_story_in_one_call_a_batch(world: str) -> None:
    """Without faults, each batch is one call of the compiled loop (it is the fast path)."""
    used = [0]

    def counted(*args: Any) -> int:
        used[0] += 1
        assert COMPILED is not None
        return COMPILED(*args)

    compiled = story(7, counted, faults=False)
    esper.clear_database()
    esper.event_registry.clear()
    assert compiled == story(7, None, faults=False)
    assert 0 < used[0] <= sum(1 for entry in compiled if entry[0] == "done") * 4


def test_the_compiled_loop_keeps_nothing(world: str) -> None:
    """Every way out of the compiled loop (the end, a change of the handlers, another
    database, a raise, a bad argument) and every step (silent exits, the deletion rule)
    leave the reference counts of what it touches flat and keep no memory."""
    assert COMPILED is not None
    from ecs_spatial._esper_tables import DATABASE_SLOT, existence

    entities, dead = existence()
    ids = [esper.create_entity() for _ in range(6)]
    esper.delete_entity(ids[5])  # deferred: in dead
    space, slot = DATABASE_SLOT
    database = space[slot]
    seen: list[tuple[int, int]] = []

    def quiet(a: int, b: int) -> None:
        seen.append((a, b))

    def boom(a: int, b: int) -> None:
        raise Boom("boom")

    esper.set_handler("t_leak", quiet)
    esper.set_handler("t_boom", boom)
    registry = esper.event_registry
    handlers, raising = registry["t_leak"], registry["t_boom"]
    only, only_boom = next(iter(handlers)), next(iter(raising))
    keys = [(ids[0], ids[1]), (ids[1], ids[5]), (ids[2], 10_000), (ids[3], ids[4])]
    silent: set[Any] = set()
    other = object()
    stamp = world_stamp()
    watched = [keys, *keys, handlers, raising, only, only_boom, silent, registry, database,
               stamp]

    def loop(times: int) -> None:
        for _ in range(times):
            for role in (0, 1, 2):
                COMPILED(iter(range(4)), keys, registry, "t_leak", handlers, only, entities,
                         dead, silent, space, slot, database, role, None)
                silent.add(keys[0])
                COMPILED(iter(range(4)), keys, registry, "t_leak", handlers, only, entities,
                         set(), silent, space, slot, database, role, (stamp, _Stamp))
            COMPILED(iter(range(4)), keys, registry, "t_leak", raising, only, entities, dead,
                     silent, space, slot, database, 2, None)
            COMPILED(iter(range(4)), keys, registry, "t_leak", handlers, only, entities, dead,
                     silent, space, slot, other, 1, None)
            with pytest.raises(Boom):
                COMPILED(iter(range(4)), keys, registry, "t_boom", raising, only_boom,
                         entities, dead, silent, space, slot, database, 1, None)
            with pytest.raises(TypeError):
                COMPILED(iter(range(4)), keys, registry, "t_leak", handlers, only, entities,
                         dead, [], space, slot, database, 1, None)
            with pytest.raises(TypeError):
                COMPILED(iter(range(4)), keys, registry, "t_leak", handlers, only, entities,
                         dead, silent, space, slot, database, 1, (stamp,))
            silent.clear()
            seen.clear()

    assert_loop_keeps_nothing(loop, watched)


def test_the_compiled_loops_answers() -> None:
    """Its return values, one by one: the end (-1), another database (-2), the position
    of an event whose handlers changed; the silent set kept as the Python loop keeps it."""
    assert COMPILED is not None
    seen: list[tuple[int, int]] = []

    def quiet(a: int, b: int) -> None:
        seen.append((a, b))

    from weakref import ref

    only = ref(quiet)
    handlers = {only}
    registry: dict[str, Any] = {"e": handlers}
    entities = {1: None, 2: None, 3: None}
    keys = [(1, 2), (1, 4), (2, 3)]
    space = {"db": 0}
    silent: set[Any] = set()

    def run(role: int, db: Any = 0, dead: set[int] | None = None, start: int = 0) -> int:
        return COMPILED(iter(range(start, 3)), keys, registry, "e", handlers, only,
                        entities, dead or set(), silent, space, "db", db, role, None)

    assert run(1) == -1 and seen == [(1, 2), (2, 3)] and silent == {(1, 4)}
    seen.clear()
    assert run(0) == -1 and seen == [(1, 2), (2, 3)] and silent == set()  # (1, 4) silent
    seen.clear()
    assert run(1, dead={3}) == -1 and seen == [(1, 2)] and silent == {(1, 4), (2, 3)}
    seen.clear()
    assert run(2) == -1 and seen == [(1, 2)]  # a stay of a silent key is not delivered
    seen.clear()
    assert run(1, db=1) == -2 and seen == [(1, 2)]
    registry["e"] = {only}
    assert run(1, start=1) == 2 and seen == [(1, 2)]  # (2, 3): handlers changed


def test_the_stamp_passes_the_deletion_rule_only_while_it_holds() -> None:
    """A batch's stamp stands for the look-ups of the deletion rule while esper's component
    cache holds it, its ``_cache_dirty`` is not set and no entity is deferred-deleted, and
    only then: shown with a key whose entity is not in the table (which a stamped batch never
    holds), delivered exactly while the stamp holds."""
    assert COMPILED is not None
    seen: list[tuple[int, int]] = []

    def quiet(a: int, b: int) -> None:
        seen.append((a, b))

    from weakref import ref

    only = ref(quiet)
    handlers = {only}
    registry: dict[str, Any] = {"e": handlers}
    entities = {1: None, 2: None, 3: None}
    keys = [(1, 2), (1, 4), (2, 3)]
    stamp: list[Any] = []
    cache: dict[Any, Any] = {_Stamp: stamp}
    space: dict[str, Any] = {"db": 0, "_cache_dirty": False, "_get_component_cache": cache}

    def run(role: int, fresh: Any, dead: set[int] | None = None) -> list[tuple[int, int]]:
        seen.clear()
        silent: set[Any] = set()
        assert COMPILED(iter(range(3)), keys, registry, "e", handlers, only, entities,
                        dead or set(), silent, space, "db", 0, role, fresh) == -1
        return list(seen)

    every, looked_up = keys, [(1, 2), (2, 3)]
    for role in (1, 2):
        assert run(role, (stamp, _Stamp)) == every
        assert run(role, None) == looked_up
        assert run(role, ([], _Stamp)) == looked_up  # another list than the cache's
        assert run(role, (stamp, _Stamp), dead={7}) == looked_up
        space["_cache_dirty"] = True
        assert run(role, (stamp, _Stamp)) == looked_up
        space["_cache_dirty"] = None  # anything but False is dirty
        assert run(role, (stamp, _Stamp)) == looked_up
        del space["_cache_dirty"]  # an esper that clears its caches at once
        assert run(role, (stamp, _Stamp)) == every
        space["_cache_dirty"] = False
        cache.clear()
        assert run(role, (stamp, _Stamp)) == looked_up
        cache[_Stamp] = stamp
        space["_get_component_cache"] = dict(cache)  # not the same dict: still holds it
        assert run(role, (stamp, _Stamp)) == every
        del space["_get_component_cache"]
        assert run(role, (stamp, _Stamp)) == looked_up
        space["_get_component_cache"] = cache


def test_a_deletion_in_a_handler_ends_the_stamps_proof(world: str) -> None:
    """In a real esper world: a handler deleting an entity (at once) named by a later enter
    of a stamped batch stops it being delivered, as without the stamp; so does a deferred
    deletion (``clear_database`` and the rest: the random stories above)."""
    ids = [esper.create_entity() for _ in range(4)]
    seen: list[tuple[int, int]] = []
    deletions: list[Callable[[int], None]] = [
        lambda e: esper.delete_entity(e, immediate=True),
        lambda e: esper.delete_entity(e),
    ]

    def deleting(a: int, b: int) -> None:
        seen.append((a, b))
        if len(seen) == 1:
            deletions[0](ids[3])

    esper.set_handler("t_enter", deleting)
    for _ in range(2):
        seen.clear()
        outbox = Outbox()
        outbox.post("t_enter", ENTER, [(ids[0], ids[1]), (ids[2], ids[3])], world_stamp())
        outbox.deliver()
        assert seen == [(ids[0], ids[1])]
        esper.clear_dead_entities()
        ids[3] = esper.create_entity()
        deletions.pop(0)


@pytest.mark.parametrize("raised_at", [None, 1, 3])
def test_the_event_handed_back_is_delivered_and_resumed_as_by_the_python_loop(
    world: str, raised_at: int | None
) -> None:
    """The compiled loop hands back the event whose handlers changed (the first handler set
    a second at the first event), and the Python loop delivers it and the rest of the batch:
    each event once to each handler, and a raise by the new handler at the event handed back
    (1) or at a later one (3) leaves the batch's position just past it and that event owed
    to the handlers after the raising one, as the Python loop alone leaves them; an entity
    deleted on the way silences its enter in both."""

    def run(loop: Callable[..., int] | None) -> list[Any]:
        log: list[Any] = []
        ids = [esper.create_entity() for _ in range(5)]
        keys = [(ids[0], ids[1]), (ids[0], ids[2]), (ids[1], ids[2]), (ids[2], ids[3]),
                (ids[3], ids[4]), (ids[0], ids[4])]

        class Named:
            """Hashed by its label: both runs order esper's set of handlers alike."""

            def __init__(self, label: str) -> None:
                self.__name__ = label

            def __hash__(self) -> int:
                return hash(self.__name__)

            def __call__(self, a: int, b: int) -> None:
                log.append((self.__name__, ids.index(a), ids.index(b)))
                if self.__name__ == "first" and len(log) == 1:
                    esper.set_handler("t_enter", second)
                if self.__name__ == "second" and (a, b) == keys[2]:
                    esper.delete_entity(ids[4], immediate=True)  # (3, 4) and (0, 4) silent
                if self.__name__ == "second" and raised_at is not None and (
                    (a, b) == keys[raised_at]
                ):
                    raise Boom(self.__name__)

        first, second = Named("first"), Named("second")
        esper.set_handler("t_enter", first)
        outbox = Outbox()
        outbox.post("t_enter", ENTER, keys)
        saved, delivery._deliver_pairs = delivery._deliver_pairs, loop
        try:
            for _ in range(3):
                try:
                    outbox.deliver()
                    log.append(("done", _state(outbox)))
                    break
                except Boom:
                    log.append(("raised", _state(outbox)))
        finally:
            delivery._deliver_pairs = saved
            esper.remove_handler("t_enter", first)
            esper.remove_handler("t_enter", second)
        return log

    used = [0]

    def counted(*args: Any) -> int:
        used[0] += 1
        assert COMPILED is not None
        return COMPILED(*args)

    compiled = run(counted)
    esper.clear_database()
    assert used[0] == 1
    assert compiled == run(None)
    raised = [entry for entry in compiled if entry[0] == "raised"]
    if raised_at is None:
        assert not raised
    else:
        (_, (batches, _, owed)), = raised
        assert batches[0][3] == raised_at + 1  # resumes just past the raising event
        event = [(0, 1), (0, 2), (1, 2), (2, 3)][raised_at]
        to = [entry[0] for entry in compiled if entry[1:] == event]
        assert sorted(to) == ["first", "second"]  # once to each, the raise or not
        assert owed is None or owed[2] == ["first"]
    calls = [entry for entry in compiled if entry[0] in ("first", "second")]
    assert [entry[1:] for entry in calls if entry[0] == "first"] == [(0, 1), (0, 2), (1, 2),
                                                                     (2, 3)]
    assert [entry[1:] for entry in calls if entry[0] == "second"] == [(0, 2), (1, 2), (2, 3)]
