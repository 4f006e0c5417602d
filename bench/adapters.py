"""The peers a user would otherwise pick: pyqtree, rtree, pymunk, shapely (the ``bench`` extra).

Each uses its library the way its documentation recommends for speed, so that the comparison
flatters the peers rather than us. rtree, pyqtree and shapely's envelope test treat boxes as
closed, as ecs_spatial does: their answers must be exact. pymunk decides contact by its own
narrow phase on polygons around each body's centre, and its point query counts a distance
strictly below the radius: it is inexact, its difference counted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pymunk
import pymunk.batch
import pyqtree
import shapely
from rtree import index as rtree_index

from bench.baselines import ordered, pair_list, positions
from bench.harness import BoxT, ByOldBox, IndexContender, Pair
from bench.world import Step, World

BATCH = pymunk.batch


def world_arrays(world: World) -> tuple[Any, Any, Any, Any, Any]:
    """The alive ids and their boxes' coordinates as numpy arrays (ids, x0, y0, x1, y1): the
    conversion every numpy-fed peer pays each frame, since the world keeps Python lists."""
    ids = np.fromiter(world.alive, dtype=np.int64, count=len(world.alive))
    xs, ys = np.array(world.xs)[ids], np.array(world.ys)[ids]
    return ids, xs, ys, xs + np.array(world.ws)[ids], ys + np.array(world.hs)[ids]


class _Peer(ByOldBox):
    """pyqtree or rtree: rebuilt when more than a quarter changed (unless ``incremental``)."""

    def __init__(self, incremental: bool = False) -> None:
        self.name += " (incremental)" if incremental else ""
        self.note += "" if incremental else ", rebuilt when >25% changed"
        self.rebuild_above = math.inf if incremental else 0.25
        self._index: Any = None
        self._arrays: Any = None


class PyqtreeContender(_Peer):
    """``pyqtree.Index`` (pure Python); pairs by one ``intersect`` per box."""

    name, note = "pyqtree", "remove+insert"

    def load(self, world: World) -> None:
        self._index = pyqtree.Index(bbox=(0.0, 0.0, world.side, world.side))
        self._remove, self._insert = self._index.remove, self._index.insert
        for e, box in self._boxes.items():
            self._index.insert(e, box)

    def pairs(self) -> list[Pair]:
        intersect = self._index.intersect
        out = [(a, b) for a, box in self._boxes.items() for b in intersect(box) if b > a]
        out.sort()
        return out

    def query(self, box: BoxT) -> list[int]:
        return list(self._index.intersect(box))


class RtreeContender(_Peer):
    """``rtree.index.Index`` (libspatialindex, C++), bulk-loaded from numpy arrays; pairs by
    one vectorised ``intersection_v``."""

    name, note = "rtree", "delete+insert, pairs by intersection_v"

    def load(self, world: World) -> None:
        ids, x0, y0, x1, y1 = world_arrays(world)
        if self._index is not None:
            self._index.close()
        # Node capacity 16 instead of libspatialindex's 100, which measured several times
        # faster for both updates and queries on the benchmark world.
        p = rtree_index.Property()
        p.leaf_capacity = p.index_capacity = 16
        p.near_minimum_overlap_factor = 8
        self._arrays = (ids, np.column_stack((x0, y0)), np.column_stack((x1, y1)))
        self._index = rtree_index.Index(self._arrays, properties=p)
        self._remove, self._insert = self._index.delete, self._index.insert

    def update(self, world: World, step: Step) -> None:
        self._arrays = None  # unless a bulk load makes them again
        self.world = world
        super().update(world, step)

    def pairs(self) -> list[Pair]:
        if self._arrays is None:
            ids, x0, y0, x1, y1 = world_arrays(self.world)
            self._arrays = (ids, np.column_stack((x0, y0)), np.column_stack((x1, y1)))
        ids, mins, maxs = self._arrays
        hits, counts = self._index.intersection_v(mins, maxs)
        a = np.repeat(ids, counts.astype(np.int64))
        keep = a < hits
        return pair_list(*ordered(a[keep], hits[keep]))

    def query(self, box: BoxT) -> list[int]:
        return list(self._index.intersection(box))

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


class PymunkContender(IndexContender):
    """A ``pymunk.Space`` of sensor boxes on kinematic bodies; ``space.step`` finds the pairs.
    ``mode="callbacks"``: bodies moved one by one, the pairs kept by ``begin`` / ``separate``
    handlers (how most users write it); ``"batch"``: every position set by
    ``pymunk.batch.set_space_bodies`` from the world's lists converted each frame, the pairs
    read by ``get_space_arbiters`` (its fastest path); ``"numpy"``: the same from the numpy
    positions a game would keep (copied untimed)."""

    exact = False

    def __init__(self, mode: str = "callbacks", name: str = "") -> None:
        if mode not in ("callbacks", "batch", "numpy"):
            raise ValueError(f"mode must be callbacks, batch or numpy, got {mode!r}")
        self.mode = mode
        self.name = name or f"pymunk ({mode})"
        self.note = "sensor polys on kinematic bodies; contact by pymunk's narrow phase, " + (
            "begin/separate handlers" if mode == "callbacks" else "pymunk.batch")
        self._buffer, self._positions = BATCH.Buffer(), BATCH.Buffer()

    # The handlers keep the current pair set, as a game's collision handlers would.
    def _begin(self, arbiter: pymunk.Arbiter, space: pymunk.Space, data: Any) -> None:
        a, b = (self._entity_of[s] for s in arbiter.shapes)
        self._current.add((a, b) if a < b else (b, a))

    def _separate(self, arbiter: pymunk.Arbiter, space: pymunk.Space, data: Any) -> None:
        a, b = (self._entity_of.get(s) for s in arbiter.shapes)
        if a is not None and b is not None:
            self._current.discard((a, b) if a < b else (b, a))

    def _add(self, world: World, e: int) -> None:
        w, h = world.ws[e], world.hs[e]
        body = pymunk.Body(body_type=pymunk.Body.KINEMATIC)
        body.position = (world.xs[e] + w * 0.5, world.ys[e] + h * 0.5)
        shape = pymunk.Poly.create_box(body, (w, h), radius=0.0)
        shape.sensor = True
        self._space.add(body, shape)
        self._bodies[e] = body
        self._entity_of[shape] = e

    def fill(self, world: World) -> None:
        # Queries need only the index current: reindex the moved shapes rather than step,
        # which would also run the collision search nobody reads.
        self._reindex_only = self.kind not in ("pairs", "update")
        self._space = pymunk.Space()
        # Drop an arbiter in the step where its shapes separate (the default keeps it for 3
        # steps), so that get_space_arbiters lists exactly the touching pairs.
        self._space.collision_persistence = 1
        if self.mode == "callbacks":
            self._space.on_collision(None, None, begin=self._begin, separate=self._separate)
        self._bodies: dict[int, pymunk.Body] = {}
        self._entity_of: dict[pymunk.Shape, int] = {}
        self._current: set[Pair] = set()
        for e in world.alive:
            self._add(world, e)
        if self.mode != "callbacks":
            self._refresh_order()
        if self.mode == "numpy":  # a world without churn: the bodies' rows stay
            self._ids = ids = world.ids()
            row_of = np.zeros(max(ids) + 1, dtype=np.int64)
            row_of[ids] = np.arange(len(ids))
            self._rows = rows = row_of[self._order]
            self._half = np.array([[world.ws[e] * 0.5, world.hs[e] * 0.5] for e in ids])[rows]
        if not self._reindex_only:
            self._space.step(1.0 / 60.0)

    def _refresh_order(self) -> None:
        """The entity of every body, in the order the space iterates them (body ids are
        addresses: mapped through a sorted array)."""
        body_ids = np.fromiter((b.id for b in self._bodies.values()), dtype=np.uint64)
        order = np.argsort(body_ids)
        self._body_keys = body_ids[order]
        self._body_ents = np.fromiter(self._bodies, dtype=np.int64)[order]
        self._buffer.clear()
        BATCH.get_space_bodies(self._space, BATCH.BodyFields.BODY_ID, self._buffer)
        self._order = self._entities(self._buffer)

    def _entities(self, buffer: Any) -> Any:
        body_ids = np.frombuffer(buffer.int_buf(), dtype=np.uintp).astype(np.uint64)
        return self._body_ents[np.searchsorted(self._body_keys, body_ids)]

    def before(self, world: World, step: Step) -> None:
        if self.mode == "numpy":
            self._pos = positions(world, self._ids)

    def update(self, world: World, step: Step) -> None:
        for e in step.deleted:
            body = self._bodies.pop(e)
            shape = next(iter(body.shapes))
            self._space.remove(shape, body)  # fires separate for its current contacts
            del self._entity_of[shape]
        for e in step.created:
            self._add(world, e)
        if self.mode == "callbacks":
            xs, ys, ws, hs, bodies = world.xs, world.ys, world.ws, world.hs, self._bodies
            for e in step.moved:
                bodies[e].position = (xs[e] + ws[e] * 0.5, ys[e] + hs[e] * 0.5)
        else:
            if self.mode == "numpy":
                centres = (self._pos[self._rows, :2] + self._half).ravel()
            else:
                if step.deleted or step.created:
                    self._refresh_order()
                order = self._order
                centres = np.empty(2 * len(order))
                centres[0::2] = np.array(world.xs)[order] + np.array(world.ws)[order] * 0.5
                centres[1::2] = np.array(world.ys)[order] + np.array(world.hs)[order] * 0.5
            self._positions.set_float_buf(centres)
            BATCH.set_space_bodies(self._space, BATCH.BodyFields.POSITION, self._positions)
        if self._reindex_only:
            for e in step.moved:
                self._space.reindex_shapes_for_body(self._bodies[e])
        else:
            self._space.step(1.0 / 60.0)

    def pairs(self) -> list[Pair]:
        if self.mode == "callbacks":
            return sorted(self._current)
        self._buffer.clear()
        fields = BATCH.ArbiterFields.BODY_A_ID | BATCH.ArbiterFields.BODY_B_ID
        BATCH.get_space_arbiters(self._space, fields, self._buffer)
        ents = self._entities(self._buffer)
        return pair_list(*ordered(ents[0::2], ents[1::2]))

    def query(self, box: BoxT) -> list[int]:
        hits = self._space.bb_query(pymunk.BB(*box), pymunk.ShapeFilter())
        return [self._entity_of[s] for s in hits]

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        hits = self._space.point_query((x, y), r, pymunk.ShapeFilter())
        return [self._entity_of[h.shape] for h in hits if h.shape is not None]


class ShapelyContender(IndexContender):
    """``shapely.STRtree`` (GEOS, C++) rebuilt every frame from numpy arrays; pairs by one
    vectorised ``query`` of every geometry."""

    name = "shapely STRtree"
    note = "rebuilt every frame; pairs by one vectorised query (envelope test, exact for boxes)"

    def fill(self, world: World) -> None:
        ids, x0, y0, x1, y1 = world_arrays(world)
        self._ids = ids
        self._geoms = shapely.box(x0, y0, x1, y1)
        self._tree = shapely.STRtree(self._geoms)

    def update(self, world: World, step: Step) -> None:
        self.fill(world)

    def pairs(self) -> list[Pair]:
        # No predicate: the envelope test is closed and a box is its own envelope, so this
        # is exact, and faster than predicate="intersects" (which agrees with it).
        i, j = self._tree.query(self._geoms)
        keep = i < j
        return pair_list(*ordered(self._ids[i[keep]], self._ids[j[keep]]))

    def query(self, box: BoxT) -> list[int]:
        return self._ids[self._tree.query(shapely.box(*box))].tolist()  # type: ignore[no-any-return]

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        hits = self._tree.query(shapely.Point(x, y), predicate="dwithin", distance=r)
        return self._ids[hits].tolist()  # type: ignore[no-any-return]

