"""Proximity and ProximityProcessor: neighbours and the proximity events, through esper.

Unit tests, then a differential test against a brute-force model over random frames (moves
of few or many entities, spawns, deferred and immediate deletions, radius, mask and category
changes, watchers gaining, losing and replacing their component, watchers without a box,
handlers that raise: in a frame's own events or in what an earlier raise left owed, which
must not cost the frame). The differential driver also runs longer from the command line:

    python tests/test_proximity.py --seeds 500 --frames 200
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import itertools
import math
import pickle
import random
import re
import sys
from collections.abc import Set as AbstractSet
from typing import Any

import esper
import pytest
from _budget import budget
from _event_model import DiffModel, FaultRules, FaultyRecorder, InjectedFault
from _worlds import Recorder, fresh_world, stress_main
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ecs_spatial.components import AABB, CollisionFilter, Position
from ecs_spatial.events import PROXIMITY_ENTER, PROXIMITY_EXIT
from ecs_spatial.geometry import Box
from ecs_spatial.index import QuadTree
from ecs_spatial.proximity import Proximity, ProximityProcessor
from ecs_spatial.spatial_processor import SpatialProcessor

# Every test here runs on both ways of reading esper's membership (conftest.membership).
pytestmark = pytest.mark.usefixtures("membership")

_world_ids = itertools.count()
Event = tuple[str, int, int]

#: Cost settings that force each way of updating the neighbours, besides the default.
STRATEGIES: dict[str, dict[str, float]] = {
    "auto": {},
    "incremental": {"REVERSE_COST": 0.0, "REBUILD_COST": 0.0},
    "requery-all": {"REVERSE_COST": 1e18},
}


def setup() -> tuple[SpatialProcessor, ProximityProcessor, Recorder]:
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=10)
    proximity = ProximityProcessor(spatial)
    esper.add_processor(proximity)
    return spatial, proximity, Recorder(PROXIMITY_ENTER, PROXIMITY_EXIT, None)


def thing(x: float, y: float, *components: Any, w: float = 2.0, h: float = 2.0) -> int:
    """An entity with a w x h box whose lower-left corner is (x, y)."""
    return esper.create_entity(Position(x, y), AABB(w, h), *components)


def watcher(x: float, y: float, radius: float, mask: int = 0xFFFFFFFF) -> int:
    """A watcher whose 2 x 2 box is centred on (x, y)."""
    return thing(x - 1, y - 1, Proximity(radius, mask))


def neighbors(entity: int) -> set[int]:
    return set(esper.component_for_entity(entity, Proximity).neighbors)


# -- the component ----------------------------------------------------------------------------


def test_component_defaults() -> None:
    """A fresh Proximity has the given radius, a full mask and no neighbours."""
    p = Proximity(12.5)
    assert p.radius == 12.5
    assert p.mask == 0xFFFFFFFF
    assert set(p.neighbors) == set()
    assert "12.5" in repr(p)


def test_neighbors_is_read_only() -> None:
    """neighbors cannot be assigned or mutated by the user."""
    p = Proximity(1.0)
    with pytest.raises(AttributeError):
        p.neighbors = {1}  # type: ignore[misc, assignment]
    assert not hasattr(p.neighbors, "add")


# -- the rules --------------------------------------------------------------------------------


def test_neighbours_are_boxes_within_radius_of_the_centre(world: str) -> None:
    """A box whose nearest point is within the radius of the watcher's centre is a
    neighbour; distance exactly equal to the radius counts."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    near = thing(5, 0)  # nearest point (5, 0): distance 5
    edge = thing(10, -1)  # nearest point (10, 0): distance exactly 10
    diagonal = thing(6, 8)  # nearest point (6, 8): distance exactly 10
    thing(10.001, 0)  # just out
    thing(7.1, 7.1)  # corner at distance 10.04
    esper.process()
    assert neighbors(w) == {near, edge, diagonal}
    assert rec.take() == [("enter", w, near), ("enter", w, edge), ("enter", w, diagonal)]


def test_large_box_whose_centre_is_far_is_a_neighbour(world: str) -> None:
    """Reach is measured to the box's nearest point, not to its centre."""
    _, _, _ = setup()
    w = watcher(0, 0, 5)
    wall = thing(3, -500, w=10, h=1000)
    esper.process()
    assert neighbors(w) == {wall}


def test_watcher_is_never_its_own_neighbour(world: str) -> None:
    """The watcher's own box is within any radius of its centre, yet never counts."""
    _, _, _ = setup()
    w = watcher(0, 0, 100)
    esper.process()
    assert neighbors(w) == set()


def test_watcher_centre_is_the_box_centre(world: str) -> None:
    """The centre is the centre of the AABB box, offsets included, not the Position."""
    _, _, _ = setup()
    w = esper.create_entity(Position(0, 0), AABB(20, 20, 100, 0), Proximity(5))  # box 100..120
    near_box = thing(114, 9)  # distance 4 from (110, 10)
    near_position = thing(2, 0)  # near the Position, far from the centre
    esper.process()
    assert neighbors(w) == {near_box}
    assert near_position not in neighbors(w)


def test_watcher_without_box_uses_its_position(world: str) -> None:
    """A watcher with a Position and no AABB senses from its Position."""
    _, _, rec = setup()
    w = esper.create_entity(Position(0, 0), Proximity(5))
    a = thing(3, 0)
    esper.process()
    assert neighbors(w) == {a}
    esper.component_for_entity(w, Position).x = 50
    esper.process()
    assert neighbors(w) == set()
    assert rec.take() == [("enter", w, a), ("exit", w, a)]


def test_watcher_without_position_has_no_neighbours(world: str) -> None:
    """A watcher with neither a box nor a Position senses nothing, and starts when it gets
    a Position."""
    _, _, _ = setup()
    w = esper.create_entity(Proximity(5))
    a = thing(1, 0)
    esper.process()
    assert neighbors(w) == set()
    esper.add_component(w, Position(0, 0))
    esper.process()
    assert neighbors(w) == {a}


def test_only_indexed_entities_are_neighbours(world: str) -> None:
    """An entity with a Position but no AABB is not in the index, so it is nobody's
    neighbour."""
    _, _, _ = setup()
    w = watcher(0, 0, 50)
    esper.create_entity(Position(1, 1))
    esper.process()
    assert neighbors(w) == set()


def test_mask_is_tested_against_the_others_category(world: str) -> None:
    """other.category & mask must be non-zero; no CollisionFilter means category 1."""
    _, _, _ = setup()
    w = watcher(0, 0, 50, mask=0b110)
    plain = thing(1, 1)  # category 1: 1 & 0b110 == 0
    enemy = thing(2, 2, CollisionFilter(category=0b100))
    pickup = thing(3, 3, CollisionFilter(category=0b010, mask=0))  # its own mask is irrelevant
    ghost = thing(4, 4, CollisionFilter(category=0))
    esper.process()
    assert neighbors(w) == {enemy, pickup}
    assert plain not in neighbors(w) and ghost not in neighbors(w)


def test_watchers_own_filter_plays_no_part(world: str) -> None:
    """A watcher whose own CollisionFilter would refuse collisions still senses."""
    _, _, _ = setup()
    w = thing(-1, -1, Proximity(10), CollisionFilter(category=0, mask=0))
    a = thing(3, 0)
    esper.process()
    assert neighbors(w) == {a}


def test_category_change_takes_effect(world: str) -> None:
    """Editing the other entity's CollisionFilter in place changes whether it is sensed."""
    _, _, rec = setup()
    w = watcher(0, 0, 10, mask=0b10)
    f = CollisionFilter(category=0b01)
    a = thing(2, 0, f)
    esper.process()
    assert neighbors(w) == set()
    f.category = 0b10
    esper.process()
    assert neighbors(w) == {a}
    esper.remove_component(a, CollisionFilter)  # back to category 1
    esper.process()
    assert neighbors(w) == set()
    assert rec.take() == [("enter", w, a), ("exit", w, a)]


# -- events -----------------------------------------------------------------------------------


def test_events_exits_first_then_enters_each_sorted(world: str) -> None:
    """All exits, then all enters, each in ascending (watcher, other) order."""
    _, _, rec = setup()
    w1 = watcher(0, 0, 10)
    w2 = watcher(100, 0, 10)
    a = thing(3, 0)
    b = thing(103, 0)
    c = thing(500, 0)
    d = thing(600, 0)
    esper.process()
    assert rec.take() == [("enter", w1, a), ("enter", w2, b)]
    esper.component_for_entity(a, Position).x = 300  # w1 loses a
    esper.component_for_entity(b, Position).x = 300  # w2 loses b
    esper.component_for_entity(c, Position).x = 104  # w2 gains c
    esper.component_for_entity(d, Position).x = 4  # w1 gains d
    esper.process()
    assert rec.take() == [
        ("exit", w1, a),
        ("exit", w2, b),
        ("enter", w1, d),
        ("enter", w2, c),
    ]


def test_watchers_see_each_other(world: str) -> None:
    """Two watchers within reach are each other's neighbours: two pairs, two events."""
    _, _, rec = setup()
    w1 = watcher(0, 0, 10)
    w2 = watcher(5, 0, 10)
    esper.process()
    assert neighbors(w1) == {w2} and neighbors(w2) == {w1}
    assert rec.take() == [("enter", w1, w2), ("enter", w2, w1)]


def test_watcher_moving_changes_its_neighbours(world: str) -> None:
    """A watcher that moves gets exits for what it left and enters for what it reached."""
    _, _, rec = setup()
    w = watcher(0, 0, 5)
    a = thing(2, 0)
    b = thing(52, 0)
    esper.process()
    rec.take()
    esper.component_for_entity(w, Position).x = 49
    esper.process()
    assert neighbors(w) == {b}
    assert rec.take() == [("exit", w, a), ("enter", w, b)]


@pytest.mark.parametrize("immediate", [False, True])
def test_neighbour_deleted_exits(world: str, immediate: bool) -> None:
    """A neighbour deleted (deferred or immediately) gives its exit at the next process()."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    a = thing(2, 0)
    b = thing(4, 0)
    esper.process()
    rec.take()
    esper.delete_entity(a, immediate=immediate)
    esper.process()
    assert neighbors(w) == {b}
    assert rec.take() == [("exit", w, a)]


def test_neighbour_losing_its_box_exits(world: str) -> None:
    """A neighbour that loses its AABB leaves the index and exits."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    a = thing(2, 0)
    esper.process()
    rec.take()
    esper.remove_component(a, AABB)
    esper.process()
    assert rec.take() == [("exit", w, a)]


@pytest.mark.parametrize("how", ["deferred", "immediate", "remove_component"])
def test_departed_watcher_clears_its_neighbours_with_exits(world: str, how: str) -> None:
    """A watcher deleted or losing its Proximity: all its pairs exit, its component's
    neighbours are emptied, and the others that saw it get their exits too."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    other_watcher = watcher(3, 0, 10)
    a = thing(2, 0)
    esper.process()
    component = esper.component_for_entity(w, Proximity)
    assert set(component.neighbors) == {other_watcher, a}
    rec.take()
    if how == "remove_component":
        esper.remove_component(w, Proximity)
        esper.process()
        # w is still in the index, so other_watcher still sees it.
        assert rec.take() == [("exit", w, other_watcher), ("exit", w, a)]
    else:
        esper.delete_entity(w, immediate=how == "immediate")
        esper.process()
        assert rec.take() == [
            ("exit", w, other_watcher),
            ("exit", w, a),
            ("exit", other_watcher, w),
        ]
    assert set(component.neighbors) == set()
    # Detached, the component no longer reacts to anything.
    component.radius = 1000
    esper.process()
    assert set(component.neighbors) == set()
    assert rec.take() == []


def test_replaced_component_reports_only_the_difference(world: str) -> None:
    """Replacing a watcher's Proximity keeps the pairs that still hold: no exit and
    re-enter for them."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    near = thing(2, 0)
    far = thing(20, 0)
    esper.process()
    old = esper.component_for_entity(w, Proximity)
    rec.take()
    esper.add_component(w, Proximity(30))
    esper.process()
    assert neighbors(w) == {near, far}
    assert rec.take() == [("enter", w, far)]
    assert set(old.neighbors) == set()
    esper.add_component(w, Proximity(1))
    esper.process()
    assert rec.take() == [("exit", w, near), ("exit", w, far)]


def test_radius_change_takes_effect_at_next_process(world: str) -> None:
    """Assigning radius changes nothing until the next process(), which applies it."""
    _, _, rec = setup()
    w = watcher(0, 0, 5)
    a = thing(20, 0)
    esper.process()
    component = esper.component_for_entity(w, Proximity)
    component.radius = 50
    assert set(component.neighbors) == set()
    esper.process()
    assert set(component.neighbors) == {a}
    component.radius = 0
    esper.process()
    assert rec.take() == [("enter", w, a), ("exit", w, a)]


def test_mask_change_takes_effect_at_next_process(world: str) -> None:
    """Assigning mask is applied at the next process()."""
    _, _, _ = setup()
    w = watcher(0, 0, 50)
    a = thing(2, 0, CollisionFilter(category=0b10))
    esper.process()
    assert neighbors(w) == {a}
    esper.component_for_entity(w, Proximity).mask = 0b01
    esper.process()
    assert neighbors(w) == set()


def test_zero_radius_senses_touching_boxes(world: str) -> None:
    """Radius 0: only boxes that contain the centre (closed) are neighbours."""
    _, _, _ = setup()
    w = esper.create_entity(Position(0, 0), Proximity(0))
    on_edge = thing(0, -1)  # box [0, 2] x [-1, 1] touches (0, 0)
    thing(0.5, 0)
    esper.process()
    assert neighbors(w) == {on_edge}


# -- hysteresis: exit_radius -----------------------------------------------------------------


def test_signature_and_defaults() -> None:
    """Proximity(radius, mask=0xFFFFFFFF, exit_radius=None), every parameter positional or
    keyword; without exit_radius there is no hysteresis."""
    parameters = inspect.signature(Proximity).parameters
    assert [(p.name, p.kind, p.default) for p in parameters.values()] == [
        ("radius", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("mask", inspect.Parameter.POSITIONAL_OR_KEYWORD, 0xFFFFFFFF),
        ("exit_radius", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
    ]
    assert Proximity(5).exit_radius is None
    assert Proximity(5, 3, 8).exit_radius == 8
    assert Proximity(5, exit_radius=5.0).exit_radius == 5.0
    assert "exit_radius=8.5" in repr(Proximity(5, exit_radius=8.5))


def place(entity: int, x: float) -> None:
    """Move ``entity``'s Position to x (its y unchanged)."""
    esper.component_for_entity(entity, Position).x = x


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("mover", ["other", "watcher", "boxless watcher"])
def test_pacing_between_radius_and_exit_radius_gives_no_events(
    world: str, strategy: str, mover: str
) -> None:
    """An entity that entered at radius 10 and paces anywhere up to exit_radius 15 (on both
    radii included) stays a neighbour, without events, whoever moves; beyond 15 it exits,
    and comes back only within 10."""
    _, proximity, rec = setup()
    for name, value in STRATEGIES[strategy].items():
        setattr(proximity, name, value)
    if mover == "boxless watcher":
        w = esper.create_entity(Position(0, 0), Proximity(10, exit_radius=15))
    else:
        w = thing(-1, -1, Proximity(10, exit_radius=15))  # centre (0, 0)
    other = thing(20, -1)  # its nearest point to the centre: (x, 0)
    for i in range(5):
        watcher(1000 + 100 * i, 0, 10)  # idle watchers, so that "auto" may go incremental

    def at(distance: float) -> None:
        if mover == "other":
            place(other, distance)
        else:  # the watcher moves left instead, keeping the same distance
            place(w, 20 - distance - (0 if mover == "boxless watcher" else 1))

    esper.process()
    assert rec.take() == []
    at(10)
    esper.process()
    assert rec.take() == [("enter", w, other)]
    for distance in [12, 15, 14.99, 10.5, 15, 13, 11, 15, 12.5] * 3:
        at(distance)
        esper.process()
        assert neighbors(w) == {other}
    assert rec.take() == []
    at(15.01)
    esper.process()
    assert rec.take() == [("exit", w, other)]
    for distance in [14, 10.01, 15, 12]:
        at(distance)
        esper.process()
    assert rec.take() == [] and neighbors(w) == set()
    at(10)
    esper.process()
    assert rec.take() == [("enter", w, other)]


def test_without_exit_radius_pacing_on_the_boundary_floods_events(world: str) -> None:
    """The case hysteresis is for: without exit_radius, pacing across radius gives an enter
    or an exit every frame."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    other = thing(20, -1)
    for distance in [9.5, 10.5] * 4:
        place(other, distance)
        esper.process()
    assert rec.take() == [("enter", w, other), ("exit", w, other)] * 4


def count_queries(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float, float]]:
    """From now on, every ``QuadTree.query_radius(x, y, r)`` call of the test, in order."""
    calls: list[tuple[float, float, float]] = []
    real = QuadTree.query_radius

    def counting(self: QuadTree, x: float, y: float, r: float) -> list[int]:
        calls.append((x, y, r))
        return real(self, x, y, r)

    monkeypatch.setattr(QuadTree, "query_radius", counting)
    return calls


def test_exit_radius_assignment_takes_effect_at_next_process_with_one_query(
    world: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Assigning exit_radius (or None) takes effect at the next process(), which re-queries
    that watcher alone: a neighbour beyond the new exit reach exits."""
    calls = count_queries(monkeypatch)
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    others = [watcher(500 + 100 * i, 0, 10) for i in range(5)]
    near = thing(8, -1)
    esper.process()
    component = esper.component_for_entity(w, Proximity)
    component.exit_radius = 20
    place(near, 18)  # beyond radius, within the new exit radius
    calls.clear()
    esper.process()
    assert calls == [(0, 0, 10)] and neighbors(w) == {near}
    component.exit_radius = 17
    assert neighbors(w) == {near}  # not before process()
    calls.clear()
    esper.process()
    assert calls == [(0, 0, 10)] and neighbors(w) == set()
    place(near, 9)
    esper.process()
    place(near, 12)
    component.exit_radius = None  # back to radius: 12 is out
    esper.process()
    assert rec.take() == [
        ("enter", w, near), ("exit", w, near), ("enter", w, near), ("exit", w, near)
    ]
    assert all(neighbors(o) == set() for o in others)


def test_radius_raised_keeps_band_and_mask_change_drops_it(world: str) -> None:
    """A neighbour in the band stays while the watcher still senses it: a mask that no
    longer matches its category makes it exit whatever the distance."""
    _, _, rec = setup()
    w = esper.create_entity(Position(0, 0), Proximity(10, 0b11, exit_radius=30))
    other = thing(5, -1, CollisionFilter(category=0b10))
    esper.process()
    place(other, 25)
    esper.process()
    assert neighbors(w) == {other}
    esper.component_for_entity(w, Proximity).radius = 20  # still <= exit_radius
    esper.process()
    assert neighbors(w) == {other}
    esper.component_for_entity(w, Proximity).mask = 0b01
    esper.process()
    assert rec.take() == [("enter", w, other), ("exit", w, other)]


def test_replaced_component_keeps_the_band_by_its_own_exit_radius(world: str) -> None:
    """A replacing Proximity takes over its predecessor's pairs as its previous neighbours:
    one in its band stays, one beyond its exit radius exits."""
    _, _, rec = setup()
    w = watcher(0, 0, 40)
    a = thing(15, -1)
    b = thing(35, -1)
    esper.process()
    rec.take()
    esper.add_component(w, Proximity(10, exit_radius=20))
    esper.process()
    assert neighbors(w) == {a}
    assert rec.take() == [("exit", w, b)]


@pytest.mark.parametrize(
    ("exit_radius", "error", "message"),
    [
        (9.5, ValueError, r"exit_radius must be None or finite and >= radius \(10\), got 9\.5"),
        (-1, ValueError, r"exit_radius .* got -1"),
        (math.nan, ValueError, r"exit_radius .* got nan"),
        (math.inf, ValueError, r"exit_radius .* got inf"),
        (10**400, ValueError, r"exit_radius .* got 1000000"),
        ("15", TypeError, r"Proximity exit_radius must be None or a number, got '15'"),
        (True, TypeError, r"exit_radius must be None or a number, got True"),
    ],
)
def test_bad_exit_radius_is_refused_at_construction(
    exit_radius: Any, error: type[Exception], message: str
) -> None:
    """Proximity(...) refuses an exit_radius that is not None or a finite number >= radius,
    naming the class, the field and the value."""
    with pytest.raises(error, match=message):
        Proximity(10, exit_radius=exit_radius)


@pytest.mark.parametrize("field", ["exit_radius", "radius"])
def test_bad_exit_radius_assigned_raises_at_process_and_changes_nothing(
    world: str, field: str
) -> None:
    """An exit_radius below radius (assigned to either field) is refused at process(),
    naming the entity, the field and the value, before anything changes; once fixed, the
    next process() carries on with every change made meanwhile."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    a = thing(5, -1)
    b = thing(50, -1)
    esper.process()
    rec.take()
    component = esper.component_for_entity(w, Proximity)
    component.exit_radius = 12
    if field == "exit_radius":
        component.exit_radius = 8
    else:
        component.radius = 13
    place(a, 80)  # would exit
    place(b, 4)  # would enter
    shown = 8 if field == "exit_radius" else 12
    with pytest.raises(ValueError, match=rf"entity {w}\b.*exit_radius .*got {shown}"):
        esper.process()
    assert neighbors(w) == {a} and rec.take() == []
    component.exit_radius = None
    esper.process()
    assert neighbors(w) == {b}
    assert rec.take() == [("exit", w, a), ("enter", w, b)]


def _pickled(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value))


@pytest.mark.parametrize(
    "clone", [copy.copy, copy.deepcopy, _pickled], ids=["copy", "deepcopy", "pickle"]
)
def test_copies_carry_radius_mask_exit_radius_and_no_neighbours(
    world: str, clone: Any
) -> None:
    """A copy of a tracked Proximity is a fresh value: same radius, mask and exit_radius,
    no neighbours, no tracking; attached to another entity, it leaves the original's
    neighbours alone (the default copy of the slots shared the neighbours' dict)."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    a = thing(5, -1)
    esper.process()
    original = esper.component_for_entity(w, Proximity)
    original.exit_radius = 12.5
    original.mask = 0b101
    esper.process()
    duplicate = clone(original)
    assert (duplicate.radius, duplicate.mask, duplicate.exit_radius) == (10, 0b101, 12.5)
    assert set(duplicate.neighbors) == set() and set(original.neighbors) == {a}
    duplicate.radius = 1  # untracked: marks nothing
    far = thing(500, 500, duplicate)
    rec.take()
    esper.process()
    assert set(original.neighbors) == {a} and set(duplicate.neighbors) == set()
    assert rec.take() == []
    assert esper.component_for_entity(far, Proximity) is duplicate


#: ``pickle.dumps(p, protocol)`` of a Proximity by ecs_spatial 0.2.0 (the default pickle of
#: its slots): ``Proximity(12.5, 0b110)`` with neighbours {3, 7} (protocol 2), and
#: ``Proximity(4.0)`` (protocol 4).
_PICKLES_0_2_0 = [
    "8002636563735f7370617469616c2e70726f78696d6974790a50726f78696d6974790a7100298171014e7d"
    "71022858070000005f656e7469747971034b0058050000005f6d61736b71044b06580a0000005f6e656967"
    "68626f727371057d7106284b034e4b074e7558070000005f726164697573710747402900000000000058"
    "050000005f73696e6b71084e75867109622e",
    "80049578000000000000008c156563735f7370617469616c2e70726f78696d697479948c0950726f78696d"
    "6974799493942981944e7d94288c075f656e74697479944b008c055f6d61736b948a05ffffffff008c0a5f"
    "6e65696768626f7273947d948c075f726164697573944740100000000000008c055f73696e6b944e758694"
    "622e",
]


def test_pickles_from_0_2_0_still_load() -> None:
    """A Proximity pickled by ecs_spatial 0.2.0 loads, without an exit_radius, with what it
    held then."""
    first, second = (pickle.loads(bytes.fromhex(data)) for data in _PICKLES_0_2_0)
    assert (first.radius, first.mask, first.exit_radius) == (12.5, 0b110, None)
    assert set(first.neighbors) == {3, 7}
    assert (second.radius, second.mask, second.exit_radius) == (4.0, 0xFFFFFFFF, None)
    assert set(second.neighbors) == set()


# -- cost -------------------------------------------------------------------------------------


def test_still_neighbourhoods_are_not_queried(world: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame in which nothing moved queries nothing; a move far from every watcher
    re-queries no watcher; a radius change re-queries that watcher only."""
    calls = count_queries(monkeypatch)
    _, _, _ = setup()
    watchers = [watcher(100 * i, 0, 10) for i in range(20)]
    far = thing(5000, 5000)
    for i in range(20):
        thing(100 * i + 3, 0)
    esper.process()
    assert len(calls) == 20
    calls.clear()
    esper.process()
    assert calls == []
    esper.component_for_entity(far, Position).x = 6000
    esper.process()
    assert calls == []
    esper.component_for_entity(watchers[3], Proximity).radius = 11
    esper.process()
    assert calls == [(300, 0, 11)]


def test_entity_passing_from_one_watcher_to_another_without_a_query(
    world: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entity that leaves one still watcher's reach and enters another's in the same
    frame is handed over by the moved-entity path (no watcher re-queried), and its deletion
    later still exits from the second (a regression: the hand-over lost the reverse map)."""
    calls = count_queries(monkeypatch)
    _, _, rec = setup()
    first = watcher(0, 0, 10)
    second = watcher(30, 0, 10)
    for i in range(6):
        watcher(1000 + 100 * i, 0, 10)  # idle watchers: re-querying all would cost more
    x = thing(5, 0)
    esper.process()
    assert rec.take() == [("enter", first, x)]
    calls.clear()
    esper.component_for_entity(x, Position).x = 25
    esper.process()
    assert calls == []
    assert rec.take() == [("exit", first, x), ("enter", second, x)]
    esper.delete_entity(x)
    esper.process()
    assert rec.take() == [("exit", second, x)]
    assert neighbors(second) == set()


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("radius", "error", "shown"),
    [
        (-1.0, ValueError, "-1.0"),
        (math.nan, ValueError, "nan"),
        (math.inf, ValueError, "inf"),
        ("5", TypeError, "'5'"),
    ],
)
def test_bad_radius_raises_naming_entity_and_value_and_loses_nothing(
    world: str, radius: Any, error: type[Exception], shown: str
) -> None:
    """A bad radius makes process() raise, naming the entity and the value, before anything
    changes; after the fix the next process() reports every change made meanwhile."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    a = thing(2, 0)
    b = thing(50, 0)
    esper.process()
    rec.take()
    component = esper.component_for_entity(w, Proximity)
    component.radius = radius
    esper.component_for_entity(a, Position).x = 80  # would exit
    esper.component_for_entity(b, Position).x = 4  # would enter
    with pytest.raises(error, match=rf"entity {w}\b.*{shown}"):
        esper.process()
    assert neighbors(w) == {a}
    assert rec.take() == []
    component.radius = 10
    esper.process()
    assert neighbors(w) == {b}
    assert rec.take() == [("exit", w, a), ("enter", w, b)]


@pytest.mark.parametrize(
    ("radius", "mask", "error", "message"),
    [
        (-3, 1, ValueError, r"Proximity radius must be finite and >= 0, got -3"),
        (math.nan, 1, ValueError, r"Proximity radius .* got nan"),
        (math.inf, 1, ValueError, r"Proximity radius .* got inf"),
        (10**400, 1, ValueError, r"Proximity radius .* got 1000000"),
        ("5", 1, TypeError, r"Proximity radius must be a number, got '5'"),
        (5, 1.5, TypeError, r"Proximity mask must be an int, got 1\.5"),
        (5, True, TypeError, r"Proximity mask must be an int, got True"),
    ],
)
def test_bad_values_are_refused_at_construction(
    radius: Any, mask: Any, error: type[Exception], message: str
) -> None:
    """Proximity(...) refuses a bad radius or mask at once, naming the class, the field and
    the value."""
    with pytest.raises(error, match=message):
        Proximity(radius, mask)


def test_bad_radius_assigned_raises_at_process(world: str) -> None:
    """A negative radius assigned to a watcher is refused at process(), naming it; once
    fixed, the next process() carries on."""
    _, _, _ = setup()
    w = watcher(0, 0, 3)
    esper.process()
    esper.component_for_entity(w, Proximity).radius = -3
    with pytest.raises(ValueError, match=rf"entity {w}\b.*-3"):
        esper.process()
    esper.component_for_entity(w, Proximity).radius = 3
    esper.process()


def test_bad_mask_assigned_raises_at_process(world: str) -> None:
    """A mask assigned that is not an int is refused at process(), naming the entity and the
    value."""
    _, _, _ = setup()
    w = watcher(0, 0, 10)
    esper.process()
    esper.component_for_entity(w, Proximity).mask = 1.5  # type: ignore[assignment]
    with pytest.raises(TypeError, match=rf"entity {w}\b.*1\.5"):
        esper.process()


def test_one_component_on_two_entities_is_refused(world: str) -> None:
    """A Proximity instance shared by two watchers is refused, naming both."""
    _, _, _ = setup()
    shared = Proximity(5)
    a = thing(0, 0, shared)
    b = thing(1, 0, shared)
    with pytest.raises(ValueError, match=rf"{a}.*{b}"):
        esper.process()


def test_a_watchers_component_given_to_another_entity_later_is_refused(world: str) -> None:
    """A watcher's Proximity added to a second entity in a later frame is refused, naming
    both, and nothing changes: once the second entity has its own, all carries on."""
    _, _, rec = setup()
    shared = Proximity(5)
    a = thing(0, 0, shared)
    b = thing(1, 0)
    esper.process()
    assert set(shared.neighbors) == {b}
    rec.take()
    esper.add_component(b, shared)
    with pytest.raises(ValueError, match=rf"entities {a} and {b}"):
        esper.process()
    assert set(shared.neighbors) == {b} and rec.take() == []
    esper.add_component(b, Proximity(5))
    esper.process()
    assert set(shared.neighbors) == {b}
    assert set(esper.component_for_entity(b, Proximity).neighbors) == {a}
    assert rec.take() == [("enter", b, a)]


def test_nan_position_of_a_boxless_watcher_raises(world: str) -> None:
    """A watcher outside the index with a NaN Position is refused, naming it."""
    _, _, _ = setup()
    w = esper.create_entity(Position(0, 0), Proximity(5))
    esper.component_for_entity(w, Position).x = math.nan
    with pytest.raises(ValueError, match=rf"entity {w}\b"):
        esper.process()


# -- esper integration ------------------------------------------------------------------------


def test_handler_deleting_the_neighbour_loses_no_exit(world: str) -> None:
    """A proximity_enter handler that deletes the other entity (a pickup): its exit comes
    at the next process()."""
    _, _, rec = setup()

    class Collector:
        def on_enter(self, watcher: int, other: int) -> None:
            esper.delete_entity(other)

    collector = Collector()
    esper.set_handler(PROXIMITY_ENTER, collector.on_enter)
    w = watcher(0, 0, 10)
    coin = thing(2, 0)
    esper.process()
    assert rec.take() == [("enter", w, coin)]
    esper.process()
    assert rec.take() == [("exit", w, coin)]
    assert neighbors(w) == set()


def test_refuses_to_run_in_another_world(world: str) -> None:
    """A processor bound to one world raises if run while another world is current."""
    _, proximity, _ = setup()
    esper.process()
    other = world + "_elsewhere"
    esper.switch_world(other)
    try:
        with pytest.raises(RuntimeError, match=re.escape(repr(world))):
            proximity.process()
    finally:
        esper.switch_world(world)
        esper.delete_world(other)
    proximity.process()


def test_worlds_do_not_see_each_other(world: str) -> None:
    """Two worlds, each with its own processors, never mix their watchers or entities."""
    _, _, rec = setup()
    w = watcher(0, 0, 10)
    a = thing(2, 0)
    other = world + "_other"
    esper.switch_world(other)
    try:
        _, _, rec2 = setup()
        w2 = watcher(0, 0, 10)
        b = thing(3, 0)
        c = thing(4, 0)
        esper.process()
        assert neighbors(w2) == {b, c}
        assert rec2.take() == [("enter", w2, b), ("enter", w2, c)]
        esper.event_registry.clear()
    finally:
        esper.switch_world(world)
    esper.process()
    esper.delete_world(other)
    assert neighbors(w) == {a}
    assert rec.take() == [("enter", w, a)]


# -- differential test against a brute-force model --------------------------------------------


def model_pairs(previous: AbstractSet[tuple[int, int]] = frozenset()) -> set[tuple[int, int]]:
    """Every (watcher, neighbour) pair by brute force from the components, independently of
    the processors: boxes from Position and AABB, centres, categories, the distance rule,
    and hysteresis: a pair of ``previous`` holds within ``exit_radius`` (when set), any
    other only within ``radius``."""
    boxes = {}
    for entity, (pos, aabb) in esper.get_components(Position, AABB):
        x = pos.x + aabb.offset_x
        y = pos.y + aabb.offset_y
        boxes[entity] = Box(x, y, x + aabb.width, y + aabb.height)
    pairs = set()
    for w, prox in esper.get_component(Proximity):
        if w in boxes:
            cx, cy = boxes[w].center
        else:
            position = esper.try_component(w, Position)
            if position is None:
                continue
            cx, cy = position.x, position.y
        for other, box in boxes.items():
            if other == w:
                continue
            f = esper.try_component(other, CollisionFilter)
            category = f.category if f is not None else 1
            reach = prox.radius
            if prox.exit_radius is not None and (w, other) in previous:
                reach = prox.exit_radius
            if category & prox.mask and box.distance_to_point(cx, cy) <= reach:
                pairs.add((w, other))
    return pairs


def run_random_frames(seed: int, frames: int, strategy: str = "auto", side: float = 150.0) -> None:
    """Drive a world through random frames; after each process() compare every watcher's
    neighbours and the event sequence with the brute-force model."""
    rng = random.Random(seed)
    proximity, rec, model = faulty_setup(rng)
    for name, value in STRATEGIES[strategy].items():
        setattr(proximity, name, value)
    alive: list[int] = []
    # Mostly small radii, sometimes one far above the median (kept apart by the reach grid).
    radii = [0.0, 5.0, 10.0, 25.0, rng.uniform(0, 60), rng.choice([25.0, 400.0])]

    def spawn() -> None:
        components: list[Any] = [Position(rng.uniform(-10, side), rng.uniform(-10, side))]
        if rng.random() < 0.9:
            # Now and then a huge box, spanning many cells of the reach grid.
            width = rng.choice([0.0, 2.0, rng.uniform(0, 20), rng.uniform(0, 20), 300.0])
            components.append(AABB(width, rng.uniform(0, 20)))
        if rng.random() < 0.3:
            components.append(CollisionFilter(category=rng.choice([0, 1, 2, 3, 4])))
        if rng.random() < 0.3:
            radius = rng.choice(radii)
            components.append(
                Proximity(radius, rng.choice([0xFFFFFFFF, 1, 2, 6]), exit_radius(radius))
            )
        alive.append(esper.create_entity(*components))

    def exit_radius(radius: float) -> float | None:
        """None (no hysteresis) half the time, else radius itself or a band above it."""
        return rng.choice([None, None, radius, radius + 3.0, radius + rng.uniform(0, 30)])

    for _ in range(rng.randint(0, 40)):
        spawn()
    for frame in range(frames):
        # Few or many movers, to drive both the incremental path and the re-query-all path.
        fraction = rng.choice([0.0, 0.02, 0.1, 0.5, 1.0])
        for entity in alive:
            if rng.random() < fraction and esper.entity_exists(entity):
                pos = esper.try_component(entity, Position)
                if pos is None:
                    continue
                if rng.random() < 0.1:
                    pos.x = float(rng.randrange(0, int(side), 5))  # exact distances
                    pos.y = float(rng.randrange(0, int(side), 5))
                else:
                    pos.x += rng.uniform(-8, 8)
                    pos.y += rng.uniform(-8, 8)
        for _ in range(rng.choice([0, 0, 1, 3])):
            spawn()
        for _ in range(rng.choice([0, 0, 0, 1, 2])):
            if alive:
                entity = alive.pop(rng.randrange(len(alive)))
                esper.delete_entity(entity, immediate=rng.random() < 0.5)
        for _ in range(rng.choice([0, 0, 1, 2])):
            if not alive:
                break
            entity = rng.choice(alive)
            if not esper.entity_exists(entity):
                continue
            action = rng.randrange(7)
            prox = esper.try_component(entity, Proximity)
            if action == 0 and prox is not None:
                prox.radius = rng.choice(radii)
                below = prox.exit_radius is not None and prox.exit_radius < prox.radius
                if below or rng.random() < 0.5:  # a radius above exit_radius is refused
                    prox.exit_radius = exit_radius(prox.radius)
            elif action == 1 and prox is not None:
                prox.mask = rng.choice([0xFFFFFFFF, 1, 2, 6, 0])
            elif action == 2:
                if prox is None:
                    radius = rng.choice(radii)
                    esper.add_component(entity, Proximity(radius, exit_radius=exit_radius(radius)))
                else:
                    esper.remove_component(entity, Proximity)
            elif action == 3 and prox is not None:
                radius = rng.choice(radii)  # replace: the pairs that still hold are kept
                esper.add_component(entity, Proximity(radius, exit_radius=exit_radius(radius)))
            elif action == 4:
                f = esper.try_component(entity, CollisionFilter)
                if f is None:
                    esper.add_component(entity, CollisionFilter(category=rng.choice([0, 2, 4])))
                else:
                    f.category = rng.choice([0, 1, 2, 4])
            elif action == 5:
                if esper.has_component(entity, AABB):
                    esper.remove_component(entity, AABB)
                else:
                    esper.add_component(entity, AABB(rng.uniform(0, 10), rng.uniform(0, 10)))
            elif action == 6 and esper.has_component(entity, Position):
                if rng.random() < 0.5:
                    esper.remove_component(entity, Position)
            elif action == 6:
                esper.add_component(entity, Position(rng.uniform(0, side), rng.uniform(0, side)))
        # A handler raises now and then: in the frame's own events, or in what an earlier
        # raise left owed (the frame is worked out all the same); or switches to another
        # world and stays there (a scene change: the rest waits, and so does the frame if
        # that was in what was owed); or visits another world and comes back (no change).
        rec.raise_at = rng.choice([None, None, None, 0, 0, rng.randrange(8)])
        rec.leave_at = rng.choice([None] * 6 + [0, rng.randrange(8)])
        rec.detour_rate = rng.choice([0.0, 0.0, 0.3])
        with contextlib.suppress(InjectedFault):
            esper.process()
        rec.come_back()
        rec.raise_at = rec.leave_at = None

        expected = model_pairs(model.previous)
        context = f"seed={seed} frame={frame}"
        state = model.frame(rec.take(), expected, context)
        assert_neighbours(proximity, model, state, context)


def assert_neighbours(
    proximity: ProximityProcessor, model: DiffModel, state: set[Any], context: str
) -> None:
    """Every watcher's neighbours are the model's ``state``: read from the world's
    components, or, when a handler's switch of worlds left the frame for later, from the
    components the processor tracks (one attached since has no neighbours until then)."""
    if model.worked_out:
        watchers = esper.get_component(Proximity)
    else:
        watchers = list(proximity._watchers.items())
        assert {(w, o) for w, p in watchers for o in p.neighbors} == state, context
    for w, prox in watchers:
        assert set(prox.neighbors) == {o for (v, o) in state if v == w}, context


def faulty_setup(rng: random.Random) -> tuple[ProximityProcessor, FaultyRecorder, DiffModel]:
    """A SpatialProcessor and a ProximityProcessor, a recorder of the proximity events that
    raises where told, and the model of those events."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial, priority=10)
    proximity = ProximityProcessor(spatial)
    esper.add_processor(proximity)
    recorder = FaultyRecorder(rng, (PROXIMITY_ENTER, PROXIMITY_EXIT))
    return proximity, recorder, DiffModel(PROXIMITY_EXIT, PROXIMITY_ENTER)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("seed", range(8))
def test_differential_random_frames(world: str, seed: int, strategy: str) -> None:
    """Neighbours and events equal a brute-force scan over random frames, whichever way the
    processor updates them."""
    run_random_frames(seed, frames=40, strategy=strategy)


class ProximityMachine(FaultRules, RuleBasedStateMachine):
    """Random stories of creations, moves (some exactly onto a watcher's radius or exit
    radius, or between them), deletions, radius, exit radius, mask and category changes,
    watchers gaining and losing their component, and frames, checked against the model
    (hysteresis included) after every frame (hypothesis shrinks a failure to a short
    story)."""

    def __init__(self) -> None:
        super().__init__()
        self._world_scope = contextlib.ExitStack()
        self.world = self._world_scope.enter_context(fresh_world("proximity_machine"))
        self.proximity, self.rec, self.model = faulty_setup(random.Random(0))

    def teardown(self) -> None:
        self._world_scope.close()

    def alive(self) -> list[int]:
        return [e for e in esper.get_entities() if esper.entity_exists(e)]

    @initialize(strategy=st.sampled_from(list(STRATEGIES)))
    def choose_strategy(self, strategy: str) -> None:
        for name, value in STRATEGIES[strategy].items():
            setattr(self.proximity, name, value)

    @rule(
        x=st.integers(-5, 50),
        y=st.integers(-5, 50),
        w=st.integers(0, 10),
        radius=st.none() | st.integers(0, 20),
        band=st.none() | st.integers(0, 12),
        category=st.none() | st.integers(0, 3),
        boxed=st.booleans(),
    )
    def create(
        self,
        x: int,
        y: int,
        w: int,
        radius: int | None,
        band: int | None,
        category: int | None,
        boxed: bool,
    ) -> None:
        components: list[Any] = [Position(float(x), float(y))]
        if boxed:
            components.append(AABB(float(w), float(w)))
        if radius is not None:
            exit_radius = None if band is None else float(radius + band)
            components.append(Proximity(float(radius), 0b011, exit_radius))
        if category is not None:
            components.append(CollisionFilter(category=category))
        esper.create_entity(*components)

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), dx=st.integers(-6, 6), dy=st.integers(-6, 6))
    def move(self, data: st.DataObject, dx: int, dy: int) -> None:
        pos = esper.try_component(data.draw(st.sampled_from(self.alive())), Position)
        if pos is not None:
            pos.x += dx
            pos.y += dy

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), immediate=st.booleans())
    def delete(self, data: st.DataObject, immediate: bool) -> None:
        esper.delete_entity(data.draw(st.sampled_from(self.alive())), immediate=immediate)

    @precondition(lambda self: bool(self.alive()))
    @rule(
        data=st.data(),
        radius=st.integers(0, 25),
        band=st.none() | st.integers(0, 12),
        mask=st.integers(0, 3),
    )
    def retune(self, data: st.DataObject, radius: int, band: int | None, mask: int) -> None:
        prox = esper.try_component(data.draw(st.sampled_from(self.alive())), Proximity)
        if prox is not None:
            prox.radius = float(radius)
            prox.exit_radius = None if band is None else float(radius + band)
            prox.mask = mask

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), radius=st.integers(0, 20), band=st.none() | st.integers(0, 12))
    def toggle_watcher(self, data: st.DataObject, radius: int, band: int | None) -> None:
        entity = data.draw(st.sampled_from(self.alive()))
        if esper.try_remove_component(entity, Proximity) is None:
            exit_radius = None if band is None else float(radius + band)
            esper.add_component(entity, Proximity(float(radius), exit_radius=exit_radius))

    @precondition(lambda self: bool(self.watchers_and_others()))
    @rule(data=st.data(), where=st.sampled_from(["radius", "exit", "between", "out", "in"]))
    def pace(self, data: st.DataObject, where: str) -> None:
        """Put an entity at an exact distance from a watcher's centre: on its radius, on
        its exit radius, half-way between, just beyond the exit radius, or just within the
        radius (the boundary cases of hysteresis)."""
        w, other = data.draw(st.sampled_from(self.watchers_and_others()))
        prox = esper.component_for_entity(w, Proximity)
        pos = esper.component_for_entity(w, Position)
        aabb = esper.try_component(w, AABB)
        # Integer positions and sizes: the centre is a multiple of 0.5, every distance exact.
        if aabb is None:
            cx, cy = pos.x, pos.y
        else:
            cx, cy = pos.x + aabb.width / 2, pos.y + aabb.height / 2
        radius = prox.radius
        exit_radius = radius if prox.exit_radius is None else prox.exit_radius
        distance = {
            "radius": radius,
            "exit": exit_radius,
            "between": (radius + exit_radius) / 2,
            "out": exit_radius + 0.5,
            "in": max(radius - 0.5, 0.0),
        }[where]
        target = esper.component_for_entity(other, Position)
        other_box = esper.component_for_entity(other, AABB)
        target.x = cx + distance  # the other box's nearest point: (cx + distance, cy)
        target.y = cy - other_box.height / 2

    def watchers_and_others(self) -> list[tuple[int, int]]:
        """(watcher with a Position, indexed entity) pairs among the living."""
        alive = self.alive()
        watchers = [e for e in alive if esper.has_components(e, Proximity, Position)]
        boxed = [e for e in alive if esper.has_components(e, Position, AABB)]
        return [(w, o) for w in watchers for o in boxed if o != w]

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data(), category=st.integers(0, 3))
    def recategorise(self, data: st.DataObject, category: int) -> None:
        entity = data.draw(st.sampled_from(self.alive()))
        flt = esper.try_component(entity, CollisionFilter)
        if flt is None:
            esper.add_component(entity, CollisionFilter(category=category))
        else:
            flt.category = category

    @precondition(lambda self: bool(self.alive()))
    @rule(data=st.data())
    def toggle_box(self, data: st.DataObject) -> None:
        entity = data.draw(st.sampled_from(self.alive()))
        if esper.try_remove_component(entity, AABB) is None:
            esper.add_component(entity, AABB(2.0, 2.0))

    @rule()
    def frame(self) -> None:
        with contextlib.suppress(InjectedFault):
            esper.process()
        self.rec.come_back()
        self.rec.raise_at = self.rec.leave_at = None
        self.rec.detour_rate = 0.0
        expected = model_pairs(self.model.previous)
        state = self.model.frame(self.rec.take(), expected, "proximity machine")
        assert_neighbours(self.proximity, self.model, state, "proximity machine")


def test_state_machine_matches_the_model() -> None:
    """Random stories of watchers and neighbours: after every frame, neighbours and events
    equal a brute-force scan."""
    # A function rather than hypothesis' TestCase class, so that it takes the module's
    # parametrized fixture (unittest classes cannot).
    run_state_machine_as_test(
        ProximityMachine,
        settings=budget(40, stateful_step_count=40),
    )


def main(argv: list[str] | None = None) -> int:
    """Run the differential driver on many seeds, for longer than the test suite does."""
    strategies = list(STRATEGIES)

    def run(seed: int, frames: int) -> None:
        run_random_frames(seed, frames, strategies[seed % len(strategies)])

    return stress_main(__doc__ or "", run, argv)


if __name__ == "__main__":
    sys.exit(main())


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-160, 1.0, 1e150, 1e200, 1e300])
def test_incremental_and_fresh_agree_with_exact_distance_at_every_scale(
    world: str, scale: float
) -> None:
    """At any scale of coordinates and radius, the neighbours kept incrementally equal a fresh
    query's and the exact rule (math.hypot of the gaps <= radius), frame after frame."""
    rng = random.Random(int(math.log10(scale)) + 400)
    spatial, _, _ = setup()
    size = 0.25 * scale
    w = thing(-size / 2, -size / 2, Proximity(scale), w=size, h=size)
    things = [
        thing(rng.uniform(-3, 3) * scale, rng.uniform(-3, 3) * scale, w=size, h=size)
        for _ in range(30)
    ]
    for _ in range(8):
        for e in rng.sample(things, 10):
            pos = esper.component_for_entity(e, Position)
            pos.x, pos.y = rng.uniform(-3, 3) * scale, rng.uniform(-3, 3) * scale
        esper.process()
        cx, cy = spatial.index[w].center
        exact = set()
        for e in things:
            box = spatial.index[e]
            dx = max(box.min_x - cx, 0.0, cx - box.max_x)
            dy = max(box.min_y - cy, 0.0, cy - box.max_y)
            if math.hypot(dx, dy) <= scale:
                exact.add(e)
        assert 0 < len(exact) < len(things)
        assert neighbors(w) == exact
        assert set(spatial.index.query_radius(cx, cy, scale)) - {w} == exact


def test_reach_and_centre_at_the_top_of_the_float_range(world: str) -> None:
    """A radius of 1.7e308 reaches every entity, and a watcher at x = 1e308 with a zero-size
    box has its centre there: exact answers, no overflow half-way through a frame."""
    spatial, _, rec = setup()
    everywhere = thing(0, 0, Proximity(1.7e308))
    far_left = thing(-1.7e308, 0)
    top = esper.create_entity(Position(1e308, 0), AABB(0, 0), Proximity(1e308))
    esper.process()
    assert neighbors(everywhere) == {far_left, top}
    assert spatial.index[top].center == (1e308, 0.0)
    assert neighbors(top) == {everywhere}  # far_left is 2.7e308 away, past its reach
    esper.component_for_entity(far_left, Position).x = 1e300  # now 1e308 - 1e300 away
    esper.process()
    assert neighbors(top) == {everywhere, far_left}
    assert rec.take()[-1] == ("enter", top, far_left)
