"""Who holds which component in the current esper world, read without making esper rebuild
its query caches: for the processors' membership checks.

Why
    esper 3.x caches the lists that ``get_component`` and ``get_components`` return, and
    drops every one of them whenever any component is added to or removed from any entity
    (``create_entity``, ``add_component``, ``remove_component``, a deletion). The next call
    then rebuilds its list from scratch, in proportion to the world's size (the figures:
    ``docs/design.md``, "Decisions"). A processor that asked esper for its members every
    frame paid that for the whole world in every frame in which anything, anywhere, gained
    or lost a component: a bullet fired, a status effect added. That is a frame cost in
    proportion to the world's size, not to what changed.

What is read instead
    - :func:`world_stamp`: the list esper caches for a component type that no entity ever
      holds. esper drops it with all the others and rebuilds it in O(1) (it is empty), so
      while the same object comes back, no component was added or removed anywhere in the
      world since it was last read. Public API only.
    - :func:`tables`: esper's own per-world tables, ``_components`` (type -> set of the
      entities holding it) and ``_entities`` (entity -> {type: component}), which every
      esper release the package claims keeps under those names. A processor compares them
      with what it tracks: a loop over its own members and a set difference in C for
      newcomers, instead of esper's rebuild plus a pass over its list. Where an
      esper lacks them, equivalent tables for the types asked for are built through the
      public API: the same answers, at the old cost.

Both describe the current world, as ``get_components`` does, entities marked for deferred
deletion included (esper removes those at the start of ``esper.process()``).

The rest of esper's private state that the package reads or writes, each in one place here
    - :func:`existence`: the tables behind ``esper.entity_exists`` (``_entities``,
      ``_dead_entities``), for the delivery loops that test it once per event;
    - :func:`database` and :data:`DATABASE_SLOT`: the current world's id counter
      (``_entity_count``), an object that ``esper.switch_world`` swaps for the other
      world's and that ``esper.clear_database`` (or a world deleted and made again)
      replaces: how a processor, or an outbox in the middle of a delivery, tells that the
      world it works on is no longer the current one, or that its ids are being reused;
    - :func:`processors`: the current world's processors (``_processors``);
    - for ``ecs_spatial.saving``: :func:`next_id` reads the id counter without advancing it
      and :func:`set_next_id` replaces it, :func:`fill` puts a saved world's entities into
      ``_entities`` and ``_components`` (the two writes), :func:`world_processors` lists
      every world's processors (``_context_map``);
    - for ``ecs_spatial.events``: :func:`event_registries`, every world's handlers.

Everything else in the package goes through esper's public API. The names and layouts read
here are those of every esper release the package claims (``pyproject.toml``);
``tests/test_esper_versions.py`` runs this module's tests, and the processors', with each of
them.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, TypeVar

import esper

__all__ = [
    "DATABASE_SLOT",
    "Tables",
    "anyone_holds",
    "changed_holders",
    "database",
    "event_registries",
    "existence",
    "fill",
    "newcomers",
    "next_id",
    "processors",
    "set_next_id",
    "tables",
    "world_processors",
    "world_stamp",
]

_C = TypeVar("_C")

#: (type -> ids of the entities that hold it, entity -> {type: component}).
Tables = tuple[dict[type[Any], set[int]], dict[int, dict[type[Any], Any]]]


class _Stamp:
    """A component type that no entity ever holds: its cached (empty) list is the stamp."""


def world_stamp() -> object:
    """An object that stays the same (``is``) while no component is added to or removed
    from any entity of the current world. O(1)."""
    return esper.get_component(_Stamp)


def _read_tables() -> Tables | None:
    by_type = getattr(esper, "_components", None)
    by_entity = getattr(esper, "_entities", None)
    if type(by_type) is dict and type(by_entity) is dict:
        return by_type, by_entity
    return None


#: Whether esper's own tables are read (tests turn it off to run the public fallback).
use_esper_tables: bool = _read_tables() is not None


def tables(*types: type[Any]) -> Tables:
    """The current world's tables: for each type, the ids of the entities that hold it,
    and for each entity its components. esper's own (read them, never change them), or,
    where this esper does not have them, tables built through the public API that cover
    ``types`` (an entity holding none of them is then absent)."""
    if use_esper_tables:
        found = _read_tables()
        if found is not None:
            return found
    by_type: dict[type[Any], set[int]] = {}
    by_entity: dict[int, dict[type[Any], Any]] = {}
    for kind in types:
        ids = by_type[kind] = set()
        for entity, component in esper.get_component(kind):
            ids.add(entity)
            by_entity.setdefault(entity, {})[kind] = component
    return by_type, by_entity


def anyone_holds(kind: type[Any]) -> bool:
    """Whether any entity of the current world holds a ``kind`` component. O(1): esper's
    table, or else its cached list (rebuilt, by esper, only after a change)."""
    if use_esper_tables:
        found = _read_tables()
        if found is not None:
            return bool(found[0].get(kind))
    return bool(esper.get_component(kind))


def newcomers(
    by_type: dict[type[Any], set[int]], known: dict[int, Any], *types: type[Any]
) -> list[int]:
    """The ids, sorted, of the entities that hold every one of ``types`` and are not keys
    of ``known``. One set difference in C over the rarest type's holders, then
    intersections of what is left, usually nothing."""
    sets: list[set[int]] = []
    for kind in types:
        ids = by_type.get(kind)
        if not ids:
            return []
        sets.append(ids)
    sets.sort(key=len)
    fresh = sets[0].difference(known)
    for other in sets[1:]:
        if not fresh:
            break
        fresh.intersection_update(other)
    return sorted(fresh)


def changed_holders(
    found: Tables, known: dict[int, _C], kind: type[_C]
) -> tuple[list[int], list[tuple[int, _C]]]:
    """Compare ``known`` (entity -> its ``kind`` component as last seen) with the world's
    tables: the entities that no longer hold one (deleted, or it was removed), and those
    that hold one other than ``known``'s (replaced, or new to ``known``), with it, the
    newcomers last and by id. O(len(known)) in Python, plus :func:`newcomers`."""
    by_type, by_entity = found
    lost: list[int] = []
    arrived: list[tuple[int, _C]] = []
    held_by = by_entity.get
    for entity, seen in known.items():
        held = held_by(entity)
        now = None if held is None else held.get(kind)
        if now is not seen:
            if now is None:
                lost.append(entity)
            else:
                arrived.append((entity, now))
    for entity in newcomers(by_type, known, kind):
        arrived.append((entity, by_entity[entity][kind]))
    return lost, arrived


# -- the rest of esper's private state the package reads ----------------------------------------

_ESPER: dict[str, Any] = vars(esper)

#: Where esper keeps the object :func:`database` returns, as ``(namespace, name)``:
#: ``namespace[name] is not token`` tells, without a call, that the world or its database
#: changed since ``token = namespace[name]`` (the delivery loops test it after every handler
#: call). On an esper without the id counter, the world's name: a switch of worlds is seen,
#: a cleared database is not (as :func:`database` sees none).
DATABASE_SLOT: tuple[dict[str, Any], str] = (
    _ESPER, "_entity_count" if "_entity_count" in _ESPER else "current_world"
)


def database() -> object:
    """An object that stays the same (``is``) while the current world is the same and its
    database is not replaced: esper's id counter, which ``esper.switch_world`` swaps for the
    other world's, and ``esper.clear_database`` or a world deleted and made again replaces
    (ids are then handed out again from 1). None on an esper without it. O(1)."""
    return _ESPER.get("_entity_count")


def existence() -> tuple[dict[int, Any], set[int]]:
    """The current world's tables behind ``esper.entity_exists``: ``e in entities and e not
    in dead`` is ``esper.entity_exists(e)``, for a loop that tests it per event without a
    call. esper's own objects (read them, never change them); ``clear_database`` empties
    them in place, a switch of worlds swaps them. O(1)."""
    return _ESPER["_entities"], _ESPER["_dead_entities"]


def processors() -> list[Any]:
    """The current world's processors, in the order ``esper.process()`` runs them (esper's
    own list: read it, never change it). O(1)."""
    found: list[Any] = _ESPER["_processors"]
    return found


def _private(name: str) -> Any:
    """esper's private global ``name`` (the current world's), or a ``RuntimeError`` saying
    that this esper release keeps it elsewhere."""
    found = _ESPER.get(name)
    if found is None:
        raise RuntimeError(
            f"esper {getattr(esper, '__version__', '?')} has no esper.{name}: this "
            "ecs_spatial knows the esper releases its pyproject.toml claims"
        )
    return found


def next_id() -> int:
    """The id esper will hand out next, read without taking it: esper's counter is an
    ``itertools.count``, whose repr, ``count(n)``, is the only way to read it without
    advancing it (pickling a count is deprecated since Python 3.12), and replacing it would
    tell every processor of the world that its database was cleared."""
    counter = _private("_entity_count")
    match = re.fullmatch(r"count\((\d+)\)", repr(counter))
    if match is None:
        raise RuntimeError(f"cannot read esper's id counter from {counter!r}")
    return int(match.group(1))


def set_next_id(entity: int) -> None:
    """Make ``entity`` the id that esper's next ``create_entity`` hands out, with a new id
    counter: the current world's :func:`database` token changes with it, as it does when the
    database is cleared. For restoring a saved world, ids and all, into an empty one."""
    _private("_entity_count")  # refuse an esper that keeps its counter elsewhere
    _ESPER["_entity_count"] = itertools.count(entity)


def fill(
    entities: dict[int, dict[type[Any], Any]],
    own: bool = False,
    holders: dict[type[Any], list[int]] | None = None,
) -> bool:
    """Put ``entities`` (id -> {type: component}, in order) into the current world, which
    holds none, as ``create_entity`` and ``add_component`` would have, into esper's own
    tables in one pass (``_entities``, ``_components``; one ``clear_cache``), for
    restoring a saved world: a call or two per component through the public API were most
    of a restore. ``own``: the world takes the dicts themselves (the caller hands them
    over), instead of copies; ``holders``: the entities of ``entities`` holding each type,
    when the caller knows them. False, and nothing done, where esper keeps them elsewhere:
    the caller then goes through the public API. The id counter is the caller's
    (:func:`set_next_id`). O(entities + components), in bulk."""
    found = _read_tables() if use_esper_tables else None
    if found is None:
        return False
    by_type, by_entity = found
    by_entity.update(entities if own else zip(entities, map(dict, entities.values()), strict=True))
    if holders is not None:
        for kind, ids in holders.items():
            found_ids = by_type.get(kind)
            if found_ids is None:
                by_type[kind] = set(ids)
            else:
                found_ids.update(ids)
        esper.clear_cache()
        return True
    # The holders of each type, a group of entities holding the same types at a time.
    kinds = list(map(tuple, entities.values()))
    groups = dict.fromkeys(kinds)
    for group in groups if len(groups) <= 16 else ():
        ids = list(itertools.compress(entities, map(group.__eq__, kinds)))
        for kind in group:
            held = by_type.get(kind)
            if held is None:
                by_type[kind] = set(ids)
            else:
                held.update(ids)
    if len(groups) > 16:
        for entity, components in entities.items():
            for kind in components:
                held = by_type.get(kind)
                if held is None:
                    held = by_type[kind] = set()
                held.add(entity)
    esper.clear_cache()
    return True


def world_processors() -> dict[str, list[Any]]:
    """Every esper world's processors, by the world's name: the current world's are esper's
    globals, the others' the seventh field of their entry in esper's table of worlds
    (``_context_map``). esper's own lists: read them, never change them."""
    found: dict[str, list[Any]] = {}
    current = esper.current_world
    for name, context in _private("_context_map").items():
        if name == current:
            found[name] = processors()
        elif isinstance(context, tuple) and len(context) > 6:
            found[name] = context[6]
    found.setdefault(current, processors())
    return found


def event_registries() -> list[dict[str, Any]]:
    """The event registry (event name -> esper's weak references to its handlers) of every
    esper world, the current world's first (its entry in ``_context_map`` may be an older
    dict; each registry is listed once)."""
    registries: list[dict[str, Any]] = [esper.event_registry]
    for context in _ESPER.get("_context_map", {}).values():
        if isinstance(context, tuple) and context and isinstance(context[-1], dict):
            registry = context[-1]
            if not any(registry is seen for seen in registries):
                registries.append(registry)
    return registries
