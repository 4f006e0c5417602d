"""A store made in the middle of a SpatialProcessor's frame, after the frame read its dirty
lists and before it finished with them, is seen by the next frame: never lost.

Python code runs there whenever the collector runs a finaliser or a ``gc.callbacks`` hook,
or another thread takes the GIL. Such a store reports its entity (a component's first store
after a read appends it to the processor's dirty list and disarms the component until it is
read again); a frame that cleared its whole list at the end dropped that report, and the
component, still disarmed, never reported again: the entity stayed where it was for good.
The frame now drops only the entries it read.

A component that *arrives* in a frame (on a created entity, added, or replacing another) is
read in that frame's first phase but tracked only in its second: a store made in between
did not report at all, so the index kept the box read while the component held another.
The frame now compares, once the component is tracked and armed, what it read with what the
component holds, and lists the entity for the next frame where they differ. Those cases
also store at the second phase's first ``track`` (inside ``_apply_members``), and the
unpickled processor's ``_track_again`` is entered the same way.

The window is entered deterministically here: the processor's ``_apply_members`` (where
the frame applies what it read) is wrapped, for one frame, to make the store first. Every
case runs with the members table (compiled components) and without it, and on both builds
(the suite's ``ECS_SPATIAL_PURE=1`` leg runs the reference components).
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import esper
import pytest
from _worlds import fresh_world

from ecs_spatial import AABB, CollisionFilter, Position, SpatialProcessor, _members
from ecs_spatial.saving import restore_world, save_world


@contextmanager
def stores_in_the_window(spatial: SpatialProcessor, store: Callable[[], None]) -> Iterator[None]:
    """During the block, each frame of ``spatial`` runs ``store`` after its read, before
    it applies what it read."""
    apply = spatial._apply_members

    def hooked(*args: Any) -> None:
        store()
        apply(*args)

    spatial._apply_members = hooked  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        del spatial._apply_members


@contextmanager
def stores_at_the_first_track(store: Callable[[], None]) -> Iterator[None]:
    """During the block, ``store`` runs once, as the second phase tracks its first
    component (after the read, before any arrival is tracked)."""
    names = vars(_members)
    track = names["track"]
    done: list[bool] = []

    def hooked(*args: Any) -> None:
        if not done:
            done.append(True)
            store()
        track(*args)

    names["track"] = hooked
    try:
        yield
    finally:
        names["track"] = track


WINDOWS = ["before the apply", "at the first track"]


@contextmanager
def in_the_window(
    spatial: SpatialProcessor, window: str, store: Callable[[], None]
) -> Iterator[None]:
    """``store`` made in the frame's window: just before it applies, or inside."""
    if window == WINDOWS[0]:
        with stores_in_the_window(spatial, store):
            yield
    else:
        with stores_at_the_first_track(store):
            yield


def box_of(spatial: SpatialProcessor, entity: int) -> tuple[float, ...]:
    return tuple(spatial.index[entity])


@pytest.fixture(params=["table", "no table"])
def spatial(request: pytest.FixtureRequest, world: str) -> SpatialProcessor:
    processor = SpatialProcessor()
    if request.param == "no table":
        processor._table = None
    esper.add_processor(processor)
    return processor


@pytest.mark.parametrize("value", [5.0, 5], ids=["float", "int"])
@pytest.mark.parametrize("moving", [False, True], ids=["static", "moving"])
def test_a_position_stored_mid_frame_is_moved_by_the_next_frame(
    spatial: SpatialProcessor, value: float, moving: bool
) -> None:
    """The store made in the window moves the entity at the next frame, and so does every
    store after it (before the fix: never again)."""
    entity = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    pos = esper.component_for_entity(entity, Position)
    if moving:
        pos.y = 1.0  # this frame reads and re-arms it: the window's store reports again
    with stores_in_the_window(spatial, lambda: setattr(pos, "x", value)):
        esper.process()
    esper.process()
    assert box_of(spatial, entity) == (5.0, pos.y, 6.0, pos.y + 1.0)
    for x in (10.0, 20.0, 30):
        pos.x = x
        esper.process()
        assert box_of(spatial, entity) == (x, pos.y, x + 1.0, pos.y + 1.0)


def test_an_aabb_stored_mid_frame_is_resized_by_the_next_frame(spatial: SpatialProcessor) -> None:
    entity = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    aabb = esper.component_for_entity(entity, AABB)
    with stores_in_the_window(spatial, lambda: setattr(aabb, "width", 4.0)):
        esper.process()
    esper.process()
    assert box_of(spatial, entity) == (0.0, 0.0, 4.0, 1.0)
    aabb.height = 3.0
    esper.process()
    assert box_of(spatial, entity) == (0.0, 0.0, 4.0, 3.0)


def test_a_filter_edited_mid_frame_takes_effect_at_the_next_frame(
    spatial: SpatialProcessor,
) -> None:
    """A CollisionFilter edited in the window (after its values were read) is read again
    at the next frame: the pair it forbids ends, and a later edit is seen too."""
    a = esper.create_entity(Position(0.0, 0.0), AABB(2.0, 2.0), CollisionFilter())
    b = esper.create_entity(Position(1.0, 1.0), AABB(2.0, 2.0), CollisionFilter())
    esper.process()
    assert spatial.pairs == {(a, b)}
    flt = esper.component_for_entity(a, CollisionFilter)
    flt.mask = 0x2  # read by the next frame, which re-arms it; then edited in its window
    with stores_in_the_window(spatial, lambda: setattr(flt, "mask", 0)):
        esper.process()
    esper.process()
    assert flt.mask == 0 and spatial.pairs == set()
    flt.mask = 0xFFFFFFFF
    esper.process()
    assert spatial.pairs == {(a, b)}


@pytest.mark.parametrize("seed", range(6))
def test_random_stores_mid_frame_leave_the_index_with_the_components(
    spatial: SpatialProcessor, seed: int
) -> None:
    """Random frames of assignments, some made in the window of a random frame: after the
    frame that follows, the index holds every entity at its components' box (the model)."""
    rng = random.Random(seed)
    entities = [
        esper.create_entity(Position(rng.uniform(0, 100), rng.uniform(0, 100)), AABB(3.0, 3.0))
        for _ in range(20)
    ]
    esper.process()

    def assign() -> None:
        for entity in rng.sample(entities, rng.randint(1, 5)):
            pos = esper.component_for_entity(entity, Position)
            value = rng.choice([rng.uniform(0, 100), rng.randint(0, 100)])
            setattr(pos, rng.choice("xy"), value)

    for _ in range(30):
        assign()
        if rng.random() < 0.5:
            with stores_in_the_window(spatial, assign):
                esper.process()
        else:
            esper.process()
    esper.process()
    for entity in entities:
        pos = esper.component_for_entity(entity, Position)
        x, y = float(pos.x), float(pos.y)
        assert box_of(spatial, entity) == (x, y, x + 3.0, y + 3.0)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("value", [5.0, 5], ids=["float", "int"])
def test_a_created_entity_stored_mid_frame_is_moved_by_the_next_frame(
    spatial: SpatialProcessor, window: str, value: float
) -> None:
    """An entity created this frame, its Position stored after the frame read it: the
    next frame moves it, and later stores too (before: it stayed at the box read)."""
    pos = Position(0.0, 0.0)
    entity = esper.create_entity(pos, AABB(1.0, 1.0))
    with in_the_window(spatial, window, lambda: setattr(pos, "x", value)):
        esper.process()
    esper.process()
    assert box_of(spatial, entity) == (5.0, 0.0, 6.0, 1.0)
    pos.y = 2.0
    esper.process()
    assert box_of(spatial, entity) == (5.0, 2.0, 6.0, 3.0)


@pytest.mark.parametrize("window", WINDOWS)
def test_a_replaced_aabb_stored_mid_frame_is_resized_by_the_next_frame(
    spatial: SpatialProcessor, window: str
) -> None:
    entity = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    aabb = AABB(2.0, 2.0)
    esper.add_component(entity, aabb)
    with in_the_window(spatial, window, lambda: setattr(aabb, "width", 4.0)):
        esper.process()
    esper.process()
    assert box_of(spatial, entity) == (0.0, 0.0, 4.0, 2.0)
    aabb.height = 3.0
    esper.process()
    assert box_of(spatial, entity) == (0.0, 0.0, 4.0, 3.0)


@pytest.mark.parametrize("window", WINDOWS)
def test_a_bad_value_stored_in_an_arrival_mid_frame_raises_at_the_next_frame(
    spatial: SpatialProcessor, window: str
) -> None:
    """The store in the window is read by the next frame like any other: a NaN raises
    there, naming the entity, and once fixed the entity moves."""
    pos = Position(0.0, 0.0)
    entity = esper.create_entity(pos, AABB(1.0, 1.0))
    with in_the_window(spatial, window, lambda: setattr(pos, "x", float("nan"))):
        esper.process()
    with pytest.raises(ValueError, match=f"entity {entity}"):
        esper.process()
    pos.x = 7.0
    esper.process()
    assert box_of(spatial, entity) == (7.0, 0.0, 8.0, 1.0)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("how", ["added", "replaced"])
def test_an_arriving_filter_edited_mid_frame_takes_effect_at_the_next_frame(
    spatial: SpatialProcessor, window: str, how: str
) -> None:
    a = esper.create_entity(Position(0.0, 0.0), AABB(2.0, 2.0))
    b = esper.create_entity(Position(1.0, 1.0), AABB(2.0, 2.0), CollisionFilter())
    if how == "replaced":
        esper.add_component(a, CollisionFilter(mask=0x1))
    esper.process()
    assert spatial.pairs == {(a, b)}
    flt = CollisionFilter()
    esper.add_component(a, flt)
    with in_the_window(spatial, window, lambda: setattr(flt, "mask", 0)):
        esper.process()
    esper.process()
    assert flt.mask == 0 and spatial.pairs == set()
    flt.mask = 0xFFFFFFFF
    esper.process()
    assert spatial.pairs == {(a, b)}


@pytest.mark.parametrize("window", WINDOWS)
def test_a_shared_position_stored_mid_frame_moves_both_entities(
    spatial: SpatialProcessor, window: str
) -> None:
    """A Position on a member, given to a new entity too: a store in the window moves both
    (the member's own report was kept; the newcomer's place did not exist yet)."""
    pos = Position(0.0, 0.0)
    a = esper.create_entity(pos, AABB(1.0, 1.0))
    esper.process()
    b = esper.create_entity(pos, AABB(2.0, 2.0))
    with in_the_window(spatial, window, lambda: setattr(pos, "x", 5.0)):
        esper.process()
    esper.process()
    assert box_of(spatial, a) == (5.0, 0.0, 6.0, 1.0)
    assert box_of(spatial, b) == (5.0, 0.0, 7.0, 2.0)
    pos.y = 1.0
    esper.process()
    assert box_of(spatial, a) == (5.0, 1.0, 6.0, 2.0)
    assert box_of(spatial, b) == (5.0, 1.0, 7.0, 3.0)


@pytest.mark.parametrize("window", WINDOWS)
def test_an_arrival_stored_mid_frame_is_listed_once_and_a_quiet_one_not(
    spatial: SpatialProcessor, window: str
) -> None:
    pos = Position(0.0, 0.0)
    entity = esper.create_entity(pos, AABB(1.0, 1.0))
    quiet = esper.create_entity(Position(9.0, 9.0), AABB(1.0, 1.0))
    with in_the_window(spatial, window, lambda: setattr(pos, "x", 5.0)):
        esper.process()
    assert spatial._dirty == [entity]
    assert box_of(spatial, quiet) == (9.0, 9.0, 10.0, 10.0)
    esper.process()
    assert spatial._dirty == []


def test_an_arrival_stored_once_armed_lists_itself_once(spatial: SpatialProcessor) -> None:
    """A store after the arrival is armed, before the frame compares it, reports itself;
    the comparison, seeing the change, does not list it a second time."""
    pos = Position(0.0, 0.0)
    aabb = AABB(1.0, 1.0)
    entity = esper.create_entity(pos, aabb)
    names = vars(_members)
    rearm = names["rearm"]

    def hooked(component: Any, *args: Any) -> None:
        rearm(component, *args)
        if component is aabb:
            pos.x = 5.0

    names["rearm"] = hooked
    try:
        esper.process()
    finally:
        names["rearm"] = rearm
    assert spatial._dirty == [entity]
    esper.process()
    assert box_of(spatial, entity) == (5.0, 0.0, 6.0, 1.0)


@pytest.mark.parametrize("what", ["position", "filter"])
def test_a_store_before_an_unpickled_processor_tracks_is_seen(world: str, what: str) -> None:
    """A processor unpickled (or deep-copied) tracks its components again
    (``_track_again``): a store made on one before that, untracked then, is listed for
    its next frame like a store made after."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    a = esper.create_entity(Position(0.0, 0.0), AABB(2.0, 2.0), CollisionFilter())
    b = esper.create_entity(Position(1.0, 1.0), AABB(2.0, 2.0))
    esper.process()
    assert spatial.pairs == {(a, b)}
    saved = pickle.dumps(save_world())
    with fresh_world("restored"):
        restore_world(pickle.loads(saved))
        copy = esper.get_processor(SpatialProcessor)
        assert isinstance(copy, SpatialProcessor) and copy is not spatial
        # as unpickled, before it tracks: nothing tracked (its __setstate__ tracks at once)
        _members.release(
            copy._members, copy._dirty, copy._filters, copy._filter_dirty, copy._table
        )
        pos, flt = copy._members[a][0], copy._filters[a]
        names = vars(_members)
        track = names["track"]
        done: list[bool] = []

        def hooked(*args: Any) -> None:
            if not done:
                done.append(True)
                if what == "position":
                    pos.x = 2.0
                else:
                    flt.mask = 0
            track(*args)

        names["track"] = hooked
        try:
            copy._track_again()
        finally:
            names["track"] = track
        assert copy._dirty == ([a] if what == "position" else [])
        assert copy._filter_dirty == ([a] if what == "filter" else [])
        esper.process()
        assert copy.pairs == (set() if what == "filter" else {(a, b)})
        assert tuple(copy.index[a]) == ((2.0, 0.0, 4.0, 2.0) if what == "position" else
                                        (0.0, 0.0, 2.0, 2.0))


@pytest.mark.parametrize("table", ["table", "no table"])
@pytest.mark.parametrize("what", ["position", "aabb", "pending"])
def test_a_store_before_an_unpickled_processor_tracks_its_made_components_is_seen(
    world: str, monkeypatch: pytest.MonkeyPatch, table: str, what: str
) -> None:
    """A loaded processor's components made from float columns (``_columns.unpack``) are
    born tracked: a store made on one as the processor is unpickled, before it tracks its
    other components (``_track_made``), lists its entity for the next frame, and a
    member already listed when saved stays listed once (before: made untracked and tracked
    only there, with no comparison after, so such a store went unseen for good)."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    a = esper.create_entity(Position(0.0, 0.0), AABB(2.0, 2.0))
    b = esper.create_entity(Position(1.0, 1.0), AABB(2.0, 2.0))
    esper.process()
    if what == "pending":
        esper.component_for_entity(a, Position).y = 1.0  # listed when saved
    saved = pickle.dumps(save_world())
    with_table = table == "table" and _members._MembersTable is not None  # none: reference
    if table == "no table":
        monkeypatch.setattr(_members, "_MembersTable", None)
    track_made = SpatialProcessor._track_made
    stored: list[int] = []

    def hooked(self: SpatialProcessor, ids: list[int], *columns: Any) -> None:
        pos, aabb = self._members[a][:2]
        if what == "aabb":
            aabb.width = 3.0
        else:
            pos.x = 2.0
        stored.append(a)
        track_made(self, ids, *columns)

    monkeypatch.setattr(SpatialProcessor, "_track_made", hooked)
    with fresh_world("restored"):
        restore_world(pickle.loads(saved))
        monkeypatch.setattr(SpatialProcessor, "_track_made", track_made)
        copy = esper.get_processor(SpatialProcessor)
        assert isinstance(copy, SpatialProcessor) and copy is not spatial and stored == [a]
        assert (copy._table is not None) == with_table
        assert copy._dirty == [a]
        esper.process()
        expected = {
            "position": (2.0, 0.0, 4.0, 2.0),
            "aabb": (0.0, 0.0, 3.0, 2.0),
            "pending": (2.0, 1.0, 4.0, 3.0),
        }[what]
        assert box_of(copy, a) == expected and box_of(copy, b) == (1.0, 1.0, 3.0, 3.0)
        assert copy._dirty == []
        # and tracked for good: the next stores move it too
        esper.component_for_entity(a, Position).x = 10.0
        esper.component_for_entity(b, AABB).height = 5.0
        esper.process()
        assert box_of(copy, a)[0] == 10.0 and box_of(copy, b) == (1.0, 1.0, 3.0, 6.0)


def test_a_filter_edited_while_its_values_are_checked_is_read(
    spatial: SpatialProcessor,
) -> None:
    """An edit made while the frame checks a filter's values (inside ``check_fields``) is
    never put in effect unchecked: the filter, re-armed before it is read, lists itself,
    and the frame's read, which goes on to the list's end, refuses the value (before: the
    field read again after the check went in effect unchecked)."""
    a = esper.create_entity(Position(0.0, 0.0), AABB(2.0, 2.0), CollisionFilter())
    esper.create_entity(Position(1.0, 1.0), AABB(2.0, 2.0))
    esper.process()
    flt = esper.component_for_entity(a, CollisionFilter)
    flt.mask = 0x2
    names = vars(_members)
    check = names["check_fields"]
    done: list[bool] = []

    def hooked(*args: Any, **fields: Any) -> None:
        if not done:
            done.append(True)
            flt.mask = "wrong"  # type: ignore[assignment]
        check(*args, **fields)

    names["check_fields"] = hooked
    try:
        with pytest.raises(TypeError, match=f"entity {a}: .*mask must be an int"):
            esper.process()
    finally:
        names["check_fields"] = check
    flt.mask = 0
    esper.process()
    assert spatial._filter_values[a][1] == 0 and spatial.pairs == set()


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("seed", range(4))
def test_random_arrivals_stored_mid_frame_leave_the_index_with_the_components(
    spatial: SpatialProcessor, window: str, seed: int
) -> None:
    """Random frames that create entities, replace AABBs and share Positions, with stores
    made in a random frame's window on components old and new: after the frame that
    follows, the index holds every entity at its components' box (the model)."""
    rng = random.Random(seed)
    entities: list[int] = []

    def arrive() -> None:
        for _ in range(rng.randint(1, 4)):
            if entities and rng.random() < 0.3:
                esper.add_component(rng.choice(entities), AABB(rng.uniform(1, 5), 2.0))
            elif entities and rng.random() < 0.3:
                pos = esper.component_for_entity(rng.choice(entities), Position)
                entities.append(esper.create_entity(pos, AABB(1.0, 1.0)))
            else:
                entities.append(esper.create_entity(
                    Position(rng.uniform(0, 100), rng.uniform(0, 100)), AABB(3.0, 3.0)
                ))

    def store() -> None:
        for entity in rng.sample(entities, min(len(entities), rng.randint(1, 5))):
            if rng.random() < 0.5:
                pos = esper.component_for_entity(entity, Position)
                setattr(pos, rng.choice("xy"), rng.choice([rng.uniform(0, 100), 7]))
            else:
                esper.component_for_entity(entity, AABB).width = rng.uniform(1, 5)

    for _ in range(20):
        arrive()
        if rng.random() < 0.6:
            with in_the_window(spatial, window, store):
                esper.process()
        else:
            store()
            esper.process()
    esper.process()
    for entity in entities:
        pos = esper.component_for_entity(entity, Position)
        aabb = esper.component_for_entity(entity, AABB)
        x, y = float(pos.x), float(pos.y)
        assert box_of(spatial, entity) == (x, y, x + aabb.width, y + aabb.height)


@pytest.mark.parametrize("field", ["x", "y"])
def test_a_store_made_by_python_run_inside_the_read_is_read(
    spatial: SpatialProcessor, field: str
) -> None:
    """Python code run while the frame reads a member's box (here a value's ``__add__``, as
    a finaliser could at an allocation there) stores into a field the read has taken: the
    read re-armed the components before reading, so the store lists the entity again and
    the index ends at the stored value (before: the store landed on a disarmed component
    and the entity stayed where it was for good)."""
    entity = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    pos = esper.component_for_entity(entity, Position)
    stored: list[float] = []

    class Sneaky(float):
        def __add__(self, other: Any) -> float:
            if not stored:
                stored.append(7.0)
                setattr(pos, field, 7.0)  # "x" is read before "y"'s __add__ runs
            return float(self) + float(other)

    setattr(pos, "y" if field == "x" else "x", Sneaky(2.0))
    esper.process()
    esper.process()
    x, y = float(pos.x), float(pos.y)
    assert stored and getattr(pos, field) == 7.0
    assert box_of(spatial, entity) == (x, y, x + 1.0, y + 1.0)
