"""The deterministic benchmark world every measurement runs on.

N boxes in a square of side ``40 * sqrt(N)``, sides uniform in [4, 16], velocities uniform in
[-2, 2] per axis per frame, bouncing off the edges; all drawn from ``random.Random(seed)``, so
the same arguments give the same frames everywhere. ``variant``: ``uniform``; ``clustered``
(8 Gaussian clusters, ``sigma = side / 20``); ``mixed`` (1% static squares of side
``side / 10``: walls, terrain). ``moving``: the fraction of the non-static boxes that move, a
fixed subset (the case an incremental index exists for). ``churn``: the fraction deleted each
frame and replaced by as many with fresh ids, each taking the role of the one it replaces.
``snap``: integers throughout, so that many boxes touch exactly (where a ``<`` in place of a
``<=`` loses pairs). A frame's questions draw from a stream of their own, so that asking
them leaves the motion as it is.

State lives in flat lists indexed by entity id (index 0 unused: ids start at 1, as esper's
do), so that the world's step is one cheap loop.
"""

from __future__ import annotations

import math
import random
from typing import NamedTuple

VARIANTS = ("uniform", "clustered", "mixed")

MIN_SIZE = 4.0
MAX_SIZE = 16.0
MAX_SPEED = 2.0
CLUSTERS = 8


class Step(NamedTuple):
    """What one frame changed. The three lists are disjoint, and a contender applies them in
    this order: remove ``deleted``, move ``moved``, insert ``created``. ``moved`` may be the
    same list object every frame: never mutate it."""

    moved: list[int]
    created: list[int]
    deleted: list[int]


class World:
    """The benchmark world: see the module docstring.

    >>> w = World(100, seed=3)
    >>> len(w.step().moved), w.side
    (100, 400.0)
    """

    def __init__(self, n: int, *, seed: int = 1, variant: str = "uniform", moving: float = 1.0,
                 churn: float = 0.0, snap: bool = False) -> None:
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        for name, fraction in (("moving", moving), ("churn", churn)):
            if not 0.0 <= fraction <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {fraction}")
        self.n, self.seed, self.variant = n, seed, variant
        self.side = 40.0 * math.sqrt(n)
        self.frame = 0
        self._rng = random.Random(seed)
        self._query_rng = random.Random(seed * 1_000_003 + 7)  # the questions' own stream

        rng = self._rng
        side = self.side
        self._centres = [(rng.uniform(0.0, side), rng.uniform(0.0, side)) for _ in range(CLUSTERS)]
        self.sigma = side / 20.0
        self.xs, self.ys, self.ws, self.hs, self.vxs, self.vys = ([0.0] for _ in range(6))
        #: Alive ids in creation order (a dict as an ordered set).
        self.alive: dict[int, None] = {}

        n_static = max(1, n // 100) if variant == "mixed" else 0
        static_ids = set(rng.sample(range(1, n + 1), n_static)) if n_static else set()
        huge = side / 10.0
        #: Non-static alive ids, with each one's index, for O(1) random deletion.
        self._movable: list[int] = []
        self._movable_at: dict[int, int] = {}
        for e in range(1, n + 1):
            if e in static_ids:
                x = rng.uniform(0.0, side - huge)
                y = rng.uniform(0.0, side - huge)
                self._append(e, x, y, huge, huge, 0.0, 0.0)
            else:
                self._add_movable(e)
        self._next_id = n + 1

        k = round(moving * len(self._movable))
        #: The moving subset, fixed, with each one's index.
        self.moving: list[int] = sorted(rng.sample(self._movable, k))
        self._moving_at: dict[int, int] = {e: i for i, e in enumerate(self.moving)}
        self._churn_k = round(churn * len(self._movable))
        self._was_moving: list[bool] = []
        if snap:
            for lst in (self.xs, self.ys, self.ws, self.hs, self.vxs, self.vys):
                lst[:] = [float(round(v)) for v in lst]
            for e in self.alive:  # inside the world, as the step expects
                self.xs[e] = min(self.xs[e], side - self.ws[e])
                self.ys[e] = min(self.ys[e], side - self.hs[e])

    # -- construction --------------------------------------------------------------------

    def _add_movable(self, e: int) -> None:
        """A new non-static box ``e``, its position, size and velocity drawn for the variant,
        among those churn may delete."""
        rng = self._rng
        side = self.side
        w = rng.uniform(MIN_SIZE, MAX_SIZE)
        h = rng.uniform(MIN_SIZE, MAX_SIZE)
        if self.variant == "clustered":
            cx, cy = self._centres[rng.randrange(CLUSTERS)]
            x = min(max(rng.gauss(cx, self.sigma) - w * 0.5, 0.0), side - w)
            y = min(max(rng.gauss(cy, self.sigma) - h * 0.5, 0.0), side - h)
        else:
            x = rng.uniform(0.0, side - w)
            y = rng.uniform(0.0, side - h)
        vx = rng.uniform(-MAX_SPEED, MAX_SPEED)
        vy = rng.uniform(-MAX_SPEED, MAX_SPEED)
        self._append(e, x, y, w, h, vx, vy)
        self._movable_at[e] = len(self._movable)
        self._movable.append(e)

    def _append(self, e: int, x: float, y: float, w: float, h: float, vx: float, vy: float) -> None:
        assert e == len(self.xs)
        for values, v in zip((self.xs, self.ys, self.ws, self.hs, self.vxs, self.vys),
                             (x, y, w, h, vx, vy), strict=True):
            values.append(v)
        self.alive[e] = None

    # -- reading -------------------------------------------------------------------------

    def ids(self) -> list[int]:
        """Every alive id, in creation order."""
        return list(self.alive)

    def box(self, e: int) -> tuple[float, float, float, float]:
        """The box of ``e`` as ``(min_x, min_y, max_x, max_y)``."""
        x = self.xs[e]
        y = self.ys[e]
        return (x, y, x + self.ws[e], y + self.hs[e])

    def boxes(self) -> dict[int, tuple[float, float, float, float]]:
        """Every alive id with its box."""
        xs, ys, ws, hs = self.xs, self.ys, self.ws, self.hs
        return {e: (xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in self.alive}

    # -- one frame -----------------------------------------------------------------------

    def step(self) -> Step:
        """Advance one frame: churn deletions, motion with bouncing, churn creations.

        Returns the ids moved, created and deleted (disjoint). Complexity: O(moving + churn).
        """
        self.frame += 1
        deleted: list[int] = []
        created: list[int] = []
        if self._churn_k:
            deleted = self._delete_some(self._churn_k)
        moving = self.moving
        xs, ys, ws, hs, vxs, vys = self.xs, self.ys, self.ws, self.hs, self.vxs, self.vys
        side = self.side
        # One loop with locals and two branches per axis: a fixed cost shared by every
        # contender, and reported apart from theirs.
        for e in moving:
            x = xs[e] + vxs[e]
            if x < 0.0:
                x = -x
                vxs[e] = -vxs[e]
            else:
                lim = side - ws[e]
                if x > lim:
                    x = lim + lim - x
                    vxs[e] = -vxs[e]
            xs[e] = x
            y = ys[e] + vys[e]
            if y < 0.0:
                y = -y
                vys[e] = -vys[e]
            else:
                lim = side - hs[e]
                if y > lim:
                    y = lim + lim - y
                    vys[e] = -vys[e]
            ys[e] = y
        if deleted:
            moving = list(moving)  # creation appends to self.moving: keep this frame's list
            created = self._create_some(deleted)
        return Step(moving, created, deleted)

    def _delete_some(self, k: int) -> list[int]:
        """Delete ``k`` random non-static boxes; remember which of them were moving in
        ``self._was_moving`` so that their replacements take their role."""
        deleted = self._rng.sample(self._movable, k)
        self._was_moving.clear()
        for e in deleted:
            _swap_remove(self._movable, self._movable_at, e)
            self._was_moving.append(e in self._moving_at)
            if e in self._moving_at:
                _swap_remove(self.moving, self._moving_at, e)
            del self.alive[e]
        return deleted

    def _create_some(self, deleted: list[int]) -> list[int]:
        """One new box, with a fresh id, for each deleted one."""
        created = []
        for was_moving in self._was_moving:
            e = self._next_id
            self._next_id += 1
            self._add_movable(e)
            if was_moving:
                self._moving_at[e] = len(self.moving)
                self.moving.append(e)
            created.append(e)
        return created

    # -- the questions of a frame -------------------------------------------------------

    def views(self, count: int = 100, size: float = 0.0) -> list[tuple[float, float, float, float]]:
        """``count`` view boxes of side ``size`` (default a quarter of the world's side: 1/16
        of its area) at uniform positions inside the world."""
        q = min(size or self.side / 4.0, self.side)
        return [(x, y, x + q, y + q) for x, y in self.points(count, self.side - q)]

    def points(self, count: int, span: float | None = None) -> list[tuple[float, float]]:
        """``count`` points uniform in ``[0, span]`` (default the world's side) on each axis."""
        rng, side = self._query_rng, self.side if span is None else span
        return [(rng.uniform(0.0, side), rng.uniform(0.0, side)) for _ in range(count)]

    def proximity_centres(self, fraction: float = 0.1) -> list[tuple[float, float]]:
        """The centres of a random ``fraction`` of the alive boxes (at least one), drawn anew
        each call."""
        ids = list(self.alive)
        k = max(1, round(fraction * len(ids)))
        chosen = self._query_rng.sample(ids, k)
        xs, ys, ws, hs = self.xs, self.ys, self.ws, self.hs
        return [(xs[e] + ws[e] * 0.5, ys[e] + hs[e] * 0.5) for e in chosen]

    def camera(self, size: float, pan: bool) -> tuple[float, float, float, float]:
        """The view of a camera of side ``size`` on this frame: its centre circles the
        world's centre at 8 units a frame, or stands still (``pan=False``)."""
        amplitude = max(50.0, 0.4 * (self.side - size))
        t = self.frame * 8.0 / amplitude if pan else 0.0
        x = self.side * 0.5 + amplitude * math.cos(t) - size * 0.5
        y = self.side * 0.5 + amplitude * math.sin(t) - size * 0.5
        return (x, y, x + size, y + size)

    def watchers(self, fraction: float = 0.1) -> list[int]:
        """A fixed ``fraction`` of the first ``n`` ids (at least one), sorted: the same
        every call."""
        rng = random.Random(self.seed + 17)
        return sorted(rng.sample(range(1, self.n + 1), max(1, round(fraction * self.n))))


def _swap_remove(items: list[int], at: dict[int, int], e: int) -> None:
    """Remove ``e`` from ``items`` in O(1), its last item moved into its place; ``at`` maps
    each item to its index."""
    i = at.pop(e)
    last = items.pop()
    if last != e:
        items[i] = last
        at[last] = i
