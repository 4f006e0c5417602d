"""SpatialProcessor through esper: membership, dirty-only updates, pairs and collision events,
filters, handlers that change the world, world contexts and bad input."""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import random
import time
from collections.abc import Iterator, Set
from typing import Any

import esper
import pytest
from _worlds import Event, Recorder

from ecs_spatial import pair_set
from ecs_spatial.components import AABB, CollisionFilter, Position
from ecs_spatial.events import COLLISION_ENTER, COLLISION_EXIT
from ecs_spatial.geometry import Box
from ecs_spatial.index import QuadTree
from ecs_spatial.spatial_processor import FrameTimings, SpatialProcessor

# Every test here runs on both ways of reading esper's membership (conftest.membership).
pytestmark = pytest.mark.usefixtures("membership")

_world_ids = itertools.count()




@contextlib.contextmanager
def other_world(name: str) -> Iterator[None]:
    """Switch to a second fresh world; on leaving, drop its handlers while it is current,
    switch back and delete it."""
    home = esper.current_world
    esper.switch_world(name)
    try:
        yield
    finally:
        esper.switch_world(name)
        esper.event_registry.clear()
        esper.switch_world(home)
        esper.delete_world(name)


def setup(**kwargs: Any) -> tuple[SpatialProcessor, Recorder]:
    spatial = SpatialProcessor(**kwargs)
    esper.add_processor(spatial)
    return spatial, Recorder()


Pair = tuple[int, int]


def square(x: float, y: float, size: float = 10.0, *extra: Any) -> int:
    return esper.create_entity(Position(x, y), AABB(size, size), *extra)


def pos(entity: int) -> Position:
    return esper.component_for_entity(entity, Position)


# -- first frame, order, basics -------------------------------------------------------------------


def test_first_frame_inserts_and_reports_enter_then_collision(world: str) -> None:
    """Overlapping entities give an enter, then a collision, on the first process()."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(5, 5)
    square(100, 100)
    esper.process()
    assert rec.take() == [("enter", a, b), ("collision", a, b)]
    assert set(spatial.pairs) == {(a, b)}
    assert spatial.index[a] == Box(0, 0, 10, 10)
    assert len(spatial.index) == 3


def test_touching_boxes_collide(world: str) -> None:
    """Boxes sharing an edge or a corner are a pair (closed boxes)."""
    spatial, _ = setup()
    a = square(0, 0)
    b = square(10, 10)
    esper.process()
    assert set(spatial.pairs) == {(a, b)}


def test_collision_repeats_every_frame_but_enter_does_not(world: str) -> None:
    """A lasting overlap gives one enter, and a collision each frame."""
    _, rec = setup()
    a = square(0, 0)
    b = square(5, 0)
    esper.process()
    rec.take()
    esper.process()
    esper.process()
    assert rec.take() == [("collision", a, b)] * 2


def test_exits_then_enters_then_collisions_each_sorted(world: str) -> None:
    """One frame with several changes dispatches all exits, all enters, all collisions,
    each kind in sorted order."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(5, 0)
    c = square(50, 0)
    d = square(55, 0)
    e = square(200, 0)
    esper.process()
    rec.take()
    pos(b).x = 100  # a-b exits
    pos(e).x = 45  # c-e and d-e enter
    pos(a).x = 52  # a-c, a-d, a-e enter
    esper.process()
    assert rec.take() == [
        ("exit", a, b),
        ("enter", a, c), ("enter", a, d), ("enter", a, e), ("enter", c, e), ("enter", d, e),
        ("collision", a, c), ("collision", a, d), ("collision", a, e), ("collision", c, d),
        ("collision", c, e), ("collision", d, e),
    ]
    assert set(spatial.pairs) == {(a, c), (a, d), (a, e), (c, d), (c, e), (d, e)}


def test_same_world_same_events_run_after_run(world: str) -> None:
    """Two runs of the same story dispatch the same sequence."""

    def story() -> list[Event]:
        _, rec = setup()
        ids = [square(i * 7 % 30, i * 11 % 30, 8) for i in range(12)]
        esper.process()
        for i, e in enumerate(ids):
            pos(e).x += (i % 3) - 1
        esper.process()
        return rec.take()

    first = story()
    esper.clear_database()
    esper.remove_processor(SpatialProcessor)
    assert story() == first


def test_process_accepts_esper_arguments(world: str) -> None:
    """esper.process(dt) passes dt on; the processor ignores it."""
    spatial, _ = setup()
    square(0, 0)
    esper.process(1 / 60)
    assert len(spatial.index) == 1


# -- moving by assignment -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "overlap"),
    [
        (lambda p, a: setattr(p, "x", 30), False),
        (lambda p, a: setattr(p, "y", 30), False),
        (lambda p, a: p.translate(30, 0), False),
        (lambda p, a: p.move_to(-3, -3), True),
        (lambda p, a: setattr(a, "width", 1), False),
        (lambda p, a: setattr(a, "height", 2), False),
        (lambda p, a: setattr(a, "offset_x", 30), False),
        (lambda p, a: setattr(a, "offset_y", -1), True),
    ],
)
def test_any_assignment_moves_the_entity(world: str, change: Any, overlap: bool) -> None:
    """Assigning any field of Position or AABB re-places the entity and updates pairs."""
    spatial, rec = setup()
    a = square(0, 0)
    b = esper.create_entity(Position(8, 10.5), AABB(10, 10))  # apart from a on y only
    esper.process()
    rec.take()
    change(pos(b), esper.component_for_entity(b, AABB))
    esper.process()
    p = pos(b)
    assert spatial.index[b] == esper.component_for_entity(b, AABB).box_at(p.x, p.y)
    assert spatial.moved == {b}
    assert rec.take() == ([("enter", a, b), ("collision", a, b)] if overlap else [])


def test_static_entities_are_not_touched(world: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame moves only the dirty entity and searches only its pairs."""
    spatial, _ = setup()
    ids = [square(i * 20, 0) for i in range(40)]
    esper.process()
    calls: list[tuple[str, Any]] = []
    real_move_records = QuadTree.move_records
    real_move_many = QuadTree.move_many
    real_for = QuadTree.find_intersections_for

    def move_records(self: QuadTree, records: Any) -> None:
        records = list(records)
        calls.append(("move", [rec[4] for rec in records]))
        real_move_records(self, records)

    def move_many(self: QuadTree, entities: Any, boxes: Any, atomic: bool = True) -> None:
        calls.append(("move", list(entities)))  # the compiled index's way in: buffers
        real_move_many(self, entities, boxes, atomic=atomic)

    def find_for(self: QuadTree, entities: Any) -> Any:
        calls.append(("for", set(entities)))
        return real_for(self, entities)

    def find_all(self: QuadTree) -> Any:
        raise AssertionError("full pair search for one moved entity")

    monkeypatch.setattr(QuadTree, "move_records", move_records)
    monkeypatch.setattr(QuadTree, "move_many", move_many)
    monkeypatch.setattr(QuadTree, "find_intersections_for", find_for)
    monkeypatch.setattr(QuadTree, "find_all_intersections", find_all)
    monkeypatch.setattr(QuadTree, "find_all_intersections_array", find_all)
    pos(ids[3]).x += 15
    esper.process()
    assert calls == [("move", [ids[3]]), ("for", {ids[3]})]
    assert set(spatial.pairs) == {(ids[3], ids[4])}
    calls.clear()
    esper.process()
    assert calls == []
    assert spatial.moved == set()


def test_quiet_frames_skip_the_membership_plans(
    world: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame after one that added or removed no component anywhere, with no filter
    edited and no array member, reads only the dirty boxes (the membership, filter and row
    plans would find nothing); a component added anywhere, or a filter edited in place,
    sends the next frame through them again, and each change is seen."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(30, 0, 10.0, CollisionFilter(category=1, mask=1))
    esper.process()
    planned: list[str] = []
    for name in ("_plan_members", "_plan_filters", "_plan_rows"):
        real = getattr(SpatialProcessor, name)

        def spy(self: SpatialProcessor, *args: Any, _name: str = name, _real: Any = real) -> Any:
            planned.append(_name)
            return _real(self, *args)

        monkeypatch.setattr(SpatialProcessor, name, spy)
    pos(b).x = 5
    esper.process()
    assert planned == []
    assert rec.take(("enter", "exit")) == [("enter", a, b)]
    esper.component_for_entity(b, CollisionFilter).mask = 2  # an edit in place: no new stamp
    esper.process()
    assert planned == ["_plan_members", "_plan_filters", "_plan_rows"]
    assert rec.take(("enter", "exit")) == [("exit", a, b)]
    planned.clear()
    esper.process()
    assert planned == []
    c = square(100, 100)  # a component added: a new stamp
    esper.process()
    assert planned == ["_plan_members", "_plan_filters", "_plan_rows"]
    assert c in spatial.moved


def test_assignment_without_change_moves_nothing(world: str) -> None:
    """Assigning the same value marks the entity but leaves moved empty."""
    spatial, _ = setup()
    a = square(0, 0)
    esper.process()
    pos(a).x = pos(a).x
    esper.process()
    assert spatial.moved == set()


def test_many_moving_uses_the_full_pair_search(
    world: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When most entities moved, the pairs come from one all-pairs walk."""
    spatial, rec = setup()
    ids = [square(i * 5, 0) for i in range(20)]
    esper.process()
    rec.take()

    def find_for(self: QuadTree, entities: Any) -> Any:
        raise AssertionError("incremental search with everything moving")

    monkeypatch.setattr(QuadTree, "find_intersections_for", find_for)
    for e in ids:
        pos(e).y += 1
    esper.process()
    assert spatial.moved == set(ids)
    assert len(spatial.pairs) == 37  # neighbours overlap, second neighbours touch
    assert rec.take(("enter", "exit")) == []


def test_incremental_search_after_full_walks_sees_their_pairs(world: str) -> None:
    """Pairs entered while only the full walk ran (which keeps no per-entity partners) still
    exit when the incremental search takes over and one of them moves away."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(100, 0)
    c = square(300, 0)
    esper.process()
    spatial.pair_search = "full"
    for x in (80.0, 95.0, 95.0):  # a walks onto b; the walk alone runs for three frames
        pos(a).x = x
        esper.process()
    assert rec.take(("enter", "exit")) == [("enter", a, b)]
    spatial.pair_search = "incremental"
    pos(b).x = 290.0  # b leaves a and lands on c
    esper.process()
    assert rec.take(("enter", "exit")) == [("exit", a, b), ("enter", b, c)]
    assert spatial.pairs == {(b, c)}


# -- membership -----------------------------------------------------------------------------------


@pytest.mark.parametrize("immediate", [False, True])
def test_deleted_entity_exits_and_leaves_the_index(world: str, immediate: bool) -> None:
    """Deferred or immediate deletion gives the exits at the next esper.process()."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(5, 5)
    esper.process()
    rec.take()
    esper.delete_entity(b, immediate=immediate)
    esper.process()
    assert rec.take() == [("exit", a, b)]
    assert b not in spatial.index
    assert spatial.removed == {b}
    assert set(spatial.pairs) == set()


@pytest.mark.parametrize("kind", [Position, AABB])
def test_losing_a_component_exits_and_regaining_enters(world: str, kind: type) -> None:
    """Removing Position or AABB removes the entity; adding it back inserts it."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(5, 5)
    esper.process()
    rec.take()
    comp: Any = esper.remove_component(b, kind)
    esper.process()
    assert rec.take() == [("exit", a, b)]
    assert b not in spatial.index and spatial.removed == {b}
    esper.add_component(b, comp)
    esper.process()
    assert rec.take() == [("enter", a, b), ("collision", a, b)]
    assert spatial.moved == {b}


def test_entity_gaining_its_second_component_is_inserted(world: str) -> None:
    """An entity with only a Position joins once it gets an AABB."""
    spatial, _ = setup()
    e = esper.create_entity(Position(1, 1))
    esper.process()
    assert e not in spatial.index
    esper.add_component(e, AABB(2, 2))
    esper.process()
    assert spatial.index[e] == Box(1, 1, 3, 3)


def test_replaced_component_is_tracked_and_the_old_one_is_not(world: str) -> None:
    """After add_component replaces a Position, the new one drives the entity."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(50, 50)
    esper.process()
    old = pos(b)
    esper.add_component(b, Position(5, 5))
    esper.process()
    assert rec.take() == [("enter", a, b), ("collision", a, b)]
    assert spatial.index[b] == Box(5, 5, 15, 15)
    old.x = 500  # no longer the entity's: nothing happens
    esper.process()
    assert spatial.index[b] == Box(5, 5, 15, 15)
    assert spatial.moved == set()
    rec.take()
    pos(b).x = 500
    esper.process()
    assert spatial.index[b] == Box(500, 5, 510, 15)
    assert rec.take() == [("exit", a, b)]


def test_replacing_with_an_equal_component_tracks_the_new_one(world: str) -> None:
    """A replacement equal in value is still the one that is tracked afterwards."""
    spatial, _ = setup()
    e = square(0, 0)
    esper.process()
    new = Position(0, 0)
    esper.add_component(e, new)
    esper.process()
    assert spatial.moved == set()
    new.y = 40
    esper.process()
    assert spatial.index[e] == Box(0, 40, 10, 50)


def test_component_shared_by_two_entities_moves_both(world: str) -> None:
    """Changing an AABB instance used by two entities re-places both."""
    spatial, _ = setup()
    shape = AABB(2, 2)
    a = esper.create_entity(Position(0, 0), shape)
    b = esper.create_entity(Position(10, 0), shape)
    esper.process()
    assert set(spatial.pairs) == set()
    shape.width = 12
    esper.process()
    assert spatial.moved == {a, b}
    assert set(spatial.pairs) == {(a, b)}
    assert spatial.index[b] == Box(10, 0, 22, 2)


def test_component_moved_to_another_entity(world: str) -> None:
    """A Position taken from one entity and given to another follows the new owner."""
    spatial, _ = setup()
    a = square(0, 0)
    b = esper.create_entity(AABB(1, 1))
    esper.process()
    p = esper.remove_component(a, Position)
    esper.add_component(b, p)
    esper.process()
    assert spatial.removed == {a} and spatial.moved == {b}
    p.x = 7
    esper.process()
    assert spatial.index[b] == Box(7, 0, 8, 1)


def test_deleting_twice_is_esper_business(world: str) -> None:
    """Errors for deleting an unknown entity or removing a missing component are esper's,
    and the processor carries on."""
    spatial, _ = setup()
    a = square(0, 0)
    esper.process()
    esper.delete_entity(a, immediate=True)
    with pytest.raises(KeyError):
        esper.delete_entity(a, immediate=True)
    b = esper.create_entity(Position(0, 0))
    with pytest.raises(KeyError):
        esper.remove_component(b, AABB)
    esper.process()
    assert len(spatial.index) == 0


# -- filters --------------------------------------------------------------------------------------


def test_filter_masks_and_groups_decide_pairs(world: str) -> None:
    """category/mask must match both ways, a shared non-zero group vetoes, and an entity
    without a filter collides with whatever accepts it."""
    spatial, _ = setup()
    a = square(0, 0, 10, CollisionFilter(category=0b01, mask=0b10))
    b = square(1, 1, 10, CollisionFilter(category=0b10, mask=0b01))
    c = square(2, 2, 10, CollisionFilter(category=0b10, mask=0b10))
    d = square(3, 3, 10, CollisionFilter(category=0b10, mask=0b11, group=5))
    e = square(4, 4, 10, CollisionFilter(category=0b10, mask=0b11, group=5))
    f = square(5, 5, 10)
    esper.process()
    assert set(spatial.pairs) == {
        (a, b), (a, d), (a, e), (b, f), (c, d), (c, e), (d, f), (e, f),
    }  # not (a, f) nor (c, f): their masks lack f's category 1


def test_filter_edited_in_place_takes_effect(world: str) -> None:
    """Assigning a filter field changes the pairs at the next process(), with events."""
    spatial, rec = setup()
    flt = CollisionFilter()
    a = square(0, 0, 10, flt)
    b = square(5, 5)
    esper.process()
    rec.take()
    flt.mask = 0
    esper.process()
    assert rec.take() == [("exit", a, b)]
    assert spatial.filters_changed == {a} and spatial.moved == set()
    flt.mask = 1
    esper.process()
    assert rec.take() == [("enter", a, b), ("collision", a, b)]


def test_filter_added_removed_and_replaced(world: str) -> None:
    """Adding, removing and replacing a CollisionFilter on a static entity all count."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(5, 5)
    esper.process()
    rec.take()
    esper.add_component(a, CollisionFilter(mask=0))
    esper.process()
    assert rec.take() == [("exit", a, b)]
    esper.add_component(a, CollisionFilter(mask=1))
    esper.process()
    assert rec.take() == [("enter", a, b), ("collision", a, b)]
    esper.add_component(a, CollisionFilter(category=0))
    esper.process()
    assert rec.take() == [("exit", a, b)]
    esper.remove_component(a, CollisionFilter)
    esper.process()
    assert rec.take() == [("enter", a, b), ("collision", a, b)]
    assert spatial.filters_changed == {a}


def test_old_filter_is_no_longer_tracked(world: str) -> None:
    """Editing a filter that was replaced changes nothing."""
    spatial, _ = setup()
    old = CollisionFilter()
    a = square(0, 0, 10, old)
    b = square(5, 5)
    esper.process()
    esper.add_component(a, CollisionFilter())
    esper.process()
    old.mask = 0
    esper.process()
    assert set(spatial.pairs) == {(a, b)}


def test_filter_on_entity_outside_the_index_applies_when_it_joins(world: str) -> None:
    """A filter set before the entity has a box is in effect once it has one."""
    spatial, _ = setup()
    a = esper.create_entity(Position(0, 0), CollisionFilter(mask=0))
    square(5, 5)
    esper.process()
    esper.add_component(a, AABB(10, 10))
    esper.process()
    assert set(spatial.pairs) == set()


# -- event kinds ----------------------------------------------------------------------------------


def test_disabled_kinds_are_not_dispatched(world: str) -> None:
    """events=(COLLISION_ENTER,) dispatches enters only."""
    _, rec = setup(events=(COLLISION_ENTER,))
    a = square(0, 0)
    b = square(5, 5)
    esper.process()
    pos(b).x = 100
    esper.process()
    assert rec.take() == [("enter", a, b)]


def test_no_event_kinds_still_keeps_pairs(world: str) -> None:
    """events=() dispatches nothing but pairs stay current."""
    spatial, rec = setup(events=())
    a = square(0, 0)
    b = square(5, 5)
    esper.process()
    assert rec.take() == []
    assert set(spatial.pairs) == {(a, b)}
    esper.component_for_entity(b, Position).x = 50
    esper.process()
    assert set(spatial.pairs) == set()
    esper.component_for_entity(b, Position).x = 9
    esper.process()
    assert set(spatial.pairs) == {(a, b)}


@pytest.fixture
def search_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the index's pair searches, in the order the processor calls them (the
    full search flat, ``find_all_intersections_array``, under the full search's name: it
    is the same search, taken so where no filter is in effect)."""
    calls: list[str] = []
    for name in ("find_all_intersections", "find_all_intersections_array",
                 "find_intersections_for"):
        original = getattr(QuadTree, name)
        said = name.removesuffix("_array")

        def counted(*args: object, _name: str = said, _f: Any = original) -> Any:
            calls.append(_name)
            return _f(*args)

        monkeypatch.setattr(QuadTree, name, counted)
    return calls


def test_no_event_kinds_runs_no_pair_search(world: str, search_calls: list[str]) -> None:
    """With events=() a frame searches no pairs unless pairs is read (it then costs nothing)."""
    spatial, _ = setup(events=())
    square(0, 0)
    square(5, 5)
    for _ in range(3):
        esper.process()
    assert search_calls == []
    assert len(spatial.pairs) == 1
    assert len(spatial.pairs) == 1
    assert search_calls == ["find_all_intersections"]  # once, then cached until the next process()


def test_unknown_event_kind_is_refused() -> None:
    """A misspelt event kind is a ValueError at construction."""
    with pytest.raises(ValueError, match="collision_entre"):
        SpatialProcessor(events=("collision_entre",))


def test_handler_added_later_receives_events(world: str) -> None:
    """Setting a handler after some frames starts its deliveries at the next frame."""
    setup()
    a = square(0, 0)
    b = square(5, 5)
    esper.process()
    late = Recorder()
    esper.process()
    assert late.take() == [("collision", a, b)]


# -- handlers that change the world ---------------------------------------------------------------


class Deleter:
    """On each enter, deletes the second entity (immediate or deferred) and spawns one."""

    def __init__(self, immediate: bool) -> None:
        self.immediate = immediate
        self.spawned: list[int] = []
        self.seen: list[Event] = []
        esper.set_handler(COLLISION_ENTER, self.enter)
        esper.set_handler(COLLISION_EXIT, self.exit)

    def enter(self, a: int, b: int) -> None:
        self.seen.append(("enter", a, b))
        if esper.entity_exists(b):
            esper.delete_entity(b, immediate=self.immediate)
            self.spawned.append(square(1000 + 20 * len(self.spawned), 0))
            esper.add_component(a, CollisionFilter())

    def exit(self, a: int, b: int) -> None:
        self.seen.append(("exit", a, b))


@pytest.mark.parametrize("immediate", [False, True])
def test_handler_deleting_entities_mid_dispatch(world: str, immediate: bool) -> None:
    """An entity deleted inside a handler (immediately or deferred) gets no further enter in
    that dispatch, and a pair whose enter was not delivered gets no exit; every delivered
    enter gets its exit at the next process(); entities spawned there join then."""
    spatial, _ = setup()
    deleter = Deleter(immediate)
    a = square(0, 0)
    b = square(5, 5)
    c = square(6, 6)
    esper.process()
    assert deleter.seen == [("enter", a, b), ("enter", a, c)]  # (b, c): b was deleted
    deleter.seen.clear()
    esper.process()
    assert deleter.seen == [("exit", a, b), ("exit", a, c)]
    assert set(spatial.index) == {a, *deleter.spawned}
    assert set(spatial.pairs) == set()
    spatial.index.check()


def test_handler_moving_an_entity_is_seen_next_frame(world: str) -> None:
    """A move inside a handler is applied at the next process()."""
    spatial, _ = setup()
    a = square(0, 0)
    b = square(5, 5)
    moves: list[int] = []

    def push_away(x: int, y: int) -> None:
        moves.append(y)
        pos(y).x += 100

    esper.set_handler(COLLISION_ENTER, push_away)
    esper.process()
    assert set(spatial.pairs) == {(a, b)}
    esper.process()
    assert set(spatial.pairs) == set()
    assert moves == [b]


def test_state_is_consistent_when_a_handler_raises(world: str) -> None:
    """An exception in a handler propagates; pairs and index already describe the frame."""
    spatial, _ = setup()
    a = square(0, 0)
    b = square(5, 5)

    def boom(x: int, y: int) -> None:
        raise RuntimeError("handler failed")

    esper.set_handler(COLLISION_ENTER, boom)
    with pytest.raises(RuntimeError, match="handler failed"):
        esper.process()
    assert set(spatial.pairs) == {(a, b)}
    esper.remove_handler(COLLISION_ENTER, boom)
    pos(b).x = 50
    esper.process()
    assert set(spatial.pairs) == set()


class SlowHandler:
    """An enter handler that takes ``seconds`` (and then raises, if told to)."""

    def __init__(self, seconds: float, fail: bool = False) -> None:
        self.seconds = seconds
        self.fail = fail
        esper.set_handler(COLLISION_ENTER, self.on_enter)

    def on_enter(self, a: int, b: int) -> None:
        time.sleep(self.seconds)
        if self.fail:
            raise RuntimeError("handler failed")


def test_timings_put_the_handlers_time_in_events(world: str) -> None:
    """``timings`` splits the last process() into phases; the handlers run inside the
    events phase, so their time shows there and nowhere else."""
    spatial, _ = setup()
    assert spatial.timings == (0.0, 0.0, 0.0, 0.0)
    handler = SlowHandler(0.05)
    square(0, 0)
    square(5, 5)
    esper.process()
    took = spatial.timings
    assert type(took) is FrameTimings  # made in C from a tuple, a FrameTimings all the same
    assert took.events >= handler.seconds
    assert 0.0 < took.read + took.update + took.pairs < handler.seconds
    assert min(took) >= 0.0 and took.total == pytest.approx(sum(took))


def test_timings_of_a_processor_without_events(world: str) -> None:
    """With ``events=()`` no pair search runs in process(): its phases are zero."""
    spatial = SpatialProcessor(events=())
    esper.add_processor(spatial)
    square(0, 0)
    esper.process()
    assert spatial.timings.pairs == spatial.timings.events == 0.0
    assert spatial.timings.update > 0.0


def test_timings_are_kept_when_a_handler_raises(world: str) -> None:
    """A handler's exception still leaves the frame's timings, its time included."""
    spatial, _ = setup()
    handler = SlowHandler(0.05, fail=True)
    square(0, 0)
    square(5, 5)
    with pytest.raises(RuntimeError, match="handler failed"):
        esper.process()
    assert spatial.timings.events >= handler.seconds


def test_lambda_handler_is_dropped_by_esper(world: str) -> None:
    """The documented trap: esper forgets a lambda handler at once."""
    setup()
    got: list[int] = []
    esper.set_handler(COLLISION_ENTER, lambda a, b: got.append(a))
    square(0, 0)
    square(5, 5)
    esper.process()
    assert got == []


# -- worlds ---------------------------------------------------------------------------------------


def test_two_worlds_never_see_each_other(world: str) -> None:
    """Each world's processor indexes its own entities only, with the same classes."""
    spatial_a, rec_a = setup()
    a1 = square(0, 0)
    a2 = square(5, 5)
    other = f"{world}_other"
    with other_world(other):
        spatial_b, rec_b = setup()
        b1 = square(0, 0)  # the same id as a1, in another world
        esper.process()
        assert set(spatial_b.index) == {b1} and rec_b.take() == []
        esper.switch_world(world)
        esper.process()
        assert set(spatial_a.index) == {a1, a2}
        assert rec_a.take() == [("enter", a1, a2), ("collision", a1, a2)]
        pos(a1).x = 100
        esper.switch_world(other)
        esper.process()
        assert spatial_b.moved == set()
        esper.switch_world(world)
        esper.process()
        assert spatial_a.moved == {a1}


def test_component_shared_across_worlds_moves_both(world: str) -> None:
    """One Position instance on an entity in each of two worlds moves both entities."""
    # Keep both recorders alive: a handler dying while another world is current makes
    # esper's clean-up callback look in the wrong world's registry.
    spatial_a, _rec_a = setup()
    shared = Position(0, 0)
    a = esper.create_entity(shared, AABB(1, 1))
    esper.process()
    with other_world(f"{world}_shared"):
        spatial_b, _rec_b = setup()
        b = esper.create_entity(shared, AABB(2, 2))
        esper.process()
        shared.x = 10
        esper.process()
        assert spatial_b.index[b] == Box(10, 0, 12, 2)
        esper.switch_world(world)
        esper.process()
        assert spatial_a.index[a] == Box(10, 0, 11, 1)


def test_component_moved_between_worlds(world: str) -> None:
    """A component handed from one world to another follows its new entity."""
    # Keep both recorders alive: a handler dying while another world is current makes
    # esper's clean-up callback look in the wrong world's registry.
    spatial_a, _rec_a = setup()
    p = Position(0, 0)
    a = esper.create_entity(p, AABB(1, 1))
    esper.process()
    esper.remove_component(a, Position)
    other = f"{world}_moved"
    with other_world(other):
        spatial_b, _rec_b = setup()
        b = esper.create_entity(p, AABB(1, 1))
        esper.process()
        esper.switch_world(world)
        esper.process()
        assert a not in spatial_a.index
        esper.switch_world(other)
        p.y = 9
        esper.process()
        assert spatial_b.index[b] == Box(0, 9, 1, 10)
        assert spatial_b.moved == {b}


def test_processor_refuses_another_world(world: str) -> None:
    """A processor that ran in one world raises if run in another."""
    spatial, _ = setup()
    esper.process()
    with other_world(f"{world}_wrong"), pytest.raises(RuntimeError, match="serves esper world"):
        spatial.process()


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("component", "field", "value", "error", "message"),
    [
        (Position, "x", math.nan, ValueError, r"Position\.x is NaN"),
        (Position, "y", math.inf, ValueError, r"Position\.y is infinite \(inf\)"),
        (AABB, "width", -1.0, ValueError, r"AABB\.width is negative \(-1\.0\)"),
        (AABB, "height", -1e-300, ValueError, r"AABB\.height is negative"),
        (AABB, "offset_x", -math.inf, ValueError, r"AABB\.offset_x is infinite"),
        (Position, "x", "3", TypeError, r"Position\.x must be a real number, got '3'"),
        (Position, "y", 10**400, ValueError, r"Position\.y is too large for a float"),
        pytest.param(  # too long for repr(): the message says its size instead
            Position, "x", 10**5000, ValueError, r"Position\.x is too large .*16610 bits",
            id="int-of-16610-bits",
        ),
    ],
)
def test_bad_value_raises_before_anything_changes(
    world: str, component: type, field: str, value: Any, error: type, message: str
) -> None:
    """A bad value raises from process() naming the entity, the component and the value;
    the index, the pairs and the other entities' pending changes are left as they were, and
    after the fix the next process() carries on with everything."""
    spatial, rec = setup()
    a = square(0, 0)
    b = square(5, 5)
    c = square(50, 50)
    esper.process()
    rec.take()
    esper.component_for_entity(c, AABB).width = 20
    pos(a).x = 30  # a valid change in the same frame
    d = square(31, 0)  # and a new entity
    setattr(esper.component_for_entity(b, component), field, value)
    boxes = {e: spatial.index[e] for e in spatial.index}
    with pytest.raises(error, match=rf"entity {b}: {message}"):
        esper.process()
    assert {e: spatial.index[e] for e in spatial.index} == boxes
    assert set(spatial.pairs) == {(a, b)}
    assert rec.take() == []
    with pytest.raises(error):
        esper.process()  # still pending, still refused
    setattr(esper.component_for_entity(b, component), field, 5.0)
    esper.process()
    assert spatial.index[a] == Box(30, 0, 40, 10)
    assert d in spatial.index
    assert spatial.index[b] == esper.component_for_entity(b, AABB).box_at(pos(b).x, pos(b).y)
    assert (a, d) in spatial.pairs
    spatial.index.check()


def test_box_overflowing_to_infinity_is_refused(world: str) -> None:
    """Finite values whose box overflows are refused with a message saying so."""
    spatial, _ = setup()
    e = esper.create_entity(Position(1.7e308, 0), AABB(1e308, 1))
    with pytest.raises(ValueError, match=rf"entity {e}: the box of .* overflows"):
        esper.process()
    assert len(spatial.index) == 0


def test_bad_value_on_a_new_entity_is_refused(world: str) -> None:
    """A new entity given a NaN position before its first frame is refused and nothing is
    inserted."""
    spatial, _ = setup()
    square(0, 0)
    e = esper.create_entity(Position(0, 0), AABB(1, 1))
    pos(e).x = math.nan
    with pytest.raises(ValueError, match=rf"entity {e}: Position\.x is NaN"):
        esper.process()
    assert len(spatial.index) == 0
    pos(e).x = 0
    esper.process()
    assert len(spatial.index) == 2


def test_bad_filter_value_is_refused(world: str) -> None:
    """A filter field that is not an int raises TypeError naming the entity."""
    spatial, _ = setup()
    flt = CollisionFilter()
    a = square(0, 0, 10, flt)
    b = square(5, 5)
    esper.process()
    flt.mask = 1.5  # type: ignore[assignment]
    with pytest.raises(TypeError, match=rf"entity {a}: CollisionFilter\.mask must be an int"):
        esper.process()
    assert set(spatial.pairs) == {(a, b)}
    flt.mask = 0
    esper.process()
    assert set(spatial.pairs) == set()


# -- queries --------------------------------------------------------------------------------------


def test_query_delegates_answer_from_the_index(world: str) -> None:
    """query, query_point, query_radius, nearest and raycast give the index's answers."""
    spatial, _ = setup()
    a = square(0, 0)
    b = square(20, 0)
    esper.process()
    assert sorted(spatial.query(Box(5, 5, 25, 6))) == [a, b]
    assert spatial.query_point(21, 1) == [b]
    assert sorted(spatial.query_radius(15, 5, 5)) == [a, b]
    assert spatial.nearest(19, 5, k=2) == [b, a]
    assert spatial.raycast(-5, 5, 50, 5) == spatial.index.raycast(-5, 5, 50, 5)
    assert [e for e, _ in spatial.raycast(-5, 5, 50, 5)] == [a, b]


def test_query_masks_answer_by_collision_category(world: str) -> None:
    """With ``mask``, each query answers only the entities whose category is in it, an
    entity without a filter counting as category 1; ``nearest`` looks past nearer entities
    of other categories. Categories are read as of the last process(), as boxes are."""
    spatial, _ = setup()
    plain = square(0, 0)  # no filter: category 1
    wall = square(12, 0, 10.0, CollisionFilter(category=0b10))
    enemy = square(24, 0, 10.0, CollisionFilter(category=0b100))
    both = square(36, 0, 10.0, CollisionFilter(category=0b110))
    esper.process()
    everything = Box(-5, 0, 50, 10)
    assert sorted(spatial.query(everything)) == [plain, wall, enemy, both]
    assert sorted(spatial.query(everything, mask=0b1)) == [plain]
    assert sorted(spatial.query(everything, mask=0b100)) == [enemy, both]
    assert sorted(spatial.query(everything, mask=0b110)) == [wall, enemy, both]
    assert spatial.query(everything, mask=0) == []
    assert spatial.query_point(40, 5, mask=0b10) == [both]
    assert spatial.query_point(40, 5, mask=0b1) == []
    assert sorted(spatial.query_radius(0, 5, 30, mask=0b100)) == [enemy]
    assert spatial.nearest(0, 5, k=1) == [plain]
    assert spatial.nearest(0, 5, k=2, mask=0b100) == [enemy, both]
    assert spatial.nearest(0, 5, k=5, mask=0b1000) == []
    assert spatial.nearest(0, 5, k=5, max_distance=12) == [plain, wall]
    assert spatial.nearest(0, 5, k=5, mask=0b100, max_distance=24) == [enemy]
    assert [e for e, _ in spatial.raycast(-5, 5, 60, 5, mask=0b10)] == [wall, both]
    # An edit counts from the next process(), with the boxes.
    esper.component_for_entity(wall, CollisionFilter).category = 0b1
    assert spatial.nearest(0, 5, k=1, mask=0b10) == [wall]
    esper.process()
    assert spatial.nearest(0, 5, k=1, mask=0b10) == [both]
    assert spatial.nearest(0, 5, k=2, mask=0b1) == [plain, wall]
    esper.remove_component(both, CollisionFilter)
    esper.process()
    assert spatial.query(everything, mask=0b110) == [enemy]
    assert sorted(spatial.query(everything, mask=0b1)) == [plain, wall, both]
    with pytest.raises(TypeError, match=r"mask must be an int, got 1\.0"):
        spatial.query(everything, mask=1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mask must be an int, got True"):
        spatial.nearest(0, 5, mask=True)


def test_bounds_and_tree_parameters_reach_the_index(world: str) -> None:
    """The constructor's bounds, threshold and max_depth configure the index."""
    spatial = SpatialProcessor(Box(0, 0, 100, 100), threshold=3, max_depth=2)
    assert spatial.index.bounds == Box(0, 0, 100, 100)
    assert (spatial.index.threshold, spatial.index.max_depth) == (3, 2)


def test_dropped_processor_releases_its_components(world: str) -> None:
    """Once a processor is removed and dropped, its components are untracked again, and a
    new processor tracks them the fast way."""
    spatial, _ = setup()
    p = Position(0, 0)
    e = esper.create_entity(p, AABB(1, 1), CollisionFilter())
    esper.process()
    assert p._owner is not None
    esper.remove_processor(SpatialProcessor)
    del spatial
    gc.collect()
    assert p._owner is None
    assert esper.component_for_entity(e, CollisionFilter)._owner is None
    fresh, _ = setup()
    esper.process()
    assert type(p._owner) is list
    p.x = 5
    esper.process()
    assert fresh.index[e] == Box(5, 0, 6, 1)


def row_of_squares(search_calls: list[str]) -> tuple[SpatialProcessor, Recorder, list[int]]:
    """40 squares in a row, after the first frame (everything new: a full search, which
    also measures the full search's cost), with the search log cleared."""
    spatial, rec = setup()
    squares = [square(i * 7.0, 0) for i in range(40)]
    esper.process()
    rec.take()
    search_calls.clear()
    return spatial, rec, squares


def test_auto_pair_search_rechecks_a_close_call(world: str, search_calls: list[str]) -> None:
    """With the two searches predicted close, "auto" runs the other one now and then, so a
    stale estimate cannot keep the slower search chosen for good; events stay exact."""
    spatial, _, squares = row_of_squares(search_calls)
    for frame in range(70):
        # Estimates pinned so that the incremental search is predicted a little cheaper.
        spatial._pair_set.choice.cost_incremental = 1.0
        spatial._pair_set.choice.cost_full = 1.0 / len(squares) * 1.5
        e = squares[frame % len(squares)]
        # A real move every frame (0 -> 3 for the first 40 frames, back to 0 after).
        esper.component_for_entity(e, Position).y = 3.0 if frame < len(squares) else 0.0
        esper.process()
    incremental = search_calls.count("find_intersections_for")
    assert incremental > search_calls.count("find_all_intersections") >= 2
    # And the pairs are what a fresh search says, whichever search ran last.
    assert set(spatial.pairs) == set(spatial.index.find_all_intersections())


def test_auto_pair_search_never_second_guesses_a_clear_choice(
    world: str, search_calls: list[str]
) -> None:
    """When one search is predicted far cheaper, the other never runs."""
    spatial, _, squares = row_of_squares(search_calls)
    for frame in range(70):
        spatial._pair_set.choice.cost_incremental = 1e-9
        spatial._pair_set.choice.cost_full = 1.0
        esper.component_for_entity(squares[frame % 40], Position).y = 3.0 if frame < 40 else 0.0
        esper.process()
    assert "find_all_intersections" not in search_calls


def test_auto_pair_search_tries_a_search_it_has_never_run(
    world: str, search_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search known only by its prior is tried on the next frame unless predicted four
    times dearer, and its first measurement replaces the prior outright (a prior off by 4x
    would otherwise keep the slower search chosen for a hundred frames)."""
    spatial, _, squares = row_of_squares(search_calls)
    ticks = iter(range(1000))
    monkeypatch.setattr(pair_set, "_clock", lambda: float(next(ticks)))  # 1 s per search
    for frame in range(8):
        if frame == 0:
            # One moved entity predicted 3x the cost of a full search: within 4x.
            spatial._pair_set.choice.cost_full = 1.0 / len(squares)
            spatial._pair_set.choice.cost_incremental = 3.0
        esper.component_for_entity(squares[frame], Position).y = 3.0
        esper.process()
        if frame == 0:
            # The fake clock made the search take 1 s for its one entity: the prior 3.0
            # is replaced by the sample (1.0), not moved a quarter of the way to it.
            assert spatial._pair_set.choice.cost_incremental == 1.0
            # Predicted dearer again: a clear choice now.
            spatial._pair_set.choice.cost_incremental = 3.0
        spatial._pair_set.choice.cost_full = 1.0 / len(squares)
    assert search_calls == ["find_intersections_for"] + ["find_all_intersections"] * 7


def test_auto_pair_search_never_tries_an_unrun_search_predicted_far_dearer(
    world: str, search_calls: list[str]
) -> None:
    """Predicted more than four times dearer, a search that has never run stays unrun."""
    spatial, _, squares = row_of_squares(search_calls)
    for frame in range(10):
        spatial._pair_set.choice.cost_full = 1.0 / len(squares)
        spatial._pair_set.choice.cost_incremental = 5.0
        esper.component_for_entity(squares[frame], Position).y = 3.0
        esper.process()
    assert search_calls == ["find_all_intersections"] * 10


def test_auto_pair_search_never_tries_an_unrun_incremental_search_on_most_of_the_index(
    world: str, search_calls: list[str]
) -> None:
    """With half the index or more touched, the per-entity search cannot win, however close
    its prior looks: it is not tried even once."""
    spatial, _, squares = row_of_squares(search_calls)
    for frame in range(10):
        # Half or more moves; the priors put the incremental search at 2 to 3x the full
        # walk: within the 4x that gets a never-run search tried.
        spatial._pair_set.choice.cost_full = 1.0
        spatial._pair_set.choice.cost_incremental = 4.0
        for e in squares[: 20 + frame]:
            esper.component_for_entity(e, Position).y = 3.0 + 3.0 * (frame % 2)
        esper.process()
    assert search_calls == ["find_all_intersections"] * 10


# -- contacts -----------------------------------------------------------------------------------


def _contacts_from(pairs: Set[Pair], entity: int) -> set[int]:
    return {b if a == entity else a for a, b in pairs if entity in (a, b)}


@pytest.mark.parametrize("search", ["auto", "full", "incremental"])
@pytest.mark.parametrize("events", [None, ()])
def test_contacts_are_the_other_side_of_each_pair(
    world: str, search: str, events: tuple[str, ...] | None
) -> None:
    """Over random frames (moves, deletions, new entities, filters), contacts(e) is the
    other side of each of e's pairs, whichever search runs and with or without events."""
    rng = random.Random(7)
    spatial = SpatialProcessor() if events is None else SpatialProcessor(events=events)
    spatial.pair_search = search
    esper.add_processor(spatial)
    alive = [square(rng.uniform(0, 100), rng.uniform(0, 100)) for _ in range(40)]
    for frame in range(30):
        for e in rng.sample(alive, 10 if frame % 3 else 35):
            pos(e).x = rng.uniform(0, 100)
        if frame % 5 == 4:
            gone = alive.pop(rng.randrange(len(alive)))
            esper.delete_entity(gone, immediate=True)
            alive.append(square(rng.uniform(0, 100), rng.uniform(0, 100)))
        if frame == 10:
            esper.add_component(alive[0], CollisionFilter(category=0b10, mask=0b10))
        esper.process()
        asked = alive if frame % 2 else alive[:3]  # sometimes only a few are asked
        for e in asked:
            contacts = spatial.contacts(e)
            assert isinstance(contacts, frozenset)
            assert contacts == _contacts_from(spatial.pairs, e), (frame, e)
    assert spatial.contacts(10**9) == frozenset()
