"""Boids: a flock steered by what each bird senses around it.

Every boid carries a Proximity component; the ProximityProcessor keeps its ``neighbors`` up
to date, and the flock steers by them alone: separation, alignment and cohesion, and flight
from any predator among them. A neighbour comes into view within ``VIEW_RADIUS`` and leaves
it only beyond ``EXIT_RADIUS`` (``Proximity(radius, exit_radius=...)``, hysteresis): two birds
flying side by side at the edge of each other's view do not flicker in and out of it, frame
after frame, nor flood the world with enter and exit events. A boid's colour shows how many
neighbours it has (dull blue: alone; through cyan and green to orange: crowded). The red
predators chase the boid that the index's ``nearest`` query finds. The grey obstacles are
steered around, never entered: each boid and predator casts a ray ahead of it with
``raycast`` and turns away from the obstacle it sees; near an obstacle (found with the
index's ``query`` round each obstacle, one query per obstacle a frame) it is pushed away
from the surface, the harder the nearer; and a move that would still take it into one stops
at the surface and slides along it (the summary counts these as ``bumps=``).

Controls:
    +  / -    add / remove 50 boids
    Q         show / hide the debug overlay (ecs_spatial.pyglet_debug): the quadtree's
              nodes, every box by its contacts, the pairs, and the rays of the last frame
    Space     pause / resume
    Esc       quit
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import _scaffold
import esper
import pyglet
from pyglet import shapes

from ecs_spatial import (
    AABB,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    Box,
    CollisionFilter,
    Position,
    Proximity,
    ProximityProcessor,
    SpatialProcessor,
)

BACKGROUND = (12, 16, 24, 255)
NEIGHBOR_COLORS = [(70, 90, 150), (60, 190, 255), (110, 240, 140), (255, 225, 80),
                   (255, 120, 60)]
CROWDED = 12  # neighbours at which a boid is drawn in the last colour
PREDATOR_COLOR = (235, 40, 70)
OBSTACLE_COLOR = (105, 110, 125)

# CollisionFilter categories: boids sense boids and predators, not obstacles (those they see
# with a ray); predators find the nearest boid with `nearest(..., mask=BOID)`.
BOID, PREDATOR, OBSTACLE = 0x1, 0x2, 0x4

VIEW_RADIUS = 42.0
EXIT_RADIUS = 50.0
"""A neighbour seen within VIEW_RADIUS stays one until it is farther than this."""
FLICKER_FRAMES = 15
"""A neighbour that comes back within this many frames (a quarter of a second) of leaving
counts as a flicker in the summary (``flickers=``): what hysteresis is there to prevent."""
SEPARATION_RADIUS = 14.0
# Steering weights (accelerations in px/s^2 per unit of each rule's vector): the usual three
# rules of Reynolds' boids, plus flight from predators, which outweighs them all.
SEPARATION = 900.0  # away from each close neighbour, as 1 / distance
COHESION = 1.2  # towards the neighbours' centre, per pixel of offset
ALIGNMENT = 1.5  # towards the neighbours' mean velocity, per px/s of difference
FLEE = 9000.0  # away from each predator in view, as 1 / distance
MIN_SPEED, MAX_SPEED = 60.0, 140.0
PREDATOR_SPEED = 120.0
LOOK_AHEAD = 55.0
RAY_EVERY = 3
"""A boid casts its ray every third frame (staggered across the flock) and keeps steering
for the frames between: a ray per boid per frame would cost more than the whole flock's
steering."""
AVOID_MARGIN = 24.0
"""A body within this gap of an obstacle's surface is pushed away from it, with REPEL at the
surface falling to nothing at the margin (as the square of the remaining fraction)."""
REPEL = 2400.0
EDGE_MARGIN = 50.0
BATCH_SIZE = 50
BOID_SIZE, PREDATOR_SIZE = 6.0, 12.0


@dataclass(slots=True)
class Velocity:
    vx: float
    vy: float


class Boid:
    """Marks a flock member."""

    __slots__ = ()


@dataclass(slots=True)
class Sight:
    """The look ahead of whatever flies among the obstacles, boids and predators alike: its
    index (to stagger its rays) and the swerve its last ray asked for."""

    index: int
    avoid_x: float = 0.0
    avoid_y: float = 0.0


@dataclass(slots=True)
class Predator:
    target: int | None = None


@dataclass(slots=True)
class Obstacle:
    box: Box = field(default_factory=lambda: Box(0, 0, 0, 0))


# -- processors ---------------------------------------------------------------------------------


class AvoidanceProcessor(esper.Processor):
    """What each flier sees of the obstacles, for the FlockProcessor and the
    PredatorProcessor to steer by and to move with:

    - a ray cast ahead of everything with a Sight, boids and predators alike, and the swerve
      away from the obstacle it meets, kept in the Sight;
    - ``near``: for each flier within reach of an obstacle, the obstacles' boxes, from one
      ``query`` of the index per obstacle (the box grown by the reach): the obstacles it is
      pushed away from (:func:`repel`) and may not enter (:func:`move_clear`)."""

    def __init__(self, spatial: SpatialProcessor) -> None:
        self.spatial = spatial
        self.frame = 0
        self.swerves = 0
        self.bumps = 0  # moves stopped at an obstacle's surface
        self.obstacles: dict[int, Obstacle] = {}
        self.near: dict[int, list[Box]] = {}

    def process(self, dt: float) -> None:
        self.frame += 1
        self.obstacles = dict(esper.get_component(Obstacle))
        frame = self.frame
        for _e, (pos, vel, sight) in esper.get_components(Position, Velocity, Sight):
            if (frame + sight.index) % RAY_EVERY == 0:
                self._look_ahead(pos.x, pos.y, vel, sight)
        # The index holds every box where the last frame left it: grown by the push's margin
        # and the farthest a flier goes in this frame, an obstacle's box meets every flier
        # that can feel it or reach it now.
        reach = AVOID_MARGIN + max(MAX_SPEED, PREDATOR_SPEED) * dt + PREDATOR_SIZE
        near: dict[int, list[Box]] = {}
        for obstacle in self.obstacles.values():
            for e in self.spatial.query(obstacle.box.expanded(reach), mask=BOID | PREDATOR):
                near.setdefault(e, []).append(obstacle.box)
        self.near = near

    def _look_ahead(self, x: float, y: float, vel: Velocity, sight: Sight) -> None:
        """Cast a ray along the velocity; if it meets an obstacle, swerve away from the
        obstacle's centre, harder the nearer the hit."""
        speed = math.hypot(vel.vx, vel.vy) or 1.0
        ux, uy = vel.vx / speed, vel.vy / speed
        sight.avoid_x = sight.avoid_y = 0.0
        for hit, t in self.spatial.raycast(x, y, x + ux * LOOK_AHEAD, y + uy * LOOK_AHEAD):
            obstacle = self.obstacles.get(hit)
            if obstacle is None:
                continue  # a boid or a predator: the ray looks for obstacles only
            cx, cy = obstacle.box.center
            if t == 0.0:
                # Inside already (pushed in by the flock, or cutting a corner): straight out,
                # away from the centre.
                dx, dy = x - cx, y - cy
                d = math.hypot(dx, dy) or 1.0
                sight.avoid_x, sight.avoid_y = dx / d * 900.0, dy / d * 900.0
            else:
                # Turn to the side of the ray away from the obstacle's centre: (uy, -ux) is the
                # right-hand normal, and `left` says whether the centre lies to the left.
                left = ux * (cy - y) - uy * (cx - x) > 0
                strength = (700.0 * (1.0 - t) + 200.0) * (1 if left else -1)
                sight.avoid_x = uy * strength
                sight.avoid_y = -ux * strength
            self.swerves += 1
            return


class FlockProcessor(esper.Processor):
    """Steers every boid by its Proximity neighbours (from the previous frame's
    ProximityProcessor), by the swerve its Sight asks for and away from the obstacles near
    it, then moves it, never into an obstacle."""

    def __init__(self, arena: Box, avoidance: AvoidanceProcessor) -> None:
        self.arena = arena
        self.avoidance = avoidance

    def process(self, dt: float) -> None:
        movers = {e: (pos, vel) for e, (pos, vel) in esper.get_components(Position, Velocity)}
        predators = {e for e, _ in esper.get_component(Predator)}
        near = self.avoidance.near
        # The boids: predators and obstacles have no Proximity.
        for e, (pos, vel, prox, sight) in esper.get_components(
            Position, Velocity, Proximity, Sight
        ):
            x, y = pos.x, pos.y
            ax = ay = 0.0  # acceleration
            n = 0
            sum_x = sum_y = sum_vx = sum_vy = 0.0
            for other in prox.neighbors:
                found = movers.get(other)
                if found is None:
                    continue  # deleted this frame; it leaves the neighbours next frame
                opos, ovel = found
                dx, dy = opos.x - x, opos.y - y
                d2 = dx * dx + dy * dy or 1e-6
                if other in predators:
                    ax -= dx / d2 * FLEE
                    ay -= dy / d2 * FLEE
                    continue
                n += 1
                sum_x += dx
                sum_y += dy
                sum_vx += ovel.vx
                sum_vy += ovel.vy
                if d2 < SEPARATION_RADIUS * SEPARATION_RADIUS:
                    ax -= dx / d2 * SEPARATION
                    ay -= dy / d2 * SEPARATION
            if n:
                ax += sum_x / n * COHESION + (sum_vx / n - vel.vx) * ALIGNMENT
                ay += sum_y / n * COHESION + (sum_vy / n - vel.vy) * ALIGNMENT
            ax += sight.avoid_x
            ay += sight.avoid_y
            ax, ay = _keep_inside(self.arena, x, y, ax, ay)
            blocks = near.get(e)
            if blocks is None:
                _steer(vel, ax, ay, dt, MIN_SPEED, MAX_SPEED)
                pos.x = x + vel.vx * dt
                pos.y = y + vel.vy * dt
                continue
            px, py = repel(blocks, x, y, BOID_SIZE / 2)
            _steer(vel, ax + px, ay + py, dt, MIN_SPEED, MAX_SPEED)
            self.avoidance.bumps += move_clear(blocks, pos, vel, dt, BOID_SIZE / 2)


class PredatorProcessor(esper.Processor):
    """Each predator heads for the nearest boid: ``nearest`` with the boids' category as mask,
    and swerves round the obstacles as the boids do (its Sight)."""

    def __init__(self, spatial: SpatialProcessor, arena: Box,
                 avoidance: AvoidanceProcessor) -> None:
        self.spatial = spatial
        self.arena = arena
        self.avoidance = avoidance

    def process(self, dt: float) -> None:
        near = self.avoidance.near
        for e, (pos, vel, sight, hunter) in esper.get_components(
            Position, Velocity, Sight, Predator
        ):
            hunter.target = None
            # The nearest boids (their collision category), past obstacles and predators
            # however near. The index catches up with deletions when the SpatialProcessor
            # runs, after this processor: a boid deleted this frame may still be found.
            for other in self.spatial.nearest(pos.x, pos.y, 3, mask=BOID):
                if esper.entity_exists(other):
                    hunter.target = other
                    break
            ax = ay = 0.0
            if hunter.target is not None:
                prey = esper.component_for_entity(hunter.target, Position)
                dx, dy = prey.x - pos.x, prey.y - pos.y
                d = math.hypot(dx, dy) or 1.0
                ax, ay = dx / d * 300.0, dy / d * 300.0
            ax += sight.avoid_x
            ay += sight.avoid_y
            ax, ay = _keep_inside(self.arena, pos.x, pos.y, ax, ay)
            blocks = near.get(e, [])
            px, py = repel(blocks, pos.x, pos.y, PREDATOR_SIZE / 2)
            _steer(vel, ax + px, ay + py, dt, PREDATOR_SPEED * 0.5, PREDATOR_SPEED)
            self.avoidance.bumps += move_clear(blocks, pos, vel, dt, PREDATOR_SIZE / 2)


def repel(blocks: Sequence[Box], x: float, y: float, half: float) -> tuple[float, float]:
    """The push away from the obstacles near a body of half-size ``half`` centred at
    ``(x, y)``: from each box's nearest point, REPEL at the surface, falling to nothing at
    AVOID_MARGIN, as the square of the remaining fraction (gentle far out, firm up close)."""
    ax = ay = 0.0
    for o in blocks:
        dx = x - o.min_x if x < o.min_x else (x - o.max_x if x > o.max_x else 0.0)
        dy = y - o.min_y if y < o.min_y else (y - o.max_y if y > o.max_y else 0.0)
        d = math.hypot(dx, dy)
        gap = d - half
        if gap >= AVOID_MARGIN or d == 0.0:
            continue
        closeness = 1.0 - max(gap, 0.0) / AVOID_MARGIN
        push = REPEL * closeness * closeness / d
        ax += dx * push
        ay += dy * push
    return ax, ay


def move_clear(blocks: Sequence[Box], pos: Position, vel: Velocity, dt: float,
               half: float) -> int:
    """Move the body of half-size ``half`` by its velocity, never into one of ``blocks``
    (touching is not inside), however far it goes in the frame: a move that would take it
    inside one stops at the face it would cross, and the velocity loses its part across
    that face, so that the body slides along the surface. The move is swept, as ``cast_box``
    sweeps a box: the body's centre against the obstacle grown by ``half``, and the face
    crossed is that of the axis on which it would come inside last. A body already inside
    (born in a window too small to keep it clear) is put out the shortest way. Returns how
    many faces stopped it."""
    x, y = pos.x, pos.y
    dx, dy = vel.vx * dt, vel.vy * dt
    stopped = 0
    for o in blocks:
        lo_x, hi_x, lo_y, hi_y = o.min_x - half, o.max_x + half, o.min_y - half, o.max_y + half
        if lo_x < x < hi_x and lo_y < y < hi_y:
            stopped += 1
            left, right, down, up = x - lo_x, hi_x - x, y - lo_y, hi_y - y
            if min(left, right) <= min(down, up):
                x = lo_x if left <= right else hi_x
                vel.vx = dx = 0.0
            else:
                y = lo_y if down <= up else hi_y
                vel.vy = dy = 0.0
            continue
        enter_x, leave_x = _inside_between(x, dx, lo_x, hi_x)
        enter_y, leave_y = _inside_between(y, dy, lo_y, hi_y)
        if max(enter_x, enter_y, 0.0) >= min(leave_x, leave_y, 1.0):
            continue  # never inside on both axes at once within the move
        stopped += 1
        if enter_x >= enter_y:
            dx = (lo_x if dx > 0 else hi_x) - x
            vel.vx = 0.0
        else:
            dy = (lo_y if dy > 0 else hi_y) - y
            vel.vy = 0.0
    pos.x, pos.y = x + dx, y + dy
    return stopped


def _inside_between(c: float, d: float, lo: float, hi: float) -> tuple[float, float]:
    """The fractions of a move from ``c`` by ``d`` between which it is strictly inside
    ``(lo, hi)`` (empty, ``(inf, -inf)``, if never)."""
    if d == 0.0:
        return (-math.inf, math.inf) if lo < c < hi else (math.inf, -math.inf)
    t0, t1 = (lo - c) / d, (hi - c) / d
    return (t0, t1) if t0 < t1 else (t1, t0)


def _keep_inside(arena: Box, x: float, y: float, ax: float, ay: float) -> tuple[float, float]:
    """Turn back from the edges of the arena, harder the closer."""
    if x < arena.min_x + EDGE_MARGIN:
        ax += (arena.min_x + EDGE_MARGIN - x) * 12.0
    elif x > arena.max_x - EDGE_MARGIN:
        ax -= (x - arena.max_x + EDGE_MARGIN) * 12.0
    if y < arena.min_y + EDGE_MARGIN:
        ay += (arena.min_y + EDGE_MARGIN - y) * 12.0
    elif y > arena.max_y - EDGE_MARGIN:
        ay -= (y - arena.max_y + EDGE_MARGIN) * 12.0
    return ax, ay


def _steer(vel: Velocity, ax: float, ay: float, dt: float, lo: float, hi: float) -> None:
    """Accelerate, then keep the speed within [lo, hi]."""
    vx = vel.vx + ax * dt
    vy = vel.vy + ay * dt
    speed = math.hypot(vx, vy) or 1.0
    if speed > hi:
        vx, vy = vx / speed * hi, vy / speed * hi
    elif speed < lo:
        vx, vy = vx / speed * lo, vy / speed * lo
    vel.vx, vel.vy = vx, vy


# -- the world, without a window ---------------------------------------------------------------


def build_obstacles(arena: Box) -> list[int]:
    """A few static blocks in the arena."""
    w, h = arena.width, arena.height
    blocks = [
        Box.from_center(arena.min_x + w * fx, arena.min_y + h * fy, w * sw, h * sh)
        for fx, fy, sw, sh in (
            (0.25, 0.35, 0.06, 0.22), (0.5, 0.7, 0.20, 0.05), (0.75, 0.35, 0.06, 0.22),
            (0.5, 0.25, 0.05, 0.05),
        )
    ]
    return [
        esper.create_entity(
            Position(b.min_x, b.min_y), AABB(b.width, b.height), Obstacle(b),
            CollisionFilter(category=OBSTACLE),
        )
        for b in blocks
    ]


def spawn_point(
    rng: random.Random, arena: Box, obstacles: Sequence[Box], size: float
) -> tuple[float, float]:
    """The centre of a box of side ``size``, away from the arena's edges and more than a
    look ahead away from every obstacle: something born inside one, or too close to it to
    turn, would fly through it before its ray could steer it away. In a window too small
    for that, as clear as it can find, or anywhere."""
    x = y = 0.0
    for reach in (size + 2 * LOOK_AHEAD, size):
        for _ in range(100):
            x = rng.uniform(arena.min_x + EDGE_MARGIN, arena.max_x - EDGE_MARGIN)
            y = rng.uniform(arena.min_y + EDGE_MARGIN, arena.max_y - EDGE_MARGIN)
            spot = Box.from_center(x, y, reach, reach)
            if not any(spot.intersects(o) for o in obstacles):
                return x, y
    return x, y


def create_boid(
    rng: random.Random, arena: Box, index: int, obstacles: Sequence[Box] = (),
    exit_radius: float = EXIT_RADIUS,
) -> int:
    x, y = spawn_point(rng, arena, obstacles, BOID_SIZE)
    angle = rng.uniform(0, math.tau)
    speed = rng.uniform(MIN_SPEED, MAX_SPEED)
    return esper.create_entity(
        Position(x, y), AABB.centered(BOID_SIZE, BOID_SIZE), Velocity(speed * math.cos(angle),
                                                     speed * math.sin(angle)),
        Proximity(VIEW_RADIUS, mask=BOID | PREDATOR, exit_radius=exit_radius),
        CollisionFilter(category=BOID),
        Sight(index), Boid(),
    )


def create_predator(
    rng: random.Random, arena: Box, index: int, obstacles: Sequence[Box] = ()
) -> int:
    x, y = spawn_point(rng, arena, obstacles, PREDATOR_SIZE)
    return esper.create_entity(
        Position(x, y), AABB.centered(PREDATOR_SIZE, PREDATOR_SIZE), Velocity(PREDATOR_SPEED, 0.0),
        CollisionFilter(category=PREDATOR), Sight(index), Predator(),
    )


# -- the scene ----------------------------------------------------------------------------------


class BoidsScene:
    def __init__(self, app: _scaffold.App, boids: int, predators: int,
                 exit_radius: float = EXIT_RADIUS) -> None:
        self.app = app
        self.exit_radius = exit_radius
        self.rng = random.Random(app.args.seed)
        self.arena = Box(0, 0, app.window.width, app.window.height)
        pyglet.gl.glClearColor(*(c / 255 for c in BACKGROUND))

        self.spatial = SpatialProcessor(self.arena)
        self.proximity = ProximityProcessor(self.spatial)
        self.avoidance = AvoidanceProcessor(self.spatial)
        esper.add_processor(self.avoidance, priority=25)
        esper.add_processor(FlockProcessor(self.arena, self.avoidance), priority=20)
        esper.add_processor(PredatorProcessor(self.spatial, self.arena, self.avoidance),
                            priority=15)
        esper.add_processor(self.spatial, priority=10)
        esper.add_processor(self.proximity, priority=5)
        app.time_processors(self.spatial, self.proximity)
        app.count_events(PROXIMITY_ENTER, PROXIMITY_EXIT)
        # Set through the App, which keeps them (esper holds handlers weakly) and counts
        # their time in the HUD's events.
        app.on(PROXIMITY_EXIT, self.on_leave)
        app.on(PROXIMITY_ENTER, self.on_come_back)
        self.left_at: dict[tuple[int, int], int] = {}  # (watcher, other) -> frame it left
        self.flickers = 0
        self.frame = 0
        app.bind("+=", lambda: self.add_boids(BATCH_SIZE))
        app.bind("-", lambda: self.remove_boids(BATCH_SIZE))
        app.bind(" ", self.toggle_pause)

        self.batch = pyglet.graphics.Batch()
        # Q: the debug overlay. A frame casts a ray for a third of the flock (RAY_EVERY):
        # room for all of them, so that every ray of the last frame or so is drawn.
        self.overlay = app.debug_overlay(self.spatial, self.batch, order=10,
                                         casts=boids // RAY_EVERY + 50)
        self.triangles: dict[int, shapes.Triangle] = {}
        self.colors: dict[int, int] = {}  # boid -> neighbour count its colour shows
        self.boids: list[int] = []
        self.paused = False
        self.obstacles = [
            esper.component_for_entity(e, Obstacle).box for e in build_obstacles(self.arena)
        ]
        self.blocks = [
            shapes.Rectangle(*_xywh(box), color=OBSTACLE_COLOR, batch=self.batch)
            for box in self.obstacles
        ]
        for i in range(predators):
            e = create_predator(self.rng, self.arena, i, self.obstacles)
            self.triangles[e] = _arrow(12.0, PREDATOR_COLOR, self.batch)
        self.add_boids(boids)

    def add_boids(self, n: int) -> None:
        for _ in range(n):
            e = create_boid(self.rng, self.arena, len(self.boids), self.obstacles,
                            self.exit_radius)
            self.boids.append(e)
            self.triangles[e] = _arrow(7.0, NEIGHBOR_COLORS[0], self.batch)
            self.colors[e] = 0

    def remove_boids(self, n: int) -> None:
        for _ in range(min(n, len(self.boids))):
            e = self.boids.pop()
            esper.delete_entity(e)
            self.triangles.pop(e).delete()
            del self.colors[e]

    def on_leave(self, watcher: int, other: int) -> None:
        self.left_at[watcher, other] = self.frame

    def on_come_back(self, watcher: int, other: int) -> None:
        left = self.left_at.pop((watcher, other), None)
        if left is not None and self.frame - left <= FLICKER_FRAMES:
            self.flickers += 1

    def toggle_pause(self) -> None:
        self.paused = not self.paused

    def update(self, dt: float) -> None:
        if self.paused:
            return
        self.frame += 1
        if self.frame % FLICKER_FRAMES == 0:  # forget the neighbours long gone
            self.left_at = {
                k: f for k, f in self.left_at.items() if self.frame - f <= FLICKER_FRAMES
            }
        esper.process(dt)
        triangles, colors = self.triangles, self.colors
        for e, (pos, vel) in esper.get_components(Position, Velocity):
            tri = triangles.get(e)
            if tri is None:
                continue
            tri.position = (pos.x, pos.y)
            tri.rotation = -math.degrees(math.atan2(vel.vy, vel.vx))
        with_neighbors = 0
        total = 0
        for e, prox in esper.get_component(Proximity):
            count = len(prox.neighbors)
            total += count
            with_neighbors += count > 0
            shown = min(count, CROWDED)
            if colors.get(e) != shown and e in triangles:
                colors[e] = shown
                triangles[e].color = _scaffold.lerp_color(NEIGHBOR_COLORS, shown / CROWDED)
        self.app.stats.update(
            boids=len(self.boids), with_neighbors=with_neighbors,
            mean_neighbors=f"{total / max(len(self.boids), 1):.1f}",
            swerves=self.avoidance.swerves, bumps=self.avoidance.bumps, flickers=self.flickers,
        )

    def draw(self) -> None:
        self.batch.draw()

    def hud(self) -> str:
        stats = self.app.stats
        state = "   PAUSED" if self.paused else ""
        return (
            f"Boids: proximity{state}\n"
            f"{self.app.timing_text()}\n"
            f"boids {len(self.boids)}   with neighbours {stats.get('with_neighbors', 0)}"
            f"   mean neighbours {stats.get('mean_neighbors', 0)}"
            f"   flickers {self.flickers} (back within {FLICKER_FRAMES} frames)\n"
            "+/- boids   Q debug overlay   Space pause"
        )


def _arrow(length: float, color: tuple[int, int, int], batch: pyglet.graphics.Batch
           ) -> shapes.Triangle:
    """A triangle pointing along +x with its nose at its position (pyglet rotates shapes
    about their first vertex)."""
    return shapes.Triangle(0, 0, -length, length * 0.4, -length, -length * 0.4, color=color,
                           batch=batch)


def _xywh(box: Box) -> tuple[float, float, float, float]:
    return box.min_x, box.min_y, box.width, box.height


def create(argv: list[str] | None = None) -> BoidsScene:
    """Parse the command line, open the window and build the scene (tests start here)."""
    p = _scaffold.parser(__doc__)
    p.add_argument("--boids", type=int, default=400, help="default: 400")
    p.add_argument("--predators", type=int, default=3, help="default: 3")
    p.add_argument("--exit-radius", type=float, default=EXIT_RADIUS, metavar="R",
                   help=f"a neighbour leaves beyond R (default: {EXIT_RADIUS:g}; "
                   f"{VIEW_RADIUS:g}, the view radius, for no hysteresis)")
    args = _scaffold.parse_args(p, argv)
    if not args.exit_radius >= VIEW_RADIUS:
        p.error(f"--exit-radius must be at least the view radius, {VIEW_RADIUS:g}")
    app = _scaffold.App("boids", args, "ecs_spatial: boids")
    return BoidsScene(app, args.boids, args.predators, args.exit_radius)


def main(argv: list[str] | None = None) -> int:
    scene = create(argv)
    return scene.app.run(scene)


if __name__ == "__main__":
    sys.exit(main())
