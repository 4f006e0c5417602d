"""Adapters for the peers a user would otherwise pick: pyqtree, rtree, pymunk, shapely.

Each adapter is a :class:`bench.harness.IndexContender` and uses its library the way its
documentation recommends for speed, so that the comparison flatters the peers
rather than us:

- :class:`PyqtreeContender`: ``pyqtree.Index`` (pure Python). Kept current by
  ``remove(item, old_bbox)`` + ``insert`` when few boxes changed, rebuilt when many did
  (``mode="auto"`` takes the faster of the two by the fraction changed); pairs by one
  ``intersect`` per box.
- :class:`RtreeContender`: ``rtree.index.Index`` (libspatialindex, C++), node capacity 16.
  Kept current by ``delete`` + ``insert`` (incremental) when few boxes
  changed, bulk-loaded from numpy arrays when many did (``mode="auto"``); pairs by one
  vectorised ``intersection_v`` of every box at once (rtree >= 1.1), the fast path.
- :class:`PymunkContender`: a ``pymunk.Space`` of sensor box shapes on kinematic bodies,
  moved by setting ``body.position``; ``space.step`` finds the pairs. Two ways to read them:
  ``mode="callbacks"`` keeps the pair set with ``begin`` / ``separate`` handlers (how most
  users write it); ``mode="batch"`` sets every position with ``pymunk.batch.set_space_bodies``
  and reads the pairs with ``pymunk.batch.get_space_arbiters`` (its fastest path), the
  positions converted from the world's lists each frame, or (``mode="numpy"``) from the
  numpy positions a game would keep (copied from the world untimed).
- :class:`ShapelyContender`: ``shapely.STRtree`` (GEOS, C++) rebuilt every frame from numpy
  arrays; pairs by one vectorised ``query`` of every geometry at once.

Semantics. rtree, pyqtree and shapely's envelope test treat boxes as closed, like
ecs_spatial: their pairs must match exactly, and the harness checks that they do. pymunk
decides contact with its own narrow phase on polygons built around each body's centre, so
boxes that touch or overlap by a hair may be judged differently; its point query counts a
distance strictly below the radius. Its adapter is marked inexact, and the harness reports how
many pairs it missed or added per frame instead of failing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pymunk
import pymunk.batch
import pyqtree
import shapely
from rtree import index as rtree_index

from bench.baselines import positions
from bench.harness import BoxT, IndexContender, Pair, within
from bench.world import Step, World

__all__ = [
    "PymunkContender",
    "PyqtreeContender",
    "RtreeContender",
    "ShapelyContender",
    "world_arrays",
]

#: Above this fraction of the entities changed in a frame, rebuilding beats updating one by
#: one (for the adapters that can do either).
REBUILD_ABOVE = 0.25

IntArray = Any  # numpy arrays: the peers' own types are not annotated
FloatArray = Any


def world_arrays(world: World) -> tuple[IntArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """The alive ids and their box coordinates as numpy arrays (ids, x0, y0, x1, y1): the
    conversion every numpy-fed peer pays each frame, since the world keeps Python lists."""
    ids = np.fromiter(world.alive, dtype=np.int64, count=len(world.alive))
    xs = np.array(world.xs)[ids]
    ys = np.array(world.ys)[ids]
    x1 = xs + np.array(world.ws)[ids]
    y1 = ys + np.array(world.hs)[ids]
    return ids, xs, ys, x1, y1


def _sorted_pairs(a: IntArray, b: IntArray) -> list[Pair]:
    """Sorted list of ``(min, max)`` pairs from two id arrays (each pair once)."""
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    order = np.lexsort((hi, lo))
    return list(zip(lo[order].tolist(), hi[order].tolist(), strict=True))


def replay_step(
    world: World,
    step: Step,
    boxes: dict[int, BoxT],
    remove: Callable[[int, BoxT], object],
    insert: Callable[[int, BoxT], object],
) -> None:
    """Bring an index that removes by (id, old box) up to date with one frame: remove the
    deleted, remove and re-insert the moved, insert the created; ``boxes`` holds each id's
    box as last inserted (the old box such indexes need to find an entry)."""
    xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
    for e in step.deleted:
        remove(e, boxes.pop(e))
    for e in step.moved:
        remove(e, boxes[e])
        x = xs[e]
        y = ys[e]
        boxes[e] = box = (x, y, x + ws[e], y + hs[e])
        insert(e, box)
    for e in step.created:
        x = xs[e]
        y = ys[e]
        boxes[e] = box = (x, y, x + ws[e], y + hs[e])
        insert(e, box)


def _changed(step: Step) -> int:
    return len(step.moved) + len(step.created) + len(step.deleted)


# -- pyqtree ---------------------------------------------------------------------------------


class PyqtreeContender(IndexContender):
    """``pyqtree.Index``; see the module docstring."""

    def __init__(self, mode: str = "auto") -> None:
        if mode not in ("auto", "rebuild", "incremental"):
            raise ValueError(f"mode must be auto, rebuild or incremental, got {mode!r}")
        self.mode = mode
        self.name = "pyqtree" if mode == "auto" else f"pyqtree ({mode})"
        self.note = (
            "remove+insert when few changed, rebuilt when >25% changed" if mode == "auto" else ""
        )
        self._boxes: dict[int, BoxT] = {}
        self._index: Any = None

    def _rebuild(self, world: World) -> None:
        self._boxes = boxes = world.boxes()
        self._index = idx = pyqtree.Index(bbox=(0.0, 0.0, world.side, world.side))
        insert = idx.insert
        for e, box in boxes.items():
            insert(e, box)

    def fill(self, world: World) -> None:
        self._rebuild(world)

    def update(self, world: World, step: Step) -> None:
        if self.mode == "rebuild" or (
            self.mode == "auto" and _changed(step) > REBUILD_ABOVE * len(self._boxes)
        ):
            self._rebuild(world)
            return
        replay_step(world, step, self._boxes, self._index.remove, self._index.insert)

    def pairs(self) -> list[Pair]:
        intersect = self._index.intersect
        out: list[Pair] = []
        append = out.append
        for a, box in self._boxes.items():
            for b in intersect(box):
                if b > a:
                    append((a, b))
        out.sort()
        return out

    def query(self, box: BoxT) -> list[int]:
        return list(self._index.intersect(box))

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        boxes = self._boxes
        return [
            e
            for e in self._index.intersect((x - r, y - r, x + r, y + r))
            if within(boxes[e], x, y, r)
        ]


# -- rtree -----------------------------------------------------------------------------------


def _rtree_properties() -> Any:
    """Node capacity 16 instead of libspatialindex's 100, which measured several times
    faster for both updates and queries on the benchmark world: the peer gets its best
    settings."""
    p = rtree_index.Property()
    p.leaf_capacity = 16
    p.index_capacity = 16
    p.near_minimum_overlap_factor = 8
    return p


class RtreeContender(IndexContender):
    """``rtree.index.Index`` (libspatialindex); see the module docstring."""

    def __init__(self, mode: str = "auto") -> None:
        if mode not in ("auto", "rebuild", "incremental"):
            raise ValueError(f"mode must be auto, rebuild or incremental, got {mode!r}")
        self.mode = mode
        self.name = "rtree" if mode == "auto" else f"rtree ({mode})"
        self.note = {
            "incremental": "delete+insert per moved box; pairs by intersection_v",
            "rebuild": "bulk-loaded from numpy every frame; pairs by intersection_v",
            "auto": "delete+insert, or bulk reload when >25% changed",
        }[mode]
        self._boxes: dict[int, BoxT] = {}
        self._index: Any = None
        self._arrays: tuple[IntArray, FloatArray, FloatArray] | None = None
        self._world: World | None = None

    def _bulk(self, world: World) -> None:
        self._boxes = world.boxes()
        ids, x0, y0, x1, y1 = world_arrays(world)
        mins = np.column_stack((x0, y0))
        maxs = np.column_stack((x1, y1))
        if self._index is not None:
            self._index.close()
        self._index = rtree_index.Index((ids, mins, maxs), properties=_rtree_properties())
        self._arrays = (ids, mins, maxs)

    def fill(self, world: World) -> None:
        self._bulk(world)

    def update(self, world: World, step: Step) -> None:
        self._arrays = None
        if self.mode == "rebuild" or (
            self.mode == "auto" and _changed(step) > REBUILD_ABOVE * len(self._boxes)
        ):
            self._bulk(world)
            return
        replay_step(world, step, self._boxes, self._index.delete, self._index.insert)
        self._world = world

    def pairs(self) -> list[Pair]:
        if self._arrays is None:
            assert self._world is not None
            ids, x0, y0, x1, y1 = world_arrays(self._world)
            self._arrays = (ids, np.column_stack((x0, y0)), np.column_stack((x1, y1)))
        ids, mins, maxs = self._arrays
        hits, counts = self._index.intersection_v(mins, maxs)
        a = np.repeat(ids, counts.astype(np.int64))
        keep = a < hits
        return _sorted_pairs(a[keep], hits[keep])

    def query(self, box: BoxT) -> list[int]:
        return list(self._index.intersection(box))

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        boxes = self._boxes
        return [
            e
            for e in self._index.intersection((x - r, y - r, x + r, y + r))
            if within(boxes[e], x, y, r)
        ]

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


# -- pymunk ----------------------------------------------------------------------------------


class PymunkContender(IndexContender):
    """A ``pymunk.Space`` of sensor boxes on kinematic bodies; see the module docstring."""

    exact = False

    def __init__(self, mode: str = "callbacks", name: str = "") -> None:
        if mode not in ("callbacks", "batch", "numpy"):
            raise ValueError(f"mode must be callbacks, batch or numpy, got {mode!r}")
        self.mode = mode
        self.name = name or f"pymunk ({mode})"
        self.note = "sensor polys on kinematic bodies; contact by pymunk's narrow phase" + (
            ", begin/separate handlers" if mode == "callbacks" else ", pymunk.batch"
        )
        self._space = pymunk.Space()
        self._bodies: dict[int, pymunk.Body] = {}
        self._shapes: dict[int, pymunk.Poly] = {}
        self._entity_of: dict[pymunk.Shape, int] = {}
        self._current: set[Pair] = set()
        self._reindex_only = False
        # batch mode: entity id per body id, and the space's body order
        self._body_keys: IntArray = np.zeros(0, dtype=np.uint64)
        self._body_ents: IntArray = np.zeros(0, dtype=np.int64)
        self._order: IntArray | None = None
        self._buffer = pymunk.batch.Buffer()
        self._pos_buffer = pymunk.batch.Buffer()

    # Handlers keep the current pair set, as a game's collision handlers would.
    def _begin(self, arbiter: pymunk.Arbiter, space: pymunk.Space, data: Any) -> None:
        sa, sb = arbiter.shapes
        a = self._entity_of[sa]
        b = self._entity_of[sb]
        self._current.add((a, b) if a < b else (b, a))

    def _separate(self, arbiter: pymunk.Arbiter, space: pymunk.Space, data: Any) -> None:
        sa, sb = arbiter.shapes
        a = self._entity_of.get(sa)
        b = self._entity_of.get(sb)
        if a is not None and b is not None:
            self._current.discard((a, b) if a < b else (b, a))

    def _add(self, e: int, x: float, y: float, w: float, h: float) -> None:
        body = pymunk.Body(body_type=pymunk.Body.KINEMATIC)
        body.position = (x + w * 0.5, y + h * 0.5)
        shape = pymunk.Poly.create_box(body, (w, h), radius=0.0)
        shape.sensor = True
        self._space.add(body, shape)
        self._bodies[e] = body
        self._shapes[e] = shape
        self._entity_of[shape] = e

    def _remove(self, e: int) -> None:
        body = self._bodies.pop(e)
        shape = self._shapes.pop(e)
        self._space.remove(shape, body)  # fires separate for its current contacts
        del self._entity_of[shape]

    def fill(self, world: World) -> None:
        # Query scenarios only need the index current: reindex the moved shapes instead of a
        # full step, which would also run the collision search nobody reads.
        self._reindex_only = self.kind not in ("pairs", "update")
        self._space = space = pymunk.Space()
        # Drop an arbiter in the step where its shapes separate (the default keeps it cached
        # for 3 steps), so that get_space_arbiters lists exactly the touching pairs.
        space.collision_persistence = 1
        if self.mode == "callbacks":
            space.on_collision(None, None, begin=self._begin, separate=self._separate)
        self._bodies = {}
        self._shapes = {}
        self._entity_of = {}
        self._current = set()
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        for e in world.alive:
            self._add(e, xs[e], ys[e], ws[e], hs[e])
        if self.mode != "callbacks":
            self._refresh_order()
        if self.mode == "numpy":
            ids = world.ids()
            row_of = np.zeros(max(ids) + 1, dtype=np.int64)
            row_of[ids] = np.arange(len(ids))
            self._ids = ids
            self._rows = rows = row_of[self._order]  # the space's body order, as rows
            self._half = np.array([[world.ws[e] * 0.5, world.hs[e] * 0.5] for e in ids])[rows]
        if not self._reindex_only:
            space.step(1.0 / 60.0)

    def _refresh_order(self) -> None:
        """Batch mode: the entity of every body, in the order the space iterates them.
        Body ids are addresses, not small ints: map them through a sorted array."""
        body_ids = np.fromiter((b.id for b in self._bodies.values()), dtype=np.uint64)
        ents = np.fromiter(self._bodies, dtype=np.int64)
        order = np.argsort(body_ids)
        self._body_keys = body_ids[order]
        self._body_ents = ents[order]
        buf = self._buffer
        buf.clear()
        pymunk.batch.get_space_bodies(self._space, pymunk.batch.BodyFields.BODY_ID, buf)
        self._order = self._entities_of_bodies(np.frombuffer(buf.int_buf(), dtype=np.uintp))

    def _entities_of_bodies(self, body_ids: IntArray) -> IntArray:
        return self._body_ents[np.searchsorted(self._body_keys, body_ids.astype(np.uint64))]

    def before(self, world: World, step: Step) -> None:
        if self.mode == "numpy":
            self._pos = positions(world, self._ids)

    def update(self, world: World, step: Step) -> None:
        if self.mode == "numpy":  # a fixed world (no churn): the rows do not change
            centres = self._pos[self._rows, :2] + self._half
            self._pos_buffer.set_float_buf(centres.ravel())
            pymunk.batch.set_space_bodies(
                self._space, pymunk.batch.BodyFields.POSITION, self._pos_buffer
            )
            self._space.step(1.0 / 60.0)
            return
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        for e in step.deleted:
            self._remove(e)
        for e in step.created:
            self._add(e, xs[e], ys[e], ws[e], hs[e])
        if self.mode == "batch":
            if step.deleted or step.created:
                self._refresh_order()
            order = self._order
            assert order is not None
            pos = np.empty(2 * len(order))
            pos[0::2] = np.array(xs)[order] + np.array(ws)[order] * 0.5
            pos[1::2] = np.array(ys)[order] + np.array(hs)[order] * 0.5
            self._pos_buffer.set_float_buf(pos)
            pymunk.batch.set_space_bodies(
                self._space, pymunk.batch.BodyFields.POSITION, self._pos_buffer
            )
        else:
            bodies = self._bodies
            for e in step.moved:
                bodies[e].position = (xs[e] + ws[e] * 0.5, ys[e] + hs[e] * 0.5)
        if self._reindex_only:
            reindex = self._space.reindex_shapes_for_body
            bodies = self._bodies
            for e in step.moved:
                reindex(bodies[e])
        else:
            self._space.step(1.0 / 60.0)

    def pairs(self) -> list[Pair]:
        if self.mode == "callbacks":
            return sorted(self._current)
        buf = self._buffer
        buf.clear()
        fields = pymunk.batch.ArbiterFields.BODY_A_ID | pymunk.batch.ArbiterFields.BODY_B_ID
        pymunk.batch.get_space_arbiters(self._space, fields, buf)
        ents = self._entities_of_bodies(np.frombuffer(buf.int_buf(), dtype=np.uintp))
        return _sorted_pairs(ents[0::2], ents[1::2])

    def query(self, box: BoxT) -> list[int]:
        x0, y0, x1, y1 = box
        entity_of = self._entity_of
        hits = self._space.bb_query(pymunk.BB(x0, y0, x1, y1), pymunk.ShapeFilter())
        return [entity_of[s] for s in hits]

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        entity_of = self._entity_of
        hits = self._space.point_query((x, y), r, pymunk.ShapeFilter())
        return [entity_of[h.shape] for h in hits if h.shape is not None]


# -- shapely ---------------------------------------------------------------------------------


class ShapelyContender(IndexContender):
    """``shapely.STRtree`` rebuilt every frame; see the module docstring."""

    name = "shapely STRtree"
    note = "rebuilt every frame; pairs by one vectorised query (envelope test, exact for boxes)"

    def __init__(self) -> None:
        self._ids: IntArray = np.zeros(0, dtype=np.int64)
        self._geoms: Any = None
        self._tree: Any = None

    def _rebuild(self, world: World) -> None:
        ids, x0, y0, x1, y1 = world_arrays(world)
        self._ids = ids
        self._geoms = shapely.box(x0, y0, x1, y1)
        self._tree = shapely.STRtree(self._geoms)

    def fill(self, world: World) -> None:
        self._rebuild(world)

    def update(self, world: World, step: Step) -> None:
        self._rebuild(world)

    def pairs(self) -> list[Pair]:
        # No predicate: the tree's envelope test is closed and a box is its own envelope,
        # so this is exact and faster than predicate="intersects" (which agrees with it).
        i, j = self._tree.query(self._geoms)
        keep = i < j
        ids = self._ids
        return _sorted_pairs(ids[i[keep]], ids[j[keep]])

    def query(self, box: BoxT) -> list[int]:
        hits = self._tree.query(shapely.box(*box))
        return self._ids[hits].tolist()  # type: ignore[no-any-return]

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        hits = self._tree.query(shapely.Point(x, y), predicate="dwithin", distance=r)
        return self._ids[hits].tolist()  # type: ignore[no-any-return]
