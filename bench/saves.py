"""The ``save`` part of ``python -m bench esper``: saving a game's world with its processors
and loading it back, as ``examples/camera.py``'s F5 and F9 do, at the camera's size.

The world is the camera scene's (without a window): N entities with a ``Position``, an
``AABB`` and a component of the game's own (``Look``, a slotted dataclass), 1% of them ships
with a ``Velocity`` moved by the game's processor, a ``SpatialProcessor(events=())`` and a
``CullingProcessor`` with a fixed view. Save: ``save_world()`` then ``pickle.dumps``; load:
``pickle.loads`` then ``restore_world`` into a new world. Wall clock, the best of the
repeats (and the process's CPU time, steadier on a shared machine), the collector's share
of the load, and the pickle's size; once with Python's cyclic collector left on, as a game
leaves it, and once paused around the pickle calls, as the examples' F5 and F9 do. Each
load is checked: one more frame in the restored world gives the original's index hash and
view.
"""

from __future__ import annotations

import gc
import math
import pickle
import random
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import NamedTuple

import esper

import ecs_spatial as es
from bench.harness import target
from bench.ours import Velocity
from bench.record import markdown_table
from ecs_spatial.saving import collector_paused, restore_world, save_world

#: The save and the load, each, at most (seconds) at the camera's 100,000 entities.
LIMIT = 0.25


@dataclass(slots=True)
class Look:
    """How an entity is drawn (the game's own component)."""

    color: tuple[int, int, int]


class Ships(esper.Processor):
    """Moves the ships (the game's own processor, saved with the others)."""

    def process(self, dt: float = 1 / 60) -> None:
        for _e, (pos, vel) in esper.get_components(es.Position, Velocity):
            pos.x += vel.vx * dt
            pos.y += vel.vy * dt


def build(n: int, seed: int = 1) -> None:
    """The camera scene's world of ``n`` entities in the current esper world, one frame run."""
    rng = random.Random(seed)
    side = 10_000 * math.sqrt(n / 100_000)
    for _ in range(n):
        x, y = rng.uniform(0, side), rng.uniform(0, side)
        roll = rng.random()
        if roll < 0.01:
            angle = rng.uniform(0, math.tau)
            esper.create_entity(es.Position(x, y), es.AABB.centered(10, 10), Look((80, 255, 160)),
                                Velocity(100 * math.cos(angle), 100 * math.sin(angle)))
        else:
            s = rng.uniform(2, 5) if roll < 0.95 else rng.uniform(10, 40)
            esper.create_entity(es.Position(x, y), es.AABB.centered(s, s), Look((200, 210, 255)))
    spatial = es.SpatialProcessor(es.Box(0, 0, side, side), events=())
    esper.add_processor(Ships(), priority=10)
    esper.add_processor(spatial, priority=5)
    esper.add_processor(es.CullingProcessor(spatial, es.Box(side / 2 - 600, side / 2 - 400,
                                                            side / 2 + 600, side / 2 + 400)))
    esper.process()


def _observed() -> tuple[int, list[int]]:
    """After one more frame: the index's hash and what the view holds."""
    esper.process()
    spatial = esper.get_processor(es.SpatialProcessor)
    culling = esper.get_processor(es.CullingProcessor)
    assert isinstance(spatial, es.SpatialProcessor) and isinstance(culling, es.CullingProcessor)
    return spatial.index.state_hash(), sorted(culling.visible)


class _CollectorClock:
    """The time Python's cyclic collector runs, summed, while installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start


class Measured(NamedTuple):
    """The best of the repeats, seconds (wall clock, and the process's CPU time, which the
    other processes of a shared machine disturb less), the collector's share of the best
    load's wall clock, and the pickle's size in bytes."""

    save: float
    load: float
    save_cpu: float
    load_cpu: float
    load_collector: float
    size: int


def measure(n: int, repeats: int, paused: bool = False) -> Measured:
    """The best save and load of ``repeats`` and the pickle's size; ``paused``: the
    collector off around the pickle calls, as ``examples/_scaffold.py`` does
    (``restore_world`` pauses it around its own work in any case)."""
    home = esper.current_world
    source = "bench-save"
    worlds = [source]
    saves: list[tuple[float, float]] = []
    loads: list[tuple[float, float, float]] = []
    size = 0
    clock = _CollectorClock()
    gc.callbacks.append(clock)
    try:
        esper.switch_world(source)
        build(n)
        for i in range(repeats):
            esper.switch_world(source)
            start, cpu = time.perf_counter(), time.process_time()
            with collector_paused() if paused else nullcontext():
                data = pickle.dumps(save_world())
            saves.append((time.perf_counter() - start, time.process_time() - cpu))
            size = len(data)
            worlds.append(f"bench-save-loaded-{i}")
            esper.switch_world(worlds[-1])
            clock.total = 0.0
            start, cpu = time.perf_counter(), time.process_time()
            with collector_paused() if paused else nullcontext():
                state = pickle.loads(data)
            restore_world(state)
            loads.append((time.perf_counter() - start, time.process_time() - cpu, clock.total))
            after = _observed()
            esper.switch_world(source)
            assert _observed() == after, "the restored world's next frame differs"
    finally:
        gc.callbacks.remove(clock)
        esper.switch_world(home)
        for world in worlds:
            if world in esper.list_worlds():
                esper.delete_world(world)
    best_load = min(loads)
    return Measured(min(saves)[0], best_load[0], min(s[1] for s in saves),
                    min(s[1] for s in loads), best_load[2], size)


def save_part(n: int, repeats: int) -> list[list[str]]:
    """The part's table and its targets."""
    rows = []
    targets = []
    for paused in (False, True):
        m = measure(n, repeats, paused)
        how = "collector paused around pickle" if paused else "collector on"
        rows.append([f"{n:,}", how, f"{m.save:.3f}", f"{m.load:.3f}", f"{m.save_cpu:.3f}",
                     f"{m.load_cpu:.3f}", f"{m.load_collector:.3f}", f"{m.size / 1e6:.1f}"])
        targets += [target(f"{n:,} entities, {how}: save_world + pickle.dumps, s", m.save,
                           LIMIT),
                    target(f"{n:,} entities, {how}: pickle.loads + restore_world, s", m.load,
                           LIMIT)]
    print(markdown_table(["entities", "", "save_world + dumps s", "loads + restore_world s",
                          "save CPU s", "load CPU s", "collector in the load s", "pickle MB"],
                         rows))
    return targets
