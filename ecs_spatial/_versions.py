"""Saved states: the layouts in which each of the processors' classes has pickled its state,
and the steps that upgrade an old one, in one place and one pattern.

A class that saves its state declares its layouts here, oldest first (a :class:`Layouts`):
each with the version of ecs_spatial that wrote it, a test that recognises a state in it,
and the step that turns such a state into the next layout. The class's ``__setstate__``
(or ``__reduce__``'s rebuild) calls :meth:`Layouts.upgraded`, which recognises the state's
layout and applies every step from there, so that the class itself reads only its current
layout. A state in no layout known here raises ``ValueError`` naming the class.

==================  =====================================================================
class               layouts, oldest first
==================  =====================================================================
SpatialProcessor    0.2.0: no typed handlers, Continuous entities nor cast log; a development
                    version: the member records a dict of lists; now packed as columns
Outbox              0.2.0: ``(batches, silent)``; a development version: the owed event
                    without its role; now ``(batches, silent, owed)``
Proximity           0.2.0: Python's default for slots, ``(None, {slot: value})``, the
                    neighbours included; now ``(radius, mask, exit_radius)``
ProximityProcessor  0.2.0: the watchers' neighbours held by the components; now the
                    processor saves them, as ``_pairs``
CullingProcessor,   one layout each so far (their attributes, as Python pickles them)
CollisionHandler,
HandlerRoutes
WorldState          format 1: the entities a dict of dicts; now format 2, in columns
==================  =====================================================================

A new layout of a class adds one entry at the end of its list: a test that tells it from
the one before (a key, or a field, the older layouts lack) and the step from that one. A
class not listed (a component, the pair set, the local grids) pickles what it holds as it
is; when its layout first changes, it joins the list, its old layout first. The index's
state has its own format number and reader (``_tree_state``), shared by both index classes.

Nothing here changes a state's objects beyond what a step says; a step may look at the
object being restored (a Proximity of 0.2.0 hands its neighbours to it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = [
    "COLLISION_HANDLER",
    "CULLING_PROCESSOR",
    "HANDLER_ROUTES",
    "OUTBOX",
    "PROXIMITY",
    "PROXIMITY_PROCESSOR",
    "SPATIAL_PROCESSOR",
    "WORLD_STATE",
    "Layout",
    "Layouts",
]

#: A step: (the object being restored, a state in one layout) -> the state in the next.
Step = Callable[[Any, Any], Any]


class Layout(NamedTuple):
    """One layout of a class's saved state."""

    #: The version of ecs_spatial that wrote it ("now" for the current one).
    written_by: str
    #: Whether a state is in this layout (tried newest first, so it may test only what
    #: tells it from the older ones).
    matches: Callable[[Any], bool]
    #: The step to the next layout; None for the current one.
    upgrade: Step | None = None


class Layouts:
    """A class's layouts, oldest first, the last one current."""

    __slots__ = ("kind", "layouts")

    def __init__(self, kind: str, *layouts: Layout) -> None:
        assert layouts and layouts[-1].upgrade is None
        assert all(layout.upgrade is not None for layout in layouts[:-1])
        self.kind = kind
        self.layouts = layouts

    def recognise(self, state: Any) -> int:
        """The index of ``state``'s layout, or ``ValueError`` naming the class."""
        for at in range(len(self.layouts) - 1, -1, -1):
            if self.layouts[at].matches(state):
                return at
        raise ValueError(
            f"a saved {self.kind} in no layout this ecs_spatial reads (written by "
            f"{', '.join(layout.written_by for layout in self.layouts)}): "
            f"{type(state).__name__} {_brief(state)}"
        )

    def upgraded(self, restoring: Any, state: Any) -> Any:
        """``state`` in the current layout: each step from its own layout applied in turn,
        ``restoring`` (the object being restored) handed to each. O(1) for a state in the
        current layout."""
        for layout in self.layouts[self.recognise(state) : -1]:
            assert layout.upgrade is not None
            state = layout.upgrade(restoring, state)
        return state


def _brief(state: Any) -> str:
    """What a state holds, briefly, for an error: a dict's keys, a tuple's length."""
    if isinstance(state, dict):
        return f"with keys {sorted(map(str, state))[:12]!r}"
    if isinstance(state, tuple):
        return f"of {len(state)} items"
    return ""


def _any(state: Any) -> bool:
    return True


# -- SpatialProcessor ------------------------------------------------------------------------

#: What a SpatialProcessor has saved since 0.2.0 that 0.2.0's lacks.
_SINCE_0_2_0 = ("_routes", "_any_kind", "_continuous", "cast_log")


def _spatial_from_0_2_0(processor: Any, state: dict[str, Any]) -> dict[str, Any]:
    """No registration, no Continuous entity, no cast log; the swept events dispatched as
    the other kinds were by default (every kind, or none)."""
    from .collision_handlers import HandlerRoutes  # it saves its own layouts here too

    state = dict(state)
    if "_routes" not in state:
        state["_routes"] = HandlerRoutes(state["_outbox"].post)
    if "_any_kind" not in state:
        state.pop("_keep_pairs", None)  # derived now: any kind, or any registration
        state["_any_kind"] = (
            state["_dispatch_enter"] or state["_dispatch_exit"] or state["_dispatch_collision"]
        )
        state["_dispatch_swept"] = state["_any_kind"]
    if "_continuous" not in state:
        state["_continuous"] = {}
        state["_swept_from"] = {}
        state["_seen_continuous"] = None
    if "cast_log" not in state:
        state["cast_log"] = None
    return state


def _spatial_members_packed(processor: Any, state: dict[str, Any]) -> dict[str, Any]:
    """The member records, a dict of lists, packed as columns (``packed_members``); the
    last frame's moves as the set of their ids."""
    from .spatial_processor import packed_members

    state = dict(state)
    moved = state.get("_moved")
    if moved is None:
        moved = {rec[3] for records in state["_moved_members"] for rec in records}
    state["_moved"], state["_moved_members"] = moved, ()
    state["_members"] = packed_members(state["_members"])
    return state


SPATIAL_PROCESSOR = Layouts(
    "SpatialProcessor",
    Layout(
        "ecs_spatial 0.2.0",
        lambda state: isinstance(state, dict) and "_index" in state,
        _spatial_from_0_2_0,
    ),
    Layout(
        "a development version after 0.2.0",
        lambda state: isinstance(state, dict)
        and all(key in state for key in _SINCE_0_2_0)
        and isinstance(state.get("_members"), dict),
        _spatial_members_packed,
    ),
    Layout("now", lambda state: isinstance(state, dict) and all(
        key in state for key in _SINCE_0_2_0
    ) and isinstance(state.get("_members"), tuple)),
)


# -- Outbox ----------------------------------------------------------------------------------


def _outbox_from_0_2_0(outbox: Any, state: tuple[Any, ...]) -> tuple[Any, ...]:
    """No event was half-delivered: nothing owed."""
    batches, silent = state
    return (batches, silent, None)


def _outbox_owed_with_role(outbox: Any, state: tuple[Any, ...]) -> tuple[Any, ...]:
    """The owed event gains its role, unknown (None) for one saved without it: delivered as
    before, it is dropped by a cleared database whatever its role."""
    batches, silent, owed = state
    return (batches, silent, None if owed is None else (*owed, None))


OUTBOX = Layouts(
    "Outbox",
    Layout(
        "ecs_spatial 0.2.0",
        lambda state: isinstance(state, tuple) and len(state) == 2,
        _outbox_from_0_2_0,
    ),
    Layout(
        "a development version after 0.2.0",
        lambda state: isinstance(state, tuple) and len(state) == 3
        and state[2] is not None and len(state[2]) == 3,
        _outbox_owed_with_role,
    ),
    Layout(
        "now",
        lambda state: isinstance(state, tuple) and len(state) == 3
        and (state[2] is None or len(state[2]) == 4),
    ),
)


# -- Proximity and ProximityProcessor --------------------------------------------------------


def _proximity_from_0_2_0(proximity: Any, state: tuple[Any, ...]) -> tuple[Any, ...]:
    """The slots' values; the neighbours (and the tracking processor's sink and entity,
    which 0.2.0 saved in the component) go straight to the component being restored: a
    ProximityProcessor of 0.2.0 pickled with it hands them on (``_pairs`` below)."""
    _, slots = state
    for name in ("_neighbors", "_sink", "_entity"):
        if name in slots:
            setattr(proximity, name, slots[name])
    return (slots["_radius"], slots["_mask"], slots.get("_exit"))


PROXIMITY = Layouts(
    "Proximity",
    Layout(
        "ecs_spatial 0.2.0",
        lambda state: isinstance(state, tuple) and len(state) == 2
        and isinstance(state[1], dict),
        _proximity_from_0_2_0,
    ),
    Layout("now", lambda state: isinstance(state, tuple) and len(state) == 3),
)


def _proximity_processor_from_0_2_0(
    processor: Any, state: dict[str, Any]
) -> dict[str, Any]:
    """The pairs, which 0.2.0's components carried: ``_pairs`` from each watcher's
    neighbours (the watchers are restored already, with theirs)."""
    state = dict(state)
    state["_pairs"] = {
        entity: list(proximity._neighbors) for entity, proximity in state["_watchers"].items()
    }
    return state


PROXIMITY_PROCESSOR = Layouts(
    "ProximityProcessor",
    Layout(
        "ecs_spatial 0.2.0",
        lambda state: isinstance(state, dict) and "_watchers" in state,
        _proximity_processor_from_0_2_0,
    ),
    Layout("now", lambda state: isinstance(state, dict) and "_pairs" in state),
)


# -- the classes with one layout so far ------------------------------------------------------

CULLING_PROCESSOR = Layouts("CullingProcessor", Layout("now", lambda s: isinstance(s, dict)))
#: Slotted classes pickle as ``(None, {slot: value})``, Python's default.
COLLISION_HANDLER = Layouts(
    "CollisionHandler",
    Layout("now", lambda s: isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], dict)),
)
HANDLER_ROUTES = Layouts(
    "HandlerRoutes",
    Layout("now", lambda s: isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], dict)),
)


# -- WorldState ------------------------------------------------------------------------------

#: The format number a WorldState carries; a later layout would read this one.
WORLD_FORMAT = 2


def _world_in_columns(world_state: Any, format_1: dict[str, Any]) -> dict[str, Any]:
    """Format 1's entities (id -> {type: component}) as format 2's groups: one group an
    entity, each component a column of one object (``_columns.unpack`` takes a list as it
    is); nothing linked. The ids and types are checked where format 2's are."""
    entities = format_1.get("entities")
    if not isinstance(entities, dict):
        raise ValueError(f"a WorldState of format 1 whose entities are {_brief(entities)!r}")
    groups = []
    for entity, components in entities.items():
        if not isinstance(components, dict):
            raise ValueError(
                f"WorldState entity {entity!r}: components must be a dict keyed by type, got "
                f"{components!r}"
            )
        groups.append((tuple(components), [entity], [[c] for c in components.values()]))
    state: dict[str, Any] = {key: value for key, value in format_1.items() if key != "entities"}
    state.update(format=WORLD_FORMAT, order=list(entities), groups=groups, linked=None)
    return state


WORLD_STATE = Layouts(
    "WorldState",
    Layout(
        "format 1",
        lambda state: isinstance(state, dict) and state.get("format") == 1,
        _world_in_columns,
    ),
    Layout(
        f"format {WORLD_FORMAT}",
        lambda state: isinstance(state, dict) and state.get("format") == WORLD_FORMAT,
    ),
)
