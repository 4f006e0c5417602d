"""The event contract under faults, case by case: exactly once when handlers raise, the
deletion rule, followers that miss frames, misuse refused, new databases, one filter rule.
(``test_fault_model.py`` injects the same faults at random against brute-force models.)"""

from __future__ import annotations

import copy
import math
import pickle
import re
import time
from typing import Any

import esper
import pytest
from _worlds import Recorder

from ecs_spatial import (
    AABB,
    COLLISION_ENTER,
    COLLISION_EXIT,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    VIEW_ENTER,
    VIEW_EXIT,
    Box,
    CollisionFilter,
    CullingProcessor,
    Position,
    Proximity,
    ProximityProcessor,
    SpatialProcessor,
)
from ecs_spatial.delivery import Outbox

pytestmark = pytest.mark.usefixtures("membership")


class Boom(Exception):
    """What the test handlers raise."""


def square(x: float, y: float, *extra: Any) -> int:
    return esper.create_entity(Position(x, y), AABB(10, 10), *extra)


class Raising(Recorder):
    """A Recorder whose enter handler raises once, on the pair ``fail_on``."""

    def __init__(self, fail_on: tuple[int, int] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fail_on = fail_on

    def enter(self, a: int, b: int) -> None:
        super().enter(a, b)
        if (a, b) == self.fail_on:
            self.fail_on = None
            raise Boom(f"enter{(a, b)}")


# -- exactly once ----------------------------------------------------------------------------


def test_events_cut_off_by_a_raise_come_first_next_frame(world: str) -> None:
    """The issue's case: a raise on enter(1, 2) leaves enter(1, 3) and enter(2, 3) for the next
    process(), delivered before that frame's own events; every exit follows its enter."""
    esper.add_processor(SpatialProcessor())
    a, b, c = square(0, 0), square(5, 5), square(6, 6)
    rec = Raising(fail_on=(a, b), each=None)
    with pytest.raises(Boom):
        esper.process()
    assert rec.take() == [("enter", a, b)]
    esper.component_for_entity(c, Position).x = 500  # (a, c) and (b, c) end this frame
    esper.process()
    assert rec.take() == [
        ("enter", a, c), ("enter", b, c),  # the cut-off events first
        ("exit", a, c), ("exit", b, c),    # then this frame's own
    ]


def test_every_handler_of_an_event_gets_it_once(world: str) -> None:
    """With two handlers, the one after a raising one is still owed the event and gets it at
    the next process(); neither gets anything twice. (esper keeps handlers in a set, so each
    raises on its first call, whichever runs first.)"""
    esper.add_processor(SpatialProcessor())
    a, b = square(0, 0), square(5, 5)
    first = Raising(fail_on=(a, b), each=None)
    second = Raising(fail_on=(a, b), each=None)
    with pytest.raises(Boom):
        esper.process()  # one handler raises; the other is owed enter(a, b)
    with pytest.raises(Boom):
        esper.process()  # the other gets it first, and raises in turn
    esper.process()
    assert first.take() == [("enter", a, b)]
    assert second.take() == [("enter", a, b)]


class ExitsRaisingOnce:
    """Records the collision enters and exits; its exit handler raises on its first call."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, int]] = []
        esper.set_handler(COLLISION_ENTER, self.enter)
        esper.set_handler(COLLISION_EXIT, self.exit)

    def enter(self, a: int, b: int) -> None:
        self.events.append(("enter", a, b))

    def exit(self, a: int, b: int) -> None:
        self.events.append(("exit", a, b))
        if sum(1 for kind, *_ in self.events if kind == "exit") == 1:
            raise Boom("exit")


def test_an_exit_owed_to_later_handlers_survives_a_cleared_database(world: str) -> None:
    """Two exit handlers, the first to run raises: the other is still owed the exit, and
    gets it even though the database is cleared before the next process() (the exit
    balances an enter it was given; a cleared world drops only what arrives)."""
    esper.add_processor(SpatialProcessor())
    a, b = square(0, 0), square(5, 5)
    first, second = ExitsRaisingOnce(), ExitsRaisingOnce()
    esper.process()
    esper.component_for_entity(b, Position).x = 500
    with pytest.raises(Boom):
        esper.process()  # one exit handler raises: the other is owed exit(a, b)
    esper.clear_database()
    with pytest.raises(Boom):
        esper.process()  # the other gets exit(a, b) first, and raises in turn
    esper.process()
    for log in (first, second):
        assert log.events == [("enter", a, b), ("exit", a, b)]


def test_an_enter_owed_to_later_handlers_survives_a_cleared_database(world: str) -> None:
    """Two enter handlers, the first to run raises: the other is still owed the enter, and
    gets it before the exit that the cleared database gives the pair, so that each handler
    gets the enter once and then the exit once."""
    esper.add_processor(SpatialProcessor())
    a, b = square(0, 0), square(5, 5)
    raised: list[bool] = []
    logs = [FirstEnterRaises(raised), FirstEnterRaises(raised)]
    with pytest.raises(Boom):
        esper.process()  # one enter handler raises: the other is owed enter(a, b)
    esper.clear_database()
    esper.process()
    for log in logs:
        assert log.events == [("enter", a, b), ("exit", a, b)]


class FirstEnterRaises:
    """Records the collision enters and exits; raises on the first enter any of those
    sharing ``raised`` is given."""

    def __init__(self, raised: list[bool]) -> None:
        self.raised = raised
        self.events: list[tuple[str, int, int]] = []
        esper.set_handler(COLLISION_ENTER, self.enter)
        esper.set_handler(COLLISION_EXIT, self.exit)

    def enter(self, a: int, b: int) -> None:
        self.events.append(("enter", a, b))
        if not self.raised:
            self.raised.append(True)
            raise Boom("enter")

    def exit(self, a: int, b: int) -> None:
        self.events.append(("exit", a, b))


def test_an_owed_event_saved_without_its_role_still_loads(world: str) -> None:
    """An Outbox pickled before the owed event kept its role (name, key, handlers) loads
    and delivers it to the handlers set again."""
    events: list[tuple[int, int]] = []
    keep = events.append

    def enter(a: int, b: int) -> None:
        keep((a, b))

    esper.set_handler(COLLISION_ENTER, enter)
    outbox = Outbox.__new__(Outbox)
    outbox.__setstate__(([], set(), (COLLISION_ENTER, (1, 2), [enter])))
    assert outbox
    outbox.deliver()
    assert events == [(1, 2)] and not outbox


def test_exception_propagates_unchanged(world: str) -> None:
    """The handler's own exception object comes out of esper.process()."""
    esper.add_processor(SpatialProcessor())
    square(0, 0)
    square(5, 5)
    error = Boom("mine")

    def raise_it(a: int, b: int) -> None:
        raise error

    esper.set_handler(COLLISION_ENTER, raise_it)
    with pytest.raises(Boom) as caught:
        esper.process()
    assert caught.value is error


class RaisingTwice(Recorder):
    """A Recorder whose enter handler raises on its first two calls."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.raises = 2

    def enter(self, a: int, b: int) -> None:
        super().enter(a, b)
        if self.raises:
            self.raises -= 1
            raise Boom(f"enter{(a, b)}")


def test_a_raise_in_the_owed_delivery_still_works_out_the_frame(world: str) -> None:
    """The issue's case: three overlapping boxes, an enter handler that raises twice (the
    second time in what the first raise left owed), a bullet that overlaps a wall in the
    second frame only. The second frame is worked out all the same: the index and the
    pairs describe it when the exception comes out, and its enter and exit of the bullet
    come, in order, after the enters still owed."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    a, b, c = square(0, 0), square(5, 5), square(6, 6)
    bullet = esper.create_entity(Position(100, 0), AABB(2, 2))
    wall = esper.create_entity(Position(200, 0), AABB(10, 10))
    rec = RaisingTwice(each=None)
    with pytest.raises(Boom):
        esper.process()  # enter(a, b) raises: enter(a, c), enter(b, c) owed
    esper.component_for_entity(bullet, Position).x = 201  # into the wall, this frame only
    with pytest.raises(Boom, match=re.escape(f"enter{(a, c)}")):
        esper.process()  # the owed enter(a, c) raises again
    assert spatial.index[bullet] == Box(201, 0, 203, 2)
    assert set(spatial.pairs) == {(a, b), (a, c), (b, c), (bullet, wall)}
    assert spatial.frame == 2
    esper.component_for_entity(bullet, Position).x = 400  # out of the wall again
    esper.process()
    assert rec.take() == [
        ("enter", a, b), ("enter", a, c),  # each raised, and counts as delivered
        ("enter", b, c),                   # still owed after the second raise
        ("enter", bullet, wall),           # the second frame's own
        ("exit", bullet, wall),            # the third frame's
    ]
    esper.process()
    assert rec.take() == []


class _RaisingLog:
    """Records one follower's enter and exit events; its enter handler raises on its first
    ``raises`` calls."""

    def __init__(self, names: dict[str, str], raises: int) -> None:
        self.events: list[tuple[str, Any]] = []
        self.raises = raises
        esper.set_handler(names["enter"], self.enter)
        esper.set_handler(names["exit"], self.exit)

    def enter(self, *key: int) -> None:
        self.events.append(("enter", key[0] if len(key) == 1 else key))
        if self.raises:
            self.raises -= 1
            raise Boom(f"enter{key}")

    def exit(self, *key: int) -> None:
        self.events.append(("exit", key[0] if len(key) == 1 else key))


@pytest.mark.parametrize("kind", ["view", "proximity"])
def test_a_follower_works_out_its_frame_behind_a_raise_in_its_owed_delivery(
    world: str, kind: str
) -> None:
    """The issue's case for the followers: an enter handler that raises twice, the second
    time in what the first left owed, and an entity that comes into view (into reach) in
    the second frame only: ``visible`` (the neighbours) describe the second frame when the
    exception comes out, and its enter and exit come, in order, after what is still
    owed."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    watcher = square(0, 0, Proximity(50))
    a, b = square(20, 0), square(40, 0)
    passer = square(500, 0)
    first: Any
    owed: Any
    passing: Any
    still_owed: list[Any]
    if kind == "view":
        camera = CullingProcessor(spatial, Box(0, 0, 100, 100))
        esper.add_processor(camera)
        log = _RaisingLog({"enter": VIEW_ENTER, "exit": VIEW_EXIT}, raises=2)
        first, owed, still_owed, passing = watcher, a, [b], passer

        def seen() -> set[Any]:
            return set(camera.visible)
    else:
        esper.add_processor(ProximityProcessor(spatial))
        log = _RaisingLog({"enter": PROXIMITY_ENTER, "exit": PROXIMITY_EXIT}, raises=2)
        first, owed, still_owed, passing = (watcher, a), (watcher, b), [], (watcher, passer)

        def seen() -> set[Any]:
            return {(watcher, other) for other in neighbors(watcher)}
    with pytest.raises(Boom):
        esper.process()
    esper.component_for_entity(passer, Position).x = 30  # in, for this frame only
    with pytest.raises(Boom):
        esper.process()
    assert passing in seen()
    esper.component_for_entity(passer, Position).x = 500
    esper.process()
    assert passing not in seen()
    assert log.events == [
        ("enter", first), ("enter", owed), *[("enter", key) for key in still_owed],
        ("enter", passing), ("exit", passing),
    ]


def neighbors(entity: int) -> set[int]:
    return set(esper.component_for_entity(entity, Proximity).neighbors)


class Owing(Recorder):
    """A Recorder whose enter handler raises on its first call; from then on it calls
    ``then(a, b)`` if set, else records the enter."""

    def __init__(self) -> None:
        super().__init__(each=None)
        self.then: Any = None
        self.first = True

    def enter(self, a: int, b: int) -> None:
        if self.first:
            self.first = False
            super().enter(a, b)
            raise Boom(f"enter{(a, b)}")
        if self.then is None:
            super().enter(a, b)
        else:
            self.then(a, b)


def owe_then(then: Any) -> tuple[SpatialProcessor, Owing, tuple[int, int, int]]:
    """A SpatialProcessor whose first frame raised at enter(a, b), leaving enter(a, c) and
    enter(b, c) owed; the enter handler then calls ``then(a, b)``: first in the next frame,
    on enter(a, c). (``rec.then = None`` makes it record again.)"""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    a, b, c = square(0, 0), square(5, 5), square(6, 6)
    rec = Owing()
    with pytest.raises(Boom):
        esper.process()
    assert rec.take() == [("enter", a, b)]
    rec.then = then
    return spatial, rec, (a, b, c)


def test_the_raise_of_the_owed_delivery_propagates_unchanged(world: str) -> None:
    """The frame worked out behind it does not touch the handler's exception: the same
    object comes out of esper.process(), with the same traceback and no context added."""
    error = Boom("mine")

    def raise_it(a: int, b: int) -> None:
        raise error

    spatial, rec, _ = owe_then(raise_it)  # rec holds the handler: esper keeps weak refs
    with pytest.raises(Boom) as caught:
        esper.process()
    assert rec.take() == []
    assert caught.value is error and error.__context__ is None
    assert caught.traceback[-1].name == "raise_it"
    assert spatial.frame == 2


def test_bad_input_behind_a_raise_in_the_owed_delivery(world: str) -> None:
    """The owed delivery raises and the frame's own reading fails too (a bad value): the
    bad value's error comes out of process(), the handler's exception as its
    ``__context__``; the frame changes nothing (the bad-input rule), the handler's call
    counts as delivered, and once the value is fixed the rest comes in order."""
    raised = Boom("owed")
    calls: list[tuple[int, int]] = []

    def raise_once(x: int, y: int) -> None:
        calls.append((x, y))
        if len(calls) == 1:
            raise raised

    spatial, rec, (a, b, c) = owe_then(raise_once)
    esper.component_for_entity(c, Position).x = 500  # (a, c) and (b, c) end...
    esper.component_for_entity(b, Position).y = math.nan  # ...but the frame is refused
    boxes = {e: spatial.index[e] for e in spatial.index}
    with pytest.raises(ValueError, match=rf"entity {b}: Position\.y is NaN") as caught:
        esper.process()
    assert caught.value.__context__ is raised
    assert {e: spatial.index[e] for e in spatial.index} == boxes
    assert spatial.frame == 1
    assert calls == [(a, c)]
    esper.component_for_entity(b, Position).y = 5
    esper.process()
    assert calls == [(a, c), (b, c)]
    assert rec.take() == [("exit", a, c), ("exit", b, c)]
    assert set(spatial.pairs) == {(a, b)}


@pytest.mark.parametrize("kind", ["view", "proximity"])
def test_a_follower_with_bad_input_behind_a_raise_in_its_owed_delivery(
    world: str, kind: str
) -> None:
    """A follower whose owed delivery raises and whose frame cannot be read (a view callable
    returning no Box, a negative radius): the frame's error comes out, the handler's
    exception as its ``__context__``, nothing changes; once fixed, the rest comes in order."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    view: list[Any] = [Box(0, 0, 100, 100)]
    watcher = square(0, 0, Proximity(50))
    a, b = square(20, 0), square(40, 0)
    if kind == "view":
        camera = CullingProcessor(spatial, lambda: view[0])
        esper.add_processor(camera)
        log = _RaisingLog({"enter": VIEW_ENTER, "exit": VIEW_EXIT}, raises=2)
        keys: list[Any] = [watcher, a, b]

        def seen() -> set[Any]:
            return set(camera.visible)

        def spoil(bad: bool) -> None:
            view[0] = None if bad else Box(0, 0, 100, 100)
    else:
        esper.add_processor(ProximityProcessor(spatial))
        log = _RaisingLog({"enter": PROXIMITY_ENTER, "exit": PROXIMITY_EXIT}, raises=2)
        keys = [(watcher, a), (watcher, b)]

        def seen() -> set[Any]:
            return {(watcher, other) for other in neighbors(watcher)}

        def spoil(bad: bool) -> None:
            esper.component_for_entity(watcher, Proximity).radius = -1 if bad else 50

    with pytest.raises(Boom):
        esper.process()
    before = seen()
    esper.component_for_entity(b, Position).x = 500  # leaves...
    spoil(True)  # ...but the frame cannot be read
    with pytest.raises((TypeError, ValueError)) as caught:
        esper.process()
    assert isinstance(caught.value.__context__, Boom)
    assert seen() == before
    spoil(False)
    esper.process()
    assert log.events == [("enter", key) for key in keys] + [("exit", keys[-1])]


def test_keyboard_interrupt_in_the_owed_delivery_stops_at_once(world: str) -> None:
    """A BaseException that is not an Exception asks to stop now: it propagates before the
    frame is worked out; the next process() delivers the rest of what is owed, then works
    out the world as it is then, nothing delivered twice."""
    calls: list[tuple[int, int]] = []

    def interrupted(x: int, y: int) -> None:
        calls.append((x, y))
        if len(calls) == 1:
            raise KeyboardInterrupt

    spatial, rec, (a, b, c) = owe_then(interrupted)
    esper.component_for_entity(c, Position).x = 500
    with pytest.raises(KeyboardInterrupt):
        esper.process()
    assert spatial.frame == 1 and (a, c) in spatial.pairs  # not worked out
    esper.process()
    assert calls == [(a, c), (b, c)]
    assert rec.take() == [("exit", a, c), ("exit", b, c)]
    assert spatial.frame == 2 and set(spatial.pairs) == {(a, b)}


def test_process_called_from_the_owed_delivery_is_refused_and_the_frame_runs(
    world: str,
) -> None:
    """A handler in the owed delivery that calls esper.process() gets the RuntimeError of
    any handler doing so; it propagates from that handler like any exception, and the frame
    is still worked out behind it."""
    def nested(x: int, y: int) -> None:
        esper.process()

    spatial, rec, (a, b, c) = owe_then(nested)
    esper.component_for_entity(c, Position).x = 500
    with pytest.raises(RuntimeError, match="inside an event handler"):
        esper.process()
    assert spatial.frame == 2 and set(spatial.pairs) == {(a, b)}
    rec.then = None
    esper.process()
    assert rec.take() == [("enter", b, c), ("exit", a, c), ("exit", b, c)]


@pytest.mark.parametrize("immediate", [True, False])
def test_entities_deleted_in_the_owed_delivery_are_gone_from_the_frame(
    world: str, immediate: bool
) -> None:
    """A handler in the owed delivery deletes an entity and raises: the frame worked out
    behind the raise no longer holds it (deleted at once), or still does until esper.process()
    clears it (deferred); the enter still owed naming it is not delivered, and the exit of
    the pair whose enter was delivered comes, once."""
    def delete_c(x: int, y: int) -> None:
        esper.delete_entity(y, immediate=immediate)
        raise Boom("deleted")

    spatial, rec, (a, b, c) = owe_then(delete_c)
    with pytest.raises(Boom):
        esper.process()
    assert (c in spatial.index) is not immediate
    rec.then = None
    esper.process()
    assert c not in spatial.index and set(spatial.pairs) == {(a, b)}
    assert rec.take() == [("exit", a, c)]  # enter(b, c) not delivered: c was gone


def test_processor_removed_in_the_owed_delivery_still_works_out_its_frame(world: str) -> None:
    """A handler in the owed delivery takes the processor out of the world and raises: the
    frame of that process() is worked out all the same; put back, the processor goes on
    from it."""
    def remove(x: int, y: int) -> None:
        esper.remove_processor(SpatialProcessor)
        raise Boom("removed")

    spatial, rec, (a, b, c) = owe_then(remove)
    esper.component_for_entity(c, Position).x = 500
    with pytest.raises(Boom):
        esper.process()
    assert spatial.frame == 2 and set(spatial.pairs) == {(a, b)}
    esper.process()  # nothing runs
    esper.add_processor(spatial)
    rec.then = None
    esper.process()
    assert rec.take() == [("enter", b, c), ("exit", a, c), ("exit", b, c)]


@pytest.mark.parametrize("raises", [True, False])
def test_database_cleared_in_the_owed_delivery(world: str, raises: bool) -> None:
    """A handler in the owed delivery clears the database and makes a new world (ids
    reused): the owed enter(b, c) behind it is dropped at once with the old world (it was
    delivered to the new entities that took those ids), its exit silent; the frame reads
    that new world, so it starts afresh at once, as the next process() would have: an exit
    for every pair reported, then the new world's enters (it used to take the new entities
    for the old ones, moved, for a frame). Whether the handler raises or not."""
    def clear(x: int, y: int) -> None:
        rec.then = None
        esper.clear_database()
        square(0, 0)
        square(50, 50)
        square(55, 55)
        if raises:
            raise Boom("cleared")

    spatial, rec, (a, b, c) = owe_then(clear)
    if raises:
        with pytest.raises(Boom):
            esper.process()
    else:
        esper.process()
    assert set(spatial.pairs) == {(b, c)}
    if raises:  # the frame's events wait behind the raise
        assert rec.take() == []
        esper.process()
    assert rec.take() == [("exit", a, b), ("exit", a, c), ("enter", b, c)]
    esper.process()
    assert rec.take() == []


def test_timings_of_a_frame_worked_out_behind_a_raise(world: str) -> None:
    """``timings`` of a process() whose owed delivery raised: the frame's phases, and the
    owed delivery's time (the handler's sleep) in ``events``, as the frame's own delivery
    is; a frame not worked out (bad input) puts all its time there."""
    def slow(x: int, y: int) -> None:
        time.sleep(0.05)
        raise Boom("slow")

    spatial, rec, (_, _, c) = owe_then(slow)  # rec holds the handler: esper keeps weak refs
    square(300, 300)
    with pytest.raises(Boom):
        esper.process()
    assert rec.take() == []
    took = spatial.timings
    assert took.events >= 0.05 and took.read > 0.0 and took.update > 0.0 and took.pairs > 0.0
    assert 0.0 < took.read + took.update + took.pairs < 0.05
    esper.component_for_entity(c, Position).x = math.nan
    with pytest.raises(ValueError):
        esper.process()
    took = spatial.timings
    assert took.events >= 0.05 and took.read == took.update == took.pairs == 0.0


@pytest.mark.parametrize("kind", ["view", "proximity"])
def test_followers_skipped_by_a_raise_catch_up(world: str, kind: str) -> None:
    """A raise in a collision handler skips the followers for that frame; at their next
    process() they report exactly the changes since what they last reported."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    if kind == "view":
        esper.add_processor(CullingProcessor(spatial, Box(0, 0, 100, 100)))
        events: dict[str, str] = {"enter": VIEW_ENTER, "exit": VIEW_EXIT}
    else:
        esper.add_processor(ProximityProcessor(spatial))
        events = {"enter": PROXIMITY_ENTER, "exit": PROXIMITY_EXIT}
    a = square(0, 0, Proximity(50))
    b = square(5, 5)
    seen = _Log(events)
    collisions = Raising(fail_on=(a, b), each=None)
    with pytest.raises(Boom):
        esper.process()  # the followers did not run
    assert seen.events == []
    assert collisions.take() == [("enter", a, b)]
    esper.component_for_entity(b, Position).x = 40  # apart, still seen by both followers
    esper.process()
    assert collisions.take() == [("exit", a, b)]
    if kind == "view":
        assert seen.events == [("enter", a), ("enter", b)]
    else:
        assert seen.events == [("enter", (a, b))]
    esper.component_for_entity(b, Position).x = 5000
    esper.process()
    assert seen.events[-1] == ("exit", b if kind == "view" else (a, b))


class _Log:
    """Records one follower's enter and exit events, with their arguments."""

    def __init__(self, names: dict[str, str]) -> None:
        self.events: list[tuple[str, Any]] = []
        self._enter = lambda *key: self.events.append(("enter", key[0] if len(key) == 1 else key))
        self._exit = lambda *key: self.events.append(("exit", key[0] if len(key) == 1 else key))
        esper.set_handler(names["enter"], self._enter)
        esper.set_handler(names["exit"], self._exit)


def test_follower_removed_and_re_added_resynchronises(world: str) -> None:
    """A CullingProcessor out of the world for two frames reports, when back, exactly the
    exits and enters from what it last reported to what is true now."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    camera = CullingProcessor(spatial, Box(0, 0, 100, 100))
    esper.add_processor(camera)
    a, b = square(0, 0), square(500, 500)
    seen = _Log({"enter": VIEW_ENTER, "exit": VIEW_EXIT})
    esper.process()
    assert seen.events == [("enter", a)]
    esper.remove_processor(CullingProcessor)
    esper.component_for_entity(a, Position).x = 300
    esper.process()
    esper.component_for_entity(b, Position).x = 50
    esper.component_for_entity(b, Position).y = 50
    esper.process()
    esper.add_processor(camera)
    esper.process()
    assert seen.events == [("enter", a), ("exit", a), ("enter", b)]
    assert set(camera.visible) == {b}


# -- the deletion rule ------------------------------------------------------------------------


def test_view_enter_of_an_entity_deleted_mid_dispatch_is_not_delivered(world: str) -> None:
    """A view_enter handler deleting the next entity: that one gets no enter, and so no exit."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    esper.add_processor(CullingProcessor(spatial, Box(0, 0, 100, 100)))
    a, b = square(0, 0), square(50, 50)
    events: list[tuple[str, int]] = []

    def enter(e: int) -> None:
        events.append(("enter", e))
        if e == a:
            esper.delete_entity(b, immediate=True)

    def exit_(e: int) -> None:
        events.append(("exit", e))

    esper.set_handler(VIEW_ENTER, enter)
    esper.set_handler(VIEW_EXIT, exit_)
    esper.process()
    esper.process()
    assert events == [("enter", a)]


def test_exit_names_a_deleted_entity_whose_enter_was_delivered(world: str) -> None:
    """Every delivered enter gets its exit, even when one of the two no longer exists."""
    esper.add_processor(SpatialProcessor())
    a, b = square(0, 0), square(5, 5)
    rec = Recorder(each=None)
    esper.process()
    esper.delete_entity(b)
    esper.process()
    assert rec.take() == [("enter", a, b), ("exit", a, b)]


# -- misuse ------------------------------------------------------------------------------------


def test_process_from_inside_a_handler_is_refused(world: str) -> None:
    """esper.process() called from a handler raises RuntimeError naming the world, instead
    of interleaving two frames' events."""
    esper.add_processor(SpatialProcessor())
    square(0, 0)
    square(5, 5)
    caught: list[BaseException] = []

    def nested(a: int, b: int) -> None:
        try:
            esper.process()
        except RuntimeError as error:
            caught.append(error)

    esper.set_handler(COLLISION_ENTER, nested)
    esper.process()
    assert len(caught) == 1
    assert f"esper world {world!r}" in str(caught[0])
    assert "inside an event handler" in str(caught[0])


def test_second_spatial_processor_is_refused(world: str) -> None:
    """A second SpatialProcessor raises at its first process(), naming the world; the first
    keeps working, and a replacement after esper.remove_processor is accepted."""
    first = SpatialProcessor()
    esper.add_processor(first, priority=2)
    a, b = square(0, 0), square(5, 5)
    esper.process()
    second = SpatialProcessor()
    esper.add_processor(second)  # same type: esper lists both
    rec = Recorder(each=None)
    with pytest.raises(RuntimeError, match=re.escape(f"esper world {world!r} has two Spatial")):
        esper.process()
    esper.component_for_entity(b, Position).x = 50
    with pytest.raises(RuntimeError):
        esper.process()
    assert rec.take() == [("exit", a, b)]  # once: the first one's
    esper.remove_processor(SpatialProcessor)  # removes one of them (esper keys by type)
    for processor in list(esper._processors):
        if isinstance(processor, SpatialProcessor):
            esper._processors.remove(processor)
    replacement = SpatialProcessor()
    esper.add_processor(replacement)
    esper.process()
    assert set(replacement.index) == {a, b}


def test_second_proximity_processor_is_refused(world: str) -> None:
    """Two ProximityProcessors would both report every watcher's pairs (unbalanced: two
    enters, one exit): the second raises, naming the world; the first keeps working."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    esper.add_processor(ProximityProcessor(spatial), priority=1)
    esper.add_processor(ProximityProcessor(spatial))
    near = _Log({"enter": PROXIMITY_ENTER, "exit": PROXIMITY_EXIT})
    w, o = square(0, 0, Proximity(10)), square(12, 0)
    with pytest.raises(RuntimeError, match=re.escape(f"esper world {world!r} has two Proxim")):
        esper.process()
    esper.component_for_entity(o, Position).x = 50
    with pytest.raises(RuntimeError):
        esper.process()
    assert near.events == [("enter", (w, o)), ("exit", (w, o))]


@pytest.mark.parametrize("how", ["clear_database", "world remade"])
def test_new_database_exits_everything_then_starts_afresh(world: str, how: str) -> None:
    """After esper.clear_database() (or the world deleted and made again), entity ids are
    reused: every processor reports exits for all it had reported, then the new world."""
    spatial = SpatialProcessor()
    camera = CullingProcessor(spatial, Box(0, 0, 100, 100))
    near = ProximityProcessor(spatial)

    def install() -> Recorder:
        for priority, processor in enumerate([near, camera, spatial]):
            esper.add_processor(processor, priority=priority)
        return Recorder(each=None)

    collisions = install()
    a, b = square(0, 0, Proximity(20)), square(5, 5)
    esper.process()
    if how == "clear_database":
        esper.clear_database()
    else:
        esper.switch_world(world + "_other")
        esper.delete_world(world)
        esper.switch_world(world)
        esper.delete_world(world + "_other")
        assert collisions.take() == [("enter", a, b)]
        collisions = install()  # the new world has no handlers nor processors yet
    assert (square(0, 0, Proximity(20)), square(5, 5)) == (a, b)  # the same ids again
    esper.process()
    assert collisions.take()[-2:] == [("exit", a, b), ("enter", a, b)]
    assert set(spatial.pairs) == {(a, b)}


def test_view_and_proximity_exits_on_a_new_database(world: str) -> None:
    """The followers too: exits for all they reported, then enters for the new entities."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    esper.add_processor(CullingProcessor(spatial, Box(0, 0, 100, 100)), priority=1)
    esper.add_processor(ProximityProcessor(spatial))
    views = _Log({"enter": VIEW_ENTER, "exit": VIEW_EXIT})
    near = _Log({"enter": PROXIMITY_ENTER, "exit": PROXIMITY_EXIT})
    a, b = square(0, 0, Proximity(20)), square(5, 5)
    esper.process()
    esper.clear_database()
    square(0, 0, Proximity(20))
    square(5, 5)
    esper.process()
    assert views.events == [
        ("enter", a), ("enter", b), ("exit", a), ("exit", b), ("enter", a), ("enter", b),
    ]
    assert near.events == [("enter", (a, b)), ("exit", (a, b)), ("enter", (a, b))]


@pytest.mark.parametrize("make", ["spatial", "culling", "proximity"])
def test_copy_copy_of_a_processor_is_refused_deepcopy_and_pickle_are_independent(
    world: str, make: str
) -> None:
    """copy.copy would share internals: TypeError. deepcopy and pickle give independent
    processors."""
    spatial = SpatialProcessor()
    processor: Any = {
        "spatial": spatial,
        "culling": CullingProcessor(spatial, Box(0, 0, 100, 100)),
        "proximity": ProximityProcessor(spatial),
    }[make]
    esper.add_processor(spatial, priority=1)
    if processor is not spatial:
        esper.add_processor(processor)
    square(0, 0, Proximity(20))
    square(5, 5)
    esper.process()
    with pytest.raises(TypeError, match=r"copy\.copy.*deepcopy or pickle"):
        copy.copy(processor)
    here = esper.current_world
    for n, clone in enumerate((copy.deepcopy(processor), pickle.loads(pickle.dumps(processor)))):
        assert type(clone) is type(processor)
        assert clone is not processor
        # It runs: its binding is a fresh one, for the world it is run in.
        esper.switch_world(f"{here}-clone-{n}")
        try:
            clone.process()
        finally:
            esper.switch_world(here)
            esper.delete_world(f"{here}-clone-{n}")


def test_a_clone_takes_over_where_the_original_stopped(world: str) -> None:
    """A deep copy or an unpickled SpatialProcessor, put in the original's place, goes on
    from the same pairs: a pair that ends gives its exit once, a new one its enter."""
    def unpickled(processor: SpatialProcessor) -> SpatialProcessor:
        clone: SpatialProcessor = pickle.loads(pickle.dumps(processor))
        return clone

    for make_clone in (copy.deepcopy, unpickled):
        esper.clear_database()
        spatial = SpatialProcessor()
        esper.add_processor(spatial)
        a, b, c = square(0, 0), square(5, 5), square(50, 50)
        rec = Recorder(each=None)
        esper.process()
        assert rec.take() == [("enter", a, b)]
        clone = make_clone(spatial)
        esper.remove_processor(SpatialProcessor)
        esper.add_processor(clone)
        esper.component_for_entity(b, Position).x = 45.0  # the clone tracks the world's own
        esper.component_for_entity(b, Position).y = 45.0
        esper.process()
        assert rec.take() == [("exit", a, b), ("enter", b, c)]
        assert set(clone.pairs) == {(b, c)}
        esper.remove_processor(SpatialProcessor)


def test_pairs_is_a_read_only_live_view(world: str) -> None:
    """pairs hands out a read-only view that follows the processor."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    a, b = square(0, 0), square(5, 5)
    esper.process()
    pairs = spatial.pairs
    assert not hasattr(pairs, "add") and not hasattr(pairs, "discard")
    assert pairs == {(a, b)} and (a, b) in pairs
    esper.component_for_entity(b, Position).x = 50
    esper.process()
    assert pairs == set()


def test_pending_events_survive_pickle(world: str) -> None:
    """A processor pickled with events still owed delivers them after loading."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    a, b, c = square(0, 0), square(5, 5), square(6, 6)
    rec = Raising(fail_on=(a, b), each=None)
    with pytest.raises(Boom):
        esper.process()
    restored = pickle.loads(pickle.dumps(spatial))
    assert restored._outbox
    esper.remove_processor(SpatialProcessor)
    assert rec.take() == [("enter", a, b)]
    restored._outbox.deliver()
    assert rec.take() == [("enter", a, c), ("enter", b, c)]


OWED_LOG: list[tuple[str, int, int]] = []


def first_enter(a: int, b: int) -> None:
    """A module-level handler (so it pickles) that raises on its first call only."""
    OWED_LOG.append(("first", a, b))
    if sum(1 for who, _, _ in OWED_LOG if who == "first") == 1:
        raise Boom("first")


def second_enter(a: int, b: int) -> None:
    """Another, that raises on its first call only."""
    OWED_LOG.append(("second", a, b))
    if sum(1 for who, _, _ in OWED_LOG if who == "second") == 1:
        raise Boom("second")


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "pickle, then deepcopy"])
def test_an_event_owed_to_later_handlers_survives_a_save(world: str, how: str) -> None:
    """Two handlers of one event, the first to run raises: the event the other is still
    owed is saved with the processor and delivered to it after the load (its handlers set
    again), each handler getting each enter exactly once."""
    OWED_LOG.clear()
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    esper.set_handler(COLLISION_ENTER, first_enter)
    esper.set_handler(COLLISION_ENTER, second_enter)
    a, b, c = square(0, 0), square(5, 5), square(6, 6)
    with pytest.raises(Boom):
        esper.process()
    assert len(OWED_LOG) == 1  # one handler ran, and raised: the other is owed (a, b)
    saved = copy.deepcopy(spatial) if how == "deepcopy" else pickle.loads(pickle.dumps(spatial))
    if how == "pickle, then deepcopy":  # a loaded copy, copied before it delivered
        saved = copy.deepcopy(saved)
    esper.remove_processor(SpatialProcessor)
    esper.add_processor(saved)
    with pytest.raises(Boom):
        esper.process()  # the owed handler gets (a, b) first, and raises in turn
    esper.process()
    for who in ("first", "second"):
        assert sorted(pair for name, *pair in OWED_LOG if name == who) == [
            [a, b], [a, c], [b, c]
        ]


def test_a_processor_pickled_before_the_typed_handlers_loads(world: str) -> None:
    """A SpatialProcessor's state as ecs_spatial 0.2.0 pickled it (none of the attributes
    added since) loads, carries on from its pairs, and takes registrations."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    a, b = square(0, 0), square(5, 5)
    esper.process()
    state = dict(vars(spatial))  # 0.2.0 pickled its attributes as they are
    for added in ("_routes", "_any_kind", "_dispatch_swept", "_continuous", "_swept_from",
                  "_seen_continuous", "cast_log", "_table", "_table_moves", "_table_moved"):
        del state[added]
    old = pickle.loads(pickle.dumps(state))
    loaded = SpatialProcessor.__new__(SpatialProcessor)
    loaded.__setstate__(old)
    esper.remove_processor(SpatialProcessor)
    esper.add_processor(loaded)
    seen: list[tuple[int, int]] = []
    loaded.on_collision(None, None, exit=lambda x, y: seen.append((x, y)))
    esper.process()  # the new registration enters (a, b)
    esper.component_for_entity(b, Position).x = 500
    esper.process()
    assert seen == [(a, b)]
    assert loaded.pairs == set()


# -- one filter rule ---------------------------------------------------------------------------


def test_no_filter_is_the_default_filter_everywhere(world: str) -> None:
    """The issue's case: an entity with mask=0b10 does not collide with an unfiltered wall,
    and its category-1 queries and a Proximity mask treat the wall as category 1 alike."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=1)
    esper.add_processor(ProximityProcessor(spatial))
    wall = square(0, 0)
    ghost = square(5, 5, CollisionFilter(category=0b10, mask=0b10))
    watcher = square(2, 2, CollisionFilter(category=0b100), Proximity(50, mask=0b1))
    esper.process()
    assert (wall, ghost) not in spatial.pairs
    assert (wall, watcher) in spatial.pairs and (ghost, watcher) not in spatial.pairs
    assert spatial.query(Box(0, 0, 20, 20), mask=0b1) == [wall]
    assert spatial.query(Box(0, 0, 20, 20), mask=0b10) == [ghost]
    neighbours = esper.component_for_entity(watcher, Proximity).neighbors
    assert set(neighbours) == {wall}
    assert spatial.filters.get(wall) is None and spatial.filters[ghost] == (0b10, 0b10, 0)


# -- the deletion rule, written once -----------------------------------------------------------


def test_exist_is_entity_exists_of_each(world: str) -> None:
    """delivery.exist(*ids) holds exactly when esper.entity_exists holds for every id: an
    entity marked for deferred deletion, or never made, does not exist."""
    from ecs_spatial.delivery import exist

    alive, doomed = esper.create_entity(), esper.create_entity()
    esper.delete_entity(doomed)
    for ids in [(alive,), (doomed,), (99,), (alive, alive), (alive, doomed), (doomed, alive),
                (alive, 99), ()]:
        assert exist(*ids) == all(esper.entity_exists(e) for e in ids), ids


def test_every_copy_of_the_deletion_rule_is_labelled() -> None:
    """Outside ``delivery.exist``, a function of the package that tests an id against the
    world's deleted entities (``... in dead``) says in a comment that it copies it."""
    import ast
    from pathlib import Path

    import ecs_spatial

    unlabelled = []
    for path in sorted(Path(ecs_spatial.__file__).parent.glob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.FunctionDef) or (
                path.name == "delivery.py" and node.name == "exist"
            ):
                continue
            tests = [
                n.lineno for n in ast.walk(node)
                if isinstance(n, ast.Compare)
                and any(isinstance(op, (ast.In, ast.NotIn)) for op in n.ops)
                and any(isinstance(c, ast.Name) and c.id == "dead" for c in n.comparators)
            ]
            body = "\n".join(lines[node.lineno - 1 : node.end_lineno])
            if tests and "inlined copy of delivery.exist" not in body:
                unlabelled.append(f"{path.name}:{tests[0]} in {node.name}()")
    assert unlabelled == []


def test_a_batchs_world_stamp_is_never_saved_or_copied(world: str) -> None:
    """The stamp a SpatialProcessor posts its enters with belongs to this process's world:
    a pickle, a copy and a deep copy of the outbox hold the batch as it was saved before
    (name, role, keys, position), and what is queued reads the same."""
    from ecs_spatial._esper_tables import world_stamp

    ids = [esper.create_entity() for _ in range(3)]
    outbox = Outbox()
    outbox.post(COLLISION_ENTER, "enter", [(ids[0], ids[1]), (ids[1], ids[2])], world_stamp())
    outbox.post(COLLISION_EXIT, "exit", [(ids[0], ids[2])])
    plain = [[COLLISION_ENTER, "enter", [(ids[0], ids[1]), (ids[1], ids[2])], 0],
             [COLLISION_EXIT, "exit", [(ids[0], ids[2])], 0]]
    assert len(outbox._batches[0]) == 5
    for twin in (pickle.loads(pickle.dumps(outbox)), copy.copy(outbox), copy.deepcopy(outbox)):
        assert list(twin._batches) == plain
    assert [list(q) for q in outbox.queued()] == [p[:3] for p in plain]
