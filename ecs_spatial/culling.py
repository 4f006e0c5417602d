"""View culling: which entities a camera sees, kept up to date at the cost of what changed.

A :class:`CullingProcessor` follows one :class:`~ecs_spatial.processors.SpatialProcessor` and
one view box (a camera). After each of its ``process()`` calls, ``visible`` holds every
indexed entity whose box intersects the view (closed boxes: touching counts, the rule of
:meth:`Box.intersects <ecs_spatial.geometry.Box.intersects>`), and the changes since the
previous call have been dispatched as esper events::

    "view_exit"(entity)    # was visible, is not any more (moved away, deleted, lost its box)
    "view_enter"(entity)   # is visible now and was not

All exits first, then all enters, each kind in ascending entity order, so the same world gives
the same sequence run after run. Every enter is followed by exactly one exit, also when the
entity is deleted while visible.

Cost. The processor never looks at the whole world. Each frame it takes the cheaper of:

- looking at what changed: the entities the SpatialProcessor reports as ``moved`` or
  ``removed`` this frame, one box test each, and, if the view moved a little, the strips it
  gained and lost (at most four thin queries): O(changes + strips);
- one ``index.query(view)``, pruned by node bounds, diffed against ``visible``:
  O(log n + visible). This is the way after a jump of the view, and when more entities
  moved than are visible.

So the cost follows what is visible and what changed, not the size of the world
(``bench/queries_bench.py`` measures it against a brute-force scan, from 1,000 to 200,000
entities).

Several views (split screen, a minimap) are several processors, each with its own events;
handlers that must tell them apart can compare ``processor.visible``.
"""

from __future__ import annotations

from collections.abc import Callable, KeysView
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

import esper

from .events import VIEW_ENTER, VIEW_EXIT
from .geometry import Box
from .quadtree import QuadTree

__all__ = ["CullingProcessor", "SpatialSource", "ViewSource"]


class SpatialSource(Protocol):
    """What a follower processor reads from a SpatialProcessor: its index, and the entities
    whose box changed (or that were inserted) and that left the index during its last
    ``process()``."""

    @property
    def index(self) -> QuadTree: ...

    @property
    def moved(self) -> AbstractSet[int]: ...

    @property
    def removed(self) -> AbstractSet[int]: ...


ViewSource = Box | Callable[[], Box]
"""What a view can be: a fixed :class:`Box`, or a callable returning the box for this frame."""


class CullingProcessor(esper.Processor):
    """Keeps ``visible``, the set of entities whose boxes intersect a view, and dispatches
    ``"view_enter"`` / ``"view_exit"`` for the changes.

    ``spatial`` is the SpatialProcessor whose index this processor reads; add this processor
    to the same world, after it (a lower priority, or the same priority added later), so that
    each frame it sees the index already brought up to date::

        spatial = SpatialProcessor()
        esper.add_processor(spatial, priority=10)
        camera = CullingProcessor(spatial, lambda: Box(cam.x, cam.y, cam.x + 640, cam.y + 480))
        esper.add_processor(camera)

    ``view`` is a :class:`Box`, or a callable taking no argument that returns this frame's
    :class:`Box` (a moving camera). Anything else raises ``TypeError`` naming the value: at
    construction or assignment for a non-callable, at ``process()`` for a callable that returns
    something other than a Box. A failed ``process()`` changes nothing and loses nothing: the
    next successful one reports every change since the last successful one.

    The processor must run once after each ``process()`` of its SpatialProcessor (as it does
    when both sit in the same world and ``esper.process()`` drives them): it learns what
    changed from the SpatialProcessor's ``moved`` and ``removed`` of the current frame.
    """

    #: Estimated costs that choose, each frame, between looking at what changed (the
    #: entities that moved or left, and the strips a panning view gained and lost) and one
    #: query of the whole view, in units of one entity returned by that query. Measured on
    #: CPython 3.11 (``bench/queries_bench.py``, a window seeing 1,000 entities, a loaded
    #: 2-core machine): a changed entity looked up and tested costs about 3 units, a strip
    #: query about 250 (a long thin query visits many nodes: 50 to 300 us from N = 10,000 to
    #: 200,000), a query's fixed part about 100. So a still view with 100 of 200,000
    #: entities moving costs 0.1 ms instead of 1 ms, and a view panning over thousands of
    #: movers queries the window instead of looking at each mover.
    CHANGE_COST = 3.0
    STRIP_COST = 250.0
    QUERY_COST = 100.0

    def __init__(self, spatial: SpatialSource, view: ViewSource) -> None:
        self.spatial = spatial
        self._view: ViewSource = _checked_view_source(view)
        # entity -> None: a dict so that ``visible`` can hand out a read-only live view
        # (``dict.keys()``) without copying it every frame.
        self._visible: dict[int, None] = {}
        # The view box of the last successful process(); None forces a fresh query, as on the
        # first frame and after a failed one (whose moved/removed sets were not consumed).
        self._last_view: Box | None = None

    @property
    def view(self) -> ViewSource:
        """The view: a :class:`Box`, or a callable returning this frame's Box. Assigning a new
        one takes effect at the next ``process()``."""
        return self._view

    @view.setter
    def view(self, view: ViewSource) -> None:
        self._view = _checked_view_source(view)

    @property
    def visible(self) -> KeysView[int]:
        """Every entity whose box intersects the view as of the last ``process()``, each once.

        A read-only, live set view (``set(processor.visible)`` takes a copy): it supports
        ``in``, ``len``, iteration, comparison with sets and the set operators. Complexity:
        O(1).
        """
        return self._visible.keys()

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Bring ``visible`` up to date with the view and the index, then dispatch the exits
        and enters (each kind sorted by entity id).

        Complexity: the smaller of O(moved + removed + strips) and O(log n + visible),
        by the estimates ``CHANGE_COST``, ``STRIP_COST`` and ``QUERY_COST``; plus
        O(c log c) for c events.
        """
        source = self._view
        last = self._last_view
        if isinstance(source, Box):
            view = source
        else:
            self._last_view = None  # if the callable raises or misbehaves, requery next time
            view = source()
            if not isinstance(view, Box):
                raise TypeError(
                    f"CullingProcessor view callable {source!r} returned {view!r} "
                    f"({type(view).__name__}), not an ecs_spatial.Box"
                )
        spatial = self.spatial
        index = spatial.index
        visible = self._visible
        exits: list[int] = []
        enters: list[int] = []
        strips = self._plan(view, last, len(spatial.moved) + len(spatial.removed))
        if strips is not None:
            # Only entities whose box changed or that left the index, and (if the view moved
            # a little) those in the strips it gained or lost, can have changed sides.
            intersects = view.intersects
            get = index.get  # one call instead of `in` + `[]`: -30% on this loop
            moved = spatial.moved
            for entity in spatial.removed:
                if entity not in moved:
                    box = get(entity)
                    if box is None:
                        if entity in visible:
                            del visible[entity]
                            exits.append(entity)
                    elif intersects(box):  # left and came back: as if moved
                        if entity not in visible:
                            visible[entity] = None
                            enters.append(entity)
                    elif entity in visible:
                        del visible[entity]
                        exits.append(entity)
            for entity in moved:
                box = get(entity)
                if box is not None and intersects(box):
                    if entity not in visible:
                        visible[entity] = None
                        enters.append(entity)
                elif entity in visible:
                    del visible[entity]
                    exits.append(entity)
            if strips:
                # Every test is against the new view with the current box, so an entity met
                # twice (moved, or in two strips) gets the same answer and at most one event.
                gained, lost = strips
                for strip in gained:
                    for entity in index.query(strip):
                        if entity not in visible:
                            box = get(entity)
                            if box is not None and intersects(box):
                                visible[entity] = None
                                enters.append(entity)
                for strip in lost:
                    for entity in index.query(strip):
                        if entity in visible:
                            box = get(entity)
                            if box is None or not intersects(box):
                                del visible[entity]
                                exits.append(entity)
        else:
            # The view jumped (or first frame): one pruned query, diffed against visible.
            now = set(index.query(view))
            for entity in visible:
                if entity not in now:
                    exits.append(entity)
            for entity in exits:
                del visible[entity]
            for entity in now:
                if entity not in visible:
                    enters.append(entity)
                    visible[entity] = None
        self._last_view = view
        if exits:
            exits.sort()
            for entity in exits:
                esper.dispatch_event(VIEW_EXIT, entity)
        if enters:
            enters.sort()
            for entity in enters:
                esper.dispatch_event(VIEW_ENTER, entity)

    def _plan(
        self, view: Box, last: Box | None, changes: int
    ) -> tuple[list[Box], list[Box]] | None:
        """How to bring ``visible`` up to date, by estimated cost: None for one query of the
        whole view; otherwise the strips the view gained and lost (both empty if it stood
        still), to be queried besides looking at each changed entity. See ``CHANGE_COST``."""
        if last is None:
            return None
        full = len(self._visible) + self.QUERY_COST
        if view == last:
            return ([], []) if changes * self.CHANGE_COST <= full else None
        area = view.area
        if area <= 0.0 or not view.intersects(last):
            return None
        gained = _difference(view, last)
        lost = _difference(last, view)
        swept = (sum(s.area for s in gained) + sum(s.area for s in lost)) / area
        cost = (
            changes * self.CHANGE_COST
            + (len(gained) + len(lost)) * self.STRIP_COST
            + swept * len(self._visible)
        )
        return (gained, lost) if cost <= full else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(view={self._view!r}, visible={len(self._visible)})"


def _checked_view_source(view: object) -> ViewSource:
    """The view itself if it is a Box or a callable, else a ``TypeError`` naming it."""
    if isinstance(view, Box) or callable(view):
        return view
    raise TypeError(
        f"CullingProcessor view must be an ecs_spatial.Box or a callable returning one, "
        f"got {view!r} ({type(view).__name__})"
    )


def _difference(a: Box, b: Box) -> list[Box]:
    """Closed boxes that together cover every point of ``a`` outside ``b`` (they may also
    touch ``b``'s edges: the caller tests exactly). At most four: ``a``'s slabs left and
    right of ``b`` at full height, then below and above ``b`` between them."""
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    out = []
    if ax0 < bx0:
        out.append(Box(ax0, ay0, min(bx0, ax1), ay1))
    if ax1 > bx1:
        out.append(Box(max(bx1, ax0), ay0, ax1, ay1))
    mx0 = max(ax0, bx0)
    mx1 = min(ax1, bx1)
    if mx0 <= mx1:
        if ay0 < by0:
            out.append(Box(mx0, ay0, mx1, min(by0, ay1)))
        if ay1 > by1:
            out.append(Box(mx0, max(by1, ay0), mx1, ay1))
    return out
