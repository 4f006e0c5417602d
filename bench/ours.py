"""ecs_spatial's own contenders: the QuadTree on its own (built once, updated with ``move_many``),
and the same through esper with the SpatialProcessor.

They use only the public API, as a user would, on its fastest documented path, as every
peer is: a plain ``(min_x, min_y, max_x, max_y)`` tuple for every moved box (the index checks
it inline; building a ``Box`` first would add ~0.7 us per move), the frame's moves in one
``tree.move_many(ids, boxes, atomic=False)`` (boxes from a generator, valid by construction),
``find_all_intersections()``.
"""

from __future__ import annotations

import itertools

import esper

from bench.contender import BoxT, Contender, Pair
from bench.world import Step, World
from ecs_spatial import AABB, Box, Position, QuadTree, SpatialProcessor

__all__ = [
    "LARGE_LEAVES",
    "ProcessorContender",
    "QuadTreeBulkContender",
    "QuadTreeContender",
    "QuadTreeIncrementalContender",
    "tuned_name",
]

_worlds = itertools.count(1)

#: The leaf capacity (``threshold``) that measured fastest wherever most of the world moves,
#: slower only for the per-entity pair search (``python -m bench thresholds``; its figures are
#: in ``bench/results/intel-xeon-2026-11-24/thresholds.md``).
LARGE_LEAVES = 64


def tuned_name(name: str, threshold: int) -> str:
    """A contender's table name: its class's, plus its leaf capacity unless the default
    (``"X (esper)"`` becomes ``"X (esper, threshold=64)"``)."""
    if threshold == 16:
        return name
    if name.endswith(")"):
        return f"{name[:-1]}, threshold={threshold})"
    return f"{name} (threshold={threshold})"


class QuadTreeContender(Contender):
    """``ecs_spatial.QuadTree`` built once with the world's bounds; every frame ``remove``
    the deleted, ``move_many`` the moved, ``insert`` the created, then
    ``find_all_intersections``."""

    name = "ecs_spatial QuadTree"

    def __init__(self, *, threshold: int = 16, max_depth: int = 8) -> None:
        self.threshold = threshold
        self.max_depth = max_depth
        self.name = tuned_name(type(self).name, threshold)
        self.tree = QuadTree()

    def _empty_tree(self, world: World) -> QuadTree:
        """A tree with the world's bounds and this contender's leaf capacity and depth."""
        return QuadTree(
            Box(0.0, 0.0, world.side, world.side),
            threshold=self.threshold,
            max_depth=self.max_depth,
        )

    def build(self, world: World) -> None:
        self.tree = tree = self._empty_tree(world)
        insert = tree.insert
        for e, box in world.boxes().items():
            insert(e, box)

    def update(self, world: World, step: Step) -> None:
        tree = self.tree
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        remove = tree.remove
        for e in step.deleted:
            remove(e)
        moved = step.moved
        # The boxes are valid by construction: no undo log; a generator streams them. (As
        # fast as a loop of move() calls in wall-clock, with 29% fewer instructions.)
        tree.move_many(
            moved, ((xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in moved), atomic=False
        )
        if step.created:
            insert = tree.insert
            for e in step.created:
                x = xs[e]
                y = ys[e]
                insert(e, (x, y, x + ws[e], y + hs[e]))

    def pairs(self) -> list[Pair]:
        return self.tree.find_all_intersections()

    def query(self, box: BoxT) -> list[int]:
        return self.tree.query(Box(*box))

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        return self.tree.query_radius(x, y, r)


class QuadTreeBulkContender(QuadTreeContender):
    """The same, built with one ``insert_many`` call (a level loaded at once) instead of an
    ``insert`` per box; frames as ``QuadTreeContender``."""

    name = "ecs_spatial QuadTree (insert_many)"

    def build(self, world: World) -> None:
        self.tree = tree = self._empty_tree(world)
        boxes = world.boxes()
        tree.insert_many(boxes, boxes.values())


class QuadTreeIncrementalContender(QuadTreeContender):
    """The QuadTree with the per-entity pair search every frame: last frame's pairs that
    involve none of the changed entities, plus ``find_intersections_for(changed)``.

    It forces that search, as ``SpatialProcessor.pair_search = "incremental"`` does; it
    chooses nothing. Which search pays off when is the library's decision
    (``pair_search = "auto"``, measured by ``ProcessorContender``), so the bench keeps no
    policy or threshold of its own: the suite runs this contender only in the scenarios
    where part of the world moves (``bench/peers.py``).
    """

    name = "ecs_spatial QuadTree (incremental pairs)"

    def __init__(self, *, threshold: int = 16, max_depth: int = 8) -> None:
        super().__init__(threshold=threshold, max_depth=max_depth)
        self._pairs: list[Pair] = []
        self._changed: list[int] = []
        self._deleted: list[int] = []

    def build(self, world: World) -> None:
        super().build(world)
        self._pairs = self.tree.find_all_intersections()
        self._changed = []
        self._deleted = []

    def update(self, world: World, step: Step) -> None:
        super().update(world, step)
        self._changed = step.moved + step.created
        self._deleted = step.deleted

    def pairs(self) -> list[Pair]:
        stale = set(self._changed)
        stale.update(self._deleted)
        kept = [p for p in self._pairs if p[0] not in stale and p[1] not in stale]
        kept.extend(self.tree.find_intersections_for(self._changed))
        kept.sort()
        self._pairs = kept
        return kept


class ProcessorContender(Contender):
    """The same index through esper: entities with ``Position`` and ``AABB`` components in an
    esper world of their own, a ``SpatialProcessor`` added to it, moved with
    ``Position.move_to`` (the documented one-call way to set both coordinates; plain
    ``pos.x = ...; pos.y = ...`` costs about 0.24 us more per entity), deleted with
    ``esper.delete_entity`` and created with ``esper.create_entity``; one ``esper.process()``
    per frame; the pairs read from ``processor.pairs``. No event handler is set, so no event
    is dispatched: the figure is the index and the pair set, as for every other contender."""

    name = "ecs_spatial SpatialProcessor (esper)"
    note = "esper world, Position/AABB components, one esper.process() per frame"

    def __init__(self, *, threshold: int = 16) -> None:
        self.threshold = threshold
        self.name = tuned_name(type(self).name, threshold)
        self._world_name = f"bench-spatial-{next(_worlds)}"
        self._positions: dict[int, Position] = {}
        self._processor: SpatialProcessor | None = None

    def build(self, world: World) -> None:
        esper.switch_world(self._world_name)
        self._processor = SpatialProcessor(
            Box(0.0, 0.0, world.side, world.side), threshold=self.threshold
        )
        esper.add_processor(self._processor)
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        position = Position
        aabb = AABB
        positions = self._positions = {}
        create = esper.create_entity
        for e in world.alive:
            pos = position(xs[e], ys[e])
            ent = create(pos, aabb(ws[e], hs[e]))
            if ent != e:  # esper numbers entities from 1 in each world, as the world does
                raise RuntimeError(f"esper gave id {ent} to world entity {e}")
            positions[e] = pos
        esper.process()

    def update(self, world: World, step: Step) -> None:
        esper.switch_world(self._world_name)
        xs, ys = world.xs, world.ys
        positions = self._positions
        for e in step.deleted:
            esper.delete_entity(e)
            del positions[e]
        for e in step.moved:
            positions[e].move_to(xs[e], ys[e])
        if step.created:
            ws, hs = world.ws, world.hs
            position = Position
            aabb = AABB
            for e in step.created:
                pos = position(xs[e], ys[e])
                ent = esper.create_entity(pos, aabb(ws[e], hs[e]))
                if ent != e:
                    raise RuntimeError(f"esper gave id {ent} to world entity {e}")
                positions[e] = pos
        esper.process()

    def _built(self) -> SpatialProcessor:
        assert self._processor is not None, "build() first"
        return self._processor

    def pairs(self) -> list[Pair]:
        return sorted(self._built().pairs)

    def query(self, box: BoxT) -> list[int]:
        return self._built().query(Box(*box))

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        return self._built().query_radius(x, y, r)

    def close(self) -> None:
        if self._world_name in esper.list_worlds():
            esper.switch_world("default")
            esper.delete_world(self._world_name)
