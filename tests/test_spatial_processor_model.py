"""SpatialProcessor against a brute-force model, through esper, over random frames.

Every frame a snapshot processor that runs just before the SpatialProcessor reads the world
the slow, obvious way (every entity, ``try_component``) and computes the overlapping pairs
by testing every pair of boxes with the collision rule; after ``esper.process()`` the
processor's ``pairs`` and every box of its index must equal the model's, and the events it
dispatched must be exactly the model's sequence: the exits, then the enters, then a
``collision`` for every pair, each sorted, delivered by the rules of ``_event_model`` (a
handler here may delete the entities it is told about, and raise at a chosen call: then what
it cut off comes first at the next ``process()``, and a raise in that delivery still leaves
the frame worked out). The index's own invariants (``check()``) are asserted too.

Two drivers share the model: a hypothesis ``RuleBasedStateMachine`` (shrinks a failure to a
short story) and a seeded random driver that also runs longer from the command line:

    python tests/test_spatial_processor_model.py --seeds 300 --frames 200
"""

from __future__ import annotations

import contextlib
import itertools
import random
import sys
from typing import Any

import esper
import pytest
from _budget import budget
from _event_model import Frame, InjectedFault, OutboxModel, model_box, model_pairs
from _worlds import fresh_world, stress_main
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ecs_spatial.components import AABB, CollisionFilter, Position
from ecs_spatial.events import COLLISION, COLLISION_ENTER, COLLISION_EXIT
from ecs_spatial.geometry import Box
from ecs_spatial.spatial_processor import SpatialProcessor

# Every test here runs on both ways of reading esper's membership (conftest.membership).
pytestmark = pytest.mark.usefixtures("membership")

Pair = tuple[int, int]
_world_ids = itertools.count()


# -- the model ----------------------------------------------------------------------------------




class Snapshot(esper.Processor):
    """Runs just before the SpatialProcessor and computes what it must find."""

    def __init__(self) -> None:
        self.pairs: set[Pair] = set()
        self.alive: set[int] = set()
        self.boxes: dict[int, Box] = {}

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.pairs = model_pairs()
        self.alive = {e for e in esper.get_entities() if esper.entity_exists(e)}
        self.boxes = {}
        for e in list(esper.get_entities()):
            pos = esper.try_component(e, Position)
            aabb = esper.try_component(e, AABB)
            if pos is not None and aabb is not None:
                self.boxes[e] = model_box(pos, aabb)


class Recorder:
    """Logs the collision events in order, in ``_event_model``'s format; may delete entities
    from inside an enter handler, and raise at call number ``raise_at`` of the next
    ``process()`` (0 for its first call). Its bound methods are the handlers, so it must
    stay referenced (esper holds handlers by weak reference)."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.delete_on_enter: str | None = None  # None, "deferred" or "immediate"
        self.raise_at: int | None = None
        self.calls = 0
        esper.set_handler(COLLISION_ENTER, self.enter)
        esper.set_handler(COLLISION_EXIT, self.exit)
        esper.set_handler(COLLISION, self.collision)

    def enter(self, a: int, b: int) -> None:
        self.log.append(("event", COLLISION_ENTER, (a, b)))
        if self.delete_on_enter is not None and esper.entity_exists(b):
            immediate = self.delete_on_enter == "immediate"
            esper.delete_entity(b, immediate=immediate)
            self.log.append(("delete", b, immediate))
        self.called()

    def exit(self, a: int, b: int) -> None:
        self.log.append(("event", COLLISION_EXIT, (a, b)))
        self.called()

    def collision(self, a: int, b: int) -> None:
        self.log.append(("event", COLLISION, (a, b)))
        self.called()

    def called(self) -> None:
        """Count the call; raise if it is the one planned."""
        self.calls += 1
        if self.calls - 1 == self.raise_at:
            self.log.append(("raise",))
            raise InjectedFault(f"call {self.raise_at}")


class Harness:
    """A world with a SpatialProcessor, the model and the recorder; ``frame()`` runs one
    ``esper.process()`` and checks everything."""

    def __init__(self, processor: SpatialProcessor | None = None) -> None:
        self.spatial = processor or SpatialProcessor(
            Box(0, 0, 64, 64), threshold=2, max_depth=4
        )
        self.snapshot = Snapshot()
        esper.add_processor(self.snapshot, priority=2)
        esper.add_processor(self.spatial, priority=1)
        self.recorder = Recorder()
        self.previous: set[Pair] = set()
        self.outbox = OutboxModel()

    def frame(self, context: str = "") -> None:
        """One ``esper.process()``: what a raise left owed is delivered first; the frame is
        worked out whatever that delivery raises (from the world as it left it: without
        the entities its handlers deleted at once), and its events follow it, or wait
        behind what is still owed."""
        recorder = self.recorder
        recorder.log.clear()
        recorder.calls = 0
        with contextlib.suppress(InjectedFault):
            esper.process()
        recorder.raise_at = None
        delivered = Frame(list(recorder.log), set(self.snapshot.alive))
        owed_delivered = self.outbox.deliver(delivered, context + " (owed)")
        gone = delivered.deleted_now
        expected = {p for p in self.snapshot.pairs if p[0] not in gone and p[1] not in gone}
        boxes = {e: box for e, box in self.snapshot.boxes.items() if e not in gone}
        previous = self.previous
        self.outbox.post(COLLISION_EXIT, sorted(previous - expected))
        self.outbox.post(COLLISION_ENTER, sorted(expected - previous))
        self.outbox.post(COLLISION, sorted(expected))
        assert set(self.spatial.pairs) == expected, context
        index = self.spatial.index
        assert {e: index[e] for e in index} == boxes, context
        if owed_delivered:
            self.outbox.deliver(delivered, context)
        delivered.done(context)
        index.check()
        self.previous = expected


# -- random actions shared by both drivers --------------------------------------------------------


def random_position(rng: random.Random) -> Position:
    # Mostly inside the 64 x 64 bounds hint, sometimes outside it (the root must grow).
    span = 90.0 if rng.random() < 0.05 else 18.0
    return Position(round(rng.uniform(-3.0, span), 1), round(rng.uniform(-3.0, span), 1))


def random_aabb(rng: random.Random) -> AABB:
    w = rng.choice([0.0, 2.0, 6.0, rng.uniform(0.0, 16.0)])
    h = rng.choice([0.0, 2.0, 6.0, rng.uniform(0.0, 16.0)])
    if rng.random() < 0.3:
        return AABB.centered(w, h)
    return AABB(w, h, rng.choice([0.0, -2.0, 3.5]), rng.choice([0.0, 1.0]))


def random_filter(rng: random.Random) -> CollisionFilter:
    return CollisionFilter(
        category=rng.choice([0, 1, 2, 3, 3]), mask=rng.choice([0, 1, 2, 3, 3, 0xFFFFFFFF]),
        group=rng.choice([0, 0, 0, 1, 2]),
    )


def act(rng: random.Random, h: Harness) -> str:
    """One random change to the world, through the public esper and component APIs; returns
    a description of it for failure messages."""
    alive = [e for e in esper.get_entities() if esper.entity_exists(e)]
    roll = rng.random()
    if not alive or roll < 0.25:
        comps: list[Any] = []
        if rng.random() < 0.9:
            comps.append(random_position(rng))
        if rng.random() < 0.9:
            comps.append(random_aabb(rng))
        if rng.random() < 0.4:
            comps.append(random_filter(rng))
        e = esper.create_entity(*comps)
        return f"create {e} {comps}"
    e = rng.choice(alive)
    pos = esper.try_component(e, Position)
    aabb = esper.try_component(e, AABB)
    flt = esper.try_component(e, CollisionFilter)
    if roll < 0.5 and pos is not None:
        how = rng.randrange(5)
        if how == 0:
            pos.x = min(max(pos.x + rng.uniform(-6.0, 6.0), -3.0), 18.0)
        elif how == 1:
            pos.y = rng.uniform(-3.0, 18.0)
        elif how == 2:
            pos.x, pos.y = pos.y, pos.x
        elif how == 3:
            pos.translate(rng.uniform(-3.0, 3.0), rng.uniform(-3.0, 3.0))
        else:
            pos.x = pos.x  # marked dirty, box unchanged
        return f"move {e} how={how} to {pos}"
    if roll < 0.6 and aabb is not None:
        how = rng.randrange(3)
        if how == 0:
            aabb.width = rng.uniform(0.0, 20.0)
        elif how == 1:
            aabb.height = rng.uniform(0.0, 20.0)
        else:
            aabb.offset_x = rng.uniform(-5.0, 5.0)
        return f"resize {e} how={how} to {aabb}"
    if roll < 0.66:
        immediate = rng.random() < 0.5
        esper.delete_entity(e, immediate=immediate)
        return f"delete {e} immediate={immediate}"
    if roll < 0.72:
        kind = rng.choice([Position, AABB, CollisionFilter])
        esper.try_remove_component(e, kind)
        return f"remove {kind.__name__} from {e}"
    if roll < 0.82:
        how = rng.randrange(4)
        if how == 0:
            new: Any = random_position(rng)
        elif how == 1:
            new = random_aabb(rng)
        elif how == 2:
            new = random_filter(rng)
        else:
            # Share another entity's component instance (both must follow its changes).
            donor = rng.choice(alive)
            new = esper.try_component(donor, rng.choice([Position, AABB]))
            if new is None:
                return "share: donor has nothing"
        esper.add_component(e, new)
        return f"add/replace {new!r} on {e}"
    if roll < 0.90:
        if flt is None:
            flt = random_filter(rng)
            esper.add_component(e, flt)
            return f"add filter {flt} to {e}"
        field = rng.choice(["category", "mask", "group"])
        setattr(flt, field, rng.choice([0, 1, 2, 3]))
        return f"edit filter of {e}: {field}={getattr(flt, field)}"
    if roll < 0.93:
        h.recorder.delete_on_enter = rng.choice([None, "deferred", "immediate"])
        return f"handler deletes on enter: {h.recorder.delete_on_enter}"
    if roll < 0.97:
        h.recorder.raise_at = rng.choice([0, 0, 1, 2, rng.randrange(12)])
        return f"a handler raises at call {h.recorder.raise_at} of the next frame"
    if pos is not None:
        pos.move_to(rng.uniform(0.0, 18.0), rng.uniform(0.0, 18.0))
        return f"teleport {e} to {pos}"
    return "nothing"


def run_random_frames(seed: int, frames: int) -> None:
    """A seeded story of ``frames`` frames with a few random changes before each."""
    rng = random.Random(seed)
    h = Harness()
    # Each pair search on its own, and the automatic choice between them.
    h.spatial.pair_search = ("auto", "incremental", "full")[seed % 3]
    log: list[str] = []
    for _ in range(rng.randrange(5, 30)):
        comps: list[Any] = [random_position(rng), random_aabb(rng)]
        if rng.random() < 0.4:
            comps.append(random_filter(rng))
        esper.create_entity(*comps)
    for frame in range(frames):
        # Often a single change per frame: each change must be noticed on its own.
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3, 5, 8])):
            log.append(act(rng, h))
        h.frame(f"seed={seed} frame={frame} last actions={log[-6:]}")




@pytest.mark.parametrize("seed", range(16))
def test_random_frames_match_the_model(world: str, seed: int) -> None:
    """pairs and the exact event sequence equal the brute-force model over random frames."""
    run_random_frames(seed, frames=30)


# -- the hypothesis state machine -----------------------------------------------------------------


class SpatialMachine(RuleBasedStateMachine):
    """Random stories of creations, moves, deletions, component changes and frames."""

    def __init__(self) -> None:
        super().__init__()
        self._world_scope = contextlib.ExitStack()
        self.world = self._world_scope.enter_context(fresh_world("spatial_machine"))
        self.h = Harness()

    def teardown(self) -> None:
        self._world_scope.close()

    def alive(self) -> list[int]:
        return [e for e in esper.get_entities() if esper.entity_exists(e)]

    @rule(
        x=st.integers(-5, 60), y=st.integers(-5, 60), w=st.integers(0, 12),
        h=st.integers(0, 12), filtered=st.booleans(),
    )
    def create(self, x: int, y: int, w: int, h: int, filtered: bool) -> None:
        comps: list[Any] = [Position(float(x), float(y)), AABB(float(w), float(h))]
        if filtered:
            comps.append(CollisionFilter(category=1 + x % 3, mask=1 + y % 3, group=w % 3))
        esper.create_entity(*comps)

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), dx=st.integers(-8, 8), dy=st.integers(-8, 8))
    def move(self, data: st.DataObject, dx: int, dy: int) -> None:
        e = data.draw(st.sampled_from(self.alive()))
        pos = esper.try_component(e, Position)
        if pos is not None:
            if dx:
                pos.x += dx
            if dy:
                pos.y += dy

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), w=st.integers(0, 15))
    def resize(self, data: st.DataObject, w: int) -> None:
        e = data.draw(st.sampled_from(self.alive()))
        aabb = esper.try_component(e, AABB)
        if aabb is not None:
            aabb.width = float(w)

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), immediate=st.booleans())
    def delete(self, data: st.DataObject, immediate: bool) -> None:
        esper.delete_entity(data.draw(st.sampled_from(self.alive())), immediate=immediate)

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), kind=st.sampled_from([Position, AABB, CollisionFilter]))
    def remove_component(self, data: st.DataObject, kind: type) -> None:
        esper.try_remove_component(data.draw(st.sampled_from(self.alive())), kind)

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), x=st.integers(0, 50), y=st.integers(0, 50))
    def replace_position(self, data: st.DataObject, x: int, y: int) -> None:
        esper.add_component(data.draw(st.sampled_from(self.alive())), Position(x, y))

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), category=st.integers(0, 3), mask=st.integers(0, 3))
    def set_filter(self, data: st.DataObject, category: int, mask: int) -> None:
        e = data.draw(st.sampled_from(self.alive()))
        flt = esper.try_component(e, CollisionFilter)
        if flt is None:
            esper.add_component(e, CollisionFilter(category, mask))
        else:
            flt.category = category
            flt.mask = mask

    @rule(mode=st.sampled_from([None, "deferred", "immediate"]))
    def handler_deletes(self, mode: str | None) -> None:
        self.h.recorder.delete_on_enter = mode

    @rule(call=st.integers(0, 12))
    def handler_raises(self, call: int) -> None:
        """At call number ``call`` of the next frame: in what an earlier raise left owed,
        or in the frame's own events."""
        self.h.recorder.raise_at = call

    @rule()
    def frame(self) -> None:
        self.h.frame()

    @invariant()
    def still_in_its_world(self) -> None:
        assert esper.current_world == self.world


def test_state_machine_matches_the_model() -> None:
    """Random stories of creates, moves, resizes, deletions, component changes and handler
    deletions: after every frame, pairs and events equal the brute-force model."""
    # A function rather than hypothesis' TestCase class, so that it takes the module's
    # parametrized fixture (unittest classes cannot).
    run_state_machine_as_test(
        SpatialMachine,
        settings=budget(60, stateful_step_count=40),
    )


def main(argv: list[str] | None = None) -> int:
    """Run the differential driver on many seeds, for longer than the test suite does."""
    return stress_main(__doc__ or "", run_random_frames, argv)


if __name__ == "__main__":
    sys.exit(main())
