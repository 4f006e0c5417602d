"""``_versions``: every class that saves its state is read through its layouts there: the
state each class saves now is in its current layout, each older layout is upgraded step by
step to a state the class reads, and a state in no layout is refused, naming the class."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import esper
import pytest

from ecs_spatial import _versions
from ecs_spatial.collision_handlers import CollisionHandler, HandlerRoutes
from ecs_spatial.components import AABB, Position
from ecs_spatial.culling import CullingProcessor
from ecs_spatial.delivery import ENTER, EXIT, Outbox
from ecs_spatial.geometry import Box
from ecs_spatial.proximity import Proximity, ProximityProcessor
from ecs_spatial.saving import save_world
from ecs_spatial.spatial_processor import SpatialProcessor


def _on(*_: object) -> None:
    """A handler that does nothing (module level: it pickles)."""


class Tag:
    """A component of the game's own."""


def _states(world: str) -> dict[str, Any]:
    """The state each class saves now, from a world that exercises them all."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=2)
    proximity = ProximityProcessor(spatial)
    esper.add_processor(proximity, priority=1)
    culling = CullingProcessor(spatial, Box(0, 0, 50, 50))
    esper.add_processor(culling)
    handler = spatial.on_collision(Tag, None, enter=_on)
    watcher = Proximity(30.0, exit_radius=40.0)
    esper.create_entity(Position(0, 0), AABB(10, 10), watcher, Tag())
    esper.create_entity(Position(5, 5), AABB(10, 10))
    esper.process()
    outbox = Outbox()
    outbox.post("enter", ENTER, [(1, 2)])
    return {
        "SpatialProcessor": spatial.__reduce_ex__(4)[2],
        "Outbox": outbox.__getstate__(),
        "Proximity": watcher.__reduce__()[2],
        "ProximityProcessor": proximity.__getstate__(),
        "CullingProcessor": culling.__reduce_ex__(4)[2],
        "CollisionHandler": handler.__reduce_ex__(4)[2],
        "HandlerRoutes": spatial._routes.__reduce_ex__(4)[2],
        "WorldState": save_world().__getstate__(),
    }


LAYOUTS = {
    "SpatialProcessor": _versions.SPATIAL_PROCESSOR,
    "Outbox": _versions.OUTBOX,
    "Proximity": _versions.PROXIMITY,
    "ProximityProcessor": _versions.PROXIMITY_PROCESSOR,
    "CullingProcessor": _versions.CULLING_PROCESSOR,
    "CollisionHandler": _versions.COLLISION_HANDLER,
    "HandlerRoutes": _versions.HANDLER_ROUTES,
    "WorldState": _versions.WORLD_STATE,
}


def test_what_each_class_saves_now_is_its_current_layout(world: str) -> None:
    """A class whose saved state changes without a new entry in its layouts fails here."""
    states = _states(world)
    assert states.keys() == LAYOUTS.keys()
    for kind, state in states.items():
        layouts = LAYOUTS[kind]
        assert layouts.kind == kind
        assert layouts.recognise(state) == len(layouts.layouts) - 1, kind
        assert layouts.upgraded(None, state) is state, kind


def test_each_class_round_trips_through_its_layouts(world: str) -> None:
    """A world with every class in it, pickled and deep-copied, restores each class (its
    ``__setstate__`` reads through its layouts)."""
    _states(world)
    saved = save_world()
    for twin in (pickle.loads(pickle.dumps(saved)), copy.deepcopy(saved)):
        kinds = [type(p).__name__ for p, _ in twin.processors]
        assert kinds == ["SpatialProcessor", "ProximityProcessor", "CullingProcessor"]
        spatial = twin.processors[0][0]
        assert isinstance(spatial, SpatialProcessor)
        assert [type(h).__name__ for h in spatial.collision_handlers] == ["CollisionHandler"]


def test_an_outbox_of_each_older_layout_loads() -> None:
    """0.2.0's ``(batches, silent)`` owes nothing; the development layout's owed event
    (name, key, handlers) gains an unknown role; each then delivers as the current one."""
    batches = [["enter", ENTER, [(1, 2)], 0]]
    old = Outbox.__new__(Outbox)
    old.__setstate__((batches, {(3, 4)}))
    assert old._owed is None and list(old._batches) == batches and old._silent == {(3, 4)}
    dev = Outbox.__new__(Outbox)
    dev.__setstate__(([], set(), ("exit", (1, 2), [_on])))
    assert dev._owed == ("exit", (1, 2), (_on,), None)
    now = Outbox.__new__(Outbox)
    now.__setstate__(([], set(), ("exit", (1, 2), [_on], EXIT)))
    assert now._owed == ("exit", (1, 2), (_on,), EXIT)


@pytest.mark.parametrize("kind", list(LAYOUTS))
def test_a_state_in_no_layout_is_refused_by_name(kind: str) -> None:
    """Neither a number nor a tuple of three strings is any class's state."""
    for state in (7, ("a", "b", "c", "d", "e")):
        with pytest.raises(ValueError, match=f"^a saved {kind} in no layout this ecs_spatial"):
            LAYOUTS[kind].recognise(state)


def test_an_older_layout_is_upgraded_step_by_step() -> None:
    """Each step applies to the layout before it, in order, and only from the state's own."""
    calls: list[str] = []

    def step(name: str) -> _versions.Step:
        def upgrade(restoring: Any, state: tuple[Any, ...]) -> tuple[Any, ...]:
            calls.append(name)
            return (*state, name)

        return upgrade

    layouts = _versions.Layouts(
        "Thing",
        _versions.Layout("one", lambda s: len(s) == 1, step("to two")),
        _versions.Layout("two", lambda s: len(s) == 2, step("to three")),
        _versions.Layout("now", lambda s: len(s) == 3),
    )
    assert layouts.upgraded(None, ("x",)) == ("x", "to two", "to three")
    assert calls == ["to two", "to three"]
    assert layouts.upgraded(None, ("x", "y")) == ("x", "y", "to three")
    assert layouts.upgraded(None, ("x", "y", "z")) == ("x", "y", "z")


def test_no_class_names_a_version_in_a_method() -> None:
    """Upgrades live in ``_versions``, as steps of a layout, not in methods named for a
    version (``_since_0_2_0``)."""
    import re

    for cls in (SpatialProcessor, Outbox, Proximity, ProximityProcessor, CullingProcessor,
                CollisionHandler, HandlerRoutes):
        assert not [n for n in vars(cls) if re.search(r"\d_\d", n)], cls
