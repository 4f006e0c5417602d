"""Neighbours as arrays: for many watchers at once, the entities within a radius, and what
entered and left since the last frame, as flat int64 arrays (issue 28).

:class:`NeighbourArrays` is an esper processor, the array twin of
:class:`~ecs_spatial.ProximityProcessor` for agent simulations: no component per watcher,
no event per pair, but after each ``process()``::

    nb.watchers   # array('q'): the watchers, ascending entity ids
    nb.offsets    # array('q'), len(watchers) + 1: watchers[i]'s neighbours are
    nb.ids        #   ids[offsets[i]:offsets[i + 1]], ascending (CSR)
    nb.entered    # array('q'), flat (watcher, other) pairs, ascending: new since last frame
    nb.exited     # array('q'), flat (watcher, other) pairs, ascending: gone since last frame

A numpy user wraps them without a copy: ``np.frombuffer(nb.ids, dtype=np.int64)``,
``np.frombuffer(nb.entered, dtype=np.int64).reshape(-1, 2)``; this module imports no numpy.

The rule is ProximityProcessor's "within reach" (see :mod:`ecs_spatial.proximity`): ``b`` is
a neighbour of watcher ``a`` when ``index[b].distance_to_point(*index[a].center) <=
radius`` (exactly what ``QuadTree.query_radius`` answers from that centre), ``a != b``, and
both are in the SpatialProcessor's index; on a torus (``SpatialProcessor(wrap=...)``) the
minimum-image distance, as ``query_radius``. There is no mask and no hysteresis (those are
the per-watcher ``Proximity`` component's, for games). A watcher is any indexed entity
chosen (every member by default); a chosen entity outside the index has no neighbours and
is not listed. ``entered`` and ``exited`` are exactly the difference between the pairs of
the previous ``process()`` and these: every enter gets its exit, also when an entity is
deleted, leaves the index or stops being a watcher, and when the world is cleared
(``esper.clear_database``: every pair reported exits; ids may then be reused, so a pair
may exit and enter in one frame).

Array entities (:class:`~ecs_spatial.BoxArray`): :meth:`NeighbourArrays.in_rows` gives the
same answer in the rows of a ``BoxArray`` instead of entity ids (-1 for an entity that no
row of it places), so that a flock's numpy arrays are indexed with it directly.

Three ways to the answer, the same answer:

- every member a watcher, one radius, no member wider or higher than twice the radius (the
  agent simulation): each member's box kept in a slot, fed only the boxes the
  SpatialProcessor reports moved, and each frame a uniform grid of the members' centres
  made afresh by two counting sorts, each member tested against the members of its own
  and the next-door cells (:func:`grid_csr_reference` says why that holds every pair), one
  exact test each way per candidate, the CSR and the diff, in C (``_cneighbours.c``; the
  ``*_reference`` functions below are its pure-Python twins). O(members) a frame, no
  incremental bookkeeping;
- every member a watcher, one radius, where the grid refuses (a member wider than twice
  the radius, a torus under three cells a side, coordinates past 1e100): a compiled
  QuadTree of its own holding each member's box grown by ``radius / 2`` on every side (a
  superset: a box within ``radius`` of a centre meets the grown box about it), moved with
  the boxes, its ``find_all_intersections_array`` candidates, then the same exact tests;
- a subset of watchers, or a radius per watcher: ``query_radius_many`` of the index from
  the watchers' centres.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, cast

import esper

from ._wrap import Period, canonical, period_of, wrap_coord
from .arrays import BoxArray, entity_rows
from .following import SpatialSource, WorldBinding, changes_since, source_current
from .geometry import midpoint
from .index import NATIVE, QuadTree

__all__ = [
    "NeighbourArrays",
    "Neighbours",
    "diff_csr_reference",
    "gather_moves_reference",
    "gather_reference",
    "grid_csr_reference",
    "grown",
    "near_csr_reference",
    "translate_reference",
    "within_reference",
    "without_self_reference",
]

_MAX = sys.float_info.max
_INF = math.inf
_hypot = math.hypot
#: A grown box must be this much narrower than half the period (the tree's own rounding
#: of its canonical image must not take it past the half).
_ROOM = 1.0 + 1e-9


class Neighbours(NamedTuple):
    """One frame's answer: ``watchers``, the CSR ``offsets`` and ``ids``, and the flat
    ``entered`` and ``exited`` pairs, each an ``array('q')`` (see the module docstring)."""

    watchers: array[int]
    offsets: array[int]
    ids: array[int]
    entered: array[int]
    exited: array[int]


# -- the array work: pure-Python references of _cneighbours ------------------------------


def _near(b: Any, x: float, y: float, r: float) -> bool:
    """The index's ``query_radius`` test of the box ``b`` (four floats) from ``(x, y)``."""
    dx = b[0] - x if x < b[0] else (x - b[2] if x > b[2] else 0.0)
    dy = b[1] - y if y < b[1] else (y - b[3] if y > b[3] else 0.0)
    return dx <= r and dy <= r and _hypot(dx, dy) <= r


def within_reference(a: Any, b: Any, r: float, period: Period | None) -> bool:
    """Whether box ``b`` is within ``r`` of the centre of box ``a`` (both canonical boxes
    of the index, four floats each): ``QuadTree.query_radius``'s answer from that centre,
    on a torus from the nine images of the wrapped centre (the minimum-image distance)."""
    cx = midpoint(a[0], a[2])
    cy = midpoint(a[1], a[3])
    if period is None:
        return _near(b, cx, cy, r)
    ox, oy, w, h, ex, ey = period
    cx = wrap_coord(cx, ox, w, ex)
    cy = wrap_coord(cy, oy, h, ey)
    return any(
        _near(b, cx + sx, cy + sy, r) for sx in (0.0, w, -w) for sy in (0.0, h, -h)
    )


def near_csr_reference(
    candidates: array[int],
    boxes: array[float],
    rank: array[int],
    entities: array[int],
    n: int,
    radius: float,
    period: Period | None,
) -> tuple[array[int], array[int]]:
    """The neighbours of ``n`` watchers as CSR ``(offsets, ids)``: for each candidate pair
    of slots ``(s, t)`` (flat), ``entities[t]`` is a neighbour of the watcher ``rank[s]``
    when box ``t`` is within ``radius`` of box ``s``'s centre (:func:`within_reference`),
    and the same the other way; a slot of rank -1 is seen, never a watcher. Each watcher's
    ids ascending. ``_cneighbours.near_csr`` is its compiled twin."""
    lists: list[list[int]] = [[] for _ in range(n)]
    for i in range(0, len(candidates), 2):
        s = candidates[i]
        t = candidates[i + 1]
        if s == t:
            continue
        bs = boxes[4 * s:4 * s + 4]
        bt = boxes[4 * t:4 * t + 4]
        if rank[s] >= 0 and within_reference(bs, bt, radius, period):
            lists[rank[s]].append(entities[t])
        if rank[t] >= 0 and within_reference(bt, bs, radius, period):
            lists[rank[t]].append(entities[s])
    return _csr(lists)


def grid_csr_reference(
    boxes: array[float],
    rank: array[int],
    entities: array[int],
    n: int,
    radius: float,
    period: Period | None,
) -> tuple[array[int], array[int]] | None:
    """:func:`near_csr_reference`'s answer for every pair of members (a slot of rank >= 0;
    each a watcher), the candidates found by a uniform grid of the members' centres (the
    centre as :func:`within_reference` takes it: the midpoint, wrapped on a torus) instead
    of a tree: O(members + candidates), nothing kept from frame to frame.
    ``_cneighbours.grid_csr`` is its compiled twin (cells of its own size, the same answer).

    Why the grid's candidates hold every pair: when box ``t`` is within ``radius`` of the
    centre of ``s`` (an image of it), that point lies within ``radius`` of ``t`` on each
    axis, so the two centres lie within ``radius + half`` on each axis (``half`` the largest
    half width or height of a member), on a torus by the minimum-image distance. Cells of
    side at least ``D = (radius + half) * (1 + 1e-6) + 1e-9 * big + 1e-300`` (``big`` the
    largest coordinate or period value in size: the margin is far above every rounding of
    the centres, the wraps and the gaps) put such centres in the same cell or next-door
    ones. Refused (None, the caller uses the tree) where that cannot hold or would cost too
    much: a radius, period value or member coordinate past 1e100 in size, a member's half
    width or half height over ``radius`` (a few large boxes would make every cell large),
    and on a torus a period under ``3 * D`` (next-door cells would be one cell)."""
    live = [s for s in range(len(rank)) if rank[s] >= 0]
    refused = not radius <= 1e100
    half = 0.0
    big = 0.0
    if period is not None:
        for v in period:
            refused = refused or not abs(v) <= 1e100
            big = max(big, abs(v))
    for s in live:
        if refused:
            break
        x0, y0, x1, y1 = boxes[4 * s:4 * s + 4]
        for v in (x0, y0, x1, y1):
            refused = refused or not abs(v) <= 1e100
            big = max(big, abs(v))
        hw = (x1 - x0) * 0.5
        hh = (y1 - y0) * 0.5
        refused = refused or hw > radius or hh > radius
        half = max(half, hw, hh)
    if refused:
        return None
    reach = (radius + half) * (1.0 + 1e-6) + big * 1e-9 + 1e-300
    if period is not None and (period[2] / reach < 3.0 or period[3] / reach < 3.0):
        return None
    centres = {}
    for s in live:
        b = boxes[4 * s:4 * s + 4]
        cx = midpoint(b[0], b[2])
        cy = midpoint(b[1], b[3])
        if period is not None:
            cx = wrap_coord(cx, period[0], period[2], period[4])
            cy = wrap_coord(cy, period[1], period[3], period[5])
        centres[s] = (cx, cy)
    cells: dict[tuple[int, int], list[int]] = {}
    if period is None:
        xs = [c[0] for c in centres.values()] or [0.0]
        ys = [c[1] for c in centres.values()] or [0.0]
        ox, oy = min(xs), min(ys)
        # Wider cells are as good; these keep the cell numbers small.
        sx = sy = max(reach, (max(xs) - ox) / 1e6, (max(ys) - oy) / 1e6)
        nx = ny = 0
    else:
        ox, oy = period[0], period[1]
        nx = math.floor(period[2] / reach)
        ny = math.floor(period[3] / reach)
        sx, sy = period[2] / nx, period[3] / ny
    for s, (cx, cy) in centres.items():
        i = max(math.floor((cx - ox) / sx), 0)
        j = max(math.floor((cy - oy) / sy), 0)
        if period is not None:
            i = min(i, nx - 1)
            j = min(j, ny - 1)
        cells.setdefault((i, j), []).append(s)
    candidates: array[int] = array("q")
    for (i, j), here in cells.items():
        for di, dj in ((0, 0), (1, 0), (-1, 1), (0, 1), (1, 1)):
            ci, cj = i + di, j + dj
            if period is not None:
                ci %= nx
                cj %= ny
            there = cells.get((ci, cj), [])
            for a, s in enumerate(here):
                for t in here[a + 1:] if (di, dj) == (0, 0) else there:
                    candidates.append(s)
                    candidates.append(t)
    return near_csr_reference(candidates, boxes, rank, entities, n, radius, period)


def _csr(lists: Iterable[list[int]]) -> tuple[array[int], array[int]]:
    offsets = array("q", [0])
    ids: array[int] = array("q")
    for found in lists:
        found.sort()
        ids.extend(found)
        offsets.append(len(ids))
    return offsets, ids


def without_self_reference(
    watchers: array[int], offsets: array[int], ids: array[int]
) -> tuple[array[int], array[int]]:
    """The CSR with each watcher's own id dropped from its list."""
    return _csr(
        [o for o in ids[offsets[i]:offsets[i + 1]] if o != w] for i, w in enumerate(watchers)
    )


def diff_csr_reference(
    old_watchers: array[int],
    old_offsets: array[int],
    old_ids: array[int],
    watchers: array[int],
    offsets: array[int],
    ids: array[int],
) -> tuple[array[int], array[int]]:
    """``(entered, exited)``: the ``(watcher, other)`` pairs of the new CSR not in the old,
    and of the old not in the new, flat and ascending."""
    old = _pairs(old_watchers, old_offsets, old_ids)
    new = _pairs(watchers, offsets, ids)
    return _flat(sorted(new - old)), _flat(sorted(old - new))


def _pairs(watchers: array[int], offsets: array[int], ids: array[int]) -> set[tuple[int, int]]:
    return {
        (w, o) for i, w in enumerate(watchers) for o in ids[offsets[i]:offsets[i + 1]]
    }


def _flat(pairs: Iterable[tuple[int, int]]) -> array[int]:
    out: array[int] = array("q")
    for a, b in pairs:
        out.append(a)
        out.append(b)
    return out


def translate_reference(table: array[int], values: array[int]) -> array[int]:
    """``table[v]`` for each ``v`` of ``values``, -1 where ``v`` is not an index of it."""
    size = len(table)
    return array("q", [table[v] if 0 <= v < size else -1 for v in values])


def gather_reference(
    get: Any,
    entities: Iterable[int],
    slot_of: dict[int, int],
    boxes: array[float],
    radius: float,
    period: Period | None,
) -> tuple[array[int], array[float], list[int], bool]:
    """For each entity of ``entities`` with a box (``get(entity)``) and a slot
    (``slot_of[entity]``): its box written into ``boxes`` at its slot (four floats a slot),
    and its slot and its box grown for the tree (:func:`grown`) appended to the answer.
    ``(slots, grown boxes, odd, fits)``: ``odd`` the entities without a box or a slot, in
    order; ``fits`` False as soon as a grown box is too wide for the period (the answer
    cut short there)."""
    slots: array[int] = array("q")
    out: array[float] = array("d")
    odd: list[int] = []
    for entity in entities:
        box = get(entity)
        slot = None if box is None else slot_of.get(entity)
        if slot is None:
            odd.append(entity)
            continue
        big = grown(box, radius, period)
        if big is None:
            return slots, out, odd, False
        boxes[4 * slot:4 * slot + 4] = array("d", box)
        slots.append(slot)
        out.extend(big)
    return slots, out, odd, True


def gather_moves_reference(
    ids: Any,
    boxes: Any,
    n: int,
    slot_at: array[int],
    kept: array[float],
    radius: float,
    period: Period | None,
    slots: array[int] | None,
    grown_boxes: array[float] | None,
    at: int,
) -> tuple[int, list[int], bool]:
    """:func:`gather_reference` for ``n`` moves in two buffers, the index's ``move_many``
    layout (``ids`` int64, ``boxes`` four float64 a move, as
    :meth:`~ecs_spatial.SpatialProcessor.moved_buffers` hands them out): each box as the
    index keeps it (``_wrap.canonical`` on a torus) instead of ``get(entity)``, each slot
    ``slot_at[entity]`` (-1 for none) instead of a dict. An entity outside ``slot_at``,
    without a slot, or whose box has no canonical image, is odd. The box goes into ``kept``
    at its slot, the slot and the grown box into ``slots`` and ``grown_boxes`` from place
    ``at`` on (room for ``n`` more there): kept from frame to frame by the caller, so that
    no frame faults in fresh pages for them. ``slots`` and ``grown_boxes`` both None: no box
    grown (the grid needs no tree), the boxes kept only, ``fits`` True. ``(k, odd, fits)``:
    ``k`` kept."""
    if n < 0 or 8 * n > len(memoryview(ids).cast("B")) or 32 * n > len(
        memoryview(boxes).cast("B")
    ):
        raise ValueError(f"gather_moves(): {n} moves, the buffers hold fewer")
    if (slots is None) != (grown_boxes is None):
        raise ValueError("gather_moves(): slots and grown must be both None or both buffers")
    if slots is not None and grown_boxes is not None and (
        at < 0 or at + n > len(slots) or 4 * (at + n) > len(grown_boxes)
    ):
        raise ValueError(f"gather_moves(): no room for {n} moves from {at} in slots and grown")
    entities: array[int] = array("q")
    entities.frombytes(bytes(memoryview(ids).cast("B")[:8 * n]))
    values: array[float] = array("d")
    values.frombytes(bytes(memoryview(boxes).cast("B")[:32 * n]))
    odd: list[int] = []
    size = len(slot_at)
    k = 0
    for i, entity in enumerate(entities):
        slot = slot_at[entity] if 0 <= entity < size else -1
        x0, y0, x1, y1 = values[4 * i:4 * i + 4]
        box: tuple[float, float, float, float] = (x0, y0, x1, y1)
        if slot >= 0 and period is not None:
            try:
                box = canonical(x0, y0, x1, y1, entity, period)
            except ValueError:
                slot = -1
        if slot < 0:
            odd.append(entity)
            continue
        if 4 * slot + 4 > len(kept):
            raise ValueError(f"gather_moves(): slot {slot} is past the boxes")
        if slots is None or grown_boxes is None:
            kept[4 * slot:4 * slot + 4] = array("d", box)
            k += 1
            continue
        big = grown(box, radius, period)
        if big is None:
            return k, odd, False
        kept[4 * slot:4 * slot + 4] = array("d", box)
        slots[at + k] = slot
        grown_boxes[4 * (at + k):4 * (at + k) + 4] = array("d", big)
        k += 1
    return k, odd, True


#: Each kernel: the compiled one with the compiled core, else its reference.
near_csr: Callable[..., tuple[array[int], array[int]]] = near_csr_reference
grid_csr: Callable[..., tuple[array[int], array[int]] | None] = grid_csr_reference
without_self: Callable[..., tuple[array[int], array[int]]] = without_self_reference
diff_csr: Callable[..., tuple[array[int], array[int]]] = diff_csr_reference
translate: Callable[..., array[int]] = translate_reference
gather: Callable[..., tuple[array[int], array[float], list[int], bool]] = gather_reference
gather_moves: Callable[..., tuple[int, list[int], bool]] = gather_moves_reference
if NATIVE:
    try:
        from . import _cneighbours
    except ImportError:  # pragma: no cover (a core built before this module existed)
        pass
    else:
        near_csr = _cneighbours.near_csr
        grid_csr = _cneighbours.grid_csr
        without_self = _cneighbours.without_self
        diff_csr = _cneighbours.diff_csr
        translate = _cneighbours.translate
        gather = _cneighbours.gather
        gather_moves = _cneighbours.gather_moves

_EMPTY: array[int] = array("q")


def _empty() -> Neighbours:
    return Neighbours(array("q"), array("q", [0]), array("q"), array("q"), array("q"))


# -- the processor -------------------------------------------------------------------------


class NeighbourArrays(esper.Processor):
    """Every watcher's neighbours within a radius, and the pairs that entered and exited
    since the last ``process()``, as arrays (see the module docstring for the rule)::

        spatial = SpatialProcessor(wrap=Box(0, 0, side, side))
        nb = NeighbourArrays(spatial, radius=10.0)      # every member watches
        esper.add_processor(spatial, priority=10)
        esper.add_processor(nb, priority=5)             # after the SpatialProcessor

    ``spatial`` is the SpatialProcessor whose index holds the entities (add this processor
    after it). ``radius``: one number for every watcher, or a mapping ``entity -> radius``
    (its keys are then the watchers). ``watchers``: None (every member of the index
    watches) or the entity ids that watch (with one radius). Both are attributes, read at
    each ``process()`` and checked there (``TypeError``/``ValueError`` naming the watcher
    and the value before anything changes): a radius is a finite number ``>= 0``, on a
    torus at most half the smaller period.

    After ``process()``: :attr:`watchers`, :attr:`offsets`, :attr:`ids`, :attr:`entered`,
    :attr:`exited` (``array('q')`` each; :attr:`answer` holds all five), and
    :meth:`in_rows` for array entities. They are new arrays each frame: a numpy view of the
    last frame's stays valid.

    Cost a frame: every member watching with one radius, O(m) for the m members that
    moved (their boxes kept) plus O(n + candidates) for a grid of the n members' centres
    and one exact test per candidate each way, in C (where the grid refuses the boxes, a
    tree of grown boxes: O(m log n) and a pair search); otherwise ``query_radius_many`` for
    every watcher (O(w (log n + k))). Plus O(p) for the p pairs' CSR and diff, in C.
    Several NeighbourArrays may serve one world (one radius each, say).
    """

    #: Use the grown-box tree when every member watches with one radius (tests switch it
    #: off to hold the two ways to one answer).
    fast_path = True
    #: On the fast path, answer from a grid of the members' centres made each frame where
    #: :func:`grid_csr_reference` takes the boxes, else from the grown-box tree (tests
    #: switch it off to hold the two to one answer).
    grid = True

    def __init__(
        self,
        spatial: SpatialSource,
        radius: float | Mapping[int, float],
        watchers: Iterable[int] | None = None,
    ) -> None:
        self.spatial = spatial
        self.radius = radius
        self.watchers_chosen: Iterable[int] | None = watchers
        self._answer = _empty()
        self._binding = WorldBinding()
        self._seen_frame: int | None = None
        self._owed: array[int] = array("q")  # exits of a replaced database, not yet reported
        self._forget_tree()

    # -- the answer ----------------------------------------------------------------------------

    @property
    def answer(self) -> Neighbours:
        """The last ``process()``'s five arrays (entity ids)."""
        return self._answer

    @property
    def watchers(self) -> array[int]:
        """The watchers in the index, ascending entity ids."""
        return self._answer.watchers

    @property
    def offsets(self) -> array[int]:
        """CSR offsets, ``len(watchers) + 1`` of them from 0."""
        return self._answer.offsets

    @property
    def ids(self) -> array[int]:
        """Every watcher's neighbours, in the watchers' order, each list ascending."""
        return self._answer.ids

    @property
    def entered(self) -> array[int]:
        """The ``(watcher, other)`` pairs new since the last ``process()``, flat, ascending."""
        return self._answer.entered

    @property
    def exited(self) -> array[int]:
        """The ``(watcher, other)`` pairs gone since the last ``process()``, flat, ascending."""
        return self._answer.exited

    def in_rows(self, flock: BoxArray) -> Neighbours:
        """The last answer in the rows of ``flock`` instead of entity ids: each id replaced
        by the row of ``flock`` that places its entity now (its ``ArrayRow`` in the current
        esper world), -1 for an entity no row of ``flock`` places now; ``offsets`` as they
        are. A numpy user indexes the flock's arrays with them: ``vel[np.frombuffer(rows.ids,
        dtype=np.int64)]``.

        The rows are those of the call, not of the last ``process()``: an agent that
        :meth:`BoxArray.swap_remove` moved since is given its new row (where its columns
        now are), and one that lost its row since, deleted, its ``ArrayRow`` removed or
        dropped by ``swap_remove``, is -1, so that a row of the answer never names
        another agent (the one swap_remove moved into it). The pairs a dead agent exits
        read ``(row, -1)`` and ``(-1, row)``: mask the -1s, as for the members placed by
        components.

        Complexity: O(w + k + e) in C for the watchers, ids and events; the entity -> row
        table is the flock's own, kept by :meth:`BoxArray.swap_remove`'s look-up: where a
        component was added or removed anywhere since, a check in C of every ArrayRow
        holder, and O(1) in Python for each ArrayRow that came, went or was replaced."""
        table = entity_rows(flock)
        a = self._answer
        return Neighbours(
            translate(table, a.watchers),
            a.offsets,
            translate(table, a.ids),
            translate(table, a.entered),
            translate(table, a.exited),
        )

    # -- the frame -----------------------------------------------------------------------------

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Work out this frame's neighbours and the difference with the last frame's.
        Extra arguments (esper passes on those of ``esper.process``) are ignored."""
        if self._binding.away(self):
            return
        if self._binding.check(self):
            self._forget_world()
        spatial = self.spatial
        if not source_current(spatial):
            # The source still describes the replaced world: report the owed exits only.
            if self._owed:
                self._answer = _empty()._replace(exited=self._owed)
                self._owed = array("q")
            return
        index = spatial.index
        period = None if index.wrap is None else period_of(index.wrap)
        one, per = self._radii(period)
        feed = changes_since(spatial, self._seen_frame)
        found = None
        if self.fast_path and per is None and self.watchers_chosen is None:
            found = self._all_members(one, period, feed)
        if found is None:
            self._forget_tree()
            found = self._queried(one, per)
        watchers, offsets, ids = found
        self._seen_frame = spatial.frame
        old = self._answer
        entered, exited = diff_csr(old.watchers, old.offsets, old.ids, watchers, offsets, ids)
        if self._owed:
            exited = self._owed  # the answer before was emptied: nothing else left
            self._owed = array("q")
        self._answer = Neighbours(watchers, offsets, ids, entered, exited)

    def _forget_world(self) -> None:
        """The world's database was replaced (ids are reused): every pair reported exits at
        the next answer, and the tree starts afresh."""
        old = self._answer
        self._owed = diff_csr(
            old.watchers, old.offsets, old.ids, _EMPTY, array("q", [0]), _EMPTY
        )[1]
        self._answer = _empty()
        self._seen_frame = None
        self._forget_tree()

    def _radii(self, period: Period | None) -> tuple[float, dict[int, float] | None]:
        """The one radius, or the checked radius of each watcher (the one radius then 0)."""
        half = _MAX if period is None else min(period[2], period[3]) * 0.5
        radius = self.radius
        if isinstance(radius, Mapping):
            if self.watchers_chosen is not None:
                raise TypeError(
                    "NeighbourArrays: give the watchers either as the radius mapping's keys "
                    "or as watchers=, not both"
                )
            per = {}
            for entity in sorted(radius):
                per[entity] = _checked(radius[entity], f"watcher entity {entity}:", half)
            return 0.0, per
        return _checked(radius, "NeighbourArrays", half), None

    def _queried(
        self, one: float, per: dict[int, float] | None
    ) -> tuple[array[int], array[int], array[int]]:
        """The answer from ``query_radius_many`` at the watchers' centres."""
        index = self.spatial.index
        chosen: Iterable[int]
        if per is not None:
            chosen = per
        elif self.watchers_chosen is None:
            chosen = index
        else:
            chosen = self.watchers_chosen
        get = index.get
        found = [(e, b) for e in set(chosen) if (b := get(e)) is not None]
        found.sort()
        watchers = array("q", [e for e, _ in found])
        centres = array("d")
        for _, box in found:
            centres.extend(box.center)
        radii: float | array[float] = one
        if per is not None:
            radii = array("d", [per[e] for e in watchers])
        if not watchers:
            return watchers, array("q", [0]), array("q")
        offsets, ids = index.query_radius_many(centres, radii)
        offsets, ids = without_self(watchers, offsets, ids)
        return watchers, offsets, ids

    # -- the grown-box tree (every member a watcher, one radius) ---------------------------

    def _forget_tree(self) -> None:
        self._tree: QuadTree | None = None
        self._tree_key: tuple[float, Period | None] | None = None
        self._slot: dict[int, int] = {}
        self._slot_at: array[int] = array("q")  # entity -> slot, -1 for none
        self._move_slots: array[int] = array("q")  # gather_moves' output, kept
        self._move_grown: array[float] = array("d")
        self._entity: array[int] = array("q")
        self._boxes: array[float] = array("d")
        self._rank: array[int] = array("q")
        self._free: list[int] = []
        self._members: array[int] = array("q")

    def _all_members(
        self, radius: float, period: Period | None, feed: bool | None
    ) -> tuple[array[int], array[int], array[int]] | None:
        """The answer from the grown-box tree, or None where a grown box is too wide for
        the torus (the caller queries instead, and the tree is made afresh next frame)."""
        key = (radius, period)
        if self._tree_key != key or feed is None:
            fits = self._build_tree(radius, period)
        else:
            fits = not feed or self._update_tree(radius, period)
        if not fits:
            return None
        if self.grid:
            found = grid_csr(
                self._boxes, self._rank, self._entity, len(self._members), radius, period
            )
            if found is not None:
                self._tree = None  # no longer moved; made again if the grid is refused
                return self._members, found[0], found[1]
        if self._tree is None and not self._build_tree(radius, period):
            return None
        tree = self._tree
        assert tree is not None
        candidates = tree.find_all_intersections_array()
        offsets, ids = near_csr(
            candidates, self._boxes, self._rank, self._entity, len(self._members), radius,
            period,
        )
        return self._members, offsets, ids

    def _build_tree(self, radius: float, period: Period | None) -> bool:
        """Make the tree from every member; False if a grown box is too wide for it."""
        index = self.spatial.index
        self._forget_tree()
        members = sorted(index)
        n = len(members)
        self._slot = slot_of = {e: s for s, e in enumerate(members)}
        self._boxes = array("d", bytes(32 * n))
        slots, big, _, fits = gather(index.get, members, slot_of, self._boxes, radius, period)
        if not fits:
            self._forget_tree()
            return False
        self._members = array("q", members)
        self._entity = array("q", members)
        limit = _table_limit(n)
        covered = [e for e in members if 0 <= e < limit]
        self._slot_at = table = array("q", [-1]) * (max(covered, default=-1) + 1)
        for e in covered:
            table[e] = slot_of[e]
        self._rank = array("q", range(n))
        wrap = index.wrap
        tree = QuadTree(wrap=wrap) if wrap is not None else QuadTree()
        if n:
            tree.insert_many(slots, big)
        self._tree = tree
        self._tree_key = (radius, period)
        return True

    def _update_tree(self, radius: float, period: Period | None) -> bool:
        """Apply the SpatialProcessor's frame: its removed leave, its moved move (or join).
        False, the tree forgotten, if a grown box is too wide for it."""
        spatial = self.spatial
        index = spatial.index
        tree = self._tree  # None while the grid answers: the slots' boxes only are kept
        slot_of = self._slot
        slot_at = self._slot_at
        entity_of = self._entity
        boxes = self._boxes
        joined_or_left = False
        for entity in spatial.removed:
            s = slot_of.pop(entity, None)
            if s is not None:
                self._unslot(entity, s)
                joined_or_left = True
        get = index.get
        buffers = getattr(spatial, "moved_buffers", None)
        odd: list[int]
        if buffers is not None:  # the frame's move buffers: no box looked up, no set made
            held, odd = buffers()
            out_slots: array[int] | None = None
            out_grown: array[float] | None = None
            if tree is not None:  # the grid (no tree) reads the kept boxes only
                total = sum(n for _, _, n in held)
                out_slots, out_grown = self._move_slots, self._move_grown
                if len(out_slots) < total:  # kept from frame to frame: no pages faulted in
                    out_slots.extend(array("q", bytes(8 * (total - len(out_slots)))))
                    out_grown.extend(array("d", bytes(32 * total - 8 * len(out_grown))))
            k = 0
            for ids, moves, n in held:
                wrote, more, fits = gather_moves(
                    ids, moves, n, slot_at, boxes, radius, period, out_slots, out_grown, k
                )
                if not fits:
                    self._forget_tree()
                    return False
                k += wrote
                odd.extend(more)
            if k and tree is not None and out_slots is not None and out_grown is not None:
                with (
                    memoryview(out_slots) as all_slots, memoryview(out_grown) as all_grown,
                    all_slots[:k] as slots_view, all_grown[:4 * k] as grown_view,
                ):
                    tree.move_many(
                        slots_view, cast("memoryview[float]", grown_view), atomic=False
                    )
        else:
            slots, big, odd, fits = gather(get, spatial.moved, slot_of, boxes, radius, period)
            if not fits:
                self._forget_tree()
                return False
            if slots and tree is not None:
                tree.move_many(slots, big, atomic=False)
        # Newcomers; members whose id the slot table does not cover or whose box has no
        # canonical image as read (moved here from the index's box); and, defensively, any
        # reported moved that is not indexed.
        for entity in odd:
            box = get(entity)
            s = slot_of.get(entity)
            if box is None:
                if s is not None:
                    del slot_of[entity]
                    self._unslot(entity, s)
                    joined_or_left = True
                continue
            one = grown(box, radius, period)
            if one is None:
                self._forget_tree()
                return False
            if s is not None:
                boxes[4 * s:4 * s + 4] = array("d", box)
                if tree is not None:
                    tree.move(s, one)
                continue
            if self._free:
                s = self._free.pop()
                entity_of[s] = entity
                boxes[4 * s:4 * s + 4] = array("d", box)
            else:
                s = len(entity_of)
                entity_of.append(entity)
                boxes.extend(box)
                self._rank.append(-1)
            slot_of[entity] = s
            self._slot_in_table(entity, s)
            joined_or_left = True
            if tree is not None:
                tree.insert(s, one)
        if joined_or_left:
            members = sorted(slot_of)
            self._members = array("q", members)
            rank = self._rank
            for s in range(len(rank)):
                rank[s] = -1
            for r, entity in enumerate(members):
                rank[slot_of[entity]] = r
        return True

    def _unslot(self, entity: int, s: int) -> None:
        """Take slot ``s`` (already out of ``_slot``) from ``entity``: out of the tree, the
        slot table and free for the next newcomer."""
        if self._tree is not None:
            self._tree.remove(s)
        self._entity[s] = -1
        if 0 <= entity < len(self._slot_at):
            self._slot_at[entity] = -1
        self._free.append(s)

    def _slot_in_table(self, entity: int, s: int) -> None:
        """Note ``entity``'s slot in the slot table, grown to cover it unless its id is far
        past the members' count (esper counts ids up from 1; an id past the table is looked
        up in the dict, on the slow path)."""
        table = self._slot_at
        if entity < 0:
            return
        if entity >= len(table):
            if entity >= _table_limit(len(self._entity)):
                return
            table.extend(array("q", [-1]) * (entity + 1 - len(table)))
        table[entity] = s

    def __repr__(self) -> str:
        return f"{type(self).__name__}(watchers={len(self._answer.watchers)})"


def _table_limit(slots: int) -> int:
    """The ids past which the slot table stops growing (8 bytes an id up to there)."""
    return 4 * slots + 65536


def _slack(period: Period | None, radius: float) -> float:
    return radius * 1e-12 + (0.0 if period is None else (period[2] + period[3]) * 1e-12)


def grown(
    box: Any, radius: float, period: Period | None
) -> tuple[float, float, float, float] | None:
    """The box grown by ``radius / 2`` and a margin on every side, clamped to the finite
    range: every box within ``radius`` of this box's centre meets it grown the same way,
    whatever the rounding (the margin is 1e-12 of the coordinates, the radius and the
    period, as ``geometry.reach`` widens). None on a torus where it would be wider or
    higher than a little under half the period (the tree would refuse it)."""
    x0, y0, x1, y1 = box
    slack = (abs(x0) + abs(y0) + abs(x1) + abs(y1)) * 1e-12 + _slack(period, radius) + 1e-300
    g = radius * 0.5 + slack
    grown = (max(x0 - g, -_MAX), max(y0 - g, -_MAX), min(x1 + g, _MAX), min(y1 + g, _MAX))
    if period is not None and not (
        (grown[2] - grown[0]) * _ROOM <= period[2] * 0.5
        and (grown[3] - grown[1]) * _ROOM <= period[3] * 0.5
    ):
        return None
    return grown


def _checked(value: object, where: str, half: float) -> float:
    """The radius as a float, or the error naming ``where`` and the value."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{where} radius must be a number, got {value!r}")
    if not 0 <= value <= _MAX:
        raise ValueError(f"{where} radius must be finite and >= 0, got {value!r}")
    if value > half:
        raise ValueError(
            f"{where} radius {value!r} is over half the smaller period ({half!r}) of the "
            "wrapped world: a neighbour could be within it through two of its images"
        )
    return float(value)
