"""Saving a world with its processors and restoring it (``ecs_spatial.saving``).

The differential test runs two copies of one game side by side, from the same seed: one
uninterrupted, the other saved and restored at random frames (a pickle round trip into a
new world of another name or of the same name, or a deep copy in memory), sometimes with
changes pending, deferred deletions not yet done, or events still owed by a handler that
raised. Every event of the three processors is recorded in both; the sequences must be
identical, frame by frame, and so must the processors' states. A second driver saves from
inside a handler (an autosave on a checkpoint hit), at every position of every batch of a
frame (the events owed by an earlier raise, the plain and the typed ones of each kind, the
followers'): the restored world delivers exactly what the original had not yet delivered,
then carries on as it does. Then the error cases.
The differential driver also runs longer from the command line:

    python tests/test_save_restore.py --seeds 200 --frames 100
"""

from __future__ import annotations

import copy
import copyreg
import io
import math
import os
import pickle
import random
import re
import struct
import subprocess
import sys
from array import array
from dataclasses import dataclass
from typing import Any

import esper
import pytest
from _budget import budget
from _leaks import assert_loop_keeps_nothing
from _worlds import fresh_world, stress_main
from hypothesis import given
from hypothesis import strategies as st

from ecs_spatial import _columns, _esper_tables, components
from ecs_spatial._columns import FLOATS, LINKED, OBJECT, PLAIN
from ecs_spatial._members import STALE
from ecs_spatial.components import AABB, CollisionFilter, Continuous, Position, PyPosition
from ecs_spatial.culling import CullingProcessor
from ecs_spatial.events import (
    COLLISION,
    COLLISION_ENTER,
    COLLISION_EXIT,
    COLLISION_SWEPT,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    VIEW_ENTER,
    VIEW_EXIT,
)
from ecs_spatial.geometry import Box
from ecs_spatial.proximity import Proximity, ProximityProcessor
from ecs_spatial.saving import WorldState, restore_world, save_world
from ecs_spatial.spatial_processor import SpatialProcessor, packed_members, unpacked_members

EVENTS = (
    COLLISION_EXIT, COLLISION_SWEPT, COLLISION_ENTER, COLLISION, VIEW_EXIT, VIEW_ENTER,
    PROXIMITY_EXIT, PROXIMITY_ENTER,
)


class Boom(Exception):
    """Raised by a Log on purpose."""


class Log:
    """Every event of a world in order, as ``(name, *args)``; raises :class:`Boom` right
    after recording event number ``raise_at`` (counted from 0 over the whole run). Its
    bound methods are the handlers, one per event name: keep it referenced."""

    def __init__(self, raise_at: int | None = None) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.raise_at = raise_at
        self.seen = 0
        self.handlers = {name: self._handler(name) for name in EVENTS}

    def _handler(self, name: str) -> Any:
        def handle(*args: int) -> None:
            self.events.append((name, *args))
            self.seen += 1
            if self.seen - 1 == self.raise_at:
                raise Boom(name, *args)

        return handle

    def attach(self) -> None:
        """Set the handlers in the current world (after a restore: they are not saved)."""
        for name, handler in self.handlers.items():
            esper.set_handler(name, handler)

    def take(self) -> list[tuple[Any, ...]]:
        events, self.events = self.events, []
        return events


class Tag(Position):
    """A Position subclass, filed under Position with a type alias (or under its own type)."""


class Camera:
    """A view that moves: its bound method ``box`` is the CullingProcessor's view (a bound
    method of a picklable object pickles; a lambda would not)."""

    def __init__(self) -> None:
        self.x = 0.0
        self.y = 0.0

    def box(self) -> Box:
        return Box(self.x, self.y, self.x + 120.0, self.y + 90.0)


class TypedLog:
    """The handlers of the on_collision registrations: saved with the SpatialProcessor that
    holds them (by strong reference), so they must pickle; they record into this object,
    which the test finds again through the restored processor."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def enter(self, a: int, b: int) -> None:
        self.events.append(("typed enter", a, b))

    def exit(self, a: int, b: int) -> None:
        self.events.append(("typed exit", a, b))

    def stay(self, a: int, b: int) -> None:
        self.events.append(("typed stay", a, b))


#: The on_collision registrations a game may hold, by the component types they match.
TYPED = [(Proximity, None), (CollisionFilter, CollisionFilter), (Continuous, Proximity)]


def typed_log() -> TypedLog:
    """The TypedLog of the current world's SpatialProcessor."""
    spatial = esper.get_processor(SpatialProcessor)
    assert isinstance(spatial, SpatialProcessor)
    log = spatial.typed_log  # type: ignore[attr-defined]
    assert isinstance(log, TypedLog)
    return log


def register(spatial: SpatialProcessor, log: TypedLog, types: tuple[Any, Any]) -> None:
    spatial.on_collision(*types, enter=log.enter, exit=log.exit, stay=log.stay)


class Drift(esper.Processor):
    """A game's own processor, saved with the others: moves the entity it follows, and
    keeps a frame count (its state must survive too)."""

    def __init__(self) -> None:
        self.frames = 0

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.frames += 1
        for entity in sorted(esper.get_entities()):
            if esper.entity_exists(entity):
                pos = esper.try_component(entity, Position)
                if pos is not None:
                    pos.x += 1.0 if self.frames % 8 < 4 else -1.0
                    return


def build(seed: int) -> None:
    """The game's world in the current esper world: its processors in order, then a first
    population (the same for every call with this seed)."""
    rng = random.Random(seed)
    camera = Camera()
    spatial = SpatialProcessor(Box(0, 0, 200, 200), threshold=rng.choice([2, 4, 16]))
    spatial.typed_log = TypedLog()  # type: ignore[attr-defined]  # pickled with it
    register(spatial, spatial.typed_log, TYPED[0])  # type: ignore[attr-defined]
    esper.add_processor(Drift(), priority=30)
    esper.add_processor(spatial, priority=10)
    esper.add_processor(CullingProcessor(spatial, camera.box), priority=5)
    esper.add_processor(ProximityProcessor(spatial), priority=5)
    for _ in range(rng.randint(0, 30)):
        spawn(rng)


def spawn(rng: random.Random) -> int:
    """A new entity with a random box (zero-size, huge, far out of bounds or at the edge of
    the float range now and then), filter and Proximity (with or without hysteresis)."""
    scale = rng.choice([200.0, 200.0, 200.0, 1e6, 1e300])
    components: list[Any] = [Position(rng.uniform(-0.2, 1) * scale, rng.uniform(-0.2, 1) * scale)]
    if rng.random() < 0.9:
        size = rng.choice([0.0, 4.0, rng.uniform(0, 30), 1e3, 1e299])
        components.append(AABB(size, rng.choice([0.0, size, rng.uniform(0, 30)])))
    if rng.random() < 0.3:
        components.append(CollisionFilter(rng.choice([1, 2, 3]), rng.choice([1, 3, 0xFF]),
                                          rng.choice([0, 0, 1])))
    if rng.random() < 0.3:
        radius = rng.choice([0.0, 5.0, 20.0, 60.0])
        exit_radius = rng.choice([None, radius, radius + 10.0])
        components.append(Proximity(radius, rng.choice([0xFFFFFFFF, 1, 2]), exit_radius))
    if rng.random() < 0.15:
        components.append(Continuous())
    return esper.create_entity(*components)


def edit(rng: random.Random) -> None:
    """One frame's changes made from outside the processors, as a game's input would:
    moves (some pacing on a watcher's boundary), creations, deferred and immediate
    deletions, components added, removed, replaced and edited, fast movers (some
    teleported), on_collision registrations added and removed, the camera moved."""
    alive = sorted(e for e in esper.get_entities() if esper.entity_exists(e))
    fraction = rng.choice([0.0, 0.05, 0.3, 1.0])
    for entity in alive:
        pos = esper.try_component(entity, Position)
        if pos is not None and rng.random() < fraction:
            if rng.random() < 0.1:
                pos.move_to(float(rng.randrange(0, 200, 5)), float(rng.randrange(0, 200, 5)))
            else:
                pos.translate(rng.uniform(-6, 6), rng.uniform(-6, 6))
    for _ in range(rng.choice([0, 0, 1, 3])):
        spawn(rng)
    for _ in range(rng.choice([0, 0, 3])):
        if not alive:
            break
        entity = rng.choice(alive)
        if not esper.entity_exists(entity):
            continue
        action = rng.randrange(11)
        prox = esper.try_component(entity, Proximity)
        flt = esper.try_component(entity, CollisionFilter)
        if action == 0:
            if rng.random() < 0.5:
                entity = max(e for e in esper.get_entities() if esper.entity_exists(e))
            esper.delete_entity(entity, immediate=rng.random() < 0.5)
        elif action == 1 and prox is not None:
            prox.radius = rng.choice([0.0, 5.0, 20.0, 60.0])
            prox.exit_radius = rng.choice([None, prox.radius + rng.choice([0.0, 15.0])])
            prox.mask = rng.choice([0xFFFFFFFF, 1, 2])
        elif action == 2:
            if prox is None:
                esper.add_component(entity, Proximity(20.0, exit_radius=35.0))
            elif rng.random() < 0.5:
                esper.remove_component(entity, Proximity)
            else:
                esper.add_component(entity, Proximity(30.0))  # replaced
        elif action == 3:
            if flt is None:
                esper.add_component(entity, CollisionFilter(category=rng.choice([1, 2])))
            elif rng.random() < 0.5:
                flt.category = rng.choice([0, 1, 2, 3])
                flt.group = rng.choice([0, 1])
            else:
                esper.remove_component(entity, CollisionFilter)
        elif action == 4:
            if esper.try_remove_component(entity, AABB) is None:
                esper.add_component(entity, AABB(rng.uniform(0, 20), rng.uniform(0, 20)))
        elif action == 5:
            aabb = esper.try_component(entity, AABB)
            if aabb is not None:
                aabb.width = rng.uniform(0, 40)
        elif action == 6 and prox is not None:
            pace(rng, entity, prox)
        elif action == 7:
            esper.add_component(entity, AABB.centered(6.0, 6.0))  # replaced
        elif action == 8:
            esper.add_component(entity, Position(rng.uniform(0, 200), rng.uniform(0, 200)))
        elif action == 9:
            fast = esper.try_component(entity, Continuous)
            pos = esper.try_component(entity, Position)
            if fast is None:
                esper.add_component(entity, Continuous())
            elif pos is not None:
                if rng.random() < 0.5:
                    fast.teleported()
                pos.translate(rng.choice([-60.0, 60.0]), rng.uniform(-5, 5))  # a fast move
        elif action == 10:
            spatial = esper.get_processor(SpatialProcessor)
            assert isinstance(spatial, SpatialProcessor)
            handlers = spatial.collision_handlers
            if handlers and rng.random() < 0.5:
                rng.choice(handlers).remove()  # its held pairs get their exits
            else:
                register(spatial, typed_log(), rng.choice(TYPED))
    camera = _camera()
    if rng.random() < 0.3:
        camera.x += rng.choice([-8.0, 8.0, 150.0])
        camera.y += rng.choice([-8.0, 0.0, 8.0])


def pace(rng: random.Random, watcher: int, prox: Proximity) -> None:
    """Put some boxed entity at a distance from the watcher's position on or between its
    radius and exit radius (the cases of hysteresis)."""
    others = sorted(
        e for e in esper.get_entities()
        if e != watcher and esper.entity_exists(e) and esper.has_components(e, Position, AABB)
    )
    where = esper.try_component(watcher, Position)
    if not others or where is None:
        return
    exit_radius = prox.radius if prox.exit_radius is None else prox.exit_radius
    distance = rng.choice([prox.radius, exit_radius, (prox.radius + exit_radius) / 2])
    target = esper.component_for_entity(rng.choice(others), Position)
    target.move_to(where.x + distance, where.y)


def _camera() -> Camera:
    culling = esper.get_processor(CullingProcessor)
    assert isinstance(culling, CullingProcessor)
    camera = culling.view.__self__  # type: ignore[union-attr]
    assert isinstance(camera, Camera)
    return camera


def snapshot() -> tuple[Any, ...]:
    """What the processors of the current world hold: pairs, visible set, neighbours,
    index hash, the processors' order and priorities, the on_collision registrations."""
    spatial = esper.get_processor(SpatialProcessor)
    culling = esper.get_processor(CullingProcessor)
    drift = esper.get_processor(Drift)
    assert isinstance(spatial, SpatialProcessor) and isinstance(culling, CullingProcessor)
    assert isinstance(drift, Drift)
    neighbours = sorted(
        (e, sorted(p.neighbors)) for e, p in esper.get_component(Proximity)
    )
    return (
        sorted(spatial.pairs), sorted(culling.visible), neighbours, spatial.state_hash(),
        [(type(p).__name__, p.priority) for p in esper._processors], drift.frames,
        [(h.type_a, h.type_b) for h in spatial.collision_handlers],
    )


def take_all(log: Log) -> list[tuple[Any, ...]]:
    """The events of the current world since the last call: the plain ones, then the typed
    ones (each list in its own order)."""
    typed = typed_log()
    events, typed.events = typed.events, []
    return log.take() + events


def step(log: Log) -> bool:
    """One esper.process(); whether a handler raised Boom (the rest of the events are then
    owed, and delivered first by the next process())."""
    try:
        esper.process()
    except Boom:
        return True
    return False


MODES = ("pickle-new-name", "pickle-same-name", "deepcopy", "previous-layout")


def _previous_layout(processor: SpatialProcessor) -> dict[str, Any]:
    """What a SpatialProcessor saved before its members were packed: its attributes as
    they are (Python's default), the member records a dict of lists; without the members
    table, which came later (its pending members then in the dirty list)."""
    if processor._table is not None:
        processor._table.flush()
        processor._table.sync_all()
    state = dict(processor.__dict__)
    for name in ("_table", "_table_moves", "_table_moved"):
        del state[name]
    return state


def _pickled_in_previous_layout(state: WorldState) -> bytes:
    """``state`` pickled as the version before the packed layouts wrote it: the
    SpatialProcessor's attributes as they are, the index's ids and boxes as lists (format
    1), the world's entities a dict of dicts (WorldState format 1, before its columns)."""
    spatial = next(p for p, _ in state.processors if isinstance(p, SpatialProcessor))
    index = spatial.index
    tree_state = index.__getstate__()
    old_tree = {
        **tree_state, "format": 1,
        "ids": list(tree_state["ids"]), "boxes": list(tree_state["boxes"]),
    }
    data = pickle.dumps(state)
    buffer = io.BytesIO()
    old_world = {
        "format": 1, "entities": {e: dict(c) for e, c in state.entities.items()},
        "dead": state.dead, "next_id": state.next_id, "processors": state.processors,
    }
    _OldLayouts(buffer, {
        id(index): old_tree, id(spatial): _previous_layout(spatial), id(state): old_world,
    }).dump(state)
    assert buffer.getvalue() != data
    return buffer.getvalue()


class _OldLayouts(pickle.Pickler):
    """A pickler that writes the given objects with the given states, as the default
    ``__reduce_ex__`` would (a new object of the class, then its ``__setstate__``)."""

    def __init__(self, file: io.BytesIO, states: dict[int, Any]) -> None:
        super().__init__(file)
        self.states = states

    def reducer_override(self, obj: Any) -> Any:
        state = self.states.get(id(obj))
        if state is None:
            return NotImplemented
        return copyreg.__newobj__, (type(obj),), state  # type: ignore[attr-defined]
#: Where resume() waits while the old world is deleted.
LIMBO = "save-restore-limbo"


def resume(mode: str, log: Log, world: str) -> str:
    """Save the current world, drop it, and restore it as ``mode`` says; return the name
    of the world it now lives in (current)."""
    state = save_world()
    if mode == "deepcopy":
        restored = copy.deepcopy(state)
    elif mode == "previous-layout":
        restored = pickle.loads(_pickled_in_previous_layout(state))
    else:
        buffer = io.BytesIO()
        pickle.dump(state, buffer)
        buffer.seek(0)
        restored = pickle.load(buffer)
    del state
    new = world if mode == "pickle-same-name" else f"{world}+"
    esper.event_registry.clear()  # while the old world is current (see _worlds.py)
    esper.switch_world(LIMBO)
    esper.delete_world(world)  # the old world and its processors go
    esper.switch_world(new)
    esper.delete_world(LIMBO)
    restore_world(restored)
    log.attach()
    return new


def run_side_by_side(seed: int, frames: int) -> int:
    """Run one game in two worlds from ``seed``, the second saved and restored at random
    frames; compare every frame's events and the processors' states. Returns how many
    restores happened."""
    rng = random.Random(seed)
    save_rng = random.Random(seed + 1)
    raise_at = rng.choice([None, rng.randrange(5, 60)])
    base = esper.current_world
    worlds = {"plain": f"{base}-plain", "saved": f"{base}-saved"}
    logs = {"plain": Log(raise_at), "saved": Log(raise_at)}
    edits = {"plain": random.Random(seed + 2), "saved": random.Random(seed + 2)}
    for name, world in worlds.items():
        esper.switch_world(world)
        build(seed)
        logs[name].attach()
    restores = 0
    try:
        for frame in range(frames):
            raised = {}
            for name in worlds:
                esper.switch_world(worlds[name])
                edit(edits[name])
                if name == "saved" and save_rng.random() < 0.3:
                    worlds[name] = resume(save_rng.choice(MODES), logs[name], worlds[name])
                    restores += 1
                raised[name] = step(logs[name])
                if name == "saved" and raised[name]:
                    # Saved right after a handler raised: the owed events must survive.
                    worlds[name] = resume(save_rng.choice(MODES), logs[name], worlds[name])
                    restores += 1
            context = f"seed={seed} frame={frame}"
            assert raised["plain"] == raised["saved"], context
            esper.switch_world(worlds["plain"])
            plain = take_all(logs["plain"]), snapshot()
            esper.switch_world(worlds["saved"])
            assert (take_all(logs["saved"]), snapshot()) == plain, context
    finally:
        esper.switch_world(base)
        for world in worlds.values():
            if world in esper.list_worlds():
                esper.switch_world(world)
                esper.event_registry.clear()
                esper.switch_world(base)
                esper.delete_world(world)
    return restores


@pytest.mark.parametrize("seed", range(12))
def test_a_restored_world_gives_the_events_of_an_uninterrupted_run(world: str, seed: int) -> None:
    """Saved and restored at random frames (pickled into a world of a new name or of the
    same name, or deep-copied; with changes pending, deletions deferred, events owed), a
    world's SpatialProcessor, CullingProcessor and ProximityProcessor give the same events
    and states as an uninterrupted copy, frame by frame."""
    assert run_side_by_side(seed, frames=30) > 0



def test_member_records_round_trip_through_their_columns(world: str) -> None:
    """A SpatialProcessor's member records, packed as columns and rebuilt, are the same:
    the same components (by value and class: those only the record and the world hold are
    saved as floats and made again; one held elsewhere too, here by the test, is the object
    itself), boxes and ids, a ``STALE`` record (left by a process() that refused a box)
    still stale, and what ``moved`` reports kept."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    entities = [esper.create_entity(Position(i * 20.0, 0), AABB(10, 10)) for i in range(5)]
    esper.process()
    # an int: read on the dirty list's path, before the NaN refused (the members table's
    # moves are read after everything that can fail, so they leave no STALE record)
    esper.component_for_entity(entities[1], Position).x = 3
    esper.component_for_entity(entities[3], Position).x = float("nan")
    with pytest.raises(ValueError, match=rf"entity {entities[3]}"):
        esper.process()
    members = spatial._members
    assert any(rec[2] is STALE for rec in members.values())
    held = esper.component_for_entity(entities[2], AABB)
    packed = packed_members(members)
    assert type(packed[0]) is array and type(packed[3]) is array
    # the NaN as floats too (what was assigned, unchecked); the int goes as the object
    assert packed[1][1] == bytes([FLOATS, OBJECT, FLOATS, FLOATS, FLOATS])
    assert packed[2][1] == bytes([FLOATS, FLOATS, OBJECT, FLOATS, FLOATS])
    rebuilt = unpacked_members(packed)
    assert list(rebuilt) == list(members)
    assert rebuilt[entities[2]][1] is held
    for entity, rec in members.items():
        again = rebuilt[entity]
        for made, saved in zip(again[:2], rec[:2], strict=True):
            assert type(made) is type(saved) and repr(made) == repr(saved)
        assert again[3] == entity
        assert again[2] == rec[2] and (again[2] is STALE) == (rec[2] is STALE)
    twin = pickle.loads(pickle.dumps(spatial))
    assert twin.moved == spatial.moved
    assert {e: r[2] for e, r in twin._members.items()} == {e: r[2] for e, r in members.items()}

@pytest.mark.parametrize("seed", range(3))
def test_a_world_restored_through_esper_public_api_gives_the_same_events(
    world: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where esper's own tables are not read (an esper that keeps them elsewhere),
    restore_world fills the world through create_entity and add_component instead of in
    bulk: the same events and states."""
    monkeypatch.setattr(_esper_tables, "use_esper_tables", False)
    assert not _esper_tables.fill({})
    assert run_side_by_side(seed, frames=30) > 0


def test_owed_events_survive_a_save(world: str) -> None:
    """A handler that raises on the first of several enters: saved and restored there, the
    next process() delivers the rest first, each once, then that frame's events."""
    esper.switch_world(world + "-game")
    try:
        log = Log(raise_at=0)
        log.attach()
        spatial = SpatialProcessor()
        esper.add_processor(spatial)
        a, b, c = (esper.create_entity(Position(i, i), AABB(10, 10)) for i in range(3))
        with pytest.raises(Boom):
            esper.process()
        assert log.take() == [(COLLISION_ENTER, a, b)]
        assert resume("pickle-new-name", log, world + "-game") == world + "-game+"
        assert log.take() == []
        restored = esper.get_processor(SpatialProcessor)
        assert isinstance(restored, SpatialProcessor) and restored is not spatial
        esper.component_for_entity(c, Position).x = 500
        esper.process()
        assert log.take() == [
            # owed from the frame that raised, first
            (COLLISION_ENTER, a, c), (COLLISION_ENTER, b, c),
            (COLLISION, a, b), (COLLISION, a, c), (COLLISION, b, c),
            # this frame's
            (COLLISION_EXIT, a, c), (COLLISION_EXIT, b, c), (COLLISION, a, b),
        ]
    finally:
        esper.event_registry.clear()
        esper.switch_world(world)
        for name in (world + "-game", world + "-game+"):
            if name in esper.list_worlds():
                esper.delete_world(name)


# -- a save made by a handler, at every position ----------------------------------------------


#: The calls of every handler of the world being checked, in order, as ``(name, *args)``;
#: the handler of call number ``at`` pickles ``save_world()`` into ``saved``. Module
#: globals: the typed handlers are pickled with their processor, and must not carry them.
CHECKPOINT: dict[str, Any] = {"calls": [], "at": None, "saved": None}


def _tick(event: tuple[Any, ...]) -> None:
    calls = CHECKPOINT["calls"]
    calls.append(event)
    if len(calls) - 1 == CHECKPOINT["at"]:
        CHECKPOINT["saved"] = pickle.dumps(save_world())


class SavingLog(Log):
    """A Log whose handlers also tick the checkpoint, and raise :class:`Boom` at the first
    event of the processor ``raise_on`` names (``collision``, ``view``, ``proximity``)."""

    raise_on: str | None = None

    def _handler(self, name: str) -> Any:
        log = super()._handler(name)

        def handle(*args: int) -> None:
            log(*args)
            _tick((name, *args))
            if self.raise_on is not None and name.startswith(self.raise_on):
                self.raise_on = None
                raise Boom(name, *args)

        return handle


class SavingTypedLog(TypedLog):
    """A TypedLog whose handlers also tick the checkpoint."""

    def enter(self, a: int, b: int) -> None:
        super().enter(a, b)
        _tick(("typed enter", a, b))

    def exit(self, a: int, b: int) -> None:
        super().exit(a, b)
        _tick(("typed exit", a, b))

    def stay(self, a: int, b: int) -> None:
        super().stay(a, b)
        _tick(("typed stay", a, b))


def build_without_drift(seed: int) -> None:
    """The game of :func:`build`, without its Drift processor (so that a frame without
    edits changes nothing), and with handlers that tick the checkpoint."""
    rng = random.Random(seed)
    camera = Camera()
    spatial = SpatialProcessor(Box(0, 0, 200, 200), threshold=rng.choice([2, 4, 16]))
    spatial.typed_log = SavingTypedLog()  # type: ignore[attr-defined]
    for types in TYPED[: rng.choice([1, 3])]:
        register(spatial, spatial.typed_log, types)  # type: ignore[attr-defined]
    esper.add_processor(spatial, priority=10)
    esper.add_processor(CullingProcessor(spatial, camera.box), priority=5)
    esper.add_processor(ProximityProcessor(spatial), priority=5)
    for _ in range(rng.randint(10, 30)):
        spawn(rng)


def family(calls: list[tuple[Any, ...]], kind: str) -> list[tuple[Any, ...]]:
    """The calls of one processor: ``collision`` (plain and typed), ``view``, ``proximity``."""
    return [call for call in calls if call[0].split("_")[0].split(" ")[0] in (
        ("collision", "typed") if kind == "collision" else (kind,)
    )]


def held_state() -> tuple[Any, ...]:
    """What the processors of the current world hold (snapshot() without a Drift)."""
    spatial = esper.get_processor(SpatialProcessor)
    culling = esper.get_processor(CullingProcessor)
    assert isinstance(spatial, SpatialProcessor) and isinstance(culling, CullingProcessor)
    neighbours = sorted((e, sorted(p.neighbors)) for e, p in esper.get_component(Proximity))
    return (
        sorted(spatial.pairs), sorted(culling.visible), neighbours, spatial.state_hash(),
        [sorted(h.held) for h in spatial.collision_handlers],
    )


def spatial_frame() -> int:
    spatial = esper.get_processor(SpatialProcessor)
    assert isinstance(spatial, SpatialProcessor)
    return spatial.frame


def run_save_at(seed: int, position: int | None) -> tuple[int, bool]:
    """A game whose frame starts with events owed (the frame before raised at the first
    event of a processor chosen at random); the handler of call number ``position`` of that
    frame saves the world. The original world then runs a frame without edits; the
    restored one (in a world of its own) runs one too (two if the SpatialProcessor had not
    worked out the frame saved: the save was made in its owed delivery), and delivers,
    processor by processor, exactly the events the original delivered after the save, in
    order (a follower that had not run yet in the frame saved works it out at once); then
    both run the same frames, with the same events and states. Returns how many calls
    that frame made, and whether it started owing."""
    rng = random.Random(seed)
    base = esper.current_world
    worlds = {"original": f"{base}-original", "restored": f"{base}-restored"}
    logs = {"original": SavingLog(), "restored": SavingLog()}
    edits = random.Random(seed + 2)
    esper.switch_world(worlds["original"])
    try:
        build_without_drift(seed)
        logs["original"].attach()
        for _ in range(3):
            edit(edits)
            step(logs["original"])
        edit(edits)
        logs["original"].raise_on = rng.choice(["collision", "view", "proximity"])
        owing = step(logs["original"])  # raises, most often: the next frame starts owing
        logs["original"].raise_on = None
        edit(edits)
        CHECKPOINT.update(calls=[], at=position, saved=None)
        step(logs["original"])
        made, saved = CHECKPOINT["calls"], CHECKPOINT["saved"]
        CHECKPOINT.update(calls=[], at=None, saved=None)
        if position is None:
            return len(made), owing
        assert saved is not None
        frame_saved = spatial_frame()
        step(logs["original"])
        expected = made[position + 1 :] + CHECKPOINT["calls"]
        original_state = held_state()
        esper.switch_world(worlds["restored"])
        restore_world(pickle.loads(saved))
        logs["restored"].attach()
        typed_log().events.clear()
        CHECKPOINT["calls"] = []
        for _ in range(1 + frame_saved - spatial_frame()):
            step(logs["restored"])
        context = f"seed={seed} saved at {position} of {len(made)}: {made[position]}"
        for kind in ("collision", "view", "proximity"):
            assert family(CHECKPOINT["calls"], kind) == family(expected, kind), context
        assert held_state() == original_state, context
        twin_edits = random.Random()
        twin_edits.setstate(edits.getstate())
        for frame in range(3):
            seen = {}
            for name, changes in (("original", edits), ("restored", twin_edits)):
                esper.switch_world(worlds[name])
                edit(changes)
                CHECKPOINT["calls"] = []
                step(logs[name])
                seen[name] = (CHECKPOINT["calls"], held_state())
            assert seen["restored"] == seen["original"], f"{context}, frame {frame} after"
        return len(made), owing
    finally:
        CHECKPOINT.update(calls=[], at=None, saved=None)
        for world in worlds.values():
            if world in esper.list_worlds():
                esper.switch_world(world)
                esper.event_registry.clear()
        esper.switch_world(base)
        for world in worlds.values():
            if world in esper.list_worlds():
                esper.delete_world(world)


SAVE_SEEDS = range(8)


@pytest.mark.parametrize("seed", SAVE_SEEDS)
def test_a_save_made_by_a_handler_at_every_position(world: str, seed: int) -> None:
    """Saved from inside a handler at each call of a frame in turn (what an earlier raise
    left owed, then the exits, swept contacts, enters and collisions, plain and typed, then
    the followers' events), the restored world delivers exactly the events not delivered
    before the save (the one whose handler saved counts as delivered), each processor's in
    order, and then runs as the original does."""
    calls, _ = run_save_at(seed, None)
    for position in range(calls):
        run_save_at(seed, position)


def test_the_save_driver_covers_busy_frames_that_start_owing(world: str) -> None:
    """The frames the driver above saves in are busy, and most start with events owed."""
    runs = [run_save_at(seed, None) for seed in SAVE_SEEDS]
    assert sum(calls for calls, _ in runs) >= 300, runs
    assert sum(owing for _, owing in runs) >= len(runs) // 2, runs


def test_what_a_state_holds(world: str) -> None:
    """A WorldState holds every entity by id with its components under the type esper
    files them (aliases kept), the deferred deletions, the next id, and the processors with
    their priorities in esper's order; save_world changes nothing."""
    spatial = SpatialProcessor()
    drift = Drift()
    esper.add_processor(spatial, priority=3)
    esper.add_processor(drift, priority=7)
    a = esper.create_entity(Position(1, 2), AABB(3, 4))
    b = esper.create_entity()
    c = esper.create_entity()
    esper.add_component(c, Tag(5, 6), type_alias=Position)
    esper.delete_entity(c, immediate=True)
    d = esper.create_entity(Tag(7, 8))
    esper.delete_entity(b)
    state = save_world()
    assert list(state.entities) == [a, b, d]
    assert state.entities[a] == {Position: Position(1, 2), AABB: AABB(3, 4)}
    assert state.entities[a][Position] is esper.component_for_entity(a, Position)
    assert state.entities[b] == {} and list(state.entities[d]) == [Tag]
    assert state.dead == [b]
    assert state.next_id == d + 1
    assert state.processors == [(drift, 7), (spatial, 3)]
    assert repr(state) == (
        "WorldState(entities=3, dead=1, next_id=5, processors=[Drift, SpatialProcessor])"
    )
    assert esper.create_entity() == d + 1  # the counter was read, not advanced
    assert save_world(processors=[spatial]).processors == [(spatial, 3)]


def test_restored_ids_aliases_deletions_and_counter(world: str) -> None:
    """restore_world puts back each entity under its id (gaps kept), its components under
    their types, the deferred deletions (done by the next esper.process()), and the
    counter: the next entity gets the id the saved world would have given."""
    for _ in range(4):
        esper.create_entity()
    esper.delete_entity(1, immediate=True)
    esper.delete_entity(4, immediate=True)  # the newest: its id is not handed out again
    esper.add_component(2, Tag(1, 1), type_alias=Position)
    esper.add_component(3, AABB(1, 1))
    esper.delete_entity(3)
    data = pickle.dumps(save_world())
    esper.switch_world(world + "-restored")
    try:
        restore_world(pickle.loads(data))
        assert sorted(esper.get_entities()) == [2, 3]
        assert type(esper.component_for_entity(2, Position)) is Tag
        assert not esper.entity_exists(3) and esper.has_component(3, AABB)
        esper.process()
        assert sorted(esper.get_entities()) == [2]
        assert esper.create_entity() == 5
    finally:
        esper.switch_world(world)
        esper.delete_world(world + "-restored")


def test_a_restored_watcher_keeps_its_neighbours_and_hysteresis(world: str) -> None:
    """After a restore a watcher's Proximity is the world's own, with its neighbours, and
    its radius assignments still reach the processor."""
    spatial = SpatialProcessor(events=())
    esper.add_processor(spatial, priority=1)
    esper.add_processor(ProximityProcessor(spatial))
    w = esper.create_entity(Position(0, 0), Proximity(10, exit_radius=20))
    other = esper.create_entity(Position(5, 0), AABB(1, 1))
    esper.process()
    esper.component_for_entity(other, Position).x = 15  # in the band: stays
    data = pickle.dumps(save_world())
    esper.switch_world(world + "-restored")
    try:
        restore_world(pickle.loads(data))
        log = Log()
        log.attach()
        esper.process()
        watcher = esper.component_for_entity(w, Proximity)
        assert set(watcher.neighbors) == {other} and log.take() == []
        watcher.exit_radius = 12  # takes effect at the next process()
        esper.process()
        assert set(watcher.neighbors) == set()
        assert log.take() == [(PROXIMITY_EXIT, w, other)]
    finally:
        esper.switch_world(world)
        esper.event_registry.clear()
        esper.delete_world(world + "-restored")


# -- errors -------------------------------------------------------------------------------------


def _restorable() -> WorldState:
    """A state of a small world with a processor, loaded from its pickle."""
    with fresh_world("source"):
        esper.add_processor(SpatialProcessor())
        esper.create_entity(Position(0, 0), AABB(1, 1))
        esper.process()
        return pickle.loads(pickle.dumps(save_world()))  # type: ignore[no-any-return]


@pytest.mark.parametrize("occupant", ["entity", "processor", "dead entity"])
def test_restore_into_a_world_that_is_not_empty_is_refused(world: str, occupant: str) -> None:
    """A world with an entity (even one marked for deletion) or a processor is refused,
    naming the world and what it holds, and left as it was."""
    if occupant == "processor":
        esper.add_processor(Drift())
    else:
        entity = esper.create_entity(Position(9, 9))
        if occupant == "dead entity":
            esper.delete_entity(entity)
    before = (list(esper.get_entities()), list(esper._processors))
    state = _restorable()
    with pytest.raises(RuntimeError, match=rf"esper world {re.escape(repr(world))} is not empty"):
        restore_world(state)
    assert (list(esper.get_entities()), list(esper._processors)) == before
    esper.process()
    esper.remove_processor(Drift)
    esper.clear_database()  # emptied, it takes the state
    restore_world(state)
    assert list(esper.get_entities()) == [1]


def test_a_state_is_restored_once_and_never_while_its_world_lives(world: str) -> None:
    """The state save_world() returned holds the live world's objects: restoring it is
    refused, naming that world; a loaded state restores once, and its pickle again."""
    esper.add_processor(SpatialProcessor())
    esper.create_entity(Position(0, 0), AABB(1, 1))
    live = save_world()
    data = pickle.dumps(live)
    other = world + "-other"
    esper.switch_world(other)
    try:
        shown = re.escape(repr(world))
        with pytest.raises(ValueError, match=rf"processor of esper world {shown} already"):
            restore_world(live)
        assert list(esper.get_entities()) == []
        loaded = pickle.loads(data)
        restore_world(loaded)
        esper.process()
        esper.switch_world(world + "-third")
        shown = re.escape(repr(other))
        with pytest.raises(ValueError, match=rf"restored already, into esper world {shown}"):
            restore_world(loaded)
        assert list(esper.get_entities()) == []
        restore_world(pickle.loads(data))  # a fresh load of the same save
        assert list(esper.get_entities()) == [1]
    finally:
        esper.switch_world(world)
        for name in (other, world + "-third"):
            if name in esper.list_worlds():
                esper.delete_world(name)


def test_bad_states_are_refused_before_any_change(world: str) -> None:
    """Anything but a WorldState is a TypeError; a state whose ids, deletions, counter or
    processors do not describe a world is a ValueError naming the fault; the world stays
    empty; a pickle of another format is refused when loaded."""
    with pytest.raises(TypeError, match="takes a WorldState, got dict"):
        restore_world({})  # type: ignore[arg-type]
    faults = [
        ("next_id", 0, "next_id must be an int >= 1, got 0"),
        ("next_id", 1, r"ids must be ints from 1 to next_id - 1 \(0\), got 1"),
        ("dead", [99], "marks entity 99 dead, but has no such entity"),
        ("entities", {1: {"Position": 1}}, "entity 1: components must be a dict keyed by type"),
        ("processors", [(object(), 0)], "is not an esper.Processor"),
        ("processors", [(Drift(), 1.5)], "priority of .* must be an int, got 1.5"),
    ]
    for field, value, message in faults:
        state = _restorable()
        setattr(state, field, value)
        with pytest.raises(ValueError, match=message):
            restore_world(state)
        assert list(esper.get_entities()) == [] and esper._processors == []
    state = _restorable()
    state.format = 99
    with pytest.raises(ValueError, match="format 99; this ecs_spatial reads format 2"):
        pickle.loads(pickle.dumps(state))


def test_a_loaded_state_changed_before_its_restore_is_restored_as_it_is_now(world: str) -> None:
    """restore_world takes what loading a state found (its tables and each type's holders)
    only while the state's entities are what was loaded: a component added to an entity's
    table, or an entity added, after loading is restored and filed like any other, and a
    bad one is refused naming it."""
    state = _restorable()
    state.entities[1][Look] = Look((1, 2, 3))
    restore_world(state)
    assert [e for e, _ in esper.get_component(Look)] == [1]
    assert esper.component_for_entity(1, Look) == Look((1, 2, 3))
    state = _restorable()
    state.entities[1]["Look"] = Look((1, 2, 3))  # type: ignore[index]
    esper.switch_world(f"{world}-second")
    try:
        with pytest.raises(ValueError, match="entity 1: components must be a dict keyed by type"):
            restore_world(state)
        assert list(esper.get_entities()) == []
    finally:
        esper.switch_world(world)
        esper.delete_world(f"{world}-second")

def test_a_pickle_of_format_1_loads(world: str) -> None:
    """A WorldState pickled before the columns (format 1: its entities a dict of dicts,
    with the SpatialProcessor's and the index's older layouts) loads with the same
    entities, components shared the same way, and restores to the same next frame."""
    holder = _populate([{"position": ["new", "shared", "tag", "int"][i % 4], "aabb": "new",
                         "extra": ["look", "named"], "held": i % 3 == 0, "fate": "live",
                         "x": 6.0 * i, "y": 2.0} for i in range(12)])
    state = save_world()
    shape = _shape(state, holder)
    data = _pickled_in_previous_layout(state)
    assert b"groups" not in data  # format 1 indeed
    loaded = pickle.loads(data)
    assert _shape(loaded, _holder(loaded)) == shape
    log = Log()
    log.attach()
    esper.switch_world(f"{world}-old")
    try:
        restore_world(loaded)
        log.attach()
        esper.process()
        spatial = esper.get_processor(SpatialProcessor)
        assert isinstance(spatial, SpatialProcessor)
        after = (log.take(), sorted(spatial.pairs), spatial.state_hash())
    finally:
        esper.event_registry.clear()
        esper.switch_world(world)
        esper.delete_world(f"{world}-old")
    esper.process()
    spatial = esper.get_processor(SpatialProcessor)
    assert isinstance(spatial, SpatialProcessor)
    assert (log.take(), sorted(spatial.pairs), spatial.state_hash()) == after

def test_save_world_refuses_a_processor_of_another_world(world: str) -> None:
    """save_world(processors=...) takes processors of the current world only."""
    shown = re.escape(repr(world))
    with pytest.raises(ValueError, match=rf"is not a processor of esper world {shown}"):
        save_world(processors=[SpatialProcessor()])


def test_a_view_that_cannot_be_pickled_fails_the_pickle_not_the_save(world: str) -> None:
    """save_world() takes whatever the world holds; a lambda view fails in pickle, which
    names it (the guide says: use a Box or a bound method of a picklable camera)."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    esper.add_processor(CullingProcessor(spatial, lambda: Box(0, 0, 1, 1)))
    state = save_world()
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        pickle.dumps(state)


# -- the columns: what a save keeps of sharing, classes and values ---------------------------


@dataclass(slots=True)
class Look:
    """A game's own slotted dataclass (saved as a column of its fields)."""

    color: tuple[int, int, int]


class Named:
    """A game's own class with a ``__dict__`` (saved as a column of its fields)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Named({vars(self)!r})"


class Restoring:
    """A slotted class with a ``__setstate__`` of its own, which pickle calls."""

    __slots__ = ("restored", "value")

    def __init__(self, value: int) -> None:
        self.value = value
        self.restored = False

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        self.value = state[1]["value"]
        self.restored = True

    def __repr__(self) -> str:
        return f"Restoring({self.value})"


class Reducing:
    """A class that pickles by its own ``__reduce__`` (left to pickle)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __reduce__(self) -> tuple[Any, ...]:
        return (Reducing, (self.n,))

    def __repr__(self) -> str:
        return f"Reducing({self.n})"


class Holder(esper.Processor):
    """A game's processor that holds some components itself: they must stay the world's."""

    def __init__(self) -> None:
        self.held: list[Any] = []

    def process(self, *args: Any, **kwargs: Any) -> None:
        for component in self.held:
            if isinstance(component, PyPosition | Position):
                component.x += 0.5


#: One entity of a generated world: for each of Position, AABB and the game's components,
#: a new one, the one of an earlier entity (shared), or none; and what happens to it.
ENTITY = st.fixed_dictionaries({
    "position": st.sampled_from(["new", "tag", "alias", "int", "shared", None]),
    "aabb": st.sampled_from(["new", "new", "shared", "int", None]),
    "extra": st.lists(st.sampled_from(["look", "shared look", "named", "restoring", "reducing",
                                       "continuous", "filter"]), max_size=3, unique=True),
    "held": st.booleans(),
    "fate": st.sampled_from(["live", "live", "live", "moved", "deleted", "gone"]),
    "x": st.floats(0, 150), "y": st.floats(0, 150),
})


def _populate(specs: list[dict[str, Any]]) -> Holder:
    """The generated world in the current esper world, one frame run; returns its Holder."""
    holder = Holder()
    esper.add_processor(SpatialProcessor(Box(0, 0, 200, 200), threshold=2), priority=10)
    esper.add_processor(holder, priority=20)
    made: dict[str, list[Any]] = {"position": [], "aabb": [], "look": []}
    entities = []
    for spec in specs:
        entity = esper.create_entity()
        entities.append(entity)
        kind = spec["position"]
        if kind == "shared" and made["position"]:
            esper.add_component(entity, made["position"][entity % len(made["position"])],
                                type_alias=Position)
        elif kind == "tag":
            esper.add_component(entity, Tag(spec["x"], spec["y"]))
        elif kind in ("new", "alias", "int"):
            pos = Tag(spec["x"], spec["y"]) if kind == "alias" else Position(spec["x"], spec["y"])
            if kind == "int":
                pos.x = int(spec["x"])  # assigned, unchecked: kept an int
            esper.add_component(entity, pos, type_alias=Position)
            made["position"].append(pos)
        kind = spec["aabb"]
        if kind == "shared" and made["aabb"]:
            esper.add_component(entity, made["aabb"][entity % len(made["aabb"])])
        elif kind in ("new", "int"):
            aabb = AABB(4.0 + entity % 7, 5.0)
            if kind == "int":
                aabb.width = 3
            esper.add_component(entity, aabb)
            made["aabb"].append(aabb)
        for extra in spec["extra"]:
            if extra == "shared look" and made["look"]:
                esper.add_component(entity, made["look"][0])
            elif extra in ("look", "shared look"):
                made["look"].append(Look((entity % 256, 2, 3)))
                esper.add_component(entity, made["look"][-1])
            elif extra == "named":
                esper.add_component(entity, Named(f"e{entity}"))
            elif extra == "restoring":
                esper.add_component(entity, Restoring(entity))
            elif extra == "reducing":
                esper.add_component(entity, Reducing(entity))
            elif extra == "continuous":
                esper.add_component(entity, Continuous())
            else:
                esper.add_component(entity, CollisionFilter(category=1 + entity % 2))
        if spec["held"]:
            holder.held.extend(esper.components_for_entity(entity))
    esper.process()
    for entity, spec in zip(entities, specs, strict=True):
        if spec["fate"] == "moved" and esper.has_component(entity, Position):
            esper.component_for_entity(entity, Position).x += 7.0  # pending
        elif spec["fate"] == "deleted":
            esper.delete_entity(entity)  # deferred
        elif spec["fate"] == "gone":
            esper.delete_entity(entity, immediate=True)
    return holder


def _shape(state: WorldState, holder: Holder) -> list[Any]:
    """What a state holds, with each object replaced by the order in which it is first met
    (so two states have the same shape when they share the same objects the same way), its
    class and its repr; then the Holder's components and the SpatialProcessor's records the
    same way."""
    seen: dict[int, int] = {}

    def key(obj: Any) -> tuple[Any, ...]:
        return (seen.setdefault(id(obj), len(seen)), type(obj), repr(obj))

    spatial = next(p for p, _ in state.processors if isinstance(p, SpatialProcessor))
    return [
        [(e, [(kind, key(c)) for kind, c in comps.items()]) for e, comps in state.entities.items()],
        [key(c) for c in holder.held],
        [(e, key(rec[0]), key(rec[1])) for e, rec in spatial._members.items()],
        state.dead, state.next_id,
    ]


def _holder(state: WorldState) -> Holder:
    return next(p for p, _ in state.processors if isinstance(p, Holder))


@budget(40)
@given(specs=st.lists(ENTITY, max_size=24), mode=st.sampled_from(["pickle", "deepcopy"]))
def test_a_save_keeps_sharing_classes_and_values(specs: list[dict[str, Any]], mode: str) -> None:
    """Whatever the world holds (Positions and AABBs shared between entities or held by a
    game's processor, subclasses under their own type or an alias, ints assigned unchecked,
    a game's slotted, dict, self-restoring and self-reducing components, entities deleted
    deferred or at once, changes pending), the loaded state holds the same objects shared
    the same way, of the same classes and values, the SpatialProcessor's records hold the
    world's own components, and the next frame gives the unsaved world's events, pairs and
    index."""
    with fresh_world("columns") as name:
        log = Log()
        log.attach()
        holder = _populate(specs)
        log.take()  # the first frame's
        state = save_world()
        shape = _shape(state, holder)
        loaded = copy.deepcopy(state) if mode == "deepcopy" else pickle.loads(pickle.dumps(state))
        assert _shape(loaded, _holder(loaded)) == shape
        assert all(r.restored for e in loaded.entities.values() for r in e.values()
                   if isinstance(r, Restoring))
        twin = f"{name}-loaded"
        esper.switch_world(twin)
        try:
            restore_world(loaded)
            twin_log = Log()
            twin_log.attach()
            for _ in range(3):
                frames = []
                for world, events in ((name, log), (twin, twin_log)):
                    esper.switch_world(world)
                    esper.process()
                    spatial = esper.get_processor(SpatialProcessor)
                    assert isinstance(spatial, SpatialProcessor)
                    frames.append((events.take(), sorted(spatial.pairs), spatial.state_hash()))
                assert frames[0] == frames[1]
        finally:
            esper.switch_world(twin)
            esper.event_registry.clear()
            esper.switch_world(name)
            esper.delete_world(twin)


def test_components_only_the_world_holds_go_as_columns(world: str) -> None:
    """The point of the columns: a world's Positions, AABBs and plain components that
    nothing else holds are saved as buffers and lists of fields, not one pickled object
    each; one held elsewhere (here by a game's processor) is left to pickle."""
    holder = _populate([{"position": "new", "aabb": "new", "extra": ["look", "named"],
                         "held": i == 3, "fate": "live", "x": 10.0 * i, "y": 5.0}
                        for i in range(6)])
    state = save_world().__getstate__()
    ((kinds, ids, columns),) = state["groups"]
    assert kinds == (Position, AABB, Look, Named) and list(ids) == list(range(1, 7))
    # Position and AABB: linked to the SpatialProcessor's records, which save them.
    assert [c[1] for c in columns[:2]] == [bytes([LINKED] * 6)] * 2
    if _columns._PLAIN_STATES:
        assert [c[1] for c in columns[2:]] == [bytes([PLAIN] * 3 + [OBJECT] + [PLAIN] * 2)] * 2
        assert columns[2][2] == [holder.held[2]] and columns[2][4][2] == ("color",)
    else:  # CPython 3.10: no object.__getstate__, so no default state to save by fields
        assert [c[1] for c in columns[2:]] == [bytes([OBJECT] * 6)] * 2
    members = packed_members(state["linked"]._members)
    assert members[1][1] == bytes([FLOATS] * 3 + [OBJECT] + [FLOATS] * 2)
    assert members[1][2] == [holder.held[0]]


def _column_state(world: str) -> dict[str, Any]:
    esper.add_processor(SpatialProcessor())
    for i in range(3):
        esper.create_entity(Position(i, 0), AABB(1, 1), Look((i, i, i)))
    esper.process()
    return save_world().__getstate__()


def _load_state(state: dict[str, Any]) -> WorldState:
    loaded = WorldState.__new__(WorldState)
    loaded.__setstate__(state)
    return loaded


@pytest.mark.parametrize("fault, message", [
    (lambda s: s.update(groups={}), "groups must be a list"),
    (lambda s: s.update(order=[1, 2]), "groups hold 3 entities, not once each of the 2"),
    (lambda s: s.update(order=[1, 1, 2]), "order lists an entity twice"),
    (lambda s: s.update(linked=Drift()), "links components to .*Drift.*, not a SpatialProcessor"),
    (lambda s: s.update(linked=None), "linked to a SpatialProcessor's records, with none"),
    (lambda s: s["groups"].append(s["groups"][0]), "groups hold 6 entities"),
    (lambda s: s["groups"][0][2].pop(), r"not \(types, ids, one column a type\)"),
    (lambda s: s["groups"][0][2].__setitem__(2, ("columns-0",)), "not a column of components"),
    pytest.param(
        lambda s: s["groups"][0][2].__setitem__(2, (*s["groups"][0][2][2][:4], None)),
        "3 entries coded as plain, no states held",
        marks=pytest.mark.skipif(not _columns._PLAIN_STATES,
                                 reason="CPython 3.10 saves no component by its fields"),
    ),
    (lambda s: s["groups"][0][2].__setitem__(2, [Look((0, 0, 0))]),
     "1 components for 3 entities"),
    (lambda s: s["groups"][0][2].__setitem__(2, ("columns-1", b"\x09\x02\x02", [], None, None)),
     "codes must be from 0 to 3"),
])
def test_a_bad_column_state_is_refused_naming_the_fault(
    world: str, fault: Any, message: str
) -> None:
    """A state in columns that no save makes is a ValueError when loaded, naming what is
    wrong (loading changes no world)."""
    state = _column_state(world)
    fault(state)
    with pytest.raises(ValueError, match=message):
        _load_state(state)


def test_bad_floats_of_a_processor_are_refused(world: str) -> None:
    """The SpatialProcessor's float columns are checked the same way."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    esper.create_entity(Position(1, 2), AABB(3, 4))
    esper.process()
    state = spatial.__getstate__()
    ids, positions, aabbs, boxes, stale = state["_members"]
    bad: tuple[Any, ...]
    for bad, message in [
        ((positions[0], positions[1], [], (Look, positions[3][1]), None), "not a class saved"),
        ((positions[0], positions[1], [], (Position, (array("d"),) * 2), None),
         r"1 Positions take 2 arrays\('d'\) of 1 floats"),
        ((positions[0], positions[1], [], (Position, [array("d")]), None), "floats must be"),
    ]:
        state["_members"] = (ids, bad, aabbs, boxes, stale)
        with pytest.raises(ValueError, match=message):
            SpatialProcessor.__new__(SpatialProcessor).__setstate__(dict(state))


#: Run by test_pickles_cross_between_the_builds in a child process of the other build.
_CHILD = """
import pickle, sys
import esper
sys.path.insert(0, {tests!r})
import test_save_restore as t
from ecs_spatial.saving import restore_world
data = sys.stdin.buffer.read()
esper.switch_world("child")
restore_world(pickle.loads(data))
log = t.Log(); log.attach()
esper.process()
spatial = esper.get_processor(t.SpatialProcessor)
print(repr((log.take(), sorted(spatial.pairs), spatial.state_hash())))
"""


@pytest.mark.parametrize("child_pure", [True, False])
def test_pickles_cross_between_the_builds(world: str, child_pure: bool) -> None:
    """A world pickled by one build (compiled or ECS_SPATIAL_PURE=1) loads in the other,
    its next frame the same."""
    if not child_pure and components._twins is None:
        pytest.skip("the compiled core is not built")
    specs = [{"position": ["new", "shared", "tag", "int"][i % 4], "aabb": "new",
              "extra": ["look", "named", "reducing"][: i % 4], "held": i % 5 == 0,
              "fate": ["live", "moved", "deleted"][i % 3], "x": 7.0 * i, "y": 3.0 * i}
             for i in range(30)]
    _populate(specs)
    data = pickle.dumps(save_world())
    log = Log()
    log.attach()
    esper.switch_world(f"{world}-twin")
    try:
        restore_world(pickle.loads(data))
        log.attach()
        esper.process()
        spatial = esper.get_processor(SpatialProcessor)
        assert isinstance(spatial, SpatialProcessor)
        here = (log.take(), sorted(spatial.pairs), spatial.state_hash())
    finally:
        esper.event_registry.clear()
        esper.switch_world(world)
        esper.delete_world(f"{world}-twin")
    env = {**os.environ, "ECS_SPATIAL_PURE": "1" if child_pure else "0"}
    tests = os.path.dirname(os.path.abspath(__file__))
    child = subprocess.run(
        [sys.executable, "-c", _CHILD.format(tests=tests)], input=data, env=env,
        capture_output=True, check=False, cwd=os.path.dirname(tests), timeout=120,
    )
    assert child.returncode == 0, child.stderr.decode()
    assert child.stdout.decode().strip() == repr(here)


def test_saving_and_loading_keeps_no_reference(world: str) -> None:
    """Saving, loading and restoring over and over leaves the reference counts of the
    classes and of the world's components as they were, and no memory an entity behind (a
    few hundred bytes a round stay, whatever the world's size, as they did before the
    columns: a world of 200 entities keeping one object of each would keep 1 MB here)."""
    holder = _populate([{"position": "new", "aabb": "new", "extra": ["look", "named"],
                         "held": i == 0, "fate": "live", "x": 0.5 * i, "y": 1.0}
                        for i in range(200)])
    watched = [Position, AABB, Look, Named, *holder.held, *esper.components_for_entity(5)]

    def loop(rounds: int) -> None:
        for _ in range(rounds):
            data = pickle.dumps(save_world())
            esper.switch_world(f"{world}-again")
            restore_world(pickle.loads(data))
            esper.switch_world(world)
            esper.delete_world(f"{world}-again")

    assert_loop_keeps_nothing(loop, watched, warm=20, first=20, more=100, slack=100 * 512)


def main(argv: list[str] | None = None) -> int:
    """Run the side-by-side driver on many seeds, for longer than the test suite does."""

    def run(seed: int, frames: int) -> None:
        run_side_by_side(seed, frames)

    return stress_main(__doc__ or "", run, argv)


if __name__ == "__main__":
    sys.exit(main())


def _unpack_outcome(packed: Any) -> tuple[Any, ...]:
    """What ``_columns.unpack`` gives: each component's class, fields' bits and tracking
    slots, or its error's type and text."""
    try:
        made = _columns.unpack(packed, what="the column")
    except Exception as error:  # every error is part of the contract
        return ("raised", type(error), str(error))
    return ("made", [
        (type(c), [struct.pack("<d", v) if type(v) is float else v
                   for v in map(c.__getattribute__, _columns.FIELDS.get(type(c), ()))],
         c._owner, c._sink, c._eid)
        for c in made
    ])


@given(st.sampled_from(("Position", "AABB")),
       st.lists(st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308,
                                 -1e300, math.inf, 2.5, -7.0]) | st.floats(), max_size=24),
       st.sampled_from(["good", "typecode", "length", "count", "class", "subclass",
                        "reference", "list"]))
def test_floats_columns_load_alike_compiled_or_not(
    kind: str, flat: list[float], fault: str
) -> None:
    """A floats column loads to the same components (classes, every field's bits, untracked)
    or is refused with the same error, whether ``_ccomponents.from_columns`` makes them (the
    compiled classes in use) or the classes' ``__new__`` and ``__setstate__`` (the
    reference path, ``ECS_SPATIAL_PURE=1``); a column mixing objects among the floats too."""
    cls = Position if kind == "Position" else AABB
    n = len(_columns.FIELDS[cls])
    rows = len(flat) // n
    columns: list[Any] = [array("d", flat[j : rows * n : n]) for j in range(n)]
    twin = PyPosition if Position is not PyPosition else getattr(components._twins, "Position",
                                                                 Look)
    classes: dict[str, Any] = {"class": CollisionFilter, "reference": twin,
                               "subclass": type("Sub", (cls,), {"__slots__": ()})}
    if fault == "typecode":
        columns[-1] = array("f", columns[-1])
    elif fault == "length":
        columns[0].append(1.0)
    elif fault == "count":
        columns.pop()
    elif fault == "list":
        columns[0] = list(columns[0])
    held = cls(1, 2)
    codes = bytes([FLOATS] * rows + [OBJECT])
    packed = ("columns-1", codes, [held], (classes.get(fault, cls), tuple(columns)), None)
    compiled = _unpack_outcome(packed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_columns, "_MADE_IN_C", frozenset())
        reference = _unpack_outcome(packed)
    assert compiled == reference
    if fault == "good":
        assert compiled[0] == "made" and len(compiled[1]) == rows + 1
    else:
        assert compiled[0] == "raised" and compiled[1] is ValueError
