"""The SpatialProcessor's members table (``_cmembers.MembersTable``, "The members table" in
``_cmembers.c``): the fast path of the members whose compiled components are tracked at one
place. It must change nothing but speed, so a processor with it is driven side by side with
one without it (``_table = None``: every member on the dirty list's path, the compiled read
loop that tests/test_cmembers.py holds to the reference), through random frames of moves,
resizes, odd values, components removed, replaced, shared and re-initialised, entities
deleted, worlds cleared and processors pickled: the same events, ``moved``, ``removed``,
pairs, index and errors, frame by frame. Then the cases that could leave a slot pointing at
the wrong component, or a move lost, duplicated or out of step, one by one.
"""

from __future__ import annotations

import gc
import os
import pickle
import random
from collections.abc import Iterator
from typing import Any

import esper
import pytest
from _worlds import fresh_world

from ecs_spatial import AABB, COLLISION_ENTER, COLLISION_EXIT, Position, SpatialProcessor, _members
from ecs_spatial.components import PyPosition

pytestmark = pytest.mark.skipif(
    _members._MembersTable is None,
    reason="no members table (a pure-Python build, ECS_SPATIAL_PURE=1, or "
    "ECS_SPATIAL_MEMBERS_TABLE=0)",
)


class Side:
    """One world of the pair: its processor (with or without the table), its entities in
    creation order, and what its handlers saw."""

    def __init__(
        self, name: str, table: bool, events: tuple[str, ...] | None,
        wrap: tuple[float, float, float, float] | None = None,
    ) -> None:
        self.name = name
        esper.switch_world(name)
        self.spatial = (
            SpatialProcessor(wrap=wrap) if events is None
            else SpatialProcessor(events=events, wrap=wrap)
        )
        if not table:
            self.spatial._table = None
        esper.add_processor(self.spatial)
        self.entities: list[int] = []
        self.shared: list[Any] = []
        self.seen: list[tuple[str, int, int]] = []
        SEEN[name] = self.seen
        esper.set_handler(COLLISION_ENTER, on_enter)
        esper.set_handler(COLLISION_EXIT, on_exit)


#: What each world's handlers saw (module-level handlers: esper holds them weakly).
SEEN: dict[str, list[tuple[str, int, int]]] = {}


def on_enter(a: int, b: int) -> None:
    SEEN[esper.current_world].append(("enter", a, b))


def on_exit(a: int, b: int) -> None:
    SEEN[esper.current_world].append(("exit", a, b))


@pytest.fixture
def sides() -> Iterator[tuple[str, str]]:
    with fresh_world("table") as with_table, fresh_world("plain") as without:
        yield with_table, without


def apply(side: Side, op: tuple[Any, ...]) -> None:
    """Do ``op`` in ``side``'s world (both sides get the same ops)."""
    esper.switch_world(side.name)
    kind, *args = op
    if kind in ("readd", "reinit", "pure") and not abs(args[1]) < 1e300:
        args = [args[0], 1.0]  # construction refuses it at once
    alive = [e for e in side.entities if esper.entity_exists(e)]
    if kind == "make":
        x, y, w, h, share = args
        if share is not None and side.shared:
            aabb = side.shared[share % len(side.shared)]
        else:
            aabb = AABB(w, h)
            if share is not None:
                side.shared.append(aabb)
        side.entities.append(esper.create_entity(Position(x, y), aabb))
        return
    if kind == "clear":
        esper.clear_database()
        side.entities.clear()
        side.shared.clear()
        return
    if kind == "repickle":
        spatial = side.spatial
        state = pickle.loads(pickle.dumps(spatial.__getstate__()))
        copy = SpatialProcessor.__new__(SpatialProcessor)
        copy.__setstate__(state)
        if spatial._table is None and copy._table is not None:
            copy._table.clear()
            copy._table = None
        return  # the copy is dropped: what it tracked must go back as it was
    if not alive:
        return
    e = alive[args[0] % len(alive)]
    pos = esper.try_component(e, Position)
    aabb = esper.try_component(e, AABB)
    value = args[1]
    if kind == "x" and pos is not None:
        pos.x = value
    elif kind == "y" and pos is not None:
        pos.y += value
    elif kind == "translate" and pos is not None:
        pos.translate(value, 0.5)
    elif kind == "move_to" and pos is not None:
        pos.move_to(value, value)
    elif kind == "raw" and pos is not None:
        pos._x = value  # behind the property's back: seen at the entity's next change
    elif kind == "width" and aabb is not None:
        aabb.width = value
    elif kind == "reinit" and pos is not None:
        pos.__init__(value, 1.0)  # type: ignore[misc]
    elif kind == "remove" and pos is not None:
        esper.remove_component(e, Position)
        pos.x = value  # assigned after it left its entity
    elif kind == "readd":
        esper.add_component(e, Position(value, value))
    elif kind == "share" and side.shared:
        esper.add_component(e, side.shared[0])
    elif kind == "delete":
        esper.delete_entity(e, immediate=value > 0)
        if pos is not None:
            pos.x = value  # the deleted entity's old component, assigned
    elif kind == "pure" and pos is not None:
        esper.add_component(e, PyPosition(value, 0.0), type_alias=Position)


VALUES = [0.0, 1.5, -3.25, 40.0, 7, float("nan"), 1e301, -0.0, 12.5, 60.0, 250.0]
KINDS = ["x", "y", "translate", "move_to", "raw", "width", "reinit", "remove", "readd",
         "share", "delete", "pure"]


def random_ops(rng: random.Random) -> list[tuple[Any, ...]]:
    ops: list[tuple[Any, ...]] = []
    for _ in range(rng.randrange(0, 10)):
        roll = rng.random()
        if roll < 0.15:
            ops.append(("make", rng.uniform(0, 100), rng.uniform(0, 100), rng.uniform(0, 20),
                        rng.uniform(0, 20), rng.choice([None, None, None, 0, 1])))
        elif roll < 0.17:
            ops.append(("clear",))
        elif roll < 0.2:
            ops.append(("repickle",))
        elif roll < 0.6:
            ops.append(("x", rng.randrange(1000), rng.uniform(-10, 110)))
        else:
            kind = rng.choice(KINDS)
            value = rng.choice(VALUES)
            if kind == "width" and isinstance(value, float) and value == value:
                value = abs(value)
            ops.append((kind, rng.randrange(1000), value))
    return ops


def frame(side: Side) -> dict[str, Any]:
    esper.switch_world(side.name)
    side.seen = SEEN[side.name] = []
    error = None
    wrap = side.spatial.wrap
    try:
        esper.process()
    except (ValueError, TypeError) as exc:
        error = (type(exc).__name__, str(exc))
        for kind, names in ((Position, ("x", "y")), (AABB, ("width", "offset_x"))):
            for _, component in esper.get_component(kind):
                for name in names:
                    value = getattr(component, name)
                    if not abs(value) < 1e300:
                        setattr(component, name, 0.0)
        if wrap is not None:  # a box over half the period: made narrower
            for _, aabb in esper.get_component(AABB):
                if not aabb.width <= wrap.width / 2:
                    aabb.width = 1.0
    spatial = side.spatial
    index = spatial.index
    return {
        "error": error,
        "seen": side.seen,
        "moved": sorted(spatial.moved),
        "removed": sorted(spatial.removed),
        "pairs": sorted(spatial.pairs),
        "index": sorted((e, tuple(index[e])) for e in index),
    }


#: The torus of the differential test: widths of 40 and 60 (VALUES) straddle its half.
TORUS = (-20.0, -20.0, 100.0, 100.0)


@pytest.mark.parametrize("wrap", [None, TORUS], ids=["plain", "torus"])
@pytest.mark.parametrize("seed", range(int(os.environ.get("MEMBERS_TABLE_SEEDS", "12"))))
def test_a_processor_with_the_table_does_what_one_without_does(
    sides: tuple[str, str], seed: int, wrap: tuple[float, float, float, float] | None
) -> None:
    """On a plain world and on a torus (where a box over half the period is refused, from
    the table's members as from the others, naming the same entity)."""
    rng = random.Random(seed)
    events = rng.choice([None, None, ()])
    fast, plain = Side(sides[0], True, events, wrap), Side(sides[1], False, events, wrap)
    assert fast.spatial._table is not None and plain.spatial._table is None
    bound = 0
    for n in range(40):
        ops = random_ops(rng)
        for side in (fast, plain):
            for op in ops:
                apply(side, op)
        ours, theirs = frame(fast), frame(plain)
        assert ours == theirs, f"seed {seed}, frame {n}, ops {ops}"
        table = fast.spatial._table
        bound += len(table) if table is not None else 0
    assert bound > 0  # the table was in use


@pytest.fixture
def spatial(world: str) -> SpatialProcessor:
    processor = SpatialProcessor()
    esper.add_processor(processor)
    return processor


def box_of(spatial: SpatialProcessor, entity: int) -> tuple[float, ...]:
    return tuple(spatial.index[entity])


def test_a_plain_member_is_in_the_table_and_its_moves_are_seen(spatial: SpatialProcessor) -> None:
    e = esper.create_entity(Position(1.0, 2.0), AABB(3.0, 4.0))
    esper.process()
    table = spatial._table
    assert table.bound(e) and len(table) == 1
    pos = esper.component_for_entity(e, Position)
    pos.x = 10.0
    pos.x = 11.0  # stored twice, one move
    pos.y = 5.0
    assert e not in spatial._dirty and table.pending() == [e]
    esper.process()
    assert box_of(spatial, e) == (11.0, 5.0, 14.0, 9.0)
    assert spatial.moved == {e}
    esper.process()
    assert spatial.moved == set()  # nothing stored: nothing read
    pos.x = 11.0  # stored, the same box: no move
    esper.process()
    assert spatial.moved == set()


def test_moves_come_in_the_order_of_the_first_store(spatial: SpatialProcessor) -> None:
    es = [esper.create_entity(Position(float(i), 0.0), AABB(1.0, 1.0)) for i in range(5)]
    esper.process()
    for e in (es[3], es[0], es[4], es[3]):
        esper.component_for_entity(e, Position).x += 100.0
    assert spatial._table.pending() == [es[3], es[0], es[4]]
    esper.process()
    assert spatial.moved == {es[0], es[3], es[4]}
    ids = list(memoryview(spatial._table_moves[0]).cast("q"))
    assert ids == [es[3], es[0], es[4]]  # each once, in that order


def test_an_events_free_processor_sees_the_tables_moves_in_its_pairs(world: str) -> None:
    spatial = SpatialProcessor(events=())
    esper.add_processor(spatial)
    a = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    b = esper.create_entity(Position(5.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    assert spatial.pairs == set() and spatial._table.bound(a)
    esper.component_for_entity(a, Position).x = 4.5
    esper.process()
    assert set(spatial.pairs) == {(a, b)}


def test_a_component_removed_then_assigned_moves_nothing(spatial: SpatialProcessor) -> None:
    e = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    other = esper.create_entity(Position(50.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    pos = esper.component_for_entity(e, Position)
    esper.remove_component(e, Position)
    pos.x = 30.0
    esper.process()
    assert e not in spatial.index and spatial.removed == {e}
    assert not spatial._table.bound(e)
    pos.x = 40.0  # no longer tracked: nothing anywhere
    esper.component_for_entity(other, Position).x = 60.0
    esper.process()
    assert spatial.moved == {other} and e not in spatial.index
    esper.add_component(e, pos)  # back: its values as they are now
    esper.process()
    assert box_of(spatial, e) == (40.0, 0.0, 41.0, 1.0)
    pos.x = 45.0
    esper.process()
    assert box_of(spatial, e) == (45.0, 0.0, 46.0, 1.0)


@pytest.mark.parametrize("immediate", [True, False])
def test_a_deleted_entitys_component_assigned_touches_no_one(
    spatial: SpatialProcessor, immediate: bool
) -> None:
    e = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    pos = esper.component_for_entity(e, Position)
    esper.delete_entity(e, immediate=immediate)
    pos.x = 5.0
    esper.process()
    assert e not in spatial.index and len(spatial._table) == 0
    # a new entity takes the freed slot; the old component must not reach it
    f = esper.create_entity(Position(100.0, 100.0), AABB(2.0, 2.0))
    esper.process()
    assert spatial._table.bound(f)
    pos.x = -50.0
    pos.y = -50.0
    del pos
    gc.collect()
    esper.process()
    assert spatial.moved == set() and box_of(spatial, f) == (100.0, 100.0, 102.0, 102.0)
    esper.component_for_entity(f, Position).x = 7.0
    esper.process()
    assert box_of(spatial, f) == (7.0, 100.0, 9.0, 102.0)


def test_a_removed_processor_lets_go_of_its_components(world: str) -> None:
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    e = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    table = spatial._table
    assert table.bound(e)
    esper.remove_processor(SpatialProcessor)
    del spatial
    gc.collect()
    assert len(table) == 0  # released when the processor went
    pos = esper.component_for_entity(e, Position)
    pos.x = 3.0
    again = SpatialProcessor()
    esper.add_processor(again)
    esper.process()
    assert box_of(again, e) == (3.0, 0.0, 4.0, 1.0) and again._table.bound(e)
    pos.x = 4.0
    esper.process()
    assert box_of(again, e) == (4.0, 0.0, 5.0, 1.0)


def test_a_store_without_change_on_the_dirty_lists_path_is_read_once(
    spatial: SpatialProcessor,
) -> None:
    """A member on the dirty list's path stored into with its own value: the frame reads it
    (no move) and empties the list, also when every other move is the table's (the frame's
    short path then must not skip the list)."""
    e = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    f = esper.create_entity(Position(5.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    pos = esper.component_for_entity(e, Position)
    pos.x = 2  # an int: the dirty list's path
    esper.process()
    assert spatial._dirty == [] and box_of(spatial, e) == (2.0, 0.0, 3.0, 1.0)
    pos.x = 2  # the same value: listed, read, nothing moved
    esper.component_for_entity(f, Position).x = 6.0  # the table's
    assert spatial._dirty == [e]
    esper.process()
    assert spatial._dirty == [] and spatial.moved == {f}
    esper.process()
    assert spatial._dirty == [] and spatial.moved == set()


def test_a_component_shared_or_odd_leaves_the_table_and_comes_back(
    spatial: SpatialProcessor,
) -> None:
    e = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    table = spatial._table
    pos = esper.component_for_entity(e, Position)
    pos.x = 2  # an int: the dirty list's path
    assert not table.bound(e) and spatial._dirty == [e]
    esper.process()
    assert box_of(spatial, e) == (2.0, 0.0, 3.0, 1.0)
    assert not table.bound(e)  # its x is still an int
    pos.x = 3.0
    esper.process()
    assert box_of(spatial, e) == (3.0, 0.0, 4.0, 1.0) and table.bound(e)
    f = esper.create_entity(Position(10.0, 0.0), esper.component_for_entity(e, AABB))
    esper.process()
    assert not table.bound(e) and not table.bound(f)  # a shared AABB
    esper.component_for_entity(e, AABB).width = 5.0
    esper.process()
    assert box_of(spatial, e) == (3.0, 0.0, 8.0, 1.0)
    assert box_of(spatial, f) == (10.0, 0.0, 15.0, 1.0)
    pos._x = 20.0  # not a store the table sees: out, and read as the reference reads it
    pos.y = 0.0
    esper.process()
    assert box_of(spatial, e) == (20.0, 0.0, 25.0, 1.0)


def test_a_value_the_table_cannot_add_is_refused_as_before(spatial: SpatialProcessor) -> None:
    e = esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    pos = esper.component_for_entity(e, Position)
    pos.x = 1e308
    esper.component_for_entity(e, AABB).offset_x = 1e308
    with pytest.raises(ValueError, match=rf"entity {e}: the box of .* overflows"):
        esper.process()
    assert box_of(spatial, e) == (0.0, 0.0, 1.0, 1.0)
    pos.x = 0.0
    esper.process()
    assert box_of(spatial, e) == (1e308, 0.0, 1e308 + 1.0, 1.0)


def tables() -> int:
    """How many members tables are alive."""
    return sum(type(o) is _members._MembersTable for o in gc.get_objects())


def test_the_table_is_collected_with_its_processor_and_components(world: str) -> None:
    gc.collect()
    before = tables()
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    esper.create_entity(Position(0.0, 0.0), AABB(1.0, 1.0))
    esper.process()
    assert tables() == before + 1
    esper.remove_processor(SpatialProcessor)
    esper.clear_database()
    del spatial
    gc.collect()
    assert tables() == before


def test_a_component_tracked_by_two_worlds_processors_leaves_the_table(world: str) -> None:
    first = SpatialProcessor()
    esper.add_processor(first)
    pos = Position(0.0, 0.0)
    a = esper.create_entity(pos, AABB(1.0, 1.0))
    esper.process()
    assert first._table.bound(a)
    pos.x = 2.0  # pending in the first processor's table
    with fresh_world("second") as other:
        second = SpatialProcessor()
        esper.add_processor(second)
        b = esper.create_entity(pos, AABB(2.0, 2.0))
        esper.process()  # now shared: out of the first table, its change listed there
        assert not first._table.bound(a) and not second._table.bound(b)
        assert first._dirty == [a]
        assert box_of(second, b) == (2.0, 0.0, 4.0, 2.0)
        pos.x = 5.0
        esper.process()
        assert box_of(second, b) == (5.0, 0.0, 7.0, 2.0)
        esper.switch_world(world)
        esper.process()
        assert box_of(first, a) == (5.0, 0.0, 6.0, 1.0) and first.moved == {a}
        esper.switch_world(other)
        esper.delete_entity(b, immediate=True)
        esper.process()  # back to one place: the first processor's
    esper.process()
    pos.x = 9.0
    esper.process()
    assert box_of(first, a) == (9.0, 0.0, 10.0, 1.0) and first._table.bound(a)


def test_stores_from_the_collector_mid_frame_break_nothing(world: str) -> None:
    """The collector runs Python at any allocation: here, at each collection, a callback
    stores into tracked components (floats the table takes, ints it drops them for) while
    frames, drops, syncs and pickles allocate. Nothing crashes and the index stays whole.
    (A store made between a frame's read and the end of its apply can be lost, with the
    table or without: the dirty list is cleared at the end of the apply. Not asserted.)"""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    rng = random.Random(5)
    entities = [esper.create_entity(Position(rng.uniform(0, 100), rng.uniform(0, 100)),
                                    AABB(3.0, 3.0)) for _ in range(60)]
    positions = [esper.component_for_entity(e, Position) for e in entities]

    def store(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            pos = rng.choice(positions)
            pos.x = rng.choice([rng.uniform(0, 100), 7])

    threshold = gc.get_threshold()
    gc.callbacks.append(store)
    gc.set_threshold(5)
    try:
        for n in range(200):
            for pos in rng.sample(positions, 10):
                pos.y = rng.uniform(0, 100)
            if n % 20 == 3:
                pickle.loads(pickle.dumps(spatial))
            esper.process()
    finally:
        gc.callbacks.remove(store)
        gc.set_threshold(*threshold)
    esper.process()
    spatial.index.check()
    assert sorted(spatial.index) == sorted(entities)
