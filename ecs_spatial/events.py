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

At interpreter exit (``atexit``, before the modules are torn down) every world's handlers are
dropped from esper's registries, so that a program exits silently: see
:func:`_drop_handlers_at_exit`.
"""

from __future__ import annotations

import atexit

from ._esper_tables import event_registries

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


def _drop_handlers_at_exit() -> None:
    """Empty the event registry of every esper world, once the program is done.

    Why: while the interpreter tears the modules down, the objects of ``__main__`` die, and
    with them the handlers set on them, each firing the weak-reference callback esper gave
    it. Two faults outside this package then print a traceback on exit:

    - esper's callback removes the dead reference from the registry of the world that is
      current, not of the world the handler was set in: after ``esper.switch_world`` it
      fails with ``KeyError: 'collision_enter'``;
    - ``weakref.WeakMethod`` (CPython 3.10 to 3.13) fires twice when an object and its
      class die in the same collection, as a script's globals do; when the first callback
      drops the last reference to it (esper's does), the second fails with
      ``AttributeError: 'NoneType' object has no attribute '_alive'``. It fires only while
      esper's registry outlives the handler, which this package's compiled core makes so:
      it holds the reference's helpers for the life of the process, their modules hold
      ``typing``, and ``typing`` keeps esper's ``@overload`` functions, so esper's globals
      (the registry) too.

    A registry emptied while every handler is still alive releases the weak references
    without a callback. Registered at import, this runs after the ``atexit`` functions
    registered later (they may still dispatch events), before the teardown.
    """
    for registry in event_registries():
        registry.clear()


atexit.register(_drop_handlers_at_exit)
