"""``_esper_tables``: the change stamp, esper's tables and the public fallback, and the
processors' promise built on them: a component change anywhere rebuilds none of esper's
cached lists."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import esper
import pytest
from _worlds import Recorder

from ecs_spatial import _esper_tables
from ecs_spatial._esper_tables import (
    anyone_holds,
    changed_holders,
    newcomers,
    tables,
    world_stamp,
)
from ecs_spatial.components import AABB, CollisionFilter, Position
from ecs_spatial.geometry import Box
from ecs_spatial.proximity import Proximity, ProximityProcessor
from ecs_spatial.spatial_processor import SpatialProcessor


class Tag:
    """A component of the game's own, unrelated to space."""


def test_stamp_changes_exactly_when_a_component_is_added_or_removed(world: str) -> None:
    """Assignments leave the stamp as it is; creating, adding, removing and deleting each
    give a new one."""
    e = esper.create_entity(Position(0, 0))
    stamp = world_stamp()
    assert world_stamp() is stamp
    esper.component_for_entity(e, Position).x = 5.0
    assert world_stamp() is stamp
    changes: list[Callable[[], object]] = [
        lambda: esper.create_entity(Position(1, 1)),
        lambda: esper.add_component(e, Tag()),
        lambda: esper.add_component(e, Position(2, 2)),  # a replacement
        lambda: esper.remove_component(e, Tag),
        lambda: esper.delete_entity(e, immediate=True),
    ]
    for change in changes:
        change()
        fresh = world_stamp()
        assert fresh is not stamp
        assert world_stamp() is fresh
        stamp = fresh


def test_each_world_has_its_own_stamp(world: str) -> None:
    """A stamp read in another world is not this world's."""
    stamp = world_stamp()
    other = world + "_other"
    esper.switch_world(other)
    try:
        assert world_stamp() is not stamp
    finally:
        esper.switch_world(world)
        esper.delete_world(other)
    assert world_stamp() is stamp


def test_the_database_token_changes_with_the_world_and_its_database(world: str) -> None:
    """database() (and DATABASE_SLOT, read without a call) stays the same while entities and
    components come and go, and changes when another world is current, when the database
    is cleared and when the world is deleted and made again; existence() answers as
    esper.entity_exists does; processors() is the world's list."""
    space, slot = _esper_tables.DATABASE_SLOT
    token = _esper_tables.database()
    assert token is not None and space[slot] is token
    a = esper.create_entity(Position(0, 0))
    b = esper.create_entity()
    esper.delete_entity(b)
    esper.add_component(a, Tag())
    assert _esper_tables.database() is token
    entities, dead = _esper_tables.existence()
    for e in (a, b, 99):
        assert (e in entities and e not in dead) == esper.entity_exists(e)
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    assert _esper_tables.processors() == [spatial]
    other = world + "_other"
    esper.switch_world(other)
    assert _esper_tables.database() is not token and space[slot] is not token
    assert _esper_tables.processors() == []
    esper.switch_world(world)  # back: the same database
    assert _esper_tables.database() is token
    esper.clear_database()
    cleared = _esper_tables.database()
    assert cleared is not token and space[slot] is cleared
    esper.switch_world(other)
    esper.delete_world(world)
    esper.switch_world(world)  # made again under its name
    assert _esper_tables.database() not in (token, cleared)
    esper.delete_world(other)


def _world_of_mixed_holders() -> dict[str, int]:
    ids = {
        "both": esper.create_entity(Position(0, 0), AABB(1, 1)),
        "position": esper.create_entity(Position(0, 0)),
        "aabb": esper.create_entity(AABB(1, 1)),
        "tagged": esper.create_entity(Position(0, 0), AABB(1, 1), Tag()),
        "filtered": esper.create_entity(Position(0, 0), AABB(1, 1), CollisionFilter()),
        "nothing": esper.create_entity(Tag()),
    }
    esper.delete_entity(ids["nothing"], immediate=True)
    return ids


@pytest.mark.parametrize("use_esper_tables", [True, False])
def test_tables_fallback_answers_as_esper_tables_do(
    world: str, use_esper_tables: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For the types asked, the public-API tables hold exactly what esper's own hold."""
    _world_of_mixed_holders()
    kinds = (Position, AABB, CollisionFilter)
    expected_by_type = {kind: set(esper._components.get(kind, ())) for kind in kinds}
    expected_by_entity = {
        entity: {kind: comps[kind] for kind in kinds if kind in comps}
        for entity, comps in esper._entities.items()
        if any(kind in comps for kind in kinds)
    }
    monkeypatch.setattr(_esper_tables, "use_esper_tables", use_esper_tables)
    by_type, by_entity = tables(*kinds)
    assert {kind: set(by_type.get(kind, ())) for kind in kinds} == expected_by_type
    assert {
        entity: {kind: comps[kind] for kind in kinds if kind in comps}
        for entity, comps in by_entity.items()
        if any(kind in comps for kind in kinds)
    } == expected_by_entity


@pytest.mark.parametrize("use_esper_tables", [True, False])
def test_anyone_holds_follows_the_world(
    world: str, use_esper_tables: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """True while at least one entity holds the type, on both paths."""
    monkeypatch.setattr(_esper_tables, "use_esper_tables", use_esper_tables)
    assert not anyone_holds(CollisionFilter)
    e = esper.create_entity(CollisionFilter())
    assert anyone_holds(CollisionFilter) and not anyone_holds(Tag)
    esper.remove_component(e, CollisionFilter)
    assert not anyone_holds(CollisionFilter)


def test_newcomers_hold_every_type_and_are_not_known(world: str) -> None:
    """Sorted ids holding all the types asked and not yet known; none if a type has no
    holder at all."""
    ids = _world_of_mixed_holders()
    by_type, _ = tables(Position, AABB, Tag, Proximity)
    expected = sorted([ids["both"], ids["tagged"], ids["filtered"]])
    assert newcomers(by_type, {}, Position, AABB) == expected
    assert newcomers(by_type, {ids["both"]: None}, AABB, Position) == expected[1:]
    assert newcomers(by_type, {}, Position, AABB, Tag) == [ids["tagged"]]
    assert newcomers(by_type, {}, Position, Proximity) == []


def test_changed_holders_finds_the_lost_the_replaced_and_the_new(world: str) -> None:
    """Against what was last seen: deleted or removed are lost; another instance or a new
    holder arrives with its component, newcomers last."""
    kept, replaced, removed, deleted = (
        esper.create_entity(CollisionFilter()) for _ in range(4)
    )
    known = {e: esper.component_for_entity(e, CollisionFilter)
             for e in (kept, replaced, removed, deleted)}
    fresh = CollisionFilter(mask=2)
    esper.add_component(replaced, fresh)
    esper.remove_component(removed, CollisionFilter)
    esper.delete_entity(deleted, immediate=True)
    new = esper.create_entity(CollisionFilter(mask=3))
    lost, arrived = changed_holders(tables(CollisionFilter), known, CollisionFilter)
    assert sorted(lost) == sorted([removed, deleted])
    assert arrived == [(replaced, fresh), (new, esper.component_for_entity(new, CollisionFilter))]


def test_a_change_anywhere_rebuilds_none_of_esper_lists(
    world: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame after components were added or removed anywhere picks up every change from
    esper's tables without asking esper for a list of them: esper rebuilds each such list
    from scratch after any change (8.7 ms for (Position, AABB) at 10,000 entities)."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    proximity = ProximityProcessor(spatial)
    esper.add_processor(proximity, priority=-1)
    events = Recorder()
    a = esper.create_entity(Position(0, 0), AABB(10, 10), CollisionFilter(mask=0))
    b = esper.create_entity(Position(5, 5), AABB(10, 10))
    c = esper.create_entity(Position(100, 100), AABB(10, 10))
    esper.process()
    asked: list[tuple[type, ...]] = []
    get_component, get_components = esper.get_component, esper.get_components

    def spy_component(kind: type) -> Any:
        asked.append((kind,))
        return get_component(kind)

    def spy_components(*kinds: type) -> Any:
        asked.append(kinds)
        return get_components(*kinds)

    monkeypatch.setattr(esper, "get_component", spy_component)
    monkeypatch.setattr(esper, "get_components", spy_components)
    events.take()
    esper.add_component(c, Tag())  # unrelated: nothing of ours changes
    esper.remove_component(a, CollisionFilter)  # a and b may now collide
    esper.add_component(c, Position(104, 104))  # replaced: c moves
    d = esper.create_entity(Position(108, 108), AABB(4, 4), Proximity(50))  # a new watcher
    esper.process()
    ours = {Position, AABB, CollisionFilter, Proximity}
    assert not [kinds for kinds in asked if ours.intersection(kinds)]
    assert asked, "the change stamp is read through esper's public get_component"
    assert spatial.index[c] == Box(104, 104, 114, 114) and d in spatial.index
    assert events.take(("enter", "collision")) == [
        ("enter", a, b), ("enter", c, d), ("collision", a, b), ("collision", c, d)
    ]
    assert set(esper.component_for_entity(d, Proximity).neighbors) == {c}


# -- what saving and the events read and write --------------------------------------------------


def test_next_id_reads_the_counter_without_taking_an_id(world: str) -> None:
    """next_id() is the id the next create_entity() hands out, however often it is read;
    set_next_id() makes another one next, with a new database token."""
    esper.create_entity()
    esper.create_entity()
    assert _esper_tables.next_id() == _esper_tables.next_id() == 3
    assert esper.create_entity() == 3
    token = _esper_tables.database()
    _esper_tables.set_next_id(40)
    assert _esper_tables.next_id() == 40
    assert _esper_tables.database() is not token
    space, slot = _esper_tables.DATABASE_SLOT
    assert space[slot] is _esper_tables.database()
    assert esper.create_entity() == 40 and _esper_tables.next_id() == 41


def test_world_processors_lists_every_world(world: str) -> None:
    """Each world's processors under its name, the current world's as esper runs them, a
    processor added since the last switch of worlds included."""
    here = SpatialProcessor()
    esper.add_processor(here)
    other = world + "_other"
    esper.switch_world(other)
    try:
        there = SpatialProcessor()
        esper.add_processor(there)
        found = _esper_tables.world_processors()
        assert found[other] == [there] and found[world] == [here]
        later = ProximityProcessor(there)
        esper.add_processor(later, priority=-1)
        assert _esper_tables.world_processors()[other] == [there, later]
    finally:
        esper.switch_world(world)
        esper.delete_world(other)
    assert other not in _esper_tables.world_processors()


def _on_event(*_: object) -> None:
    """A handler that does nothing."""


def test_event_registries_hold_every_worlds_handlers(world: str) -> None:
    """The registries listed hold the handlers set in each world, the current world's
    first, each registry once."""
    esper.set_handler("here", _on_event)
    other = world + "_other"
    esper.switch_world(other)
    try:
        esper.set_handler("there", _on_event)
        registries = _esper_tables.event_registries()
        assert registries[0] is esper.event_registry and "there" in registries[0]
        assert any("here" in registry for registry in registries[1:])
        assert len({id(registry) for registry in registries}) == len(registries)
    finally:
        esper.event_registry.clear()
        esper.switch_world(world)
        esper.delete_world(other)


def test_an_esper_without_the_private_state_is_refused_by_name(
    world: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saving's reads and writes raise RuntimeError naming esper's version and the name
    missing, rather than failing somewhere later."""
    monkeypatch.delattr(esper, "_entity_count")
    for call in (_esper_tables.next_id, lambda: _esper_tables.set_next_id(1)):
        with pytest.raises(RuntimeError, match=r"^esper .* has no esper\._entity_count"):
            call()
    monkeypatch.delattr(esper, "_context_map")
    with pytest.raises(RuntimeError, match=r"has no esper\._context_map"):
        _esper_tables.world_processors()
