"""ecs_spatial's own contenders: the QuadTree on its own (built once, updated with ``move``),
and the same through esper with the SpatialProcessor when that exists.

They use only the public API, as a user would: ``Box(...)`` for every moved box (its
validation is part of what a user pays), ``tree.move(e, box)``, ``find_all_intersections()``.
"""

from __future__ import annotations

from bench.common import BoxT, Contender, Pair
from bench.world import Step, World
from ecs_spatial import Box, QuadTree

__all__ = ["QuadTreeContender", "QuadTreeIncrementalContender"]


class QuadTreeContender(Contender):
    """``ecs_spatial.QuadTree`` built once with the world's bounds; every frame ``remove``
    the deleted, ``move`` the moved, ``insert`` the created, then ``find_all_intersections``."""

    name = "ecs_spatial QuadTree"

    def __init__(self, *, threshold: int = 16, max_depth: int = 8) -> None:
        self.threshold = threshold
        self.max_depth = max_depth
        self.tree = QuadTree()

    def build(self, world: World) -> None:
        self.tree = tree = QuadTree(
            Box(0.0, 0.0, world.side, world.side),
            threshold=self.threshold,
            max_depth=self.max_depth,
        )
        insert = tree.insert
        for e, (x0, y0, x1, y1) in world.boxes().items():
            insert(e, Box(x0, y0, x1, y1))

    def update(self, world: World, step: Step) -> None:
        tree = self.tree
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        remove = tree.remove
        move = tree.move
        for e in step.deleted:
            remove(e)
        for e in step.moved:
            x = xs[e]
            y = ys[e]
            move(e, Box(x, y, x + ws[e], y + hs[e]))
        if step.created:
            insert = tree.insert
            for e in step.created:
                x = xs[e]
                y = ys[e]
                insert(e, Box(x, y, x + ws[e], y + hs[e]))

    def pairs(self) -> list[Pair]:
        return self.tree.find_all_intersections()

    def query(self, box: BoxT) -> list[int]:
        return self.tree.query(Box(*box))

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        return self.tree.query_radius(x, y, r)


class QuadTreeIncrementalContender(QuadTreeContender):
    """The QuadTree with the pair search a game would choose by how much moved: when few
    entities changed, keep last frame's pairs that involve none of them and add
    ``find_intersections_for(changed)``; otherwise ``find_all_intersections()``.

    PERFORMANCE-NOTES puts the break-even around 15-20% moving (one per-entity query costs
    about as much as 1/6 of a full search per entity): below ``switch`` moved, go incremental.
    """

    name = "ecs_spatial QuadTree (incremental pairs)"

    def __init__(self, *, switch: float = 0.15, threshold: int = 16, max_depth: int = 8) -> None:
        super().__init__(threshold=threshold, max_depth=max_depth)
        self.switch = switch
        self._pairs: list[Pair] = []
        self._changed: list[int] | None = None
        self._deleted: list[int] = []

    def build(self, world: World) -> None:
        super().build(world)
        self._pairs = self.tree.find_all_intersections()
        self._changed = None

    def update(self, world: World, step: Step) -> None:
        super().update(world, step)
        changed = len(step.moved) + len(step.created)
        if changed > self.switch * len(self.tree):
            self._changed = None
        else:
            self._changed = step.moved + step.created
            self._deleted = step.deleted

    def pairs(self) -> list[Pair]:
        changed = self._changed
        if changed is None:
            self._pairs = self.tree.find_all_intersections()
            return self._pairs
        stale = set(changed)
        stale.update(self._deleted)
        kept = [p for p in self._pairs if p[0] not in stale and p[1] not in stale]
        kept.extend(self.tree.find_intersections_for(changed))
        kept.sort()
        self._pairs = kept
        return kept
