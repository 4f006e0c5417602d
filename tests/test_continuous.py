"""Continuous collision (``Continuous`` and ``collision_swept``) against a brute-force model,
and the SpatialProcessor's casts with ``mask=`` and its ``cast_log``."""

from __future__ import annotations

import collections
import random
from collections.abc import Iterator
from typing import Any

import esper
import pytest
from _event_model import accepts, model_box, model_pairs
from _worlds import fresh_world
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_spatial import (
    AABB,
    COLLISION,
    COLLISION_ENTER,
    COLLISION_EXIT,
    COLLISION_SWEPT,
    Box,
    CastRecord,
    CollisionFilter,
    Continuous,
    Position,
    SpatialProcessor,
)
from ecs_spatial.geometry import sweep_time


@pytest.fixture
def world() -> Iterator[str]:
    with fresh_world("swept") as name:
        yield name


class Recorder:
    """Every collision event, in the order delivered; holds its handlers (esper's are weak)."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.handlers = {
            name: self._handler(name)
            for name in (COLLISION_EXIT, COLLISION_SWEPT, COLLISION_ENTER, COLLISION)
        }
        for name, handler in self.handlers.items():
            esper.set_handler(name, handler)

    def _handler(self, name: str) -> Any:
        def handle(*args: Any) -> None:
            self.log.append((name, *args))

        return handle

    def take(self) -> list[tuple[Any, ...]]:
        log, self.log = self.log, []
        return log


def test_a_bullet_through_thin_walls_reports_each_wall(world: str) -> None:
    """A bullet that crosses three thin walls in one frame: a swept event for each, by t,
    and nothing once it rests clear of them."""
    recorder = Recorder()
    esper.add_processor(SpatialProcessor())
    walls = [esper.create_entity(Position(x, 0), AABB(1, 100)) for x in (30, 50, 70)]
    bullet = esper.create_entity(Position(0, 50), AABB(2, 2), Continuous())
    esper.process()
    assert recorder.take() == []
    esper.component_for_entity(bullet, Position).x = 100
    esper.process()
    assert recorder.take() == [
        (COLLISION_SWEPT, bullet, walls[0], 0.28),
        (COLLISION_SWEPT, bullet, walls[1], 0.48),
        (COLLISION_SWEPT, bullet, walls[2], 0.68),
    ]
    esper.process()
    assert recorder.take() == []


def test_swept_comes_after_exits_and_before_enters(world: str) -> None:
    """A frame's order: exits, swept contacts, enters, then the collision stays; a pair that
    overlaps at the end gets its enter, not a swept event."""
    recorder = Recorder()
    esper.add_processor(SpatialProcessor())
    left = esper.create_entity(Position(0, 0), AABB(10, 10))
    wall = esper.create_entity(Position(50, 0), AABB(1, 10))
    target = esper.create_entity(Position(90, 0), AABB(10, 10))
    bullet = esper.create_entity(Position(5, 0), AABB(2, 2), Continuous())
    esper.process()
    recorder.take()
    esper.component_for_entity(bullet, Position).x = 92
    esper.process()
    assert recorder.take() == [
        (COLLISION_EXIT, left, bullet),
        (COLLISION_SWEPT, bullet, wall, 43 / 87),
        (COLLISION_ENTER, target, bullet),
        (COLLISION, target, bullet),
    ]


def test_not_swept_when_created_teleported_or_newly_continuous(world: str) -> None:
    """No sweep in the frame an entity joins, after teleported(), or in the frame after it
    gained Continuous; a removed Continuous stops the sweeps."""
    recorder = Recorder()
    esper.add_processor(SpatialProcessor())
    wall = esper.create_entity(Position(50, 0), AABB(1, 100))
    bullet = esper.create_entity(Position(0, 50), AABB(2, 2))
    esper.process()
    pos = esper.component_for_entity(bullet, Position)
    esper.add_component(bullet, Continuous())
    pos.x = 100
    esper.process()
    assert recorder.take() == []  # gained Continuous in this frame: its sweeps start now
    pos.x = 0
    esper.component_for_entity(bullet, Continuous).teleported()
    esper.process()
    assert recorder.take() == []
    pos.x = 100
    esper.process()
    assert recorder.take() == [(COLLISION_SWEPT, bullet, wall, 0.48)]
    esper.remove_component(bullet, Continuous)
    pos.x = 0
    esper.process()
    assert recorder.take() == []
    fresh = esper.create_entity(Position(100, 10), AABB(2, 2), Continuous())
    esper.process()
    esper.component_for_entity(fresh, Position).x = 0
    esper.process()
    assert recorder.take() == [(COLLISION_SWEPT, fresh, wall, 49 / 100)]


def test_filters_and_deletion_rule(world: str) -> None:
    """A wall the filters exclude is not reported; a swept event whose wall a handler
    deleted first is not delivered; a raising handler loses no event."""
    esper.add_processor(SpatialProcessor())
    ghost = esper.create_entity(Position(20, 0), AABB(1, 100), CollisionFilter(category=2, mask=2))
    walls = [esper.create_entity(Position(x, 0), AABB(1, 100)) for x in (40, 60, 80)]
    bullet = esper.create_entity(Position(0, 50), AABB(2, 2), Continuous())
    esper.process()
    calls: list[tuple[int, int, float]] = []

    def fragile(mover: int, other: int, t: float) -> None:
        calls.append((mover, other, t))
        if other == walls[0]:
            esper.delete_entity(walls[1], immediate=True)
            raise RuntimeError("boom")

    esper.set_handler(COLLISION_SWEPT, fragile)
    esper.component_for_entity(bullet, Position).x = 100
    with pytest.raises(RuntimeError, match="boom"):
        esper.process()
    esper.process()
    assert ghost not in {other for _, other, _ in calls}
    assert calls == [(bullet, walls[0], 0.38), (bullet, walls[2], 0.78)]


# -- the model ----------------------------------------------------------------------------------


class SweptModel:
    """Brute-force truth of a frame's events: pairs by testing every two boxes, swept
    contacts by ``sweep_time`` of every mover against every other box."""

    def __init__(self) -> None:
        self.pairs: set[tuple[int, int]] = set()
        self.before: dict[int, Box] = {}

    def frame(self, continuous_since: dict[int, bool]) -> list[tuple[Any, ...]]:
        boxes = {e: model_box(pos, aabb) for e, (pos, aabb) in esper.get_components(Position, AABB)}

        def accepted(a: int, b: int) -> bool:
            flt = CollisionFilter
            return accepts(esper.try_component(a, flt), esper.try_component(b, flt))

        now = model_pairs()
        exits = sorted(self.pairs - now)
        swept = []
        for mover, sweeps in continuous_since.items():
            start = self.before.get(mover)
            if not sweeps or start is None or mover not in boxes:
                continue
            end = boxes[mover]
            dx, dy = end.min_x - start.min_x, end.min_y - start.min_y
            if dx == 0 and dy == 0:
                continue
            for other, box in boxes.items():
                pair = (min(mover, other), max(mover, other))
                if other == mover or pair in now or pair in self.pairs or not accepted(*pair):
                    continue
                t = sweep_time(start, dx, dy, box)
                if t is not None:
                    swept.append((t, mover, other))
        events: list[tuple[Any, ...]] = [(COLLISION_EXIT, *p) for p in exits]
        events += [(COLLISION_SWEPT, m, o, t) for t, m, o in sorted(swept)]
        events += [(COLLISION_ENTER, *p) for p in sorted(now - self.pairs)]
        events += [(COLLISION, *p) for p in sorted(now)]
        self.pairs = now
        self.before = boxes
        return events


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_swept_events_match_the_model(seed: int) -> None:
    """Random frames of fast movers (some Continuous, some teleporting, some gaining or
    losing the component) among thin walls, zero-size and huge boxes: every event, in
    order, is the model's."""
    rng = random.Random(seed)
    with fresh_world("swept_model"):
        recorder = Recorder()
        esper.add_processor(SpatialProcessor())
        model = SweptModel()
        for _ in range(12):
            x, y = rng.uniform(-50, 150), rng.uniform(-50, 150)
            w, h = rng.choice([(1, 60), (60, 1), (0, 0), (0, 30), (1e6, 1)])
            flt = [CollisionFilter(category=2, mask=2)] if rng.random() < 0.15 else []
            esper.create_entity(Position(x, y), AABB(w, h), *flt)
        movers = [
            esper.create_entity(
                Position(rng.uniform(0, 100), rng.uniform(0, 100)),
                AABB(rng.choice([0, 1, 3]), rng.choice([0, 1, 3])),
                *([Continuous()] if rng.random() < 0.7 else []),
            )
            for _ in range(8)
        ]
        # whether each Continuous mover is swept in the coming frame
        sweeps = {m: True for m in movers if esper.has_component(m, Continuous)}
        esper.process()
        assert recorder.take() == model.frame({})
        for frame in range(25):
            for mover in movers:
                if not esper.entity_exists(mover):
                    continue
                pos = esper.component_for_entity(mover, Position)
                roll = rng.random()
                if roll < 0.7:
                    pos.x += rng.uniform(-120, 120)
                    pos.y += rng.choice([0.0, rng.uniform(-120, 120)])
                if mover in sweeps and rng.random() < 0.1:
                    esper.component_for_entity(mover, Continuous).teleported()
                    sweeps[mover] = False
                if roll > 0.95:
                    if mover in sweeps:
                        esper.remove_component(mover, Continuous)
                        del sweeps[mover]
                    else:
                        esper.add_component(mover, Continuous())
                        sweeps[mover] = False  # its sweeps start at this frame
            esper.process()
            assert recorder.take() == model.frame(sweeps), f"seed {seed} frame {frame}"
            sweeps = dict.fromkeys(sweeps, True)


# -- the processor's casts ---------------------------------------------------------------------


def test_casts_with_mask_and_the_cast_log(world: str) -> None:
    """Each cast through the processor is the index's, kept to the mask, and recorded."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    near = esper.create_entity(Position(20, 0), AABB(2, 10), CollisionFilter(category=2))
    far = esper.create_entity(Position(60, 0), AABB(2, 10))
    esper.process()
    spatial.cast_log = collections.deque(maxlen=4)
    assert spatial.cast_box((0, 0, 5, 5), 100, 0) == [(near, 0.15), (far, 0.55)]
    assert spatial.cast_box((0, 0, 5, 5), 100, 0, mask=1) == [(far, 0.55)]
    assert spatial.cast_box_first((0, 0, 5, 5), 100, 0) == (near, 0.15)
    assert spatial.cast_box_first((0, 0, 5, 5), 100, 0, mask=1) == (far, 0.55)
    assert spatial.raycast_first(0, 5, 100, 5, mask=1) == (far, 0.6)
    assert spatial.raycast_first(0, 5, 100, 5, mask=4) is None
    assert list(spatial.cast_log) == [  # the last four
        CastRecord(Box(0, 0, 5, 5), 100.0, 0.0, ((near, 0.15),)),
        CastRecord(Box(0, 0, 5, 5), 100.0, 0.0, ((far, 0.55),)),
        CastRecord(Box(0, 5, 0, 5), 100.0, 0.0, ((far, 0.6),)),
        CastRecord(Box(0, 5, 0, 5), 100.0, 0.0, ()),
    ]
    with pytest.raises(TypeError, match="mask must be an int"):
        spatial.cast_box_first((0, 0, 5, 5), 1, 0, mask="all")  # type: ignore[arg-type]
