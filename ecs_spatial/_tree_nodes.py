"""The quadtree's nodes: where an entry goes and how the tree keeps its shape. A record is
placed under the root (``_place``) and sinks to the smallest node that contains it
(``_sink``; a batch goes down together, ``_descend``); a moved entry climbs to the first
ancestor that holds its new box and sinks from there (``_relocate``); a leaf that overflows
splits (``_split``, ``_make_kids``), a subtree that falls to ``threshold`` entries merges
back (``_merge``); the root grows toward a box outside it and the tree is rebuilt around it
(``_grow_to``, ``_rebuild``). The rules are the module docstring's of ``quadtree`` (the fit
rule, invariants 2 to 6, *Bounds*).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ._growth import first_root as _first_root
from ._growth import grown as _grown
from ._records import Rec as _Rec
from ._tree_storage import ITEMS as _ITEMS
from ._tree_storage import KIDS as _KIDS
from ._tree_storage import Geom as _Geom
from ._tree_storage import Kids as _Kids
from .geometry import midpoint

if TYPE_CHECKING:
    from ._tree_storage import TreeBase as _Base
else:
    _Base = object

_INF = math.inf
_nextafter = math.nextafter


class _Nodes(_Base):
    """The nodes' upkeep: placement, split, merge, relocation and the root's growth."""

    __slots__ = ()

    def _clear_nodes(self) -> None:
        for lst in (
            self._geom, self._fit, self._kids, self._parent, self._level, self._count,
            self._items, self._snap,
        ):
            lst.clear()
        self._free.clear()

    def _new_root(self, bounds: tuple[float, float, float, float], level: int) -> int:
        """A root node: its fit bounds are its bounds, closed (one ulp outward)."""
        x0, y0, x1, y1 = bounds
        fit = (_nextafter(x0, -_INF), _nextafter(y0, -_INF), _nextafter(x1, _INF),
               _nextafter(y1, _INF))
        return self._new_node(bounds, fit, -1, level)

    def _new_node(
        self,
        bounds: tuple[float, float, float, float],
        fit: tuple[float, float, float, float],
        parent: int,
        level: int,
    ) -> int:
        x0, y0, x1, y1 = bounds
        cx = midpoint(x0, x1)  # (x0 + x1) * 0.5 would overflow past 9e307
        cy = midpoint(y0, y1)
        geom: _Geom = (x0, y0, x1, y1, cx, cy)
        items: dict[int, _Rec] = {}
        if self._free:
            node = self._free.pop()
            self._geom[node] = geom
            self._kids[node] = None
            self._parent[node] = parent
            self._level[node] = level
            self._count[node] = 0
            self._items[node] = items
            self._snap[node] = None
            self._fit[node] = [fit[0], fit[1], fit[2], fit[3], cx, cy, items, node, None]
        else:
            node = len(self._geom)
            self._geom.append(geom)
            self._kids.append(None)
            self._parent.append(parent)
            self._level.append(level)
            self._count.append(0)
            self._items.append(items)
            self._snap.append(None)
            self._fit.append([fit[0], fit[1], fit[2], fit[3], cx, cy, items, node, None])
        return node

    def _place(self, rec: _Rec) -> None:
        """Add a record under the root: sink it if the root contains it, else keep it in the
        root's own entries (a box beyond the farthest the root may grow)."""
        root = self._root
        self._count[root] += 1
        if self._contains(root, rec):
            self._sink(rec, root)
            return
        items = self._items[root]
        items[rec[4]] = rec
        self._snap[root] = None
        self._home[rec[4]] = self._fit[root]
        if (
            self._kids[root] is None
            and len(items) > self._threshold
            and self._level[root] < self._max_depth
        ):
            self._split(root)

    def _contains(self, node: int, rec: _Rec) -> bool:
        """Whether the box belongs in ``node`` or below: strictly inside its fit bounds."""
        home = self._fit[node]
        x0: float = home[0]
        y0: float = home[1]
        x1: float = home[2]
        y1: float = home[3]
        return x0 < rec[0] and rec[2] < x1 and y0 < rec[1] and rec[3] < y1

    def _sink(self, rec: _Rec, node: int) -> None:
        """Place a record at or below ``node`` (whose count already includes it), counting
        it in every node it passes, and split the leaf it lands in if that overflows."""
        x0, y0, x1, y1, entity = rec
        kids_of = self._kids
        geom = self._geom
        count = self._count
        kids = kids_of[node]
        while kids is not None:
            _, _, _, _, cx, cy = geom[node]
            if x1 < cx:
                q = 0
            elif x0 > cx:
                q = 1
            else:
                break
            if y0 > cy:
                q += 2
            elif y1 >= cy:
                break
            node = kids[q]
            count[node] += 1
            kids = kids_of[node]
        items = self._items[node]
        items[entity] = rec
        self._snap[node] = None
        self._home[entity] = self._fit[node]
        if kids is None and len(items) > self._threshold and self._level[node] < self._max_depth:
            self._split(node)

    def _relocate(self, node: int, rec: _Rec) -> None:
        """Move an entry out of ``node``: climb to the first ancestor that contains its new
        box (uncounting it on the way), sink from there, then merge the highest node the
        climb left at or under ``threshold``.

        The containment test is inlined and the climb kept in a loop of its own (a few
        hundred relocations a frame when everything moves).
        """
        x0, y0, x1, y1, entity = rec
        fit = self._fit
        parent = self._parent
        n = node
        while True:
            fx0, fy0, fx1, fy1, _, _, _, _, _ = fit[n]
            if fx0 < x0 and x1 < fx1 and fy0 < y0 and y1 < fy1:
                break
            if n == self._root:
                # Beyond the root: take it out and insert it afresh, which grows the root
                # (one rebuild per doubling) or keeps it at the root if it can grow no
                # further.
                self._remove(entity)
                self._insert(entity, rec[:4])
                return
            n = parent[n]
        del fit[node][_ITEMS][entity]
        self._snap[node] = None
        count = self._count
        kids_of = self._kids
        threshold = self._threshold
        highest_mergeable = -1
        m = node
        while m != n:  # the nodes climbed, which no longer hold the entry
            count[m] -= 1
            if count[m] <= threshold and kids_of[m] is not None:
                highest_mergeable = m
            m = parent[m]
        self._sink(rec, n)
        if highest_mergeable >= 0:
            self._merge(highest_mergeable)

    def _split(self, node: int) -> None:
        """Give an overflowing leaf four children and push down each entry that fits
        strictly into one; split again any child that still overflows (identical boxes
        stop at max_depth). The leaf's entries go down as one batch (``_descend``): dealt
        into lists level by level, each stored in a dict once, where it ends.
        """
        items = self._items[node]
        batch = list(items.values())
        items.clear()
        self._count[node] -= len(batch)
        self._descend(node, batch)

    def _make_kids(self, node: int) -> _Kids:
        """Give a leaf its four (empty) children: the leaf becomes an internal node."""
        x0, y0, x1, y1, cx, cy = self._geom[node]
        home = self._fit[node]
        fx0, fy0, fx1, fy1 = home[:4]
        level = self._level[node] + 1
        new_node = self._new_node
        # A child's fit bounds: its parent's on the outer edges, the split lines inside.
        kids: _Kids = (
            new_node((x0, y0, cx, cy), (fx0, fy0, cx, cy), node, level),
            new_node((cx, y0, x1, cy), (cx, fy0, fx1, cy), node, level),
            new_node((x0, cy, cx, y1), (fx0, cy, cx, fy1), node, level),
            new_node((cx, cy, x1, y1), (cx, cy, fx1, fy1), node, level),
        )
        self._kids[node] = kids
        home[_KIDS] = kids
        return kids

    def _descend(self, node: int, batch: list[_Rec]) -> None:
        """Place ``batch`` (records not yet counted anywhere, each of which ``node``
        contains) at or below ``node``: an internal node keeps the records that touch its
        split lines and deals out the others to its children; a leaf takes its batch, or,
        if the batch would overflow it (below ``max_depth``), becomes an internal node on
        the spot, its own entries joining the batch. Only the root may hold boxes beyond its
        bounds (past the farthest it may grow); they stay in it.
        """
        threshold = self._threshold
        max_depth = self._max_depth
        items_of = self._items
        fit_of = self._fit
        kids_of = self._kids
        level_of = self._level
        geom = self._geom
        count = self._count
        homes = self._home
        snap = self._snap
        root = self._root
        rx0, ry0, rx1, ry1 = fit_of[root][:4]
        stack: list[tuple[int, list[_Rec]]] = [(node, batch)]
        while stack:
            node, batch = stack.pop()
            count[node] += len(batch)
            snap[node] = None
            items = items_of[node]
            kids = kids_of[node]
            if kids is None:
                if len(items) + len(batch) <= threshold or level_of[node] >= max_depth:
                    here = {r[4]: r for r in batch}
                    items.update(here)
                    homes.update(dict.fromkeys(here, fit_of[node]))
                    continue
                # The batch overflows this leaf: it becomes internal, and its own entries
                # go down with the batch.
                kids = self._make_kids(node)
                batch.extend(items.values())
                items.clear()
            if node == root:
                # Only the root may hold a box beyond its bounds (one past the farthest it
                # may grow): such a box stays in its entries.
                beyond = {
                    r[4]: r for r in batch
                    if not (rx0 < r[0] and r[2] < rx1 and ry0 < r[1] and r[3] < ry1)
                }
                if beyond:
                    items.update(beyond)
                    homes.update(dict.fromkeys(beyond, fit_of[node]))
                    batch = [r for r in batch if r[4] not in beyond]
            _, _, _, _, cx, cy = geom[node]
            low_left: list[_Rec] = []
            low_right: list[_Rec] = []
            high_left: list[_Rec] = []
            high_right: list[_Rec] = []
            kept: dict[int, _Rec] = {}
            for rec in batch:
                # _sink's rule: into a child only strictly below (max < c) or above (min > c)
                # both split lines; a box that touches one stays here.
                if rec[2] < cx:
                    if rec[3] < cy:
                        low_left.append(rec)
                    elif rec[1] > cy:
                        high_left.append(rec)
                    else:
                        kept[rec[4]] = rec
                elif rec[0] > cx:
                    if rec[3] < cy:
                        low_right.append(rec)
                    elif rec[1] > cy:
                        high_right.append(rec)
                    else:
                        kept[rec[4]] = rec
                else:
                    kept[rec[4]] = rec
            if kept:
                items.update(kept)
                homes.update(dict.fromkeys(kept, fit_of[node]))
            quadrants = (low_left, low_right, high_left, high_right)
            for child, part in zip(kids, quadrants, strict=True):
                if part:
                    stack.append((child, part))

    def _merge(self, node: int) -> None:
        """Collapse the subtree under ``node`` into ``node`` itself, freeing its nodes."""
        items = self._items[node]
        homes = self._home
        home = self._fit[node]
        stack = list(self._kids[node] or ())
        self._kids[node] = None
        self._snap[node] = None
        home[_KIDS] = None
        while stack:
            n = stack.pop()
            for entity, rec in self._items[n].items():
                items[entity] = rec
                homes[entity] = home
            self._items[n] = {}
            kids = self._kids[n]
            if kids is not None:
                stack.extend(kids)
                self._kids[n] = None
            self._free.append(n)

    def _grow_to(self, box: tuple[float, ...]) -> None:
        """Make a root that contains ``box`` if one can: the first root, or the current root
        doubled toward ``box`` as often as needed (at most ``_growth.MAX_GROWTH`` doublings past
        the original bounds, each edge clamped to the finite range), the tree rebuilt once
        around it."""
        root = self._root
        if root < 0:
            # No bounds given and nothing indexed yet: a square around the first box.
            self._root = self._new_root(_first_root(box), 0)
            return
        bounds, level = _grown(self._geom[root], self._level[root], box)
        if level != self._level[root]:
            self._rebuild(bounds, level)

    def _rebuild(self, bounds: tuple[float, float, float, float], level: int) -> None:
        """Rebuild the tree, with every entry, under a new root with these bounds (which
        hold every entry the root can reach: the caller grew them)."""
        records = [home[_ITEMS][e] for e, home in self._home.items()]
        self._home.clear()
        self._clear_nodes()
        self._root = self._new_root(bounds, level)
        if records:
            self._descend(self._root, records)
