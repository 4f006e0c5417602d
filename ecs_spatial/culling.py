"""View culling: which entities a camera sees, kept up to date at the cost of what changed.

A :class:`CullingProcessor` follows one :class:`~ecs_spatial.spatial_processor.SpatialProcessor` and
one view box (a camera). After each of its ``process()`` calls, ``visible`` holds every
indexed entity whose box intersects the view (closed boxes: touching counts, the rule of
:meth:`Box.intersects <ecs_spatial.geometry.Box.intersects>`), and the changes since the
previous call have been dispatched as esper events::

    "view_exit"(entity)    # was visible, is not any more (moved away, deleted, lost its box)
    "view_enter"(entity)   # is visible now and was not

All exits first, then all enters, each kind in ascending entity order, so the same world gives
the same sequence run after run. Every enter is followed by exactly one exit, also when the
entity is deleted while visible.

Cost. The processor never looks at the whole world:

- a still view: only the entities the SpatialProcessor reports as ``moved`` or ``removed``
  this frame are looked at, one box test each: O(changes);
- a panning view: it keeps a local grid of the entities around the view (the view grown by
  a quarter of its side), kept up to date from ``moved`` and ``removed``; each frame only
  the entities in the thin strips the view gained and lost are tested. The grid is rebuilt
  with one index query when the view leaves it;
- a jump of the view, or so many changes that this is cheaper (about a third as many as
  entities visible, see ``CHANGE_COST``): one ``index.query(view)``, pruned by node bounds,
  diffed against ``visible``: O(log n + visible).

So the cost follows what is visible and what changed, not the size of the world
(``python -m bench queries`` measures it against a brute-force scan, from 1,000 to 200,000
entities).

On a torus (``SpatialProcessor(wrap=...)``) the view is taken modulo the period, as the
index's ``query`` takes it: a view across a seam (or outside the period, or wider than it)
sees what lies beyond. A still view there costs what changed, as above; a moving one is one
query of the index a frame (the local grid knows no seams).

Several views (split screen, a minimap) are several processors, each with its own events;
handlers that must tell them apart can compare ``processor.visible``.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, KeysView
from collections.abc import Set as AbstractSet
from typing import Any

import esper

from ._grid import CellGrid
from ._versions import CULLING_PROCESSOR
from ._wrap import period_of, query_intervals
from .delivery import ENTER, EXIT, Outbox
from .events import VIEW_ENTER, VIEW_EXIT
from .following import (
    NO_CHANGES,
    Follower,
    SpatialSource,
    WorldBinding,
    changes_since,
    refuse_shallow_copy,
)
from .geometry import Box

__all__ = ["CullingProcessor", "SpatialSource", "ViewSource"]

_INF = math.inf
_MAX = sys.float_info.max


ViewSource = Box | Callable[[], Box]
"""What a view can be: a fixed :class:`Box`, or a callable returning the box for this frame."""


class CullingProcessor(esper.Processor, Follower):
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

    Add it to the same world after its SpatialProcessor (as ``esper.process()`` then drives
    both in turn): each frame it applies the SpatialProcessor's ``moved`` and ``removed``, and
    when it missed frames (skipped by a raising handler, or out of the world for a while) it
    resynchronises from the index, reporting exactly the changes since what it last reported
    (:mod:`ecs_spatial.following`). It serves the esper world of its first ``process()`` and
    refuses (``RuntimeError``) to run in another; run by its world's ``esper.process()``
    after a handler switched worlds, it does nothing. Its events follow the rules of
    :mod:`ecs_spatial.delivery`.
    """

    #: Above this many changed entities (moved or removed) per entity visible, one query of
    #: the whole view is cheaper than looking at each change: a changed entity looked up and
    #: tested costs ``CHANGE_COST`` entities returned by a query, plus a query's fixed part
    #: of ``QUERY_COST`` (measured: docs/design.md#decisions).
    CHANGE_COST = 3.0
    QUERY_COST = 100.0
    #: A view that moved by less than this fraction of its area (gained plus lost) is
    #: updated from the strips it swept, in the local grid; a bigger move queries the index.
    SWEPT_MAX = 0.5
    #: The local grid covers the view grown by this fraction of its larger side on every
    #: side; it is rebuilt (one query of the index) when the view leaves it.
    REGION_MARGIN = 0.25
    #: The local grid's cells: the view's larger side divided by this.
    REGION_CELLS = 16

    __copy__ = refuse_shallow_copy

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Its attributes, from a state in any layout ``_versions`` reads."""
        self.__dict__.update(CULLING_PROCESSOR.upgraded(self, state))

    def __init__(self, spatial: SpatialSource, view: ViewSource) -> None:
        self.spatial = spatial
        self._view: ViewSource = _checked_view_source(view)
        # entity -> None: a dict so that ``visible`` can hand out a read-only live view
        # (``dict.keys()``) without copying it every frame.
        self._visible: dict[int, None] = {}
        # The view box of the last successful process(); None forces a fresh query, as on the
        # first frame and after a failed one (whose moved/removed sets were not consumed).
        self._last_view: Box | None = None
        # The local grid: every indexed entity whose box intersects ``_region`` (a margin
        # around the view), with its box, so that a panning view is updated from the strips
        # it swept without asking the index. None while not worth keeping.
        self._region: Box | None = None
        self._grid = CellGrid()
        self._binding = WorldBinding()
        self._outbox = Outbox()
        self._seen_frame: int | None = None  # the source's last frame read (following.py)

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

        Complexity: O(moved + removed) for a still view; O(moved + removed + entities in
        the cells of the strips swept) for a view panning inside its local grid; O(log n +
        visible) for a query of the whole view (a jump, or more changes than
        ``CHANGE_COST`` says are worth looking at); O(log n + entities in the region) once
        per ``REGION_MARGIN`` of travel. Plus O(c log c) for c events.
        """
        if self._binding.away(self):  # its world's esper.process() after a handler left it
            return
        self._check_database()
        # What a raising handler cut off earlier comes first; the frame is worked out
        # whatever it raises (delivery.Outbox.run_frame).
        self._outbox.run_frame(self._after_owed)

    def _check_database(self) -> None:
        """Start afresh if the world's database is a new one (ids are reused): an exit for
        every entity visible, and the next frame worked out from nothing."""
        if self._binding.check(self):
            outbox = self._outbox
            outbox.forget_arrivals()
            outbox.post(VIEW_EXIT, EXIT, sorted(self._visible))
            self._visible.clear()
            self._drop_region()
            self._last_view = None
            self._seen_frame = None

    def _work_out(self) -> None:
        """Work out the frame, post its events and deliver them (the outbox may hold them
        back: see ``Outbox.run_frame``)."""
        outbox = self._outbox
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
        exits: list[int] = []
        enters: list[int] = []
        spatial = self.spatial
        feed = changes_since(spatial, self._seen_frame)
        moved, removed = (spatial.moved, spatial.removed) if feed else (NO_CHANGES, NO_CHANGES)
        changes = len(moved) + len(removed)
        visible = self._visible
        wrap = spatial.index.wrap
        if (
            last is None
            or feed is None  # missed frames of the source: resynchronise from the index
            or changes * self.CHANGE_COST > len(visible) + self.QUERY_COST
            # on a torus a moving view is queried: the local grid knows no seams
            or (view != last and (wrap is not None or not self._small_move(last, view)))
        ):
            # First frame, a storm of changes, or a jump: one query of the view.
            self._drop_region()
            self._diff(set(spatial.index.query(view)), exits, enters)
        elif view == last and self._region is None:
            # A still view: only what changed can have changed sides.
            self._apply_changes(view, moved, removed, exits, enters, wrap)
        elif self._region is None or not self._region.contains(view):
            # Panning, and the view left the local grid (or there is none): rebuild it, or
            # query the view itself where no grid fits it (see _region_around).
            region = self._region_around(view)
            if region is None:
                self._drop_region()
                self._diff(set(spatial.index.query(view)), exits, enters)
            else:
                self._build_region(view, region, exits, enters)
        else:
            # Panning inside the local grid: the changes, then the strips swept.
            self._apply_changes(view, moved, removed, exits, enters)
            if view != last:
                self._sweep(last, view, exits, enters)
        self._last_view = view
        self._seen_frame = spatial.frame
        exits.sort()
        enters.sort()
        outbox.post(VIEW_EXIT, EXIT, exits)
        outbox.post(VIEW_ENTER, ENTER, enters)
        outbox.deliver()

    def _small_move(self, last: Box, view: Box) -> bool:
        """Whether the view moved by so little that the strips it swept are worth it."""
        if not 0.0 < view.area < _INF or not view.intersects(last):
            # A point or a segment of a view: nothing to gain; an area past the float range
            # (a view wider than 1.8e308): nothing to measure it by.
            return False
        swept = sum(s.area for s in _difference(view, last))
        swept += sum(s.area for s in _difference(last, view))
        return swept <= self.SWEPT_MAX * view.area

    def _diff(self, now: set[int], exits: list[int], enters: list[int]) -> None:
        """Make ``visible`` equal ``now``. Complexity: O(visible + now)."""
        visible = self._visible
        for entity in visible:
            if entity not in now:
                exits.append(entity)
        for entity in exits:
            del visible[entity]
        for entity in now:
            if entity not in visible:
                enters.append(entity)
                visible[entity] = None

    def _drop_region(self) -> None:
        if self._region is not None:
            self._region = None
            self._grid.reset(1.0)

    def _region_around(self, view: Box) -> Box | None:
        """The local grid's region for ``view``: the view grown by ``REGION_MARGIN`` of its
        larger side, clamped to the float range; None where no grid fits (a side that
        overflows, or cells that would round to nothing, as with a view of subnormal size)."""
        side = max(view.max_x - view.min_x, view.max_y - view.min_y)
        margin = side * self.REGION_MARGIN
        if not 0.0 < side / self.REGION_CELLS < _INF or margin == _INF:
            return None
        return Box(
            max(view.min_x - margin, -_MAX), max(view.min_y - margin, -_MAX),
            min(view.max_x + margin, _MAX), min(view.max_y + margin, _MAX),
        )

    def _build_region(self, view: Box, region: Box, exits: list[int], enters: list[int]) -> None:
        """Query the index once for ``region`` (``_region_around(view)``), fill the local grid,
        and make ``visible`` what the grid says. Complexity: O(log n + entities in the
        region), once per REGION_MARGIN of travel."""
        side = max(view.max_x - view.min_x, view.max_y - view.min_y)
        grid = self._grid
        grid.reset(side / self.REGION_CELLS)
        get = self.spatial.index.get
        intersects = view.intersects
        now = set()
        for entity in self.spatial.index.query(region):
            box = get(entity)
            if box is not None:
                grid.put(entity, box)
                if intersects(box):
                    now.add(entity)
        self._region = region
        self._diff(now, exits, enters)

    def _apply_changes(
        self,
        view: Box,
        moved: AbstractSet[int],
        removed: AbstractSet[int],
        exits: list[int],
        enters: list[int],
        wrap: Box | None = None,
    ) -> None:
        """Put every entity that moved or left the index on the right side of the view, and
        in or out of the local grid if there is one; on a torus of period ``wrap`` (then
        without a grid) by the index's rule of a query across the seams. Complexity:
        O(moved + removed)."""
        # One call instead of `in` + `[]` (speed: see docs/design.md#decisions).
        get = self.spatial.index.get
        intersects = view.intersects if wrap is None else _wrapped_intersects(view, wrap)
        visible = self._visible
        region = self._region
        grid = self._grid
        for entity in itertools.chain(moved, removed):
            box = get(entity)
            if region is not None:
                if box is not None and region.intersects(box):
                    grid.put(entity, box)
                else:
                    grid.discard(entity)
            if box is not None and intersects(box):
                if entity not in visible:
                    visible[entity] = None
                    enters.append(entity)
            elif entity in visible:
                del visible[entity]
                exits.append(entity)

    def _sweep(self, last: Box, view: Box, exits: list[int], enters: list[int]) -> None:
        """Update ``visible`` for a view that moved from ``last`` within the local grid: only
        entities in the strips it gained or lost can have changed sides (the others that
        changed were handled by ``_apply_changes``). Every test is against the new view with
        the current box, so an entity met twice gets one answer and at most one event.
        Complexity: O(entities in the cells of the strips)."""
        grid = self._grid
        boxes = grid.boxes
        intersects = view.intersects
        visible = self._visible
        for strip in _difference(view, last):
            for entity in grid.query(strip):
                if entity not in visible and intersects(boxes[entity]):
                    visible[entity] = None
                    enters.append(entity)
        for strip in _difference(last, view):
            for entity in grid.query(strip):
                if entity in visible and not intersects(boxes[entity]):
                    del visible[entity]
                    exits.append(entity)

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


def _wrapped_intersects(view: Box, wrap: Box) -> Callable[[Box], bool]:
    """The test whether a box the index holds (canonical) meets ``view`` on the torus of
    period ``wrap``: the rule of the index's ``query`` there (``_wrap.query_intervals`` on
    each axis: the view's canonical image and the images by one period that may meet a
    stored box, or the whole axis for a view as wide as the period), the same answer to the
    bit."""
    ox, oy, w, h, ex, ey = period_of(wrap)
    xs = query_intervals(view.min_x, view.max_x, ox, w, ex)
    ys = query_intervals(view.min_y, view.max_y, oy, h, ey)

    def intersects(box: Box) -> bool:
        x0, y0, x1, y1 = box
        return any(lo <= x1 and x0 <= hi for lo, hi in xs) and any(
            lo <= y1 and y0 <= hi for lo, hi in ys
        )

    return intersects


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
