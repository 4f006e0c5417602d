"""All three processors against brute-force models while faults are injected at random.

A world with a SpatialProcessor, a CullingProcessor and a ProximityProcessor runs random
frames. Before each, the world changes at random (moves, creations, deletions, filters,
watchers, extreme coordinates: near +-1.7e308, subnormals, ints past 2**53, far outside the
bounds hint) and so do the faults: handlers that raise at a random event of any kind,
handlers that delete an entity an event names (immediately or deferred), that make
something in another world and come back, that clear the database and make new entities
(which take the old ids), that switch to another world and stay there (a scene change: the
test switches back after the frame); followers taken out of the world for a few frames and
put back, ``esper.clear_database()``, and the world deleted and made again under the same
name.

After every frame, also one that raised, the events the handlers were given must be exactly
what ``_event_model`` expects from the brute-force truth (each delivered once, in order, by
the deletion rule, balanced per key), and the index (every box), ``pairs``, ``visible`` and
every watcher's ``neighbors`` must equal the models'. A raise in the delivery of what an
earlier raise left pending does not skip the frame: the models work it out all the same and
queue its events behind; a handler there that switches worlds leaves the frame for the
next ``process()``; a handler that clears the database ends the old world's arrivals at once
(a follower that runs after it in the same ``process()`` sees nothing of its source, which
still describes the old world). A second driver makes a handler raise, clear the database
or switch worlds at every position of a frame that starts with events pending in all three
processors. The seeded driver runs longer from the command line:

    python tests/test_fault_model.py --seeds 300 --frames 200
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import esper
import pytest
from _budget import SOAK_EXAMPLES, SOAK_STEPS
from _event_model import FaultyRecorder, Frame, InjectedFault, OutboxModel
from _worlds import fresh_world, stress_main

from ecs_spatial.components import AABB, DEFAULT_FILTER, CollisionFilter, Position
from ecs_spatial.culling import CullingProcessor
from ecs_spatial.events import (
    COLLISION,
    COLLISION_ENTER,
    COLLISION_EXIT,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    VIEW_ENTER,
    VIEW_EXIT,
)
from ecs_spatial.geometry import Box
from ecs_spatial.proximity import Proximity, ProximityProcessor
from ecs_spatial.spatial_processor import SpatialProcessor

pytestmark = pytest.mark.usefixtures("membership")

Pair = tuple[int, int]
Filter = tuple[int, int, int]
_TINY = 5e-324
_HUGE = 1.6e308


class Snapshot(esper.Processor):
    """Runs first in every ``esper.process()``: reads the world the slow, obvious way."""

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.alive = {e for e in esper.get_entities() if esper.entity_exists(e)}
        self.boxes: dict[int, Box] = {}
        self.positions: dict[int, tuple[float, float]] = {}
        self.filters: dict[int, Filter] = {}
        self.watchers: dict[int, tuple[float, int]] = {}
        for e in list(esper.get_entities()):
            pos = esper.try_component(e, Position)
            aabb = esper.try_component(e, AABB)
            if pos is not None:
                self.positions[e] = (pos.x, pos.y)
            if pos is not None and aabb is not None:
                x0 = pos.x + aabb.offset_x + 0.0
                y0 = pos.y + aabb.offset_y + 0.0
                self.boxes[e] = Box(x0, y0, x0 + aabb.width, y0 + aabb.height)
            flt = esper.try_component(e, CollisionFilter)
            if flt is not None:
                self.filters[e] = (flt.category, flt.mask, flt.group)
            prox = esper.try_component(e, Proximity)
            if prox is not None:
                self.watchers[e] = (prox.radius, prox.mask)


def accepts(a: Filter, b: Filter) -> bool:
    """The collision rule from the issue's words."""
    return bool(a[0] & b[1]) and bool(b[0] & a[1]) and not (a[2] != 0 and a[2] == b[2])


class Model:
    """The truth of each processor, its outbox, and the database it last saw."""

    def __init__(self) -> None:
        self.outbox = OutboxModel()
        self.database: int | None = None

    def fresh_database(self, database: int) -> bool:
        fresh = self.database is not None and self.database != database
        self.database = database
        return fresh

    def check(self, frame: Frame) -> None:
        """At the start of a process(), and after its owed delivery (whose handlers may have
        cleared the database): a new database makes the processor start afresh."""
        if self.fresh_database(frame.database):
            self.outbox.forget_arrivals()
            self.forget()

    def forget(self) -> None:
        """Queue an exit for everything reported, and forget it."""
        raise NotImplementedError


class SpatialModel(Model):
    def __init__(self) -> None:
        super().__init__()
        self.pairs: set[Pair] = set()
        self.index: dict[int, Box] = {}
        self.filters: dict[int, Filter] = {}

    def forget(self) -> None:
        self.outbox.post(COLLISION_EXIT, sorted(self.pairs))
        self.pairs, self.index, self.filters = set(), {}, {}

    def run(self, frame: Frame, ctx: str) -> bool:
        self.check(frame)
        # The frame is worked out even when the pending delivery raises (then its events
        # wait behind what is still pending), not when it switched worlds.
        owed_delivered = self.outbox.deliver(frame, ctx + " spatial pending")
        if frame.left:
            return False
        self.check(frame)
        snap = frame.world
        gone = frame.deleted_now
        self.index = {e: b for e, b in snap.boxes.items() if e not in gone}
        self.filters = {e: f for e, f in snap.filters.items() if e not in gone}
        ids = sorted(self.index)
        now = set()
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                if self.index[a].intersects(self.index[b]) and accepts(
                    self.filters.get(a, DEFAULT_FILTER), self.filters.get(b, DEFAULT_FILTER)
                ):
                    now.add((a, b))
        self.outbox.post(COLLISION_EXIT, sorted(self.pairs - now))
        self.outbox.post(COLLISION_ENTER, sorted(now - self.pairs))
        self.outbox.post(COLLISION, sorted(now))
        self.pairs = now
        return owed_delivered and self.outbox.deliver(frame, ctx + " spatial")


class Follower(Model):
    """A processor that reads the SpatialProcessor's index, once that has seen the current
    database (until then it describes the old world: the follower sees nothing)."""

    def run(self, frame: Frame, spatial: SpatialModel, ctx: str) -> bool:
        name = type(self).__name__
        self.check(frame)
        owed_delivered = self.outbox.deliver(frame, f"{ctx} {name} pending")
        if frame.left:
            return False
        self.check(frame)
        if spatial.database != frame.database:
            return owed_delivered and self.outbox.deliver(frame, f"{ctx} {name} exits")
        self.work_out(frame, spatial)
        return owed_delivered and self.outbox.deliver(frame, f"{ctx} {name}")

    def work_out(self, frame: Frame, spatial: SpatialModel) -> None:
        raise NotImplementedError


class CullingModel(Follower):
    def __init__(self, view: Callable[[], Box]) -> None:
        super().__init__()
        self.view = view
        self.visible: set[int] = set()

    def forget(self) -> None:
        self.outbox.post(VIEW_EXIT, sorted(self.visible))
        self.visible = set()

    def work_out(self, frame: Frame, spatial: SpatialModel) -> None:
        view = self.view()
        now = {e for e, box in spatial.index.items() if box.intersects(view)}
        self.outbox.post(VIEW_EXIT, sorted(self.visible - now))
        self.outbox.post(VIEW_ENTER, sorted(now - self.visible))
        self.visible = now


class ProximityModel(Follower):
    def __init__(self) -> None:
        super().__init__()
        self.pairs: set[Pair] = set()

    def forget(self) -> None:
        self.outbox.post(PROXIMITY_EXIT, sorted(self.pairs))
        self.pairs = set()

    def work_out(self, frame: Frame, spatial: SpatialModel) -> None:
        snap = frame.world
        now = set()
        for w, (radius, mask) in snap.watchers.items():
            if w in frame.deleted_now:
                continue
            box = spatial.index.get(w)
            centre = box.center if box is not None else snap.positions.get(w)
            if centre is None:
                continue
            for o, other in spatial.index.items():
                category = spatial.filters.get(o, DEFAULT_FILTER)[0]
                if o != w and category & mask and other.distance_to_point(*centre) <= radius:
                    now.add((w, o))
        self.outbox.post(PROXIMITY_EXIT, sorted(self.pairs - now))
        self.outbox.post(PROXIMITY_ENTER, sorted(now - self.pairs))
        self.pairs = now


# -- the world ---------------------------------------------------------------------------------


def coordinate(rng: random.Random) -> float:
    """Mostly inside the 64 x 64 bounds hint; sometimes at the edges of the float range."""
    roll = rng.random()
    if roll < 0.85:
        return round(rng.uniform(-4.0, 60.0), 1)
    return rng.choice([
        rng.uniform(-1.0, 1.0) * _HUGE, -_HUGE, _HUGE, _TINY, -_TINY, 2.0**-1060,
        float(2**53 + 1), float(-(2**53) - 1), rng.uniform(-1e6, 1e6),
    ])


def size(rng: random.Random) -> float:
    return rng.choice([0.0, _TINY, 2.0, 6.0, rng.uniform(0.0, 16.0), 1e300])


def new_entity(rng: random.Random) -> int:
    comps: list[Any] = [Position(coordinate(rng), coordinate(rng)), AABB(size(rng), size(rng))]
    if rng.random() < 0.3:
        comps.append(CollisionFilter(rng.choice([1, 2, 3]), rng.choice([1, 2, 3, 0xFFFFFFFF])))
    if rng.random() < 0.25:
        comps.append(Proximity(rng.choice([0.0, 3.0, 12.0, 1e300, _HUGE]), rng.choice([1, 3])))
    return esper.create_entity(*comps)


class Harness:
    """The processors, the models, the faults; ``frame()`` runs and checks one frame."""

    PRIORITY: ClassVar[dict[str, int]] = {
        "snapshot": 100, "spatial": 50, "culling": 40, "proximity": 30,
    }

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.spatial = SpatialProcessor(Box(0, 0, 64, 64), threshold=2, max_depth=5)
        self.view = Box(0, 0, 30, 30)
        self.culling = CullingProcessor(self.spatial, lambda: self.view)
        self.proximity = ProximityProcessor(self.spatial)
        self.snapshot = Snapshot()
        self.processors: dict[str, esper.Processor] = {
            "snapshot": self.snapshot, "spatial": self.spatial, "culling": self.culling,
            "proximity": self.proximity,
        }
        self.absent: dict[str, int] = {}  # processor -> frames left out of the world
        self.recorder = FaultyRecorder(rng)
        self.recorder.on_clear = self.make_world
        self.spatial_model = SpatialModel()
        self.culling_model = CullingModel(lambda: self.view)
        self.proximity_model = ProximityModel()
        self.models: dict[str, Model] = {
            "spatial": self.spatial_model, "culling": self.culling_model,
            "proximity": self.proximity_model,
        }
        self.database = 0
        for name, processor in self.processors.items():
            esper.add_processor(processor, priority=self.PRIORITY[name])

    def make_world(self) -> Snapshot:
        """What a handler that cleared the database makes: a few entities (ids from 1
        again), some overlapping, and what the world holds then."""
        for _ in range(self.rng.choice([0, 1, 3, 6])):
            new_entity(self.rng)
        snap = Snapshot()
        snap.process()
        return snap

    def change_world(self, log: list[str]) -> None:
        rng = self.rng
        for _ in range(rng.choice([0, 1, 2, 3, 6])):
            alive = [e for e in esper.get_entities() if esper.entity_exists(e)]
            roll = rng.random()
            if not alive or roll < 0.2:
                log.append(f"create {new_entity(rng)}")
                continue
            e = rng.choice(alive)
            pos = esper.component_for_entity(e, Position)
            if roll < 0.6:
                pos.x, pos.y = coordinate(rng), coordinate(rng)
                log.append(f"move {e} to {pos}")
            elif roll < 0.7:
                immediate = rng.random() < 0.5
                esper.delete_entity(e, immediate=immediate)
                log.append(f"delete {e} immediate={immediate}")
            elif roll < 0.8:
                flt = esper.try_component(e, CollisionFilter)
                if flt is None:
                    esper.add_component(e, CollisionFilter(2, 2))
                else:
                    flt.category = rng.choice([1, 2, 3])
                log.append(f"filter {e}")
            else:
                prox = esper.try_component(e, Proximity)
                if prox is None:
                    esper.add_component(e, Proximity(rng.choice([3.0, 20.0])))
                elif rng.random() < 0.5:
                    esper.remove_component(e, Proximity)
                else:
                    prox.radius = rng.choice([0.0, 5.0, 40.0, _HUGE])
                log.append(f"proximity {e}")
        if rng.random() < 0.3:
            x, y = rng.uniform(-10, 50), rng.uniform(-10, 50)
            self.view = rng.choice([Box(x, y, x + 30, y + 30), self.view.expanded(1.0)])

    def inject_faults(self, log: list[str]) -> None:
        rng = self.rng
        faulty = rng.random() < 0.5
        recorder = self.recorder
        recorder.raise_rate = rng.choice([0.02, 0.1, 0.5]) if faulty else 0.0
        recorder.delete_rate = rng.choice([0.0, 0.05, 0.3])
        recorder.detour_rate = rng.choice([0.0, 0.0, 0.2])
        recorder.clear_rate = rng.choice([0.0, 0.0, 0.0, 0.01, 0.05])
        recorder.leave_rate = rng.choice([0.0, 0.0, 0.0, 0.02, 0.1])
        for name, left in list(self.absent.items()):
            if left <= 1:
                del self.absent[name]
                esper.add_processor(self.processors[name], priority=self.PRIORITY[name])
                log.append(f"re-add {name}")
            else:
                self.absent[name] = left - 1
        roll = rng.random()
        if roll < 0.08:
            name = rng.choice(["spatial", "culling", "proximity"])
            if name not in self.absent:
                esper.remove_processor(type(self.processors[name]))
                self.absent[name] = rng.randrange(1, 4)
                log.append(f"remove {name}")
        elif roll < 0.11:
            esper.clear_database()
            self.database += 1
            log.append("clear_database")
        elif roll < 0.13:
            world = esper.current_world
            esper.switch_world(world + "_elsewhere")
            esper.delete_world(world)
            esper.switch_world(world)  # a new, empty world of the same name
            esper.delete_world(world + "_elsewhere")
            self.recorder.register()
            for name, processor in self.processors.items():
                if name not in self.absent:
                    esper.add_processor(processor, priority=self.PRIORITY[name])
            self.database += 1
            log.append("world remade")

    def frame(self, ctx: str) -> int:
        """Run one ``esper.process()`` and check it; return how many handler calls it made."""
        with contextlib.suppress(InjectedFault):
            esper.process()
        self.recorder.come_back()
        snap = self.snapshot
        calls = self.recorder.calls
        frame = Frame(self.recorder.take(), set(snap.alive), database=self.database, world=snap)
        spatial, culling, proximity = self.spatial_model, self.culling_model, self.proximity_model
        ran = "spatial" in self.absent or spatial.run(frame, ctx)
        if ran and "culling" not in self.absent:
            ran = culling.run(frame, spatial, ctx)
        if ran and "proximity" not in self.absent:
            proximity.run(frame, spatial, ctx)
        frame.done(ctx)
        self.database = frame.database
        assert set(self.spatial.pairs) == spatial.pairs, ctx
        index = self.spatial.index
        assert {e: index[e] for e in index} == spatial.index, ctx
        self.spatial.index.check()
        assert set(self.culling.visible) == culling.visible, ctx
        neighbours = {
            (w, o) for w, p in self.proximity._watchers.items() for o in p.neighbors
        }
        assert neighbours == proximity.pairs, ctx
        return calls


def run_faulty_frames(seed: int, frames: int) -> None:
    rng = random.Random(seed)
    h = Harness(rng)
    h.spatial.pair_search = ("auto", "incremental", "full")[seed % 3]
    for _ in range(rng.randrange(4, 20)):
        new_entity(rng)
    log: list[str] = []
    for n in range(frames):
        h.change_world(log)
        h.inject_faults(log)
        h.frame(f"seed={seed} frame={n} last={log[-8:]}")
    # Quiet frames at the end, every processor back: everything pending is delivered.
    h.recorder.raise_rate = h.recorder.delete_rate = 0.0
    h.recorder.clear_rate = h.recorder.leave_rate = 0.0
    for name in list(h.absent):
        del h.absent[name]
        esper.add_processor(h.processors[name], priority=h.PRIORITY[name])
    for n in range(2):
        h.frame(f"seed={seed} quiet frame {n}")
    for model in h.models.values():
        assert not model.outbox.pending


@pytest.mark.parametrize("seed", range(12 * SOAK_EXAMPLES))
def test_faults_never_lose_or_repeat_an_event(world: str, seed: int) -> None:
    """Handlers that raise or delete, followers removed and re-added, cleared and remade
    worlds, extreme coordinates: every event delivered once, in order, balanced, and every
    processor's state equal to the brute-force model after every frame. (20 times the seeds
    and 4 times the frames under HYPOTHESIS_PROFILE=long.)"""
    run_faulty_frames(seed, frames=40 * SOAK_STEPS)


def run_raise_at(
    seed: int, position: int | None, fault: str = "raise"
) -> tuple[int, dict[str, int]]:
    """A short story whose frame 3 starts with events pending in every processor: frame 0
    raises at the first proximity event, frame 1 at the first view event, frame 2 at the
    first collision event (a processor skipped by a raise upstream keeps its own pending).
    In frame 3 the handler of call number ``position`` (None: none) does the ``fault``:
    raises, clears the database (and makes entities), or switches to another world (the
    test switches back after the frame); its handlers delete entities at random; then
    quiet frames. Every frame is checked against the models. Returns how many calls frame
    3 made, and how many events each processor had pending when it began."""
    rng = random.Random(seed)
    h = Harness(rng)
    for _ in range(10):
        new_entity(rng)
    # Overlapping boxes in view, each a watcher of the others; all but the first leave and
    # come back each frame, so that every processor has events in every frame.
    w = [
        esper.create_entity(Position(x, x), AABB(8.0, 8.0), Proximity(12.0))
        for x in (4.0, 7.0, 10.0, 13.0, 16.0)
    ]
    families = [
        (PROXIMITY_ENTER, PROXIMITY_EXIT), (VIEW_ENTER, VIEW_EXIT),
        (COLLISION_ENTER, COLLISION_EXIT, COLLISION),
    ]
    log: list[str] = []
    for n, names in enumerate(families):
        if n:
            h.change_world(log)
        for e, x in zip(w[1:], (7.0, 10.0, 13.0, 16.0), strict=True):
            if esper.entity_exists(e):
                pos = esper.component_for_entity(e, Position)
                pos.x, pos.y = (x, x) if n % 2 == 0 else (500.0 + x, x)
        h.recorder.raise_on = frozenset(names)
        h.frame(f"seed={seed} raise at {position}: frame {n}, last={log[-8:]}")
        h.recorder.raise_on = frozenset()
    h.change_world(log)
    for e in w[1:]:
        if esper.entity_exists(e):
            esper.component_for_entity(e, Position).x = 500.0
    pending = {name: len(model.outbox.pending) for name, model in h.models.items()}
    setattr(h.recorder, f"{fault}_at", position)
    h.recorder.delete_rate = 0.3
    calls = h.frame(f"seed={seed} {fault} at {position}: frame 3, last={log[-8:]}")
    setattr(h.recorder, f"{fault}_at", None)
    h.recorder.delete_rate = 0.0
    for n in range(2):
        h.frame(f"seed={seed} {fault} at {position}: quiet frame {n}")
    for model in h.models.values():
        assert not model.outbox.pending
    return calls, pending


@pytest.mark.parametrize("fault", ["raise", "clear", "leave"])
@pytest.mark.parametrize("seed", range(8))
def test_a_fault_at_every_position_of_a_frame_that_starts_owing(seed: int, fault: str) -> None:
    """Every processor starts a frame with events a raise left pending; a handler raises,
    clears the database (making entities that take the old ids) or switches worlds at each
    position of it in turn (each processor's pending delivery, then its own): every event
    is delivered once, in order, balanced, none reaches an entity of a new database, and
    every processor's state equals the model's after every frame, also the one with the
    fault (its frame worked out all the same behind a raise, left for later behind a
    switch)."""
    with fresh_world("raise_at"):
        calls, pending = run_raise_at(seed, None)
    assert all(pending.values()), pending  # every processor's delivery starts owing
    for position in range(calls):
        with fresh_world("raise_at"):
            run_raise_at(seed, position, fault)


def main(argv: list[str] | None = None) -> int:
    """Run the fault driver on many seeds, for longer than the test suite does."""
    return stress_main(__doc__ or "", run_faulty_frames, argv)


if __name__ == "__main__":
    sys.exit(main())
