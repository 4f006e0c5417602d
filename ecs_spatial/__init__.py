"""ecs_spatial: a spatial layer for the esper entity-component system.

- :class:`QuadTree`, an index of boxes keyed by entity id, usable on its own: the compiled
  core when it is built (``NATIVE``), else :class:`PyQuadTree`, the pure-Python reference
  it is tested against;
- :class:`Position` and :class:`AABB`, components whose plain assignment marks them dirty:
  compiled types when the core is built (``components.NATIVE``), else :class:`PyPosition`
  and :class:`PyAABB`, their pure-Python references;
- :class:`SpatialProcessor`, which keeps the index in step with the world and dispatches
  ``collision_enter`` / ``collision_exit`` / ``collision`` events;
- :class:`CullingProcessor` (what a view sees) and :class:`ProximityProcessor` (what is near
  each :class:`Proximity` watcher), built on the index's queries, and
  :class:`NeighbourArrays` (every watcher's neighbours, and what entered and left, as arrays).

Dependencies point one way, each module importing only those above it:

- ``geometry``: ``Box`` and the one boundary rule;
- ``_records``, ``_growth``, ``_snapshots``, ``_tree_check``, ``_tree_state``: the index's
  parts (records and input rules, root growth, straddler snapshots, the invariant check,
  the pickle state);
- ``quadtree``: the pure-Python index, the reference;
- ``index``: picks the compiled twins (``_cquadtree``, ``_cmembers``) when they are built;
- ``filtering``, ``components``, ``events``, ``_esper_tables``, ``_versions``, ``delivery``,
  ``following``, ``pair_set``, ``collision_handlers``, ``_members``: what the processors are
  made of (the collision filter's rules, tracked components, event names, esper's private
  state, the layouts of saved states, the outbox, the followers' contract, the pair set and
  its search policy, the handlers by component type, the SpatialProcessor's members and its
  read loop);
- ``spatial_processor``; then ``culling``, ``proximity`` and ``neighbours``, which follow it; then
  ``saving``, which saves a world with its processors and restores it.

``geometry``, the index's parts, ``quadtree`` and ``index`` import only the standard library.
``pyglet_debug``, a pyglet debug overlay, is the one module that imports pyglet, and nothing
in the package imports it.
"""

from __future__ import annotations

from .arrays import ArrayRow, BoxArray
from .collision_handlers import CollisionHandler
from .components import (
    AABB,
    CollisionFilter,
    Continuous,
    Position,
    PyAABB,
    PyCollisionFilter,
    PyPosition,
)
from .culling import CullingProcessor
from .events import (
    COLLISION,
    COLLISION_ENTER,
    COLLISION_EXIT,
    COLLISION_SWEPT,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    VIEW_ENTER,
    VIEW_EXIT,
)
from .geometry import Box, segment_entry, sweep_time
from .index import NATIVE, PyQuadTree, QuadTree
from .neighbours import NeighbourArrays, Neighbours
from .proximity import Proximity, ProximityProcessor
from .quadtree import NodeInfo
from .saving import WorldState, restore_world, save_world
from .spatial_processor import CastRecord, FrameTimings, SpatialProcessor

__version__ = "0.2.0"

__all__ = [
    "AABB",
    "COLLISION",
    "COLLISION_ENTER",
    "COLLISION_EXIT",
    "COLLISION_SWEPT",
    "NATIVE",
    "PROXIMITY_ENTER",
    "PROXIMITY_EXIT",
    "VIEW_ENTER",
    "VIEW_EXIT",
    "ArrayRow",
    "Box",
    "BoxArray",
    "CastRecord",
    "CollisionFilter",
    "CollisionHandler",
    "Continuous",
    "CullingProcessor",
    "FrameTimings",
    "NeighbourArrays",
    "Neighbours",
    "NodeInfo",
    "Position",
    "Proximity",
    "ProximityProcessor",
    "PyAABB",
    "PyCollisionFilter",
    "PyPosition",
    "PyQuadTree",
    "QuadTree",
    "SpatialProcessor",
    "WorldState",
    "__version__",
    "restore_world",
    "save_world",
    "segment_entry",
    "sweep_time",
]
