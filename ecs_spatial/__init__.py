"""ecs_spatial: a spatial layer for the esper entity-component system.

A pure-Python quadtree keyed by entity id (usable on its own), Position and AABB components
with dirty flags, and esper processors for collision events, culling and proximity.
"""

from __future__ import annotations

from .geometry import Box, segment_entry
from .quadtree import NodeInfo, QuadTree

__version__ = "0.1.0"

__all__ = ["Box", "NodeInfo", "QuadTree", "__version__", "segment_entry"]
