"""The quadtree's invariant checker: ``QuadTree.check()`` hands it the tree's node storage
and it asserts every invariant listed in ``quadtree``'s module docstring, naming the first
one broken (sortedcontainers' ``_check``). O(n); for tests, never on a per-frame path.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ._growth import can_grow_toward
from ._records import Rec
from ._snapshots import Quick, Snap, build_snapshot
from ._tree_storage import ITEMS
from .geometry import midpoint

if TYPE_CHECKING:
    from ._tree_storage import TreeBase as _Base
else:
    _Base = object

__all__ = ["check_tree"]

_INF = math.inf


def check_tree(
    *,
    homes: dict[int, list[Any]],
    root: int,
    geom: list[tuple[float, float, float, float, float, float]],
    fit: list[list[Any]],
    kids_of: list[tuple[int, int, int, int] | None],
    parent: list[int],
    level: list[int],
    count: list[int],
    items_of: list[dict[int, Rec]],
    free: list[int],
    snaps: list[Snap | Quick | None],
    threshold: int,
    max_depth: int,
) -> None:
    """Assert every structural invariant of the tree whose node storage these are: the
    entity map ``homes``, the ``root`` node id (-1 for none), the per-node lists, the free
    list and the configuration. ``AssertionError`` naming the first broken one."""
    if root < 0:
        assert not homes, "entities indexed but no root"
        return
    assert parent[root] == -1, "root has a parent"
    seen_nodes: set[int] = set()
    seen_entities: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        assert node not in seen_nodes, f"node {node} reached twice"
        assert node not in free, f"live node {node} is on the free list"
        seen_nodes.add(node)
        x0, y0, x1, y1, cx, cy = geom[node]
        home = fit[node]
        fx0, fy0, fx1, fy1, fcx, fcy, home_items, home_node, home_kids = home
        assert -_INF < x0 <= x1 < _INF and -_INF < y0 <= y1 < _INF, f"node {node} bounds"
        assert (cx, cy) == (midpoint(x0, x1), midpoint(y0, y1)), f"node {node} split point"
        assert (fcx, fcy) == (cx, cy), f"node {node} fit split point"
        items = items_of[node]
        kids = kids_of[node]
        assert home_node == node, f"node {node} home record names node {home_node}"
        assert home_items is items, f"node {node} home record holds other entries"
        assert home_kids == kids, f"node {node} home record holds other children"
        for entity, rec in items.items():
            assert entity not in seen_entities, f"entity {entity} held twice"
            seen_entities.add(entity)
            assert homes.get(entity) is home, f"map disagrees for entity {entity}"
            assert type(rec) is tuple and len(rec) == 5, f"entity {entity} record {rec!r}"
            bx0, by0, bx1, by1, rec_entity = rec
            assert rec_entity == entity, f"entity {entity} holds the record of {rec_entity}"
            assert type(entity) is int and type(rec_entity) is int, f"id {entity!r}"
            assert -(2**63) <= entity < 2**63, f"id {entity!r} past 64 bits"
            assert type(bx0) is type(by0) is type(bx1) is type(by1) is float, (
                f"entity {entity} holds a record of other than floats {rec!r}"
            )
            assert -_INF < bx0 <= bx1 < _INF and -_INF < by0 <= by1 < _INF, (
                f"entity {entity} holds an invalid box {rec!r}"
            )
            inside = fx0 < bx0 and bx1 < fx1 and fy0 < by0 and by1 < fy1
            if inside:
                assert x0 <= bx0 and bx1 <= x1 and y0 <= by0 and by1 <= y1, (
                    f"node {node} fit bounds exceed its bounds"
                )
            else:
                assert node == root and not can_grow_toward(geom[root], level[root], rec), (
                    f"entity {entity} box {rec[:4]} outside node {node} bounds"
                )
            if kids is not None and inside:
                assert not ((bx1 < cx or bx0 > cx) and (by1 < cy or by0 > cy)), (
                    f"entity {entity} at internal node {node} fits into a child"
                )
        subtree = len(items)
        if kids is not None:
            quadrants = (
                ((x0, y0, cx, cy), (fx0, fy0, cx, cy)),
                ((cx, y0, x1, cy), (cx, fy0, fx1, cy)),
                ((x0, cy, cx, y1), (fx0, cy, cx, fy1)),
                ((cx, cy, x1, y1), (cx, cy, fx1, fy1)),
            )
            for child, (quadrant, child_fit) in zip(kids, quadrants, strict=True):
                assert parent[child] == node, f"node {child} parent pointer"
                assert level[child] == level[node] + 1, f"node {child} level"
                assert geom[child][:4] == quadrant, f"node {child} bounds"
                assert tuple(fit[child][:4]) == child_fit, f"node {child} fit bounds"
                subtree += count[child]
                stack.append(child)
            assert count[node] > threshold, (
                f"internal node {node} holds only {count[node]} entries"
            )
            assert level[node] < max_depth, f"node {node} split below max_depth"
        else:
            assert len(items) <= threshold or level[node] >= max_depth, (
                f"leaf {node} holds {len(items)} entries above max_depth"
            )
        assert count[node] == subtree, f"node {node} count {count[node]}"
        cached = snaps[node]
        assert cached is None or cached == build_snapshot(items, cx), (
            f"node {node} snapshot is stale"
        )
    assert seen_entities == set(homes), "entity map lists entities not in the tree"
    assert count[root] == len(homes), "root count differs from len()"
    live = len(geom) - len(free)
    assert live == len(seen_nodes), f"{live - len(seen_nodes)} node(s) leaked"


class _Check(_Base):
    """``check()``: ``check_tree`` of the tree's own storage."""

    __slots__ = ()

    def check(self) -> None:
        """Assert every structural invariant listed in the module docstring.

        Raises ``AssertionError`` naming the first broken one. O(n); for tests.
        """
        check_tree(
            homes=self._home,
            root=self._root,
            geom=self._geom,
            fit=self._fit,
            kids_of=self._kids,
            parent=self._parent,
            level=self._level,
            count=self._count,
            items_of=self._items,
            free=self._free,
            snaps=self._snap,
            threshold=self._threshold,
            max_depth=self._max_depth,
        )
        period = self._wrap
        if period is not None:
            ox, oy, w, h, ex, ey = period
            assert 0.0 < w < _INF and 0.0 < h < _INF, f"wrap period {period}"
            for entity, home in self._home.items():
                x0, y0, x1, y1, _ = home[ITEMS][entity]
                assert ox <= x0 < ex and oy <= y0 < ey, f"entity {entity}: box not canonical"
                assert x1 - x0 <= w * 0.5 and y1 - y0 <= h * 0.5, (
                    f"entity {entity}: box wider than half the period"
                )
