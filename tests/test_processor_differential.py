"""The compiled SpatialProcessor and its reference, side by side: the same seeded game run by
each must give the same event streams frame by frame, and the same pairs, index, ``moved``,
``removed`` and errors after every frame.

"Compiled" is the processor as it runs with the compiled core (``_cquadtree``'s index, the
compiled components, ``_cmembers``' read loop writing the index's move buffers,
``_cpair_set``'s diff); "reference" is the same game under ``ECS_SPATIAL_PURE=1``, every part
the pure-Python reference. Both runs print their record as JSON (the reference in a child
process, since the choice is made at import), and the test compares them frame by frame.

The game is a fault model: entities moved (by assignment and by ``translate``), resized and
made, deleted at once or deferred, components removed, replaced and shared between entities,
filters added, edited and removed, a value that is no number (the frame raises, then the
value is mended), ``esper.clear_database()``, typed handlers registered and removed, and
handlers that raise or delete an entity an event names, at random events. The driver runs
longer from the command line::

    python tests/test_processor_differential.py --compare --seeds 200 --frames 60
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: the checkout's package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import esper
import pytest

import ecs_spatial
from ecs_spatial import AABB, CollisionFilter, Continuous, Position, SpatialProcessor

WORLD = "differential"
SEEDS = 6
FRAMES = 30
PLAIN = ("collision_enter", "collision_exit", "collision_swept")


class Marker:
    """A component for typed handlers."""


class Raised(Exception):
    """What a faulty handler raises."""


class Game:
    """One seeded game: the world, its processor, and the record of what happened."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.fault_rng = random.Random(seed * 7919 + 1)
        esper.switch_world(WORLD)
        esper.clear_database()
        for p in list(esper._processors):
            esper.remove_processor(type(p))
        self.spatial = SpatialProcessor()
        self.spatial.pair_search = ("auto", "incremental", "full")[seed % 3]
        esper.add_processor(self.spatial)
        self.shared: list[AABB] = []
        self.events: list[Any] = []
        self.registration: Any = None
        self.plain: list[Any] = []
        self.raise_rate = 0.0
        self.delete_rate = 0.0
        for _ in range(self.rng.randrange(10, 80)):
            self.make()

    # -- the handlers -------------------------------------------------------------------

    def handler(self, kind: str) -> Any:
        def handle(*args: Any) -> None:
            self.events.append([kind, *args])
            self.fault(args)
        return handle

    def fault(self, args: tuple[Any, ...]) -> None:
        roll = self.fault_rng.random()
        if roll < self.delete_rate and esper.entity_exists(args[0]):
            esper.delete_entity(args[0], immediate=self.fault_rng.random() < 0.5)
        elif roll < self.delete_rate + self.raise_rate:
            raise Raised("a faulty handler")

    def subscribe(self) -> None:
        self.plain = [self.handler(kind) for kind in PLAIN]
        for kind, handle in zip(PLAIN, self.plain, strict=True):
            esper.set_handler(kind, handle)  # esper holds it weakly: self.plain keeps it

    # -- the world's changes ----------------------------------------------------------

    def make(self) -> None:
        rng = self.rng
        x, y = rng.uniform(-20, 150), rng.uniform(-20, 150)
        if self.shared and rng.random() < 0.2:
            aabb = rng.choice(self.shared)
        else:
            aabb = AABB(rng.uniform(0, 30), rng.uniform(0, 30))
            if rng.random() < 0.2:
                self.shared.append(aabb)
        parts: list[Any] = [Position(x, y), aabb]
        if rng.random() < 0.3:
            parts.append(CollisionFilter(category=rng.choice([1, 2, 4]),
                                         mask=rng.choice([0xFFFF, 1, 6])))
        if rng.random() < 0.3:
            parts.append(Marker())
        if rng.random() < 0.2:
            parts.append(Continuous())
        esper.create_entity(*parts)

    def change(self) -> None:
        rng = self.rng
        entities = sorted(e for e, _ in esper.get_component(Position))
        for _ in range(rng.randrange(0, 12)):
            op = rng.random()
            e = rng.choice(entities) if entities else None
            if e is None or not esper.entity_exists(e) or op < 0.1:
                self.make()
            elif op < 0.45 and esper.has_component(e, Position):
                pos = esper.component_for_entity(e, Position)
                pos.x = pos.x + rng.uniform(-15, 15)
                if rng.random() < 0.5:
                    pos.y += rng.uniform(-15, 15)
            elif op < 0.5 and esper.has_component(e, Position):
                esper.component_for_entity(e, Position).translate(rng.uniform(-5, 5), 1.0)
            elif op < 0.55 and esper.has_component(e, AABB):
                esper.component_for_entity(e, AABB).width = rng.uniform(0, 40)
            elif op < 0.6:
                esper.delete_entity(e, immediate=rng.random() < 0.5)
            elif op < 0.65:
                kind = rng.choice([Position, AABB])
                if esper.has_component(e, kind):
                    esper.remove_component(e, kind)
                else:
                    esper.add_component(e, kind(5.0, 5.0))
            elif op < 0.7:
                esper.add_component(e, Position(rng.uniform(0, 200), rng.uniform(0, 200)))
            elif op < 0.75 and self.shared:
                esper.add_component(e, rng.choice(self.shared))
            elif op < 0.8:
                if esper.has_component(e, CollisionFilter):
                    if rng.random() < 0.5:
                        esper.remove_component(e, CollisionFilter)
                    else:
                        esper.component_for_entity(e, CollisionFilter).mask = rng.choice(
                            [0, 1, 2, 0xFFFF])
                else:
                    esper.add_component(e, CollisionFilter(group=rng.choice([0, 1, -1])))
            elif op < 0.815 and esper.has_component(e, Position):
                esper.component_for_entity(e, Position).x = float("nan")
            elif op < 0.86:
                self.toggle_registration()
            elif op < 0.87:
                esper.clear_database()
                self.shared.clear()
                entities = []
            elif op < 0.9 and self.shared:
                self.shared[0].height = rng.uniform(0, 20)

    def toggle_registration(self) -> None:
        if self.registration is None:
            self.registration = self.spatial.on_collision(
                Marker, None, enter=self.handler("typed_enter"),
                exit=self.handler("typed_exit"))
        else:
            self.registration.remove()
            self.registration = None

    def mend(self) -> None:
        """Make every Position a number again (the frame that raised named one)."""
        for _, pos in esper.get_component(Position):
            if pos.x != pos.x:
                pos.x = 0.0

    # -- a frame ----------------------------------------------------------------------

    def frame(self) -> dict[str, Any]:
        self.events = []
        self.raise_rate = self.rng.choice([0.0, 0.0, 0.1, 0.3])
        self.delete_rate = self.rng.choice([0.0, 0.1])
        error = None
        try:
            esper.process()
        except (Raised, ValueError, TypeError) as exc:
            error = [type(exc).__name__, str(exc)]
            self.mend()
        index = self.spatial.index
        return {
            "events": self.events,
            "error": error,
            "pairs": sorted(self.spatial.pairs),
            "index": sorted([e, list(index[e])] for e in index),
            "moved": sorted(self.spatial.moved),
            "removed": sorted(self.spatial.removed),
        }


def record(seed: int, frames: int) -> list[dict[str, Any]]:
    """The game of ``seed``, frame by frame."""
    game = Game(seed)
    game.subscribe()
    frames_seen = []
    try:
        for _ in range(frames):
            game.change()
            frames_seen.append(game.frame())
    finally:
        for kind in PLAIN:
            esper.event_registry.pop(kind, None)
        esper.clear_database()
        for p in list(esper._processors):
            esper.remove_processor(type(p))
        esper.switch_world("default")
        esper.delete_world(WORLD)
    return frames_seen


def reference_records(seeds: list[int], frames: int) -> dict[str, Any]:
    """The games of ``seeds`` under ECS_SPATIAL_PURE=1, from a child process."""
    env = dict(os.environ, ECS_SPATIAL_PURE="1")
    out = subprocess.run(
        [sys.executable, __file__, "--print", "--frames", str(frames),
         *(f"--seed={s}" for s in seeds)],
        env=env, capture_output=True, text=True, check=True,
    )
    answer: dict[str, Any] = json.loads(out.stdout)
    assert answer["native"] is False, "the child ran the compiled core"
    return answer


def compare(seeds: list[int], frames: int) -> None:
    reference = reference_records(seeds, frames)["records"]
    for seed in seeds:
        compiled = json.loads(json.dumps(record(seed, frames)))  # floats as the child's
        theirs = reference[str(seed)]
        for n, (ours, ref) in enumerate(zip(compiled, theirs, strict=True)):
            assert ours == ref, f"seed {seed}, frame {n}: compiled {ours} != reference {ref}"


def test_the_compiled_processor_gives_the_references_events_frame_by_frame() -> None:
    if not ecs_spatial.NATIVE:
        pytest.skip("the compiled core is not in use: nothing to compare")
    compare(list(range(SEEDS)), FRAMES)


def test_the_faults_happen() -> None:
    """The driver is not vacuous: its games raise, delete, clear and deliver events."""
    kinds: set[str] = set()
    errors = 0
    for seed in range(SEEDS):
        for frame in record(seed, FRAMES):
            kinds.update(event[0] for event in frame["events"])
            errors += frame["error"] is not None
    assert {*PLAIN, "typed_enter", "typed_exit"} <= kinds
    assert errors > 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print this process's records")
    parser.add_argument("--compare", action="store_true", help="compare with the reference")
    parser.add_argument("--seed", type=int, action="append", default=[])
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--frames", type=int, default=FRAMES)
    args = parser.parse_args()
    seeds = args.seed or list(range(args.seeds))
    if args.print:
        json.dump({"native": ecs_spatial.NATIVE,
                   "records": {str(s): record(s, args.frames) for s in seeds}}, sys.stdout)
    else:
        compare(seeds, args.frames)
        print(f"{len(seeds)} seeds x {args.frames} frames: the same, frame by frame")


if __name__ == "__main__":
    main()
