"""Flock: ten thousand boids on a torus, moved by numpy, placed by the rows of an array.

The simulation path of ecs_spatial, as an agent model uses it: the boids' positions and
velocities are numpy arrays, and each boid is an esper entity placed by a row of a
``BoxArray`` over a numpy ``(n, 4)`` array of boxes (``esper.create_entity(flock.row(i))``:
the guide's "Entities in arrays"). The world is a torus the size of the window
(``SpatialProcessor(wrap=Box(0, 0, W, H))``): a boid that flies off the right edge comes
back on the left, and its neighbours are found across the seams by the minimum-image
distance. Each frame, the FlockProcessor reads every boid's neighbours from a
``NeighbourArrays`` (worked out after the SpatialProcessor's last frame, in the boids' rows:
two arrays, CSR), steers
the whole flock in numpy (separation, alignment and cohesion, each boid's sums taken with
``numpy.bincount``: no Python loop per boid), moves it and writes the boxes' rows; the
SpatialProcessor then reads the array in one call. A boid's colour shows how many
neighbours it has (dull blue: alone; through cyan and green to orange: crowded).

The flock is drawn from one vertex list of triangles whose positions and colours are
filled from the arrays each frame, not a shape per boid; a boid across a seam is drawn on
both sides of it (and in all four corners across both seams at once).

Controls:
    +  / -    add / remove 1,000 boids
    Q         show / hide the debug overlay (ecs_spatial.pyglet_debug): the quadtree's
              nodes, every boid's box (one across a seam as its pieces on either side) and
              the pairs of touching boxes (a pair's line runs across the seam if shorter)
    Space     pause / resume
    Esc       quit
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import _scaffold
import esper
import pyglet
from pyglet import shapes

from ecs_spatial import Box, BoxArray, NeighbourArrays, SpatialProcessor

try:
    import numpy as np
    from numpy.typing import NDArray
except ImportError:  # the examples extra has it
    sys.exit("examples/flock.py needs numpy: pip install 'ecs_spatial[examples]'")

BACKGROUND = (10, 12, 22, 255)
NEIGHBOR_COLORS = [(70, 90, 150), (60, 190, 255), (110, 240, 140), (255, 225, 80),
                   (255, 120, 60)]
CROWDED = 16  # neighbours at which a boid is drawn in the last colour

VIEW_RADIUS = 12.0
"""A boid's neighbours are the boids whose centre lies within this distance of its own."""
SEPARATION_RADIUS = 7.0
# Steering weights (accelerations in px/s^2 per unit of each rule's vector), the three rules
# of Reynolds' boids, as in examples/boids.py.
SEPARATION = 600.0  # away from each close neighbour, as 1 / distance
COHESION = 1.5  # towards the neighbours' centre, per pixel of offset
ALIGNMENT = 2.0  # towards the neighbours' mean velocity, per px/s of difference
MIN_SPEED, MAX_SPEED = 40.0, 90.0
BOX_SIZE = 2.0
"""The side of a boid's box in the index (what the debug overlay draws)."""
QUERY_RADIUS = VIEW_RADIUS - BOX_SIZE / 2
"""The radius the index is asked with: a box holds the disc of radius ``BOX_SIZE / 2``
about its centre, so every boid whose centre lies within VIEW_RADIUS has its box within
this, and fewer others do than within VIEW_RADIUS (the candidates are filtered by their
centres all the same)."""
LENGTH, WIDTH = 6.0, 2.5
"""A boid's triangle: from its tail to its nose, and across its tail, in pixels."""
STEP = 1000  # boids added or removed by + and -

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


# -- the neighbours and the steering, in numpy ------------------------------------------------


def neighbours(nb: NeighbourArrays, flock: BoxArray, n: int) -> tuple[Ints, Ints]:
    """Rows ``0 .. n - 1``' neighbours as a CSR pair ``(offsets, rows)``: the rows of the
    boids whose box lies within the radius of ``nb`` of row ``i``'s centre (by the
    minimum-image distance on a torus) are ``rows[offsets[i]:offsets[i + 1]]``, -1 for one
    that is no boid now, as of the last ``process()`` of ``nb`` (a boid added since has none
    yet). The one place the flock asks for neighbours: ``nb.in_rows(flock)`` as it
    is when its watchers are the rows in order (entities are made in row order), else its
    lists put in row order."""
    answer = nb.in_rows(flock)
    watchers = np.frombuffer(answer.watchers, dtype=np.int64)
    offsets = np.frombuffer(answer.offsets, dtype=np.int64)
    rows = np.frombuffer(answer.ids, dtype=np.int64)
    if len(watchers) == n and np.array_equal(watchers, np.arange(n)):
        return offsets, rows
    lengths = np.diff(offsets)
    have = np.flatnonzero((watchers >= 0) & (watchers < n))
    have = have[np.argsort(watchers[have], kind="stable")]
    counts = np.zeros(n, dtype=np.int64)
    counts[watchers[have]] = lengths[have]
    in_order = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=in_order[1:])
    starts, sizes = offsets[have], lengths[have]
    at = np.arange(int(sizes.sum()), dtype=np.int64)
    at += np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
    picked = rows[at]
    picked[picked >= n] = -1  # a boid removed since: its row is no boid now
    return in_order, picked


def steer(pos: Floats, vel: Floats, offsets: Ints, rows: Ints, period: tuple[float, float],
          dt: float) -> Ints:
    """One step of the flock, in place: each boid steered by its neighbours (separation,
    alignment, cohesion), its speed kept within [MIN_SPEED, MAX_SPEED], moved, and its
    position taken back into the period. ``offsets`` and ``rows`` (CSR: the rows of boid
    ``i``'s candidates are ``rows[offsets[i]:offsets[i + 1]]``, -1 for one that is no boid
    now) come from :func:`neighbours`; a candidate counts if it is another boid whose centre
    lies within ``VIEW_RADIUS`` of the boid's, by the minimum-image distance. The lists are
    symmetric (j is i's candidate when i is j's: every boid's box is the same size), which
    lets each pair be worked out once. Returns how many neighbours each boid had."""
    n = len(pos)
    width, height = period
    me = np.repeat(np.arange(n), np.diff(offsets))  # the boid each candidate is a candidate of
    # Each pair once: the lists hold it both ways round and every rule is symmetric, so the
    # lower row's view serves both (the other's is its negation): half the gathers and half
    # the memory traffic (1.3 times faster at 10,000 boids). -1 (no boid) and the boid
    # itself drop out here.
    once = rows > me
    a, b = me[once], rows[once]
    x, y = pos[:, 0], pos[:, 1]
    dx = x[b]
    dx -= x[a]
    dx -= width * np.round(dx * (1.0 / width))  # the minimum image across the seams
    dy = y[b]
    dy -= y[a]
    dy -= height * np.round(dy * (1.0 / height))
    d2 = dx * dx
    d2 += dy * dy
    near = np.flatnonzero(d2 <= VIEW_RADIUS * VIEW_RADIUS)  # nearly all the candidates
    a, b, dx, dy, d2 = a[near], b[near], dx[near], dy[near], d2[near]

    def both(of_a: Floats, of_b: Floats) -> Floats:
        """Each boid's sum over its pairs: of_a[k] to boid a[k], of_b[k] to boid b[k]."""
        return _sums(a, of_a, n) + _sums(b, of_b, n)

    count = np.bincount(a, minlength=n) + np.bincount(b, minlength=n)
    seen = np.maximum(count, 1).astype(np.float64)
    some = count > 0
    # Cohesion: towards the neighbours' centre; alignment: towards their mean velocity.
    ax = both(dx, -dx)
    ay = both(dy, -dy)
    ax *= COHESION / seen
    ay *= COHESION / seen
    vx, vy = vel[:, 0], vel[:, 1]
    ax += ALIGNMENT * (both(vx[b], vx[a]) / seen - vx) * some
    ay += ALIGNMENT * (both(vy[b], vy[a]) / seen - vy) * some
    # Separation: away from each close neighbour, the harder the closer (few are close).
    close = np.flatnonzero(d2 < SEPARATION_RADIUS * SEPARATION_RADIUS)
    push = SEPARATION / np.maximum(d2[close], 1e-6)
    px, py = dx[close] * push, dy[close] * push
    ca, cb = a[close], b[close]
    ax -= _sums(ca, px, n) - _sums(cb, px, n)
    ay -= _sums(ca, py, n) - _sums(cb, py, n)
    vel[:, 0] += ax * dt
    vel[:, 1] += ay * dt
    speed = np.maximum(np.hypot(vel[:, 0], vel[:, 1]), 1e-9)
    vel *= (np.clip(speed, MIN_SPEED, MAX_SPEED) / speed)[:, None]
    pos += vel * dt
    np.mod(pos, period, out=pos)
    return count.astype(np.int64)


def _sums(groups: Ints, values: Floats, n: int) -> Floats:
    """The sum of ``values`` in each of the ``n`` groups (``groups[i]`` is value i's)."""
    return np.bincount(groups, values, n).astype(np.float64, copy=False)


class FlockProcessor(esper.Processor):
    """Steers and moves the flock, then writes its boxes' rows (before the SpatialProcessor,
    which reads them). Keeps the per-frame milliseconds of its two parts: the neighbour
    query and the numpy step."""

    def __init__(self, scene: FlockScene) -> None:
        self.scene = scene
        self.neighbours_ms = _scaffold.FrameTimes()
        self.arrays_ms = 0.0  # the last NeighbourStep's, counted in the next neighbours_ms
        self.steer_ms = _scaffold.FrameTimes()

    def process(self, dt: float) -> None:
        scene = self.scene
        n = scene.count
        pos, vel = scene.pos[:n], scene.vel[:n]
        start = time.perf_counter()
        offsets, rows = neighbours(scene.neighbour_arrays, scene.array, n)
        found = time.perf_counter()
        scene.neighbour_counts = steer(pos, vel, offsets, rows, scene.period, dt)
        scene.write_rows()
        done = time.perf_counter()
        self.neighbours_ms.add((found - start) * 1000.0 + self.arrays_ms)
        self.steer_ms.add((done - found) * 1000.0)


class NeighbourStep(esper.Processor):
    """Runs the NeighbourArrays after the SpatialProcessor, its milliseconds noted for the
    FlockProcessor's neighbour figure (the summary's ``neighbours_ms``)."""

    def __init__(self, nb: NeighbourArrays, flocking: FlockProcessor) -> None:
        self.nb = nb
        self.flocking = flocking

    def process(self, *args: Any) -> None:
        start = time.perf_counter()
        self.nb.process()
        self.flocking.arrays_ms = (time.perf_counter() - start) * 1000.0


# -- drawing: one vertex list of triangles ------------------------------------------------------


class FlockMesh:
    """Every boid's triangle in one vertex list (pyglet's shape shader), its positions and
    colours written from numpy each frame through views of the list's own buffers: no
    Python object per boid. A boid whose triangle crosses a seam is drawn again on the far
    side of it (across both seams: in all four corners). Slots past the triangles drawn
    are triangles of zero size, drawn as nothing; the list grows when it must."""

    def __init__(self, batch: pyglet.graphics.Batch, capacity: int) -> None:
        self.batch = batch
        self.program = shapes.get_default_shader()
        self.group = pyglet.graphics.ShaderGroup(self.program, order=0)
        self.vertex_list: Any = None
        self.capacity = 0
        self.drawn = 0  # triangles drawn, images across the seams included
        self.images = 0  # of which images across a seam
        self.palette = np.array(
            [(*_scaffold.lerp_color(NEIGHBOR_COLORS, i / CROWDED), 255)
             for i in range(CROWDED + 1)], dtype=np.uint8)
        self.fill_ms = _scaffold.FrameTimes()
        self._reserve(capacity)

    def _reserve(self, capacity: int) -> None:
        if capacity <= self.capacity:
            return
        if self.vertex_list is not None:
            self.vertex_list.delete()
        n = self.capacity = capacity
        self.vertex_list = self.program.vertex_list(
            3 * n, pyglet.gl.GL_TRIANGLES, self.batch, self.group,
            position=("f", [0.0] * (6 * n)), colors=("Bn", [0] * (12 * n)),
            translation=("f", [0.0] * (6 * n)), rotation=("f", [0.0] * (3 * n)),
        )

    def fill(self, pos: Floats, vel: Floats, counts: Ints, period: tuple[float, float]) -> None:
        """Write the flock's triangles and colours into the vertex list."""
        start = time.perf_counter()
        speed = np.maximum(np.hypot(vel[:, 0], vel[:, 1]), 1e-9)
        ux, uy = vel[:, 0] / speed, vel[:, 1] / speed
        x, y = pos[:, 0], pos[:, 1]
        back = -0.4 * LENGTH
        tri = np.empty((len(pos), 3, 2), dtype=np.float32)
        tri[:, 0, 0] = x + 0.6 * LENGTH * ux  # the nose
        tri[:, 0, 1] = y + 0.6 * LENGTH * uy
        tri[:, 1, 0] = x + back * ux - WIDTH * uy  # the tail's corners
        tri[:, 1, 1] = y + back * uy + WIDTH * ux
        tri[:, 2, 0] = x + back * ux + WIDTH * uy
        tri[:, 2, 1] = y + back * uy - WIDTH * ux
        rgba = self.palette[np.minimum(counts, CROWDED)]

        # The images across the seams: a triangle within its reach of a seam is drawn again
        # a period away, on the other side.
        width, height = period
        reach = 0.6 * LENGTH
        shift_x = np.where(x < reach, width, np.where(x > width - reach, -width, 0.0))
        shift_y = np.where(y < reach, height, np.where(y > height - reach, -height, 0.0))
        parts = [tri]
        colors = [rgba]
        across_x, across_y = shift_x != 0, shift_y != 0
        for which, by_x, by_y in ((across_x, True, False), (across_y, False, True),
                                  (across_x & across_y, True, True)):
            if not which.any():
                continue
            image = tri[which]  # a copy
            if by_x:
                image[:, :, 0] += shift_x[which][:, None]
            if by_y:
                image[:, :, 1] += shift_y[which][:, None]
            parts.append(image)
            colors.append(rgba[which])
        drawn = sum(len(p) for p in parts)
        if drawn > self.capacity:
            self._reserve(drawn + drawn // 8 + 64)
        vl = self.vertex_list
        # Each read of an attribute marks its whole buffer for upload at the next draw.
        position = np.frombuffer(vl.position, dtype=np.float32).reshape(-1, 3, 2)
        rgba_out = np.frombuffer(vl.colors, dtype=np.uint8).reshape(-1, 3, 4)
        at = 0
        for part, color in zip(parts, colors, strict=True):
            position[at:at + len(part)] = part
            rgba_out[at:at + len(part)] = color[:, None, :]
            at += len(part)
        if self.drawn > drawn:
            position[drawn:self.drawn] = 0.0
        self.images = drawn - len(pos)
        self.drawn = drawn
        self.fill_ms.add((time.perf_counter() - start) * 1000.0)


# -- the scene ----------------------------------------------------------------------------------


class FlockScene:
    """The flock's arrays (row i of ``pos``, ``vel`` and ``boxes`` is boid i, placed by
    ``array.row(i)``: entity ``entities[i]``), its processors, its vertex list and the
    debug overlay."""

    def __init__(self, app: _scaffold.App, boids: int, threshold: int) -> None:
        self.app = app
        width, height = app.window.width, app.window.height
        self.world = Box(0, 0, width, height)
        self.period = (float(width), float(height))
        pyglet.gl.glClearColor(*(c / 255 for c in BACKGROUND))
        self.rng = np.random.default_rng(app.args.seed)

        self.spatial = SpatialProcessor(wrap=self.world, threshold=threshold, events=())
        # Every boid's neighbours as arrays, after the SpatialProcessor: what the next
        # frame's FlockProcessor steers by.
        self.neighbour_arrays = NeighbourArrays(self.spatial, QUERY_RADIUS)
        self.flocking = FlockProcessor(self)
        esper.add_processor(self.flocking, priority=10)
        esper.add_processor(self.spatial, priority=5)
        esper.add_processor(NeighbourStep(self.neighbour_arrays, self.flocking), priority=4)
        app.time_processors(self.spatial)
        app.bind("+=", lambda: self.add_boids(STEP))
        app.bind("-", lambda: self.remove_boids(STEP))
        app.bind(" ", self.toggle_pause)

        # The arrays: row i of each is boid i (its entity: self.entities[i]).
        self.count = 0
        rows = max(boids, 1)
        self.pos: Floats = np.zeros((rows, 2))
        self.vel: Floats = np.zeros((rows, 2))
        self.boxes: Floats = np.zeros((rows, 4))
        self.array = BoxArray(self.boxes)
        self.entities: list[int] = []
        self.row_of: Ints = np.full(1, -1, dtype=np.int64)  # entity id -> its row, or -1
        self.neighbour_counts: Ints = np.zeros(0, dtype=np.int64)
        self.paused = False
        self.update_ms = _scaffold.FrameTimes()  # esper.process(): the flock and the index

        self.batch = pyglet.graphics.Batch()
        self.mesh = FlockMesh(self.batch, boids + boids // 8 + 64)
        # Q: the debug overlay over the whole torus (the boids make no casts).
        self.overlay = app.debug_overlay(self.spatial, self.batch, order=10,
                                         layers=("nodes", "boxes", "pairs"))
        self.add_boids(boids)
        # The index built now, and the neighbours: the first frame is a frame like the others.
        self.spatial.process()
        self.neighbour_arrays.process()

    # -- the flock's size ---------------------------------------------------------------------
    def add_boids(self, n: int) -> None:
        """``n`` new boids anywhere, flying every way at once: new rows, new entities."""
        old, new = self.count, self.count + n
        if new > len(self.pos):  # room for them: larger arrays, the rows kept
            capacity = max(new, 2 * len(self.pos))
            self.pos = _grown(self.pos, capacity)
            self.vel = _grown(self.vel, capacity)
            self.boxes = _grown(self.boxes, capacity)
            self.array.rebind(self.boxes)
        width, height = self.period
        self.pos[old:new] = self.rng.random((n, 2)) * (width, height)
        angle = self.rng.random(n) * math.tau
        speed = self.rng.uniform(MIN_SPEED, MAX_SPEED, n)
        self.vel[old:new, 0] = speed * np.cos(angle)
        self.vel[old:new, 1] = speed * np.sin(angle)
        self.entities += [esper.create_entity(self.array.row(i)) for i in range(old, new)]
        self.count = new
        self.write_rows()
        self._index_rows()

    def remove_boids(self, n: int) -> None:
        """Take away the last ``n`` boids: their entities deleted, their rows unused."""
        keep = max(self.count - n, 0)
        for e in self.entities[keep:]:
            esper.delete_entity(e)
        del self.entities[keep:]
        self.count = keep
        self._index_rows()

    def write_rows(self) -> None:
        """Write each boid's box, ``BOX_SIZE`` wide about its position, into its row: what
        the SpatialProcessor reads at its next ``process()``."""
        n, half = self.count, BOX_SIZE / 2
        np.subtract(self.pos[:n], half, out=self.boxes[:n, :2])
        np.add(self.pos[:n], half, out=self.boxes[:n, 2:])

    def _index_rows(self) -> None:
        """Rebuild the map from entity id to row: the ids the index hands back are
        entities, the arrays are by row."""
        top = max(self.entities, default=0)
        row_of = np.full(max(top + 1, len(self.row_of)), -1, dtype=np.int64)
        row_of[np.asarray(self.entities, dtype=np.int64)] = np.arange(self.count)
        self.row_of = row_of
        self.neighbour_counts = np.zeros(self.count, dtype=np.int64)

    def toggle_pause(self) -> None:
        self.paused = not self.paused

    # -- the frame ------------------------------------------------------------------------------
    def update(self, dt: float) -> None:
        if self.paused:
            return
        start = time.perf_counter()
        esper.process(dt)
        self.update_ms.add((time.perf_counter() - start) * 1000.0)
        counts = self.neighbour_counts
        n = max(self.count, 1)
        self.app.stats.update(
            boids=self.count,
            with_neighbors=int(np.count_nonzero(counts)),
            mean_neighbors=f"{counts.sum() / n:.1f}",
            alignment=f"{self.alignment():.2f}",
            update_ms_mean=f"{self.update_ms.mean:.2f}",
            neighbours_ms_mean=f"{self.flocking.neighbours_ms.mean:.2f}",
            steer_ms_mean=f"{self.flocking.steer_ms.mean:.2f}",
            fill_ms_mean=f"{self.mesh.fill_ms.mean:.2f}",
            images=self.mesh.images,
        )

    def alignment(self) -> float:
        """How alike the boids' headings are: the length of their mean unit velocity (0:
        every way at once, 1: all one way)."""
        vel = self.vel[:self.count]
        if not len(vel):
            return 0.0
        unit = vel / np.maximum(np.hypot(vel[:, 0], vel[:, 1]), 1e-9)[:, None]
        return float(np.hypot(*unit.mean(axis=0)))

    def draw(self) -> None:
        n = self.count
        self.mesh.fill(self.pos[:n], self.vel[:n], self.neighbour_counts, self.period)
        self.batch.draw()

    def hud(self) -> str:
        stats = self.app.stats
        state = "   PAUSED" if self.paused else ""
        width, height = self.period
        return (
            f"Flock: numpy on a {width:g} x {height:g} torus{state}\n"
            f"{self.app.timing_text()}\n"
            f"boids {self.count:,}   mean neighbours {stats.get('mean_neighbors', 0)}"
            f"   neighbours {stats.get('neighbours_ms_mean', 0)} ms"
            f"   steering {stats.get('steer_ms_mean', 0)} ms"
            f"   vertices {stats.get('fill_ms_mean', 0)} ms\n"
            "+/- boids   Q debug overlay   Space pause"
        )


def _grown(a: Floats, rows: int) -> Floats:
    """A copy of ``a`` with ``rows`` rows, the new ones zeros."""
    out = np.zeros((rows, a.shape[1]))
    out[:len(a)] = a
    return out


def create(argv: list[str] | None = None) -> FlockScene:
    """Parse the command line, open the window and build the scene (tests start here)."""
    p = _scaffold.parser(__doc__)
    p.add_argument("--boids", type=int, default=10_000, help="default: 10000")
    p.add_argument("--threshold", type=int, default=64,
                   help="the index's leaf size (default: 64: the whole flock moves each frame)")
    args = _scaffold.parse_args(p, argv)
    if args.boids < 0:
        p.error("--boids must be at least 0")
    app = _scaffold.App("flock", args, "ecs_spatial: flock")
    return FlockScene(app, args.boids, args.threshold)


def main(argv: list[str] | None = None) -> int:
    scene = create(argv)
    return scene.app.run(scene)


if __name__ == "__main__":
    sys.exit(main())
