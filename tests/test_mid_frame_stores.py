"""A store made in the middle of a SpatialProcessor's frame, after the frame read its dirty
lists and before it finished with them, is seen by the next frame: never lost.

Python code runs there whenever the collector runs a finaliser or a ``gc.callbacks`` hook,
or another thread takes the GIL. Such a store reports its entity (a component's first store
after a read appends it to the processor's dirty list and disarms the component until it is
read again); a frame that cleared its whole list at the end dropped that report, and the
component, still disarmed, never reported again: the entity stayed where it was for good.
The frame now drops only the entries it read.

The window is entered deterministically here: the processor's ``_apply_members`` (where
the frame applies what it read) is wrapped, for one frame, to make the store first. Every
case runs with the members table (compiled components) and without it, and on both builds
(the suite's ``ECS_SPATIAL_PURE=1`` leg runs the reference components).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import esper
import pytest

from ecs_spatial import AABB, CollisionFilter, Position, SpatialProcessor


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
