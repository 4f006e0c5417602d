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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import esper

from . import _esper_tables
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

    __slots__ = ("_restored_into", "dead", "entities", "format", "next_id", "processors")

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

    def __getstate__(self) -> dict[str, Any]:
        # Where it was restored is not part of the save: a pickle of it loads fresh.
        return {
            "format": self.format,
            "entities": self.entities,
            "dead": self.dead,
            "next_id": self.next_id,
            "processors": self.processors,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        try:
            state = WORLD_STATE.upgraded(self, state)
        except ValueError:
            found = state.get("format") if isinstance(state, dict) else None
            raise ValueError(
                f"this WorldState has format {found!r}; this ecs_spatial reads format {FORMAT}"
            ) from None
        self.format = FORMAT
        self.entities = state["entities"]
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

    Complexity: O(entities + components).
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
        entities={entity: dict(components) for entity, components in by_entity.items()},
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
    if not isinstance(state, WorldState):
        raise TypeError(f"restore_world takes a WorldState, got {type(state).__name__}")
    world = esper.current_world
    entities = _esper_tables.existence()[0]
    running = _esper_tables.processors()
    if entities or running:
        raise RuntimeError(
            f"restore_world: esper world {world!r} is not empty ({len(entities)} entities, "
            f"{len(running)} processors): switch to a new world (esper.switch_world), or "
            "clear this one (esper.clear_database, and esper.remove_processor for each)"
        )
    _check_state(state)
    with collector_paused():
        _restore(state)
    state._restored_into = world


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside, and back as it was after: for a bulk
    rebuild (``restore_world`` runs in it) and for pickling or unpickling a save, which make
    a few objects per entity, none of them garbage, so that every few thousand of them would
    otherwise set off a collection, the oldest generation's walking the whole world again
    and again (see docs/design.md#decisions).

    >>> import pickle
    >>> with collector_paused():
    ...     data = pickle.dumps(save_world([]))
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _restore(state: WorldState) -> None:
    """``restore_world``'s work, on a checked state and an empty world."""
    # Each entity gets its own id: esper's counter is set to it just before create_entity.
    # The counter's object itself is what the processors recognise a database by
    # (following.WorldBinding), and the restored ones are bound on their first process().
    if not _esper_tables.fill(state.entities):
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
    if not _entities_pass(state.entities, next_id):
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
