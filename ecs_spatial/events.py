"""The names of the esper events that ecs_spatial dispatches, as constants.

Subscribe with ``esper.set_handler(COLLISION_ENTER, on_enter)``. esper keeps handlers by weak
reference: pass a module-level function or a bound method of an object you keep alive, never
a lambda or a nested function that nothing else holds (it is forgotten at once, silently).

Collision events (``SpatialProcessor``), each ``(a, b)`` with ``a < b``:

- ``COLLISION_ENTER``: the pair overlaps now and did not at the previous ``process()``;
- ``COLLISION_EXIT``: it overlapped then and does not now (also when one of the two was
  deleted, lost a component or was filtered out);
- ``COLLISION``: every pair that overlaps now, every frame.

Swept events (``SpatialProcessor``, for entities with a ``Continuous`` component), each
``(mover, other, t)``: ``COLLISION_SWEPT``, the mover's box touched ``other``'s at the
fraction ``t`` in [0, 1] of its motion since the previous ``process()``, and the two
overlapped neither at the previous frame nor now (a bullet that went through a wall).

View events (``CullingProcessor``), each ``(entity)``: ``VIEW_ENTER``, ``VIEW_EXIT``.
Proximity events (``ProximityProcessor``), each ``(watcher, other)``: ``PROXIMITY_ENTER``,
``PROXIMITY_EXIT``.
"""

from __future__ import annotations

__all__ = [
    "COLLISION",
    "COLLISION_ENTER",
    "COLLISION_EXIT",
    "COLLISION_SWEPT",
    "PROXIMITY_ENTER",
    "PROXIMITY_EXIT",
    "VIEW_ENTER",
    "VIEW_EXIT",
]

COLLISION_ENTER = "collision_enter"
COLLISION_EXIT = "collision_exit"
COLLISION = "collision"
COLLISION_SWEPT = "collision_swept"

VIEW_ENTER = "view_enter"
VIEW_EXIT = "view_exit"

PROXIMITY_ENTER = "proximity_enter"
PROXIMITY_EXIT = "proximity_exit"
