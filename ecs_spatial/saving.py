"""Saving an esper world with its processors, and restoring it: a game's save file.

esper 3.x keeps no persistence of its own, and numbers entities from a counter of its own,
so a world rebuilt with ``create_entity`` gets new ids and its processors, rebuilt too,
would report every pair afresh. :func:`save_world` takes what a world is made of, and
:func:`restore_world` puts it into an empty world, ids and all::

    with open(path, "wb") as f:
        pickle.dump(save_world(), f)           # the world's entities and processors
    ...
    esper.switch_world("loaded")               # any empty world
    with open(path, "rb") as f:
        restore_world(pickle.load(f))
    esper.set_handler(COLLISION_ENTER, on_hit) # handlers are not saved: set them again

The next ``esper.process()`` then gives exactly the events an uninterrupted run would have
given: the processors of ecs_spatial carry on from their pairs, views and neighbours,
deliver first what a raising handler cut off before the save, and pick up every change made
since their last ``process()``.

What a :class:`WorldState` holds
    Every entity, by id, with its components keyed by the type esper files them under (a
    ``type_alias`` is kept); the entities marked for deferred deletion; esper's id counter
    (the next id it will hand out); and the world's processors, each with its priority, in
    the order esper runs them. Components and processors are the world's own objects, not
    copies: pickle the state at once (or ``copy.deepcopy`` it, for a snapshot in memory).
    Pickled in one pickle, the processors' records and the world's components stay the
    same objects, which is what lets the processors carry on.

How it is pickled
    In columns (``WorldState.__getstate__``, format 2; a pickle of format 1 still loads):
    the entities grouped by the types they hold, each type a column of ``_columns``: a
    ``Position`` or ``AABB`` that nothing but the world's table and the SpatialProcessor's
    record holds as floats (the processor saves it, the world links to it), a game's plain
    component (a slotted dataclass, a class with a ``__dict__``) as one list a field, and
    any other, or any held elsewhere too, as the object, which pickle keeps one object.
    Loaded, the state's tables are its own; ``restore_world`` hands them to esper.

What is not saved
    esper's event handlers (``esper.set_handler``): set them again after restoring, before
    the next ``process()``. The world's name: restore into any world. Anything a component
    or processor holds that pickle cannot (a lambda, a window, a file) fails the pickle,
    naming it: a ``CullingProcessor`` whose view is a lambda cannot be saved, one whose view
    is a ``Box`` or a bound method of a picklable camera can. esper's per-type entity sets
    are rebuilt, so ``esper.get_components`` may list entities in another order than before
    (esper promises none); ecs_spatial's processors never depend on that order.

What it reads and writes of esper's private state (its tables of entities and processors,
and its id counter) goes through :mod:`ecs_spatial._esper_tables`, the package's one place
for that; everything else through esper's public API.
"""

from __future__ import annotations

import gc
from array import array
from collections import deque
from collections.abc import Iterable
from contextlib import AbstractContextManager
from itertools import compress, repeat
from operator import is_, itemgetter
from typing import Any, NamedTuple

import esper

from . import _esper_tables
from ._columns import LINKED, pack, unpack
from ._versions import WORLD_FORMAT, WORLD_STATE

__all__ = ["WorldState", "collector_paused", "restore_world", "save_world"]

#: The layout of a WorldState (its layouts: ``_versions.WORLD_STATE``).
FORMAT = WORLD_FORMAT


class WorldState:
    """What :func:`save_world` took from a world and :func:`restore_world` puts back.

    - ``entities``: entity id -> {component type: component}, in esper's order;
    - ``dead``: the ids marked for deferred deletion (esper deletes them at the start of
      the next ``esper.process()``, before any processor runs);
    - ``next_id``: the id esper hands out next;
    - ``processors``: ``(processor, priority)`` in the order esper runs them.

    Picklable when every component and processor is. Restore it once: its components and
    processors then belong to the world it was restored into (load it again, or
    ``copy.deepcopy`` it, for another copy).
    """

    __slots__ = (
        "_loaded", "_restored_into", "dead", "entities", "format", "next_id", "processors"
    )

    def __init__(
        self,
        entities: dict[int, dict[type[Any], Any]],
        dead: list[int],
        next_id: int,
        processors: list[tuple[esper.Processor, int]],
    ) -> None:
        self.format = FORMAT
        self.entities = entities
        self.dead = dead
        self.next_id = next_id
        self.processors = processors
        self._restored_into: str | None = None
        # What loading the state found (None for a state save_world made), for
        # restore_world: see _Loaded.
        self._loaded: _Loaded | None = None

    def __getstate__(self) -> dict[str, Any]:
        """The state in columns (format 2): the entities grouped by the types they hold,
        in esper's order within each type list; each group's ids as an ``array('q')`` and
        each of its types a column (``_columns``): the Positions and AABBs that a
        SpatialProcessor of the state holds in its records linked to it (it saves them, as
        floats), the others as floats, as plain states, or as objects for pickle, whichever
        keeps every component one object. Where it was restored is not part of the save: a
        pickle of it loads fresh. Complexity: O(entities + components), in bulk."""
        linked = _spatial_of(self.processors)
        with collector_paused():  # a tuple an entity while grouping, none of them garbage
            groups = _grouped(self.entities, self.next_id, linked)
        return {
            "format": self.format,
            "order": _ids(self.entities),
            "groups": groups,
            "linked": linked,
            "dead": self.dead,
            "next_id": self.next_id,
            "processors": self.processors,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        try:
            state = WORLD_STATE.upgraded(self, state)
        except ValueError as error:
            found = state.get("format") if isinstance(state, dict) else None
            if found == 1:
                raise
            raise ValueError(
                f"this WorldState has format {found!r}; this ecs_spatial reads format {FORMAT} "
                "(and format 1)"
            ) from error
        self.format = FORMAT
        with collector_paused():  # a few objects an entity, none of them garbage
            self.entities, self._loaded = _ungrouped(
                state["order"], state["groups"], state["linked"]
            )
        self.dead = state["dead"]
        self.next_id = state["next_id"]
        self.processors = state["processors"]
        self._restored_into = None

    def __repr__(self) -> str:
        kinds = ", ".join(type(p).__name__ for p, _ in self.processors)
        return (
            f"WorldState(entities={len(self.entities)}, dead={len(self.dead)}, "
            f"next_id={self.next_id}, processors=[{kinds}])"
        )


def save_world(processors: Iterable[esper.Processor] | None = None) -> WorldState:
    """The current esper world's entities, their components, esper's id counter and its
    processors with their priorities, for ``pickle.dump``. Changes nothing in the world.

    ``processors``: the processors to save, each of them in the world (``ValueError``
    otherwise); by default every processor of the world. Leave out one that cannot be
    pickled (a renderer holding a window) and add it again after restoring.

    The state holds the world's own objects, its table of components for each entity
    included: pickle it at once, before the world changes.

    Complexity: O(entities).
    """
    running: list[esper.Processor] = list(_esper_tables.processors())
    if processors is None:
        chosen = running
    else:
        wanted = list(processors)
        for processor in wanted:
            if not any(processor is p for p in running):
                raise ValueError(
                    f"save_world: {processor!r} is not a processor of esper world "
                    f"{esper.current_world!r}"
                )
        chosen = [p for p in running if any(p is w for w in wanted)]
    by_entity, dead = _esper_tables.existence()
    return WorldState(
        entities=dict(by_entity),
        dead=sorted(e for e in dead if e in by_entity),
        next_id=_esper_tables.next_id(),
        processors=[(p, p.priority) for p in chosen],
    )


def restore_world(state: WorldState) -> None:
    """Put ``state`` into the current esper world, which must be empty (no entity and no
    processor: a new world, or one cleared with ``esper.clear_database`` and its processors
    removed; ``RuntimeError`` otherwise): every entity with its id and components, the
    deferred deletions, esper's id counter and the processors with their priorities.
    esper's event handlers are not part of a state: set them before the next
    ``esper.process()``.

    ``TypeError`` for anything but a :class:`WorldState`, ``ValueError`` for one that does
    not describe a world or that was restored already; the world is unchanged by either.

    Complexity: O(entities + components).
    """
    # The collector paused before anything is allocated (a ``with`` would make a bound
    # method first): the first allocation would otherwise collect what loading the state
    # just made, all of it alive.
    was_on = gc.isenabled()
    gc.disable()
    try:
        if not isinstance(state, WorldState):
            raise TypeError(f"restore_world takes a WorldState, got {type(state).__name__}")
        world = esper.current_world
        entities = _esper_tables.existence()[0]
        running = _esper_tables.processors()
        if entities or running:
            raise RuntimeError(
                f"restore_world: esper world {world!r} is not empty ({len(entities)} "
                f"entities, {len(running)} processors): switch to a new world "
                "(esper.switch_world), or clear this one (esper.clear_database, and "
                "esper.remove_processor for each)"
            )
        _check_state(state)
        _restore(state)
        state._restored_into = world
    finally:
        if was_on:
            gc.enable()


class _CollectorPause:
    """What :func:`collector_paused` returns: one object for every use, so that entering
    it allocates nothing before the collector is off (an allocation then could set off the
    very collection the pause is for: that of the objects a load made just before)."""

    __slots__ = ("_was_on",)

    def __init__(self) -> None:
        #: Whether the collector was on, for each pause entered and not left yet.
        self._was_on: list[bool] = []

    def __enter__(self) -> None:
        self._was_on.append(gc.isenabled())
        gc.disable()

    def __exit__(self, *error: object) -> None:
        if self._was_on.pop():
            gc.enable()


_PAUSE = _CollectorPause()


def collector_paused() -> AbstractContextManager[None]:
    """Python's cyclic garbage collector off inside, and back as it was after: for a bulk
    rebuild (``restore_world`` runs in it) and for pickling or unpickling a save, which make
    a few objects per entity, none of them garbage, so that every few thousand of them would
    otherwise set off a collection, the oldest generation's walking the whole world again
    and again (see docs/design.md#decisions). Pauses nest; entering one allocates nothing.

    >>> import pickle
    >>> with collector_paused():
    ...     data = pickle.dumps(save_world([]))
    """
    return _PAUSE


def _restore(state: WorldState) -> None:
    """``restore_world``'s work, on a checked state and an empty world."""
    # Each entity gets its own id: esper's counter is set to it just before create_entity.
    # The counter's object itself is what the processors recognise a database by
    # (following.WorldBinding), and the restored ones are bound on their first process().
    loaded = _unchanged(state)
    if not _esper_tables.fill(state.entities, own=loaded is not None,
                              holders=None if loaded is None else loaded.holders):
        for entity, components in state.entities.items():
            _esper_tables.set_next_id(entity)
            esper.create_entity()
            for kind, component in components.items():
                esper.add_component(entity, component, type_alias=kind)
    _esper_tables.set_next_id(state.next_id)
    for entity in state.dead:
        esper.delete_entity(entity)
    for processor, priority in state.processors:
        esper.add_processor(processor, priority)


def _check_state(state: WorldState) -> None:
    """``ValueError`` if ``state`` cannot be restored, naming what is wrong."""
    if state._restored_into is not None:
        raise ValueError(
            f"this WorldState was restored already, into esper world {state._restored_into!r}: "
            "its components and processors are that world's now; load it again from its "
            "pickle (or restore a copy.deepcopy of it) for another copy"
        )
    next_id = state.next_id
    if type(next_id) is not int or next_id < 1:
        raise ValueError(f"WorldState.next_id must be an int >= 1, got {next_id!r}")
    loaded = _unchanged(state)
    if loaded is not None:  # checked when loaded but for the ids' bound, which may change
        if loaded.entities and not 0 < loaded.lowest <= loaded.highest < next_id:
            _check_entities(state.entities, next_id)
    elif not _entities_pass(state.entities, next_id):
        _check_entities(state.entities, next_id)
    for entity in state.dead:
        if entity not in state.entities:
            raise ValueError(f"WorldState marks entity {entity!r} dead, but has no such entity")
    homes = {
        id(processor): name
        for name, running in _esper_tables.world_processors().items()
        for processor in running
    }
    for processor, priority in state.processors:
        home = homes.get(id(processor))
        if home is not None:
            raise ValueError(
                f"WorldState processor {processor!r} is a processor of esper world {home!r} "
                "already: restore a state loaded from its pickle (or a copy.deepcopy of it), "
                "not the one save_world() returned"
            )
        if not isinstance(processor, esper.Processor):
            raise ValueError(f"WorldState processor {processor!r} is not an esper.Processor")
        if not isinstance(priority, int):
            raise ValueError(
                f"WorldState priority of {processor!r} must be an int, got {priority!r}"
            )


def _entities_pass(entities: dict[int, dict[type[Any], Any]], next_id: int) -> bool:
    """Whether ``entities`` holds only ids from 1 to ``next_id - 1`` (ints), each with a dict
    keyed by types, checked in bulk; False for any doubt (``_check_entities`` then names
    what is wrong)."""
    if not entities:
        return True
    if set(map(type, entities)) != {int} or not 0 < min(entities) <= max(entities) < next_id:
        return False
    if set(map(type, entities.values())) != {dict}:
        return False
    kinds: set[object] = set().union(*entities.values())
    return all(isinstance(kind, type) for kind in kinds)


def _check_entities(entities: dict[int, dict[type[Any], Any]], next_id: int) -> None:
    """``ValueError`` naming the first entity of ``entities`` whose id or components are
    wrong."""
    for entity, components in entities.items():
        if type(entity) is not int or not 0 < entity < next_id:
            raise ValueError(
                f"WorldState entity ids must be ints from 1 to next_id - 1 ({next_id - 1}), "
                f"got {entity!r}"
            )
        if not isinstance(components, dict) or not all(isinstance(k, type) for k in components):
            raise ValueError(
                f"WorldState entity {entity}: components must be a dict keyed by type, got "
                f"{components!r}"
            )


# -- the state in columns --------------------------------------------------------------------


def _spatial_of(processors: list[tuple[esper.Processor, int]]) -> Any:
    """The SpatialProcessor of ``processors`` (a world has one at most), or None."""
    from .spatial_processor import SpatialProcessor

    for processor, _ in processors:
        if isinstance(processor, SpatialProcessor):
            return processor
    return None


def _slot_of(kind: type[Any]) -> int | None:
    """Where a SpatialProcessor's record holds a component filed under ``kind``."""
    from .components import AABB, Position

    return 0 if kind is Position else 1 if kind is AABB else None


def _ids(entities: dict[int, Any]) -> array[int] | list[int]:
    """The ids, as a buffer where they fit one."""
    try:
        return array("q", entities)
    except (TypeError, OverflowError):
        return list(entities)


def _grouped(
    entities: dict[int, dict[type[Any], Any]], next_id: int, linked: Any
) -> list[tuple[tuple[type[Any], ...], Any, list[Any]]]:
    """The entities by the tuple of types they hold: (types, ids, one column a type)."""
    if not _entities_pass(entities, next_id):
        for entity, components in entities.items():
            if not isinstance(components, dict):
                raise ValueError(
                    f"WorldState entity {entity!r}: components must be a dict keyed by type, "
                    f"got {components!r}"
                )
        return [(tuple(components), [entity], [[c] for c in components.values()])
                for entity, components in entities.items()]
    kinds = list(map(tuple, entities.values()))
    found = dict.fromkeys(kinds)
    if len(found) <= 16:
        by_kinds = {
            group: list(compress(entities, map(group.__eq__, kinds))) for group in found
        }
    else:
        by_kinds = {}
        for entity, group in zip(entities, kinds, strict=True):
            ids = by_kinds.get(group)
            if ids is None:
                by_kinds[group] = [entity]
            else:
                ids.append(entity)
    del kinds, found
    members = None if linked is None else linked._members
    groups = []
    for group, ids in by_kinds.items():
        rows = list(map(entities.__getitem__, ids))
        records = None if members is None else list(map(members.get, ids))
        columns = []
        for kind in group:
            column = list(map(itemgetter(kind), rows))
            slot = _slot_of(kind) if records is not None else None
            links = False if slot is None else _links(records, column, slot)
            columns.append(pack(column, 1, links))
            del column
        groups.append((group, array("q", ids), columns))
    return groups


def _links(records: Any, components: list[Any], slot: int) -> bool | list[bool]:
    """Whether each component is the one the SpatialProcessor's record of its entity (in
    ``records``, or None) holds at ``slot``; True for all."""
    if None in records:
        return [rec is not None and rec[slot] is c
                for rec, c in zip(records, components, strict=True)]
    held = list(map(itemgetter(slot), records))
    same = list(map(is_, held, components))
    del held
    return True if same.count(True) == len(same) else same


class _Loaded(NamedTuple):
    """What ``_ungrouped`` made of a state in columns, for restore_world: the entities'
    tables (the state's own: esper may take them as they are), how many components they
    hold, the holders of each type, and the lowest and highest id (each an int, each table
    keyed by types: checked). Good while the state's ``entities`` is that dict and holds as
    many components (``_unchanged``)."""

    entities: dict[int, dict[type[Any], Any]]
    components: int
    holders: dict[type[Any], list[int]]
    lowest: int
    highest: int


def _unchanged(state: WorldState) -> _Loaded | None:
    """What loading ``state`` found, if its entities are still what was loaded."""
    loaded = state._loaded
    if loaded is None or loaded.entities is not state.entities:
        return None
    if sum(map(len, state.entities.values())) != loaded.components:
        return None
    return loaded


def _ungrouped(
    order: Any, groups: Any, linked: Any
) -> tuple[dict[int, dict[type[Any], Any]], _Loaded | None]:
    """The entities ``_grouped`` grouped, in ``order``, and what restore_world may take
    from it (None where an id is not an int or a type not a type: restore_world's checks
    name it); ``ValueError`` naming what is wrong with a state no save makes."""
    from .spatial_processor import SpatialProcessor

    if linked is not None and not isinstance(linked, SpatialProcessor):
        raise ValueError(f"WorldState links components to {linked!r}, not a SpatialProcessor")
    members = None if linked is None else linked._members
    if not isinstance(groups, list):
        raise ValueError(f"WorldState groups must be a list, got {type(groups).__name__}")
    order = list(order)
    # Each entity's place first, in order; the groups fill them in (an update keeps it).
    entities: dict[Any, dict[type[Any], Any] | None] = dict.fromkeys(order)
    if len(entities) != len(order):
        raise ValueError("WorldState order lists an entity twice")
    total = 0
    holders: dict[type[Any], list[int]] = {}
    checked = True
    for group in groups:
        if not (isinstance(group, tuple) and len(group) == 3 and isinstance(group[0], tuple)
                and isinstance(group[2], list) and len(group[0]) == len(group[2])):
            raise ValueError("WorldState group: not (types, ids, one column a type)")
        kinds, ids, columns = group
        ids = list(ids)
        total += len(ids)
        if ids and set(map(type, ids)) != {int}:
            checked = False
        for kind in kinds:
            if not isinstance(kind, type):
                checked = False
            holders.setdefault(kind, []).extend(ids)
        if not kinds:
            entities.update(zip(ids, map(dict, repeat((), len(ids))), strict=True))
            continue
        made = []
        records: list[Any] | None = None
        for kind, column in zip(kinds, columns, strict=True):
            what = f"WorldState components filed under {getattr(kind, '__name__', kind)!r}"
            links: list[Any] = []
            if type(column) is tuple and len(column) > 1 and type(column[1]) is bytes \
                    and LINKED in column[1]:
                if records is None:
                    records = _records(ids, members, what)
                links = _linked(column[1], records, _slot_of(kind), what)
            found = unpack(column, links, what)
            if len(found) != len(ids):
                raise ValueError(f"{what}: {len(found)} components for {len(ids)} entities")
            made.append(found)
        entities.update(zip(ids, _tables(kinds, made), strict=True))
    if len(entities) != len(order) or total != len(order) or None in entities.values():
        raise ValueError(
            f"WorldState groups hold {total} entities, not once each of the {len(order)} its "
            "order lists"
        )
    done: dict[int, dict[type[Any], Any]] = entities  # type: ignore[assignment]  # no None
    if not checked:
        return done, None
    return done, _Loaded(
        done, sum(map(len, holders.values())), holders,
        min(order, default=0), max(order, default=0),
    )


def _tables(kinds: tuple[type[Any], ...], columns: list[list[Any]]) -> list[dict[type[Any], Any]]:
    """A dict an entity, of ``kinds`` to its components in ``columns``: a dict display for
    up to 4 types (twice as fast as ``dict(zip(...))``), a pass in C a type beyond."""
    if len(kinds) == 1:
        (k0,), (c0,) = kinds, columns
        return [{k0: a} for a in c0]
    if len(kinds) == 2:
        (k0, k1), (c0, c1) = kinds, columns
        return [{k0: a, k1: b} for a, b in zip(c0, c1, strict=True)]
    if len(kinds) == 3:
        (k0, k1, k2), (c0, c1, c2) = kinds, columns
        return [{k0: a, k1: b, k2: c} for a, b, c in zip(c0, c1, c2, strict=True)]
    k0, k1, k2, k3 = kinds[:4]
    c0, c1, c2, c3 = columns[:4]
    tables = [{k0: a, k1: b, k2: c, k3: d} for a, b, c, d in zip(c0, c1, c2, c3, strict=True)]
    for kind, found in zip(kinds[4:], columns[4:], strict=True):
        deque(map(dict.__setitem__, tables, repeat(kind), found), 0)
    return tables


def _records(ids: list[Any], members: Any, what: str) -> list[Any]:
    """The SpatialProcessor's records of ``ids`` (None for an entity it has none of)."""
    if members is None:
        raise ValueError(f"{what}: linked to a SpatialProcessor's records, with none to link to")
    return list(map(members.get, ids))


def _linked(codes: bytes, records: list[Any], slot: int | None, what: str) -> list[Any]:
    """The components a column links to the SpatialProcessor's records, in turn."""
    if slot is None:
        raise ValueError(f"{what}: linked to a SpatialProcessor's records, which hold none")
    if codes.count(LINKED) != len(records):
        records = list(compress(records, map(LINKED.__eq__, codes)))
    try:
        return list(map(itemgetter(slot), records))
    except TypeError:  # None: no record
        raise ValueError(
            f"{what}: a component is linked to the SpatialProcessor's record of an entity "
            "it has none of"
        ) from None
