"""Handlers that change the world under the delivery: they switch worlds, replace the database,
save the world (the hunt's findings 6 to 8, each case by case; ``test_fault_model.py`` and the
processors' own models inject them at random).

- A handler that switches worlds (a scene change on a hit) stops the delivery there: nothing
  of its world reaches the other world's handlers, and the rest waits for the world's next
  ``process()``; the processors the old world's ``esper.process()`` runs after it do nothing.
- A handler that clears the database (and makes entities, which take the old ids) ends the
  old world's arrivals at once: no enter, ``collision`` or stay of the old world reaches the
  new entities; exits still come.
- A world saved by a handler restores to exactly the events not yet delivered: the event
  being handled counts as delivered to the handler that saves and those before it.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import esper
import pytest
from _worlds import Recorder, fresh_world

from ecs_spatial import (
    AABB,
    COLLISION,
    COLLISION_ENTER,
    COLLISION_EXIT,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    VIEW_ENTER,
    VIEW_EXIT,
    Box,
    CullingProcessor,
    Position,
    Proximity,
    ProximityProcessor,
    SpatialProcessor,
    restore_world,
    save_world,
)

pytestmark = pytest.mark.usefixtures("membership")


class Boom(Exception):
    """What the test handlers raise."""


def square(x: float, y: float, *extra: Any) -> int:
    return esper.create_entity(Position(x, y), AABB(10, 10), *extra)


class Events:
    """Every event of the package's kinds in the current world, in order, as ``(name,
    *args)``; ``on[name]`` (if set) is called after recording, with the args. Its bound
    methods are the handlers: keep it referenced."""

    NAMES = (
        COLLISION_EXIT, COLLISION_ENTER, COLLISION, VIEW_EXIT, VIEW_ENTER,
        PROXIMITY_EXIT, PROXIMITY_ENTER,
    )

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.on: dict[str, Callable[..., None]] = {}
        self._handlers = {name: self._handler(name) for name in self.NAMES}
        for name, handler in self._handlers.items():
            esper.set_handler(name, handler)

    def _handler(self, name: str) -> Callable[..., None]:
        def handle(*args: int) -> None:
            self.events.append((name, *args))
            then = self.on.get(name)
            if then is not None:
                then(*args)

        return handle

    def take(self) -> list[tuple[Any, ...]]:
        events, self.events = self.events, []
        return events


@pytest.fixture
def other(world: str) -> Iterator[str]:
    """A second world, deleted after the test (its handlers dropped while it is current)."""
    name = world + "-other"
    yield name
    if name in esper.list_worlds():
        here = esper.current_world
        esper.switch_world(name)
        esper.event_registry.clear()
        esper.switch_world(here if here != name else world)
        esper.delete_world(name)
    esper.switch_world(world)


WIDE = Box(-10, -10, 200, 200)


def three_processors(view: Box = WIDE) -> SpatialProcessor:
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    esper.add_processor(CullingProcessor(spatial, view), priority=1)
    esper.add_processor(ProximityProcessor(spatial), priority=1)
    return spatial


# -- a handler that switches worlds ---------------------------------------------------------


def test_a_handler_that_switches_worlds_stops_the_delivery_there(world: str, other: str) -> None:
    """The hunt's case 6: a collision_enter handler switches to world b on the first hit.
    Nothing of world a reaches world b's handlers (its ids 1 to 4 exist there too); world
    a's culling and proximity processors, run by world a's esper.process() after the
    switch, do nothing; world a's next process() delivers the rest first, then its frame."""
    esper.switch_world(other)
    in_b = Events()
    for _ in range(4):
        esper.create_entity()
    esper.switch_world(world)
    in_a = Events()
    in_a.on[COLLISION_ENTER] = lambda x, y: esper.switch_world(other)
    spatial = three_processors()
    a, b = square(0, 0), square(5, 5, Proximity(20))
    c, d = square(100, 0), square(105, 5)
    esper.process()
    assert esper.current_world == other
    assert in_a.take() == [(COLLISION_ENTER, a, b)]
    assert in_b.take() == []
    esper.process()  # world b's own frame: no processor of world a runs in it
    assert in_b.take() == [] and in_a.take() == []
    esper.switch_world(world)
    del in_a.on[COLLISION_ENTER]
    esper.process()
    assert in_a.take() == [
        (COLLISION_ENTER, c, d), (COLLISION, a, b), (COLLISION, c, d),  # the rest, first
        (COLLISION, a, b), (COLLISION, c, d),                           # this frame's own
        (VIEW_ENTER, a), (VIEW_ENTER, b), (VIEW_ENTER, c), (VIEW_ENTER, d),
        (PROXIMITY_ENTER, b, a),
    ]
    assert set(spatial.pairs) == {(a, b), (c, d)}
    assert in_b.take() == []


@pytest.mark.parametrize("where", ["enter", "view_enter", "proximity_enter"])
def test_a_handler_that_switches_worlds_and_back_changes_nothing(world: str, other: str,
                                                                  where: str) -> None:
    """A handler that makes something in another world and comes back before it returns:
    every event comes as it would without it, in the same frame."""
    runs = []
    for detour in (False, True):
        with fresh_world("detour"):
            events = Events()
            if detour:
                def visit(*args: int) -> None:
                    here = esper.current_world
                    esper.switch_world(other)
                    esper.create_entity(Position(0, 0), AABB(10, 10))
                    esper.switch_world(here)

                events.on[{"enter": COLLISION_ENTER, "view_enter": VIEW_ENTER,
                           "proximity_enter": PROXIMITY_ENTER}[where]] = visit
            three_processors()
            square(0, 0, Proximity(20)), square(5, 5), square(100, 0), square(105, 5)
            esper.process()
            runs.append(events.take())
            esper.event_registry.clear()
    assert runs[0] == runs[1]
    assert len(runs[0]) == 9


def switch_to(name: str) -> Callable[[int, int], None]:
    def switch(x: int, y: int) -> None:
        esper.switch_world(name)

    return switch


@pytest.mark.parametrize("raises", [False, True])
def test_a_switch_in_the_owed_delivery_leaves_the_frame_for_later(
    world: str, other: str, raises: bool
) -> None:
    """A handler of what an earlier raise left owed switches worlds (and raises, or not):
    the frame is not worked out in the other world (its processors refuse to run there);
    it is, behind the rest of the owed events, at the next process() in world a."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    rec = Recorder(each=None)
    a, b, c = square(0, 0), square(5, 5), square(6, 6)
    calls = []

    def enter(x: int, y: int) -> None:
        calls.append((x, y))
        if len(calls) == 1:
            raise Boom("first")
        if len(calls) == 2:
            esper.switch_world(other)
            if raises:
                raise Boom("second")

    esper.set_handler(COLLISION_ENTER, enter)
    with pytest.raises(Boom):
        esper.process()  # enter(a, b) raised: enter(a, c), enter(b, c) owed
    esper.component_for_entity(c, Position).x = 500
    if raises:
        with pytest.raises(Boom, match="second"):
            esper.process()
    else:
        esper.process()
    assert esper.current_world == other
    assert calls == [(a, b), (a, c)] and spatial.frame == 1
    esper.switch_world(world)
    esper.process()
    assert calls == [(a, b), (a, c), (b, c)]
    assert rec.take() == [
        ("enter", a, b), ("enter", a, c), ("enter", b, c),  # the owed ones
        ("exit", a, c), ("exit", b, c),                     # the frame's, worked out now
    ]
    assert set(spatial.pairs) == {(a, b)} and spatial.frame == 2


def test_a_typed_handler_that_switches_worlds_stops_the_delivery_there(
    world: str, other: str
) -> None:
    """An on_collision enter handler switches worlds: the registration's other enters and
    stays wait for world a's next process(), as the plain events do."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    seen: list[tuple[str, int, int]] = []

    def enter(x: int, y: int) -> None:
        seen.append(("enter", x, y))
        if len(seen) == 1:
            esper.switch_world(other)

    spatial.on_collision(None, None, enter=enter,
                         stay=lambda x, y: seen.append(("stay", x, y)))
    a, b, c, d = square(0, 0), square(5, 5), square(100, 0), square(105, 5)
    esper.process()
    assert seen == [("enter", a, b)] and esper.current_world == other
    esper.switch_world(world)
    esper.process()
    assert seen == [
        ("enter", a, b), ("enter", c, d), ("stay", a, b), ("stay", c, d),
        ("stay", a, b), ("stay", c, d),
    ]


def test_a_processor_run_directly_in_another_world_is_still_refused(
    world: str, other: str
) -> None:
    """Only the old world's own esper.process(), after a handler switched away, passes
    over its processors: called in another world otherwise, a processor still refuses."""
    esper.add_processor(SpatialProcessor())
    culling = CullingProcessor(esper.get_processor(SpatialProcessor),  # type: ignore[arg-type]
                               Box(0, 0, 10, 10))
    esper.add_processor(culling)
    esper.process()
    esper.switch_world(other)
    with pytest.raises(RuntimeError, match="serves esper world"):
        culling.process()


# -- a handler that replaces the database ------------------------------------------------------


def test_a_handler_that_clears_the_database_ends_the_old_worlds_arrivals(world: str) -> None:
    """The hunt's case 7: pairs (1, 2) and (3, 4); the first enter handler clears the
    database and makes four entities far apart (ids 1 to 4 again). Neither enter(3, 4) nor
    any collision reaches them; the next frame gives the exit of the one pair entered, and
    the new world's own events only: the view and the proximity processors, which ran
    after the clear in the same process(), read nothing of the old world's index."""
    events = Events()
    cleared: list[int] = []
    made: list[int] = []

    def clear(x: int, y: int) -> None:
        if not cleared:
            cleared.append(1)
            esper.clear_database()
            made.extend(
                esper.create_entity(Position(1000.0 * i, 0), AABB(1, 1), Proximity(5.0))
                for i in range(4)
            )

    events.on[COLLISION_ENTER] = clear
    spatial = three_processors(Box(-10, -10, 5000, 5000))
    square(0, 0), square(5, 5), square(100, 0), square(105, 5)
    esper.process()
    assert made == [1, 2, 3, 4]
    assert events.take() == [(COLLISION_ENTER, 1, 2)]
    esper.process()
    assert events.take() == [
        (COLLISION_EXIT, 1, 2),
        (VIEW_ENTER, 1), (VIEW_ENTER, 2), (VIEW_ENTER, 3), (VIEW_ENTER, 4),
    ]
    assert spatial.pairs == set()
    esper.process()
    assert events.take() == []


def test_the_old_worlds_exits_still_come_and_later_handlers_keep_their_balance(
    world: str,
) -> None:
    """The first of two exit handlers clears the database on the first exit: every exit
    queued is still delivered, to both; the enters behind them are dropped, their exits
    silent. Two enter handlers, the first clearing: the second still gets that enter (the
    first did; the pair's exit will come to both)."""
    exits: list[tuple[str, int, int]] = []
    first_done: list[int] = []

    def first_exit(x: int, y: int) -> None:
        exits.append(("first", x, y))
        if not first_done:
            first_done.append(1)
            esper.clear_database()
            for _ in range(6):
                square(0, 0)  # ids 1 to 6 again, all overlapping

    def second_exit(x: int, y: int) -> None:
        exits.append(("second", x, y))

    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    rec = Recorder(each=None)
    a, b, c, d = square(0, 0), square(5, 5), square(100, 0), square(105, 5)
    _, f = square(300, 0), square(400, 0)
    esper.process()
    assert rec.take() == [("enter", a, b), ("enter", c, d)]
    esper.set_handler(COLLISION_EXIT, first_exit)
    esper.set_handler(COLLISION_EXIT, second_exit)
    esper.component_for_entity(b, Position).x = 50
    esper.component_for_entity(d, Position).x = 150
    esper.component_for_entity(f, Position).x = 305  # enter(e, f), behind the exits
    esper.process()
    assert sorted(exits) == [
        ("first", a, b), ("first", c, d), ("second", a, b), ("second", c, d),
    ]
    assert rec.take() == [("exit", a, b), ("exit", c, d)]  # no enter(e, f): dropped
    esper.process()  # the new world: its own 15 pairs enter; no exit for (e, f)
    assert [kind for kind, *_ in rec.take()] == ["enter"] * 15


@pytest.mark.parametrize("how", ["clear_database", "world remade"])
def test_a_typed_handler_that_replaces_the_database(world: str, other: str, how: str) -> None:
    """An on_collision enter handler replaces the database (cleared, or the world deleted
    and made again under its name): the registration's other enters and stays of the old
    world are dropped, and the pair it entered gets its exit at the next process()."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    seen: list[tuple[str, int, int]] = []

    def enter(x: int, y: int) -> None:
        seen.append(("enter", x, y))
        if len(seen) > 1:
            return
        if how == "clear_database":
            esper.clear_database()
        else:
            esper.switch_world(other)
            esper.delete_world(world)
            esper.switch_world(world)  # a new world of the same name, without processors
            esper.add_processor(spatial)
        for i in range(4):
            square(1000.0 * i, 0)

    handle = spatial.on_collision(
        None, None, enter=enter, exit=lambda x, y: seen.append(("exit", x, y)),
        stay=lambda x, y: seen.append(("stay", x, y)),
    )
    square(0, 0), square(5, 5), square(100, 0), square(105, 5)
    esper.process()
    assert seen == [("enter", 1, 2)]
    assert handle.held == {(1, 2)}
    esper.process()
    assert seen == [("enter", 1, 2), ("exit", 1, 2)]
    assert handle.held == set()


# -- a handler that saves the world ----------------------------------------------------------


LOG: list[tuple[Any, ...]] = []
SAVES: list[bytes] = []


def saving_enter(a: int, b: int) -> None:
    """Records the enter and, on (3, 4), saves the world (a checkpoint hit: an autosave)."""
    LOG.append((esper.current_world, "saving enter", a, b))
    if (a, b) == (3, 4) and not SAVES:
        SAVES.append(pickle.dumps(save_world()))


def restored(world: str, suffix: str, state: Any, *handlers: Callable[..., None]) -> str:
    name = world + suffix
    esper.switch_world(name)
    restore_world(state)
    for handler in handlers:
        esper.set_handler(COLLISION_ENTER, handler)
    return name


def test_a_save_made_by_a_handler_restores_to_what_was_not_delivered(world: str) -> None:
    """The hunt's case 8: three pairs; the enter handler saves the world on the second.
    The restored world's first process() delivers the third enter only (it used to deliver
    all three again: the batch's position was recorded only when a handler raised)."""
    LOG.clear()
    SAVES.clear()
    esper.set_handler(COLLISION_ENTER, saving_enter)
    esper.add_processor(SpatialProcessor())
    for x in (0, 100, 200):
        square(x, 0), square(x + 5, 5)
    esper.process()
    name = restored(world, "-restored", pickle.loads(SAVES[0]), saving_enter)
    try:
        esper.process()
        assert [event[2:] for event in LOG if event[0] == name] == [(5, 6)]
    finally:
        esper.event_registry.clear()
        esper.switch_world(world)
        esper.delete_world(name)


#: Which of the three enter handlers below saves, on which pair, how (pickle, deepcopy),
#: and what it saved; which raises on its first call.
SAVER: list[str] = []
SAVE_ON: list[tuple[int, int]] = [(3, 4)]
HOW: list[str] = []
COPIES: list[Any] = []
RAISER: list[str] = []


def _enter(who: str, a: int, b: int) -> None:
    LOG.append((esper.current_world, who, a, b))
    if RAISER and RAISER[0] == who:
        RAISER.clear()
        raise Boom(who)
    if SAVER[0] == who and (a, b) == SAVE_ON[0] and not COPIES:
        state = save_world()
        COPIES.append(copy.deepcopy(state) if HOW == ["deepcopy"] else
                      pickle.loads(pickle.dumps(state)))


def enter_x(a: int, b: int) -> None:
    _enter("x", a, b)


def enter_y(a: int, b: int) -> None:
    _enter("y", a, b)


def enter_z(a: int, b: int) -> None:
    _enter("z", a, b)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("position", [0, 1, 2])
def test_the_handlers_after_the_one_that_saves_are_owed_its_event(
    world: str, how: str, position: int
) -> None:
    """Three module-level handlers of collision_enter (so that an event owed to them
    pickles); the one called at ``position`` saves (a pickle, or a deep copy in memory) on
    enter(3, 4). In the restored world the handlers after it get (3, 4) first, then all
    get (5, 6): each handler, over the two worlds, gets each enter exactly once."""
    LOG.clear()
    COPIES.clear()
    HOW[:] = [how]
    SAVE_ON[:] = [(3, 4)]
    handlers = {"x": enter_x, "y": enter_y, "z": enter_z}
    for handler in handlers.values():
        esper.set_handler(COLLISION_ENTER, handler)
    order = [
        who for ref in esper.event_registry[COLLISION_ENTER]  # the order they are called in
        for who, handler in handlers.items() if ref() is handler
    ]
    SAVER[:] = [order[position]]
    esper.add_processor(SpatialProcessor())
    for x in (0, 100, 200):
        square(x, 0), square(x + 5, 5)
    esper.process()
    name = restored(world, "-restored", COPIES[0], *handlers.values())
    try:
        esper.process()
        again = [event[1:] for event in LOG if event[0] == name]
        assert again == (
            [(who, 3, 4) for who in order[position + 1 :]] + [(who, 5, 6) for who in order]
        )
    finally:
        esper.event_registry.clear()
        esper.switch_world(world)
        esper.delete_world(name)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_save_made_by_a_handler_of_an_owed_event(world: str, how: str) -> None:
    """Three handlers of collision_enter; the first raises on enter(1, 2), which the other
    two are then owed; at the next process() the first of them saves while it handles it.
    The restored world owes (1, 2) to the third only."""
    LOG.clear()
    COPIES.clear()
    HOW[:] = [how]
    SAVE_ON[:] = [(1, 2)]
    handlers = {"x": enter_x, "y": enter_y, "z": enter_z}
    for handler in handlers.values():
        esper.set_handler(COLLISION_ENTER, handler)
    order = [
        who for ref in esper.event_registry[COLLISION_ENTER]
        for who, handler in handlers.items() if ref() is handler
    ]
    RAISER[:] = [order[0]]
    SAVER[:] = ["nobody"]
    esper.add_processor(SpatialProcessor())
    square(0, 0), square(5, 5)
    with pytest.raises(Boom):
        esper.process()
    SAVER[:] = [order[1]]
    esper.process()  # the owed enter(1, 2) to order[1], which saves, then to order[2]
    assert [event[1] for event in LOG] == order[:1] + order[1:]
    name = restored(world, "-restored", COPIES[0], *handlers.values())
    try:
        esper.process()
        assert [event[1:] for event in LOG if event[0] == name] == [(order[2], 1, 2)]
    finally:
        esper.event_registry.clear()
        esper.switch_world(world)
        esper.delete_world(name)


class Checkpoint:
    """A registration's handlers that pickle (they are saved with the SpatialProcessor that
    holds them): they log; the stay handler saves the world on its second call (a stay,
    unlike an enter or an exit, is not spared by what the registration holds)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int]] = []
        self.saved: list[bytes] = []

    def enter(self, a: int, b: int) -> None:
        self.seen.append(("enter", a, b))

    def stay(self, a: int, b: int) -> None:
        self.seen.append(("stay", a, b))
        if len(self.seen) == 5:
            self.saved.append(pickle.dumps(save_world()))


def test_a_save_made_by_a_typed_handler_restores_to_what_was_not_delivered(world: str) -> None:
    """An on_collision stay handler saves on its second stay: the restored world's
    registration holds the three pairs, and gets the third stay, then its frame's."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    checkpoint = Checkpoint()
    spatial.on_collision(None, None, enter=checkpoint.enter, stay=checkpoint.stay)
    for x in (0, 100, 200):
        square(x, 0), square(x + 5, 5)
    esper.process()
    assert checkpoint.seen[3:5] == [("stay", 1, 2), ("stay", 3, 4)]
    name = restored(world, "-restored", pickle.loads(checkpoint.saved[0]))
    try:
        twin = esper.get_processor(SpatialProcessor)
        assert isinstance(twin, SpatialProcessor)
        handle = twin.collision_handlers[0]
        assert handle.held == {(1, 2), (3, 4), (5, 6)}
        twin_log = handle.stay.__self__  # type: ignore[union-attr]
        twin_log.seen.clear()
        esper.process()
        assert twin_log.seen == [
            ("stay", 5, 6),                                # the rest
            ("stay", 1, 2), ("stay", 3, 4), ("stay", 5, 6),  # its frame's
        ]
    finally:
        esper.event_registry.clear()
        esper.switch_world(world)
        esper.delete_world(name)
