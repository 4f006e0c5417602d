"""The quadtree's pair searches: every intersecting pair at once
(``find_all_intersections``, and flattened, ``find_all_intersections_array``), the pairs of
some entities (``find_intersections_for``), and the partners of one (``query_entity``). The
fit rule of ``quadtree``'s module docstring is what lets the all-pairs walk never look
across siblings.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import TYPE_CHECKING

from ._records import Rec as _Rec
from ._records import lookup_id as _lookup_id
from ._records import missing as _missing
from ._tree_storage import ITEMS, NODE
from ._tree_storage import NODE as _NODE

if TYPE_CHECKING:
    from ._tree_storage import TreeBase as _Base
else:
    _Base = object

_INF = math.inf
_int = int

_NO_REC: _Rec = (0.0, 0.0, 0.0, 0.0, 0)  # a placeholder that is never read
_min_x = itemgetter(0)  # a record's sort key in the all-pairs sweep
#: The record after a sweep's last, which starts right of every box: it ends every scan.
_END: _Rec = (_INF, _INF, _INF, _INF, 0)


class _Pairs(_Base):
    """The pair searches."""

    __slots__ = ()

    def query_entity(self, entity: int) -> list[int]:
        """Every other id whose box intersects the box of ``entity``, each once, in
        ascending order (as ``query``).

        Faster than ``query(tree[entity])``: it tests the entry against its ancestors' own
        entries on the way up and searches only its own node's subtree.
        """
        key = entity if type(entity) is _int else _lookup_id(entity)
        home = self._home.get(key)  # type: ignore[arg-type]
        if home is None:
            raise _missing(entity)
        entity = key  # type: ignore[assignment]
        if self._wrap is not None:
            out = self._wrapped_partners(entity)
            out.remove(entity)
            return out
        _, out = next(self._intersecting(((home[_NODE], entity),)))
        out.remove(entity)
        out.sort()
        return out

    def find_intersections_for(self, entities: Iterable[int]) -> list[tuple[int, int]]:
        """Every intersecting pair ``(a, b)``, ``a < b``, that involves at least one of
        ``entities``, each once, sorted. Ids not in the index are ignored, and so are values
        that are not ids (see ``in``).

        This is the incremental pair search: when k entities moved, their pairs cost
        O(k log n) instead of a search over the whole tree.
        """
        homes = self._home
        # Visit the entities node by node: those of one node and its siblings share
        # their ancestors, which the next one then finds in the CPU's cache
        # (docs/design.md#decisions).
        order: list[tuple[int, int]] = []
        put = order.append
        it = iter(entities)  # its __iter__ before the busy part, as in the compiled core
        # Busy while Python reads the ids (and lets go of their iterator, whose finaliser
        # may run): a change then would leave `order` naming stale nodes. And until the
        # pairs are found, as the compiled core: a discard deferred meanwhile waits for them.
        busy = self._busy
        self._busy = True
        try:
            for entity in it:
                if type(entity) is not _int:
                    entity = _lookup_id(entity)  # type: ignore[assignment]
                home = homes.get(entity)
                if home is not None:
                    put((home[_NODE], entity))
            del it
            order.sort()
            found: set[tuple[int, int]] = set()
            add = found.add
            partnered = (
                self._intersecting(order) if self._wrap is None
                else ((entity, self._wrapped_partners(entity)) for _, entity in order)
            )
            for entity, partners in partnered:
                for other in partners:
                    if other != entity:
                        add((entity, other) if entity < other else (other, entity))
        finally:
            self._busy = busy
            if not busy and self._pending:
                self._settle()
        return sorted(found)

    def find_all_intersections_array(self) -> array[int]:
        """:meth:`find_all_intersections` flattened into an ``array('q')``: ``a0, b0, a1,
        b1, ...``, the same pairs in the same order. The compiled core builds it with no
        Python object per pair (a numpy user takes it with ``numpy.frombuffer``)."""
        return array("q", [entity for pair in self.find_all_intersections() for entity in pair])

    def find_all_intersections(self) -> list[tuple[int, int]]:
        """Every pair ``(a, b)`` of ids whose boxes intersect, ``a < b``, each exactly once,
        as a sorted list. The same set of boxes gives the same list, whatever the order of
        insertion.

        One top-down walk carries the entries of the ancestors that overlap the current
        node; each node tests its own entries against each other and against those
        inherited ones, so an entry is tested only against nodes it actually overlaps.

        Complexity: O(n log n + pairs) for boxes of similar size spread over the world.
        """
        if self._wrap is None:
            return self._all_pairs()
        # On a torus: the plain pairs, and those of each box that reaches a seam (only such
        # a box meets another through an image: ``_wrapped_partners``), each pair once.
        found = set(self._all_pairs())
        _, _, _, _, ex, ey = self._wrap
        for entity, home in self._home.items():
            _, _, x1, y1, _ = home[ITEMS][entity]
            if x1 >= ex or y1 >= ey:
                for other in self._wrapped_partners(entity):
                    if other != entity:
                        found.add((entity, other) if entity < other else (other, entity))
        return sorted(found)

    def _wrapped_partners(self, entity: int) -> list[int]:
        """Every id whose box meets the box of ``entity`` on the torus (the entity itself
        included), in ascending order: ``query`` of its box on the wrapped tree."""
        x0, y0, x1, y1, _ = self._items[self._home[entity][NODE]][entity]
        return self._wrapped_query(x0, y0, x1, y1)

    def _all_pairs(self) -> list[tuple[int, int]]:
        """``find_all_intersections`` of a plain (unwrapped) tree."""
        pairs: list[tuple[int, int]] = []
        root = self._root
        if root < 0:
            return pairs
        append = pairs.append
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        # Each stack entry: a node and the records of its ancestors that overlap it, sorted.
        stack: list[tuple[int, list[_Rec]]] = [(root, [])]
        pop = stack.pop
        push = stack.append
        while stack:
            node, inherited = pop()
            # Sort and sweep: the node's own records and those inherited from its
            # ancestors in one list, by min_x; a record's scan stops at the first later
            # record that starts right of it, and is skipped outright when the very next
            # one does (the common case). The key is min_x alone: a float key compares in
            # C without first testing whole tuples for equality (docs/design.md#decisions); the
            # order of ties does not matter to the sweep.
            own = items[node]
            if inherited:
                sweep = list(own.values())
                sweep += inherited
                sweep.sort(key=_min_x)
            else:
                sweep = sorted(own.values(), key=_min_x)
            n = len(sweep)
            prev = sweep[0] if n else _NO_REC
            # A record that starts right of everything ends each record's scan, so the scan
            # is a bare while loop: no range object per record, no bounds test per read
            # (with the first candidate tested before the loop, which the peek has already
            # placed; docs/design.md#decisions).
            sweep.append(_END)
            for i in range(1, n):
                # Peek at the next record before unpacking this one: half the records have
                # no candidate at all.
                cur = sweep[i]
                if cur[0] > prev[2]:
                    prev = cur
                    continue
                _, ay0, ax1, ay1, a = prev
                _, by0, _, by1, b = prev = cur
                # The own check skips two inherited records: they met higher up already.
                if by0 <= ay1 and ay0 <= by1 and (not inherited or a in own or b in own):
                    append((a, b) if a < b else (b, a))
                j = i + 1
                while True:
                    bx0, by0, _, by1, b = sweep[j]
                    if bx0 > ax1:
                        break
                    if by0 <= ay1 and ay0 <= by1 and (not inherited or a in own or b in own):
                        append((a, b) if a < b else (b, a))
                    j += 1
            sweep.pop()  # the end marker: the records are dealt to the children below
            kids = kids_of[node]
            if kids is None:
                continue
            # Every record here overlaps this node, so it overlaps a child exactly when it
            # reaches that child's side of both split lines: two comparisons, not four. One
            # pass deals them out, rather than a comprehension per child.
            _, _, _, _, cx, cy = geom[node]
            low_left: list[_Rec] = []
            low_right: list[_Rec] = []
            high_left: list[_Rec] = []
            high_right: list[_Rec] = []
            for rec in sweep:
                if rec[0] <= cx:
                    if rec[1] <= cy:
                        low_left.append(rec)
                    if rec[3] >= cy:
                        high_left.append(rec)
                if rec[2] >= cx:
                    if rec[1] <= cy:
                        low_right.append(rec)
                    if rec[3] >= cy:
                        high_right.append(rec)
            q0, q1, q2, q3 = kids
            if count[q0]:
                push((q0, low_left))
            if count[q1]:
                push((q1, low_right))
            if count[q2]:
                push((q2, high_left))
            if count[q3]:
                push((q3, high_right))
        pairs.sort()
        return pairs

    def _intersecting(self, order: Iterable[tuple[int, int]]) -> Iterator[tuple[int, list[int]]]:
        """For each ``(node, entity)`` of ``order``: the entity and every id whose box
        intersects its box, the entity itself included (callers drop it: cheaper than a
        test per hit). Its ancestors' own entries first, then its node's subtree, pruned
        by bounds. One generator for a batch spares a call and its set-up per entity.

        Records are read by subscript, not unpacked: most fail the first or second test
        (the generator and this: docs/design.md#decisions)."""
        items = self._items
        parent = self._parent
        scan = self._snapshots.scan
        snaps = self._snap
        snapshot = self._snapshots.get
        kids_of = self._kids
        geom = self._geom
        count = self._count
        for node, entity in order:
            found: list[int] = []
            report = found.append
            x0, y0, x1, y1, _ = items[node][entity]
            n = parent[node]
            while n >= 0:
                # Most ancestors' straddlers lie far from a small box: their snapshot's
                # bounding boxes say so in a few comparisons, without a call.
                snap = snaps[n]
                if snap is None:
                    snap = snapshot(n)
                # The straddlers across the vertical line lie in a narrow x-range about
                # it, the others in a narrow y-range about the horizontal one: two
                # subscripts and a comparison or two rule out most ancestors.
                if (snap[0] <= x1 and x0 <= snap[1]) or (snap[2] <= y1 and y0 <= snap[3]):
                    if len(snap) > 4:  # a whole snapshot: bisect its windows
                        scan(n, x0, y0, x1, y1, report)
                    else:  # a small node (most ancestors far from the root): read it here
                        for rec in items[n].values():
                            if rec[0] <= x1 and x0 <= rec[2] and rec[1] <= y1 and y0 <= rec[3]:
                                report(rec[4])
                n = parent[n]
            if kids_of[node] is None:  # a leaf (most entities): no walk to set up
                for rec in items[node].values():
                    if rec[0] <= x1 and x0 <= rec[2] and rec[1] <= y1 and y0 <= rec[3]:
                        report(rec[4])
                yield entity, found
                continue
            stack = [node]
            while stack:
                n = stack.pop()
                kids = kids_of[n]
                if kids is None:
                    for rec in items[n].values():
                        if rec[0] <= x1 and x0 <= rec[2] and rec[1] <= y1 and y0 <= rec[3]:
                            report(rec[4])
                    continue
                scan(n, x0, y0, x1, y1, report)
                for child in kids:
                    if count[child]:
                        nx0, ny0, nx1, ny1, _, _ = geom[child]
                        if nx0 <= x1 and x0 <= nx1 and ny0 <= y1 and y0 <= ny1:
                            stack.append(child)
            yield entity, found
