"""CullingProcessor: ``visible`` and the view_enter / view_exit events, through esper.

Unit tests, then a differential test against a brute-force model over random frames (moves,
spawns, deferred and immediate deletions, lost components, a view that stands still for a
while and then jumps, handlers that raise: in a frame's own events or in what an earlier
raise left owed, which must not cost the frame). The differential driver also runs longer
from the command line:

    python tests/test_culling.py --seeds 500 --frames 200
"""

from __future__ import annotations

import contextlib
import itertools
import random
import re
import sys
from typing import Any

import esper
import pytest
from _budget import budget
from _event_model import DiffModel, FaultRules, FaultyRecorder, InjectedFault
from _worlds import fresh_world, stress_main
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from ecs_spatial.components import AABB, Position
from ecs_spatial.culling import CullingProcessor
from ecs_spatial.events import VIEW_ENTER, VIEW_EXIT
from ecs_spatial.geometry import Box
from ecs_spatial.index import QuadTree
from ecs_spatial.spatial_processor import SpatialProcessor

_world_ids = itertools.count()




class Recorder:
    """Records view events in order. Its bound methods are the handlers, so it must stay
    referenced (esper keeps handlers by weak reference)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        esper.set_handler(VIEW_ENTER, self.enter)
        esper.set_handler(VIEW_EXIT, self.exit)

    def enter(self, entity: int) -> None:
        self.events.append(("enter", entity))

    def exit(self, entity: int) -> None:
        self.events.append(("exit", entity))

    def take(self) -> list[tuple[str, int]]:
        events, self.events = self.events, []
        return events


def setup(view: Any) -> tuple[SpatialProcessor, CullingProcessor, Recorder]:
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=10)
    culling = CullingProcessor(spatial, view)
    esper.add_processor(culling)
    return spatial, culling, Recorder()


def box_entity(x: float, y: float, w: float = 2.0, h: float = 2.0) -> int:
    return esper.create_entity(Position(x, y), AABB(w, h))


# -- unit tests -------------------------------------------------------------------------------


def test_first_frame_sees_what_intersects_the_view(world: str) -> None:
    """After the first process(), visible is every entity whose box meets the view."""
    _, culling, rec = setup(Box(0, 0, 100, 100))
    inside = box_entity(10, 10)
    box_entity(200, 200)
    straddling = box_entity(99, 50, 10, 10)
    esper.process()
    assert set(culling.visible) == {inside, straddling}
    assert rec.take() == [("enter", inside), ("enter", straddling)]


def test_touching_the_view_edge_counts(world: str) -> None:
    """Boxes are closed: a box that only touches the view's edge or corner is visible."""
    _, culling, _ = setup(Box(0, 0, 100, 100))
    edge = box_entity(100, 20)  # min_x == view max_x
    corner = box_entity(-2, -2)  # max corner == view min corner
    box_entity(100.5, 20)
    esper.process()
    assert set(culling.visible) == {edge, corner}


def test_moves_give_exits_first_then_enters_each_sorted(world: str) -> None:
    """Changes come as all exits, then all enters, each in ascending entity order."""
    _, culling, rec = setup(Box(0, 0, 100, 100))
    a, b, c, d = (box_entity(x, 10) for x in (10, 20, 300, 400))
    esper.process()
    rec.take()
    for entity, x in ((d, 50), (b, 500), (c, 60), (a, 600)):
        esper.component_for_entity(entity, Position).x = x
    esper.process()
    assert rec.take() == [("exit", a), ("exit", b), ("enter", c), ("enter", d)]
    assert set(culling.visible) == {c, d}


def test_no_events_when_nothing_changes_sides(world: str) -> None:
    """Moving within the view, or outside it, dispatches nothing."""
    _, culling, rec = setup(Box(0, 0, 100, 100))
    a = box_entity(10, 10)
    b = box_entity(300, 10)
    esper.process()
    rec.take()
    esper.component_for_entity(a, Position).x = 20
    esper.component_for_entity(b, Position).x = 310
    esper.process()
    assert rec.take() == []
    assert set(culling.visible) == {a}


@pytest.mark.parametrize("immediate", [False, True])
def test_entity_deleted_while_visible_exits(world: str, immediate: bool) -> None:
    """An entity deleted while visible gets its exit at the next process()."""
    _, culling, rec = setup(Box(0, 0, 100, 100))
    a = box_entity(10, 10)
    b = box_entity(20, 10)
    esper.process()
    rec.take()
    esper.delete_entity(a, immediate=immediate)
    esper.process()
    assert rec.take() == [("exit", a)]
    assert set(culling.visible) == {b}


def test_entity_losing_its_box_exits(world: str) -> None:
    """Removing the AABB takes the entity out of the index, hence out of view."""
    _, culling, rec = setup(Box(0, 0, 100, 100))
    a = box_entity(10, 10)
    esper.process()
    rec.take()
    esper.remove_component(a, AABB)
    esper.process()
    assert rec.take() == [("exit", a)]
    esper.add_component(a, AABB(1, 1))
    esper.process()
    assert rec.take() == [("enter", a)]
    assert set(culling.visible) == {a}


def test_callable_view_pans(world: str) -> None:
    """A callable view is called each frame; the camera's motion gives exits and enters."""
    camera = {"x": 0.0}

    def view() -> Box:
        return Box(camera["x"], 0, camera["x"] + 50, 50)

    _, culling, rec = setup(view)
    entities = [box_entity(x, 10) for x in range(0, 200, 20)]
    esper.process()
    assert set(culling.visible) == set(entities[:3])  # x = 0, 20, 40
    rec.take()
    camera["x"] = 60.0
    esper.process()
    assert set(culling.visible) == set(entities[3:6])  # x = 60, 80, 100
    assert rec.take() == [
        ("exit", entities[0]),
        ("exit", entities[1]),
        ("exit", entities[2]),
        ("enter", entities[3]),
        ("enter", entities[4]),
        ("enter", entities[5]),
    ]


def test_still_view_queries_only_once(world: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the view stands still the index is not queried again; a view change queries."""
    calls: list[Box] = []
    real_query = QuadTree.query

    def counting_query(self: QuadTree, box: Box) -> list[int]:
        calls.append(box)
        return real_query(self, box)

    monkeypatch.setattr(QuadTree, "query", counting_query)
    _, culling, rec = setup(Box(0, 0, 100, 100))
    a = box_entity(10, 10)
    esper.process()
    assert calls == [Box(0, 0, 100, 100)]
    for x in (20, 150, 30):
        esper.component_for_entity(a, Position).x = x
        esper.process()
    assert calls == [Box(0, 0, 100, 100)]
    assert rec.take() == [("enter", a), ("exit", a), ("enter", a)]
    culling.view = Box(0, 0, 10, 10)
    esper.process()
    assert calls == [Box(0, 0, 100, 100), Box(0, 0, 10, 10)]
    assert rec.take() == [("exit", a)]


def test_view_must_be_a_box_or_callable(world: str) -> None:
    """A view that is neither a Box nor a callable is refused, naming the value."""
    spatial = SpatialProcessor()
    with pytest.raises(TypeError, match=r"\(0, 0, 10, 10\)"):
        CullingProcessor(spatial, (0, 0, 10, 10))  # type: ignore[arg-type]
    culling = CullingProcessor(spatial, Box(0, 0, 1, 1))
    with pytest.raises(TypeError, match="'camera'"):
        culling.view = "camera"  # type: ignore[assignment]
    assert culling.view == Box(0, 0, 1, 1)


def test_bad_view_from_callable_loses_nothing(world: str) -> None:
    """A callable returning a non-Box raises naming it; the next good frame reports every
    change made meanwhile."""
    result: list[object] = [Box(0, 0, 100, 100)]
    _, culling, rec = setup(lambda: result[0])
    a = box_entity(10, 10)
    b = box_entity(300, 10)
    esper.process()
    assert rec.take() == [("enter", a)]
    result[0] = None
    esper.component_for_entity(a, Position).x = 500  # a leaves
    esper.component_for_entity(b, Position).x = 50  # b enters
    with pytest.raises(TypeError, match="returned None"):
        esper.process()
    assert set(culling.visible) == {a}  # unchanged by the failed frame
    assert rec.take() == []
    result[0] = Box(0, 0, 100, 100)
    esper.process()  # same view as before the failure: the changes must still show
    assert rec.take() == [("exit", a), ("enter", b)]
    assert set(culling.visible) == {b}


def test_visible_is_a_read_only_live_view(world: str) -> None:
    """visible reflects the latest process() and cannot be mutated by the user."""
    _, culling, _ = setup(Box(0, 0, 100, 100))
    visible = culling.visible
    a = box_entity(10, 10)
    esper.process()
    assert a in visible and len(visible) == 1 and visible == {a}
    assert not hasattr(visible, "add") and not hasattr(visible, "discard")


def test_two_views_are_independent(world: str) -> None:
    """Split screen: two processors over one index, each with its own visible set."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=10)
    left = CullingProcessor(spatial, Box(0, 0, 50, 50))
    right = CullingProcessor(spatial, Box(50, 0, 100, 50))
    esper.add_processor(left)
    esper.add_processor(right)
    a = box_entity(10, 10)
    b = box_entity(60, 10)
    c = box_entity(49, 10)  # straddles x = 50
    esper.process()
    assert set(left.visible) == {a, c}
    assert set(right.visible) == {b, c}


def test_worlds_do_not_see_each_other(world: str) -> None:
    """A processor serves the world it was added to."""
    _, culling, rec = setup(Box(0, 0, 100, 100))
    a = box_entity(10, 10)
    other = world + "_other"
    esper.switch_world(other)
    try:
        _, culling2, rec2 = setup(Box(0, 0, 100, 100))
        b = box_entity(10, 10)
        c = box_entity(20, 10)
        esper.process()
        assert set(culling2.visible) == {b, c}
        assert rec2.take() == [("enter", b), ("enter", c)]
        esper.event_registry.clear()
    finally:
        esper.switch_world(world)
    esper.process()
    esper.delete_world(other)
    assert set(culling.visible) == {a}
    assert rec.take() == [("enter", a)]


def test_refuses_to_run_in_another_world(world: str) -> None:
    """A processor bound to one world raises if run while another world is current."""
    _, culling, _ = setup(Box(0, 0, 10, 10))
    esper.process()
    other = world + "_elsewhere"
    esper.switch_world(other)
    try:
        with pytest.raises(RuntimeError, match=re.escape(repr(world))):
            culling.process()
    finally:
        esper.switch_world(world)
        esper.delete_world(other)
    culling.process()


def test_handler_deleting_entities_loses_no_exit(world: str) -> None:
    """A view_enter handler that deletes the entity: its exit comes at the next process()."""
    _, culling, rec = setup(Box(0, 0, 100, 100))

    class Killer:
        def on_enter(self, entity: int) -> None:
            esper.delete_entity(entity)

    killer = Killer()
    esper.set_handler(VIEW_ENTER, killer.on_enter)
    a = box_entity(10, 10)
    esper.process()
    assert rec.take() == [("enter", a)]
    esper.process()
    assert rec.take() == [("exit", a)]
    assert set(culling.visible) == set()


# -- differential test against a brute-force model --------------------------------------------


def model_boxes() -> dict[int, Box]:
    """Every entity's box computed from its components, independently of the index."""
    boxes = {}
    for entity, (pos, aabb) in esper.get_components(Position, AABB):
        x = pos.x + aabb.offset_x
        y = pos.y + aabb.offset_y
        boxes[entity] = Box(x, y, x + aabb.width, y + aabb.height)
    return boxes


#: Cost settings that force each way of updating ``visible``, besides the default choice.
STRATEGIES: dict[str, dict[str, float]] = {
    "auto": {},
    # Look at changes and swept strips whenever possible, with a small local grid (a small
    # margin and coarse cells, so that the view often leaves it and big boxes span cells).
    "incremental": {"CHANGE_COST": 0.0, "SWEPT_MAX": 2.0, "REGION_MARGIN": 0.1, "REGION_CELLS": 3},
    # Query the whole view whenever anything changed.
    "full-query": {"CHANGE_COST": 1e18, "SWEPT_MAX": -1.0},
}


def run_random_frames(seed: int, frames: int, strategy: str = "auto", side: float = 200.0) -> None:
    """Drive a world through random frames; after each process() compare visible and the
    event sequence with the brute-force model. Raises AssertionError on any difference."""
    rng = random.Random(seed)
    view_holder = [Box(0, 0, 80, 60)]
    use_callable = rng.random() < 0.5
    view: Any = (lambda: view_holder[0]) if use_callable else view_holder[0]
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=10)
    culling = CullingProcessor(spatial, view)
    esper.add_processor(culling)
    rec = FaultyRecorder(rng, (VIEW_ENTER, VIEW_EXIT))
    model = DiffModel(VIEW_EXIT, VIEW_ENTER)
    for name, value in STRATEGIES[strategy].items():
        setattr(culling, name, value)
    alive: list[int] = []

    def spawn() -> None:
        # Now and then a huge box, spanning many cells of the local grid.
        w = rng.choice([0.0, 1.0, rng.uniform(0, 30), rng.uniform(0, 30), 400.0])
        h = rng.choice([0.0, 1.0, rng.uniform(0, 30)])
        pos = Position(rng.uniform(-20, side), rng.uniform(-20, side))
        alive.append(esper.create_entity(pos, AABB(w, h)))

    for _ in range(rng.randint(0, 40)):
        spawn()
    for frame in range(frames):
        roll = rng.random()
        new_view = None
        if roll < 0.25:
            # The view jumps, sometimes onto grid-aligned edges that boxes touch exactly.
            x0 = rng.choice([rng.uniform(-20, side), float(rng.randrange(0, int(side), 10))])
            y0 = rng.choice([rng.uniform(-20, side), float(rng.randrange(0, int(side), 10))])
            new_view = Box(x0, y0, x0 + rng.uniform(0, 120), y0 + rng.uniform(0, 120))
        elif roll < 0.6:
            # The view pans a little (the strip path), sometimes by whole units onto box
            # edges, sometimes growing or shrinking on one side.
            old = view_holder[0] if use_callable else culling.view
            assert isinstance(old, Box)
            dx = rng.choice([rng.uniform(-6, 6), float(rng.randint(-3, 3)), 0.0])
            dy = rng.choice([rng.uniform(-6, 6), float(rng.randint(-3, 3)), 0.0])
            grow = rng.choice([0.0, 0.0, rng.uniform(-5, 5)])
            new_view = Box(
                old.min_x + dx,
                old.min_y + dy,
                max(old.min_x + dx, old.max_x + dx + grow),
                old.max_y + dy,
            )
        if new_view is not None:
            if use_callable:
                view_holder[0] = new_view
            else:
                culling.view = new_view
        fraction = rng.choice([0.0, 0.05, 0.3, 1.0])
        for entity in alive:
            if rng.random() < fraction and esper.entity_exists(entity):
                pos = esper.component_for_entity(entity, Position)
                if rng.random() < 0.2:
                    pos.x = float(rng.randrange(0, int(side), 10))  # onto view-like edges
                else:
                    pos.x += rng.uniform(-15, 15)
                    pos.y += rng.uniform(-15, 15)
        for _ in range(rng.choice([0, 0, 1, 3])):
            spawn()
        for _ in range(rng.choice([0, 0, 1, 2])):
            if alive:
                entity = alive.pop(rng.randrange(len(alive)))
                esper.delete_entity(entity, immediate=rng.random() < 0.5)
        if alive and rng.random() < 0.1:
            entity = rng.choice(alive)
            if esper.has_component(entity, AABB):
                esper.remove_component(entity, AABB)
            else:
                esper.add_component(entity, AABB(rng.uniform(0, 10), rng.uniform(0, 10)))
        # A handler raises now and then: in the frame's own events, or in what an earlier
        # raise left owed (the frame is worked out all the same); or switches to another
        # world and stays there (a scene change: the rest waits, and so does the frame if
        # that was in what was owed); or visits another world and comes back (no change).
        rec.raise_at = rng.choice([None, None, None, 0, 0, rng.randrange(6)])
        rec.leave_at = rng.choice([None] * 6 + [0, rng.randrange(6)])
        rec.detour_rate = rng.choice([0.0, 0.0, 0.3])
        with contextlib.suppress(InjectedFault):
            esper.process()
        rec.come_back()
        rec.raise_at = rec.leave_at = None

        current_view = view_holder[0] if use_callable else culling.view
        assert isinstance(current_view, Box)
        boxes = model_boxes()
        expected = {e for e, box in boxes.items() if box.intersects(current_view)}
        context = f"seed={seed} frame={frame}"
        state = model.frame(rec.take(), expected, context)
        assert set(culling.visible) == state, context


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("seed", range(8))
def test_differential_random_frames(world: str, seed: int, strategy: str) -> None:
    """visible and the events equal a brute-force scan over random frames, whichever way
    the processor updates them."""
    run_random_frames(seed, frames=40, strategy=strategy)


class CullingMachine(FaultRules, RuleBasedStateMachine):
    """Random stories of creations, moves, deletions, lost boxes, pans, jumps and frames,
    checked against the model after every frame (hypothesis shrinks a failure to a short
    story)."""

    def __init__(self) -> None:
        super().__init__()
        self._world_scope = contextlib.ExitStack()
        self.world = self._world_scope.enter_context(fresh_world("culling_machine"))
        self.view = Box(0, 0, 40, 30)
        spatial = SpatialProcessor()
        esper.add_processor(spatial, priority=10)
        self.culling = CullingProcessor(spatial, self.current_view)
        esper.add_processor(self.culling)
        self.rec = FaultyRecorder(random.Random(0), (VIEW_ENTER, VIEW_EXIT))
        self.model = DiffModel(VIEW_EXIT, VIEW_ENTER)

    def current_view(self) -> Box:
        return self.view

    def teardown(self) -> None:
        self._world_scope.close()

    def alive(self) -> list[int]:
        return [e for e in esper.get_entities() if esper.entity_exists(e)]

    @initialize(strategy=st.sampled_from(list(STRATEGIES)))
    def choose_strategy(self, strategy: str) -> None:
        for name, value in STRATEGIES[strategy].items():
            setattr(self.culling, name, value)

    @rule(x=st.integers(-5, 60), y=st.integers(-5, 60), w=st.integers(0, 12), h=st.integers(0, 12))
    def create(self, x: int, y: int, w: int, h: int) -> None:
        esper.create_entity(Position(float(x), float(y)), AABB(float(w), float(h)))

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), dx=st.integers(-8, 8), dy=st.integers(-8, 8))
    def move(self, data: st.DataObject, dx: int, dy: int) -> None:
        pos = esper.component_for_entity(data.draw(st.sampled_from(self.alive())), Position)
        pos.x += dx
        pos.y += dy

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), immediate=st.booleans())
    def delete(self, data: st.DataObject, immediate: bool) -> None:
        esper.delete_entity(data.draw(st.sampled_from(self.alive())), immediate=immediate)

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data())
    def toggle_box(self, data: st.DataObject) -> None:
        entity = data.draw(st.sampled_from(self.alive()))
        if esper.try_remove_component(entity, AABB) is None:
            esper.add_component(entity, AABB(3.0, 3.0))

    @rule(dx=st.integers(-4, 4), dy=st.integers(-4, 4), grow=st.integers(-2, 2))
    def pan(self, dx: int, dy: int, grow: int) -> None:
        v = self.view
        self.view = Box(
            v.min_x + dx, v.min_y + dy, max(v.min_x + dx, v.max_x + dx + grow), v.max_y + dy
        )

    @rule(x=st.integers(-10, 60), y=st.integers(-10, 60), w=st.integers(0, 50))
    def jump(self, x: int, y: int, w: int) -> None:
        self.view = Box(x, y, x + w, y + w * 0.75)

    @rule()
    def frame(self) -> None:
        with contextlib.suppress(InjectedFault):
            esper.process()
        self.rec.come_back()
        self.rec.raise_at = self.rec.leave_at = None
        self.rec.detour_rate = 0.0
        expected = {e for e, box in model_boxes().items() if box.intersects(self.view)}
        state = self.model.frame(self.rec.take(), expected, "culling machine")
        assert set(self.culling.visible) == state


TestCullingMachine = CullingMachine.TestCase
TestCullingMachine.settings = budget(40, stateful_step_count=40)


def main(argv: list[str] | None = None) -> int:
    """Run the differential driver on many seeds, for longer than the test suite does."""
    strategies = list(STRATEGIES)

    def run(seed: int, frames: int) -> None:
        run_random_frames(seed, frames, strategies[seed % len(strategies)])

    return stress_main(__doc__ or "", run, argv)


if __name__ == "__main__":
    sys.exit(main())


_MAX = sys.float_info.max


@pytest.mark.parametrize(
    "scale", [5e-324, 1e-310, 1e-200, 1.0, 1e200, 1e300, 0.5 * _MAX], ids=lambda s: f"{s:g}"
)
def test_views_anywhere_in_the_float_range(world: str, scale: float) -> None:
    """Views panning, growing and jumping at any scale, up to views wider than the largest
    float: visible equals the brute-force set every frame, and nothing raises."""
    rng = random.Random(repr(scale))
    view = [Box(0.0, 0.0, scale, scale)]
    spatial, camera, _ = setup(lambda: view[0])

    def spot() -> float:
        return rng.uniform(-1.0, 1.0) * scale * 1.5

    boxes = [box_entity(spot(), spot(), w=scale * 0.3, h=scale * 0.3) for _ in range(25)]
    boxes.append(box_entity(-0.45 * _MAX, -0.45 * _MAX, w=0.9 * _MAX, h=0.9 * _MAX))  # huge
    for _ in range(30):
        roll = rng.random()
        x0, y0, x1, y1 = view[0]
        if roll < 0.4:  # pan by a little, within the float range
            dx = x1 * rng.uniform(-0.1, 0.1) - x0 * rng.uniform(-0.1, 0.1)
            dy = y1 * rng.uniform(-0.1, 0.1) - y0 * rng.uniform(-0.1, 0.1)
            view[0] = Box(
                max(x0 + dx, -_MAX), max(y0 + dy, -_MAX), min(x1 + dx, _MAX), min(y1 + dy, _MAX)
            )
        elif roll < 0.6:  # grow toward the edges of the float range (sides past it too)
            w, h = x1 - x0, y1 - y0
            view[0] = Box(max(x0 - w, -_MAX), max(y0 - h, -_MAX), min(x1 + w, _MAX), y1)
        elif roll < 0.8:
            x, y = spot(), spot()
            view[0] = Box(x, y, min(x + scale, _MAX), min(y + scale, _MAX))
        else:
            e = rng.choice(boxes[:-1])
            pos = esper.component_for_entity(e, Position)
            pos.x, pos.y = spot(), spot()
        esper.process()
        want = {e for e in boxes if spatial.index[e].intersects(view[0])}
        assert set(camera.visible) == want, view[0]
