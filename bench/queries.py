"""The query processors: the CullingProcessor and the ProximityProcessor against brute force.

Both processors read what a SpatialProcessor gives them: its index, and the ids that moved
or left the index this frame. Here a small feed plays that part (it applies the benchmark
world's moves to a ``QuadTree`` and reports them), so that the figures are the processors'
own cost, apart from the world's step and the index upkeep, which are identical for every
contender and timed by ``python -m bench frame``. Events are dispatched through esper to a handler
that counts them, for every contender alike.

Scenarios (the world of ``bench/world.py``: side ``40 * sqrt(N)``, boxes 4-16 wide, speeds up
to 2 per axis per frame):

- ``cull-pan``: a camera whose window sees about 1,000 entities pans over the world
  (8 units per frame on a circle). CullingProcessor (one pruned query per frame, diffed
  against ``visible``) against a brute-force scan of every box. The target: the same
  window over N = 200,000 must cost about what it costs over N = 1,000.
- ``cull-still``: the same window standing still while 10% of the entities move: the
  processor only looks at the moved ones.
- ``esper``: the whole stack through esper (the SpatialProcessor included, each processor
  timed on its own), to see the two processors beside the index upkeep they follow.
- ``proximity``: 10% of the entities are watchers with radius 50; 100%, 10% and 1% of the
  entities move. ProximityProcessor against re-querying every watcher every frame
  (``query_radius`` + diff: the index without incrementality) and against a brute-force
  scan (every watcher against every box). Above ``--brute-watchers`` watchers the brute
  force is timed on that many watchers and scaled linearly (its cost is exactly linear in
  the number of watchers); the table says so.

- ``nearest``: ``QuadTree.nearest(x, y)`` from random points of a still world of N boxes
  (the target: within 1.5 times ``query_point`` on the same tree, N = 100,000),
  beside ``query_point``, ``nearest`` for the 5 nearest, and a ``query_radius`` doubled
  from 16 until it finds something, its minimum taken (the same answer, the way to beat).
  Each repetition times every contender over the same points, in rotating order; the table
  gives the median over repetitions of the mean time per query, in microseconds.
- ``casts``: ``raycast_first`` against ``raycast``, and ``cast_box_first`` against
  ``cast_box`` (an 8 x 8 box), on 200 long rays across a still world of N boxes (the
  casts' target: the first hit costs what lies before it, not the segment's length). Each ray
  starts at a random point in empty space and runs one world side in a random direction;
  its first hit is then near its start (the median distance is printed). Both index
  classes, each on its own tree, timed as ``nearest`` is (median over repetitions of the
  mean per query, contenders in rotating order, the first repetition a warm-up).

Every contender's answers are checked against the others on the first frames. Figures:
median ms per frame over the timed frames, after warm-up frames. Culling runs each
contender in a pass of its own over the same frames (the world is deterministic): run right
after a brute-force scan of 200,000 boxes, the processor met a cache that scan had emptied
and measured up to 4 times slower than alone (0.42 against 0.10 ms for the still camera).
For proximity the garbage collector runs in full once per frame outside the timings
(``quiet_gc``); culling and the ``esper`` scenario leave it on, as a game would. Proximity
interleaves its contenders frame by frame in rotating order (with the processor always
first, the re-query contender ran on the caches it had warmed and looked 30% faster than
with the order rotated).

    python -m bench queries                      # everything, default sizes
    python -m bench queries --scenario proximity --n 10000 --frames 20
    python -m bench queries --scenario nearest --n 100000
    python -m bench queries --scenario casts --n 100000 --frames 10
    python -m bench queries --quick              # a smoke run on tiny worlds (seconds)
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence

import esper

from bench.baselines import within
from bench.harness import median_ms, rotated, time_in_turn
from bench.record import add_output_options, machine, markdown_row, markdown_table, saved
from bench.world import Step, World
from ecs_spatial import (
    AABB,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    VIEW_ENTER,
    VIEW_EXIT,
    Box,
    CullingProcessor,
    Position,
    Proximity,
    ProximityProcessor,
    PyQuadTree,
    QuadTree,
    SpatialProcessor,
)

RADIUS = 50.0
WATCHER_FRACTION = 0.1
#: A window that sees about 1,000 entities: the world holds N boxes per (40 sqrt N)^2.
WINDOW = 40.0 * math.sqrt(1000)
PAN_SPEED = 8.0


class Feed:
    """Plays the SpatialProcessor's part: the index, the frame count, and this frame's
    ``moved``, ``removed`` and ``filters_changed`` (no filters)."""

    def __init__(self, world: World) -> None:
        self.index = QuadTree(Box(0.0, 0.0, world.side, world.side))
        for e, box in world.boxes().items():
            self.index.insert(e, Box(*box))
        self.moved: set[int] = set()
        self.removed: set[int] = set()
        self.filters_changed: set[int] = set()
        self.filters: dict[int, tuple[int, int, int]] = {}  # no CollisionFilter here
        self.frame = 0  # the change feed's frame count (ecs_spatial.following)

    def apply(self, world: World, step: Step) -> None:
        self.frame += 1
        index = self.index
        for e in step.deleted:
            index.remove(e)
        move = index.move
        box = world.box
        for e in step.moved:
            move(e, Box(*box(e)))
        for e in step.created:
            index.insert(e, Box(*box(e)))
        self.moved = set(step.moved)
        self.moved.update(step.created)
        self.removed = set(step.deleted)


class Counter:
    """The event handler of every contender (bound methods: esper keeps weak references)."""

    def __init__(self) -> None:
        self.count = 0

    def one(self, *_: int) -> None:
        self.count += 1


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """The garbage collector off while proximity frames are timed, and run in full at the
    start of each frame instead, outside the timings. Left on, the debt of the world's own
    allocations (50,000 new boxes a frame at N = 50,000, all moving) landed on whichever
    contender allocated next (40 ms on one contender's 300 ms). Culling leaves it on: its
    figures are a tenth of a millisecond, and a full collection each frame emptied the
    caches and added half of that (0.15 against 0.10 ms for the still camera)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def ratio(theirs: float, ours: float) -> str:
    """``theirs / ours`` with two significant digits (10 = ours ten times faster)."""
    q = theirs / ours
    return f"{q:.2f}" if q < 1 else (f"{q:.1f}" if q < 10 else f"{q:.0f}")


# -- culling ----------------------------------------------------------------------------------


class Camera:
    """A window of side ``WINDOW`` whose centre circles the world's centre at PAN_SPEED."""

    def __init__(self, side: float, pan: bool) -> None:
        self.side = side
        self.amplitude = max(50.0, 0.4 * (side - WINDOW))
        self.t = 0.0
        self.pan = pan

    def view(self) -> Box:
        c = self.side * 0.5
        x = c + self.amplitude * math.cos(self.t) - WINDOW * 0.5
        y = c + self.amplitude * math.sin(self.t) - WINDOW * 0.5
        return Box(x, y, x + WINDOW, y + WINDOW)

    def advance(self) -> None:
        if self.pan:
            self.t += PAN_SPEED / self.amplitude


class BruteCulling:
    """Scan every box against the view, diff with the previous frame, dispatch sorted."""

    def __init__(self, feed: BoxFeed) -> None:
        self.feed = feed
        self.visible: set[int] = set()

    def process(self, view: Box) -> None:
        x0, y0, x1, y1 = view
        now: set[int] = set()
        add = now.add
        for e, (bx0, by0, bx1, by1) in self.feed.boxes.items():
            if bx0 <= x1 and x0 <= bx1 and by0 <= y1 and y0 <= by1:
                add(e)
        exits = sorted(self.visible - now)
        enters = sorted(now - self.visible)
        self.visible = now
        dispatch = esper.dispatch_event
        for e in exits:
            dispatch(VIEW_EXIT, e)
        for e in enters:
            dispatch(VIEW_ENTER, e)


class BoxFeed(Feed):
    """A Feed that also keeps a plain dict of boxes for the brute-force scans."""

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.boxes: dict[int, tuple[float, float, float, float]] = world.boxes()

    def apply(self, world: World, step: Step) -> None:
        super().apply(world, step)
        boxes = self.boxes
        box = world.box
        for e in step.deleted:
            del boxes[e]
        for e in step.moved:
            boxes[e] = box(e)
        for e in step.created:
            boxes[e] = box(e)


def run_culling(
    n: int, pan: bool, moving: float, frames: int, warmup: int, seed: int
) -> dict[str, float]:
    """One culling scenario, one pass per contender over the same frames; returns median ms
    per frame of each contender and the mean number visible."""
    result: dict[str, float] = {}
    reference: dict[int, frozenset[int]] = {}
    for who in ("ours", "brute"):
        world = World(n, seed=seed, moving=moving)
        feed = BoxFeed(world)
        camera = Camera(world.side, pan)
        counter = Counter()
        name = f"bench_culling_{n}_{pan}_{who}"
        esper.switch_world(name)
        try:
            esper.set_handler(VIEW_ENTER, counter.one)
            esper.set_handler(VIEW_EXIT, counter.one)
            ours = CullingProcessor(feed, camera.view)
            brute = BruteCulling(feed)
            times: list[float] = []
            visible = []
            perf = time.perf_counter
            last = warmup + frames - 1
            gc.collect()
            for frame in range(warmup + frames):
                step = world.step()
                feed.apply(world, step)
                camera.advance()
                view = camera.view()
                t0 = perf()
                if who == "ours":
                    ours.process()
                else:
                    brute.process(view)
                t = perf() - t0
                if frame >= warmup:
                    times.append(t)
                seen = frozenset(ours.visible if who == "ours" else brute.visible)
                visible.append(len(seen))
                if frame < warmup or frame == last:
                    if who == "ours":
                        reference[frame] = seen
                    elif reference[frame] != seen:
                        raise AssertionError(f"culling differs from brute force at frame {frame}")
            result[who] = median_ms(times)
            result["visible"] = statistics.mean(visible)
        finally:
            esper.event_registry.clear()
            esper.switch_world("default")
            esper.delete_world(name)
    return result


# -- proximity --------------------------------------------------------------------------------


class RequeryAll:
    """Every watcher re-queried every frame with ``query_radius``, diffed, dispatched sorted:
    what the index gives without the processor's incrementality."""

    def __init__(self, feed: Feed, watchers: list[int]) -> None:
        self.feed = feed
        self.watchers = watchers
        self.neighbors: dict[int, set[int]] = {w: set() for w in watchers}

    def process(self) -> None:
        index = self.feed.index
        query_radius = index.query_radius
        get = index.get
        exits = []
        enters = []
        for w in self.watchers:
            box = get(w)
            assert box is not None
            cx, cy = box.center
            now = set(query_radius(cx, cy, RADIUS))
            now.discard(w)
            old = self.neighbors[w]
            if now != old:
                for o in old - now:
                    exits.append((w, o))
                for o in now - old:
                    enters.append((w, o))
                self.neighbors[w] = now
        _dispatch_proximity(exits, enters)


def brute_neighbours(
    boxes: dict[int, tuple[float, float, float, float]], watchers: list[int]
) -> dict[int, set[int]]:
    """Every watcher against every box, with the distance rule of Box.distance_to_point."""
    items = list(boxes.items())
    out = {}
    r = RADIUS
    for w in watchers:
        wx0, wy0, wx1, wy1 = boxes[w]
        x = (wx0 + wx1) * 0.5
        y = (wy0 + wy1) * 0.5
        out[w] = {e for e, box in items if e != w and within(box, x, y, r)}
    return out


class BruteProximity:
    """Brute force with the same bookkeeping as RequeryAll; times ``sample`` watchers and
    scales to all of them when there are more (the scan is exactly linear in watchers)."""

    def __init__(self, feed: BoxFeed, watchers: list[int], sample: int) -> None:
        self.feed = feed
        self.watchers = watchers
        self.sample = watchers[:sample]
        self.scale = len(watchers) / len(self.sample)
        self.neighbors: dict[int, set[int]] = {w: set() for w in self.sample}

    def process(self) -> dict[int, set[int]]:
        now = brute_neighbours(self.feed.boxes, self.sample)
        exits: list[tuple[int, int]] = []
        enters: list[tuple[int, int]] = []
        for w, ns in now.items():
            old = self.neighbors[w]
            exits.extend((w, o) for o in old - ns)
            enters.extend((w, o) for o in ns - old)
            self.neighbors[w] = ns
        _dispatch_proximity(exits, enters)
        return now


def run_proximity(
    n: int,
    moving: float,
    frames: int,
    warmup: int,
    seed: int,
    brute_watchers: int,
    brute_frames: int,
) -> dict[str, float]:
    """One proximity scenario; returns median ms per frame of each contender."""
    world = World(n, seed=seed, moving=moving)
    feed = BoxFeed(world)
    rng = random.Random(seed + 17)
    watchers = sorted(rng.sample(range(1, n + 1), max(1, round(WATCHER_FRACTION * n))))
    counter = Counter()
    name = f"bench_proximity_{n}_{moving}"
    esper.switch_world(name)
    try:
        esper.set_handler(PROXIMITY_ENTER, counter.one)
        esper.set_handler(PROXIMITY_EXIT, counter.one)
        watcher_set = set(watchers)
        # Entity ids must match the world's: esper numbers entities 1, 2, ... as World does.
        for e in range(1, n + 1):
            made = (
                esper.create_entity(Proximity(RADIUS))
                if e in watcher_set
                else esper.create_entity()
            )
            assert made == e
        ours = ProximityProcessor(feed)
        requery = RequeryAll(feed, watchers)
        brute = BruteProximity(feed, watchers, min(brute_watchers, len(watchers)))
        components = {w: esper.component_for_entity(w, Proximity) for w in watchers}
        contenders: dict[str, Callable[[], object]] = {
            "ours": ours.process,
            "requery": requery.process,
            "brute": brute.process,
        }
        times: dict[str, list[float]] = {k: [] for k in contenders}
        without_brute = {k: f for k, f in contenders.items() if k != "brute"}
        gc.collect()
        last = warmup + frames - 1
        for frame in range(warmup + frames):
            gc.collect()  # see quiet_gc
            step = world.step()
            feed.apply(world, step)
            # The brute force costs the same every frame (it looks at everything): a few
            # frames measure it.
            active = contenders if frame < warmup + brute_frames else without_brute
            for who, (t, _) in time_in_turn(frame, active).items():
                if frame >= warmup:
                    times[who].append(t)
            if frame < warmup or frame == last:
                for w in watchers:
                    if set(components[w].neighbors) != requery.neighbors[w]:
                        raise AssertionError(f"watcher {w} differs from re-query at frame {frame}")
            if frame < warmup:
                for w, ns in brute.neighbors.items():
                    if ns != requery.neighbors[w]:
                        raise AssertionError(
                            f"watcher {w} differs from brute force at frame {frame}"
                        )
        result = {who: median_ms(ts) for who, ts in times.items()}
        result["brute"] *= brute.scale
        result["brute_scaled"] = brute.scale
        return result
    finally:
        esper.event_registry.clear()
        esper.switch_world("default")
        esper.delete_world(name)


# -- through esper ------------------------------------------------------------------------------


def run_esper(n: int, moving: float, frames: int, warmup: int, seed: int) -> dict[str, float]:
    """The whole stack in one esper world: N entities with Position and AABB, 10% of them
    watchers (radius 50), a camera panning as in ``cull-pan``; the world's movers assigned
    with ``Position.move_to`` (the user's movement, timed apart), then the SpatialProcessor,
    the CullingProcessor and the ProximityProcessor, each timed on its own."""
    world = World(n, seed=seed, moving=moving)
    rng = random.Random(seed + 17)
    watcher_set = set(rng.sample(range(1, n + 1), max(1, round(WATCHER_FRACTION * n))))
    name = f"bench_esper_{n}_{moving}"
    esper.switch_world(name)
    counter = Counter()
    try:
        for kind in (VIEW_ENTER, VIEW_EXIT, PROXIMITY_ENTER, PROXIMITY_EXIT):
            esper.set_handler(kind, counter.one)
        positions: dict[int, Position] = {}
        for e in world.ids():
            x0, y0, x1, y1 = world.box(e)
            pos = Position(x0, y0)
            components: list[object] = [pos, AABB(x1 - x0, y1 - y0)]
            if e in watcher_set:
                components.append(Proximity(RADIUS))
            made = esper.create_entity(*components)
            assert made == e
            positions[e] = pos
        spatial = SpatialProcessor(Box(0.0, 0.0, world.side, world.side))
        camera = Camera(world.side, True)
        culling = CullingProcessor(spatial, camera.view)
        proximity = ProximityProcessor(spatial)
        stages: list[tuple[str, Callable[[], object]]] = [
            ("spatial", spatial.process),
            ("culling", culling.process),
            ("proximity", proximity.process),
        ]
        times: dict[str, list[float]] = {"movement": [], **{k: [] for k, _ in stages}}
        perf = time.perf_counter
        xs = world.xs
        ys = world.ys
        gc.collect()
        for frame in range(warmup + frames):
            step = world.step()
            camera.advance()
            t0 = perf()
            for e in step.moved:
                positions[e].move_to(xs[e], ys[e])
            t = perf() - t0
            if frame >= warmup:
                times["movement"].append(t)
            for stage, run in stages:
                t0 = perf()
                run()
                t = perf() - t0
                if frame >= warmup:
                    times[stage].append(t)
        return {k: median_ms(ts) for k, ts in times.items()}
    finally:
        esper.event_registry.clear()
        esper.switch_world("default")
        esper.delete_world(name)


# -- nearest ----------------------------------------------------------------------------------


def radius_nearest(tree: QuadTree, x: float, y: float) -> list[int]:
    """The nearest id by ``query_radius`` alone: a radius doubled from 16 until it finds
    something, then the least (distance, id) among what it found (nothing beyond the radius
    can be nearer than what is within it)."""
    r = 16.0
    while True:
        found = tree.query_radius(x, y, r)
        if found:
            return [min(found, key=lambda e: (tree[e].distance_to_point(x, y), e))]
        r *= 2.0


def run_nearest(n: int, reps: int, seed: int, queries: int = 1000) -> dict[str, float]:
    """``nearest`` against ``query_point`` and the doubling radius on a still world of N boxes;
    returns the median over ``reps`` repetitions of the mean microseconds per query."""
    world = World(n, seed=seed)
    boxes = world.boxes()
    tree = QuadTree(Box(0.0, 0.0, world.side, world.side))
    tree.insert_many(list(boxes), list(boxes.values()))
    rng = random.Random(seed + 31)
    points = [(rng.uniform(0, world.side), rng.uniform(0, world.side)) for _ in range(queries)]
    for x, y in points[:10]:  # the answers, against brute force
        best = min(boxes, key=lambda e: (Box(*boxes[e]).distance_to_point(x, y), e))
        assert tree.nearest(x, y) == radius_nearest(tree, x, y) == [best], (x, y)
    contenders: list[tuple[str, Callable[[float, float], object]]] = [
        ("query_point", tree.query_point),
        ("nearest", tree.nearest),
        ("nearest5", lambda x, y: tree.nearest(x, y, 5)),
        ("radius", lambda x, y: radius_nearest(tree, x, y)),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in contenders}
    perf = time.perf_counter
    for rep in range(reps + 1):  # the first is a warm-up (it also builds the snapshots)
        for name, query in rotated(contenders, rep):
            t0 = perf()
            for x, y in points:
                query(x, y)
            if rep:
                times[name].append((perf() - t0) / queries)
    return {name: statistics.median(ts) * 1e6 for name, ts in times.items()}


# -- casts ------------------------------------------------------------------------------------

#: The side of the box that ``cast_box`` moves along each ray.
CAST_SIDE = 8.0


def run_casts(
    n: int, reps: int, seed: int, queries: int = 200
) -> dict[str, dict[str, float]]:
    """The full casts against the ``_first`` ones on long rays across a still world of N
    boxes, for each index class (the compiled one when it is built, and the reference):
    ``{class: {contender: us per query, "distance": median distance to the first hit}}``."""
    world = World(n, seed=seed)
    boxes = world.boxes()
    side = world.side
    classes: list[tuple[str, type[PyQuadTree]]] = [("reference", PyQuadTree)]
    if QuadTree is not PyQuadTree:
        classes.insert(0, ("compiled", QuadTree))
    results: dict[str, dict[str, float]] = {}
    rays: list[tuple[float, float, float, float]] = []
    for label, cls in classes:
        tree = cls(Box(0.0, 0.0, side, side))
        tree.insert_many(list(boxes), list(boxes.values()))
        rng = random.Random(seed + 47)
        while len(rays) < queries:  # from empty space, so that the first hit lies ahead
            x, y = rng.uniform(0, side), rng.uniform(0, side)
            if not tree.query((x, y, x + CAST_SIDE, y + CAST_SIDE)):
                angle = rng.uniform(0.0, 2.0 * math.pi)
                rays.append((x, y, x + side * math.cos(angle), y + side * math.sin(angle)))
        results[label] = time_casts(tree, rays, reps)
        results[label]["distance"] *= side
    return results


def time_casts(
    tree: PyQuadTree, rays: list[tuple[float, float, float, float]], reps: int
) -> dict[str, float]:
    """The four casts along ``rays`` on ``tree``, their answers checked against each other
    (the tests hold them to brute force): us per query, and the median ``t`` of the first
    hits as ``"distance"``."""
    movers = [
        (Box(x0, y0, x0 + CAST_SIDE, y0 + CAST_SIDE), x1 - x0, y1 - y0) for x0, y0, x1, y1 in rays
    ]
    fractions = []
    for ray, (box, dx, dy) in zip(rays, movers, strict=True):
        full = tree.raycast(*ray)
        first = tree.raycast_first(*ray)
        assert first == (full[0] if full else None), ray
        swept = tree.cast_box(box, dx, dy)
        assert tree.cast_box_first(box, dx, dy) == (swept[0] if swept else None), ray
        if first is not None:
            fractions.append(first[1])
    contenders: list[tuple[str, Callable[[], object]]] = [
        ("raycast", lambda: [tree.raycast(*r) for r in rays]),
        ("raycast_first", lambda: [tree.raycast_first(*r) for r in rays]),
        ("cast_box", lambda: [tree.cast_box(*m) for m in movers]),
        ("cast_box_first", lambda: [tree.cast_box_first(*m) for m in movers]),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in contenders}
    perf = time.perf_counter
    for rep in range(reps + 1):  # the first is a warm-up
        for name, run in rotated(contenders, rep):
            t0 = perf()
            run()
            if rep:
                times[name].append((perf() - t0) / len(rays))
    result = {name: statistics.median(ts) * 1e6 for name, ts in times.items()}
    result["distance"] = statistics.median(fractions) if fractions else math.nan
    return result


# -- main -------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench queries",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--scenario", choices=["all", "cull", "proximity", "esper", "nearest", "casts"],
        default="all",
    )
    parser.add_argument("--n", type=int, nargs="*", help="world sizes (default per scenario)")
    parser.add_argument("--moving", type=float, nargs="*", help="moving fractions for proximity")
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--brute-watchers",
        type=int,
        default=100,
        help="watchers the brute force is timed on (then scaled linearly to all)",
    )
    parser.add_argument(
        "--brute-frames", type=int, default=3, help="timed frames of the brute force"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: every scenario at N=300, 2 frames"
    )
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.moving, args.frames, args.warmup = [300], [0.1], 2, 1
        args.brute_frames, args.brute_watchers = 1, 10
    with saved(args, "queries", argv):
        _run(args)
    return 0


def _run(args: argparse.Namespace) -> None:
    print(f"{machine()}; median ms per frame over {args.frames} frames after {args.warmup} "
          "warm-up frames")
    if args.scenario in ("all", "cull"):
        ns = args.n or [1_000, 10_000, 50_000, 200_000]
        print(f"\n## culling: window {WINDOW:.0f} x {WINDOW:.0f} (sees ~1,000 entities)\n")
        print(markdown_table(["N", "camera", "movers", "visible", "CullingProcessor ms",
                              "brute scan ms", "brute / ours"]))
        summary = []
        # Panning: a fresh query each frame, so the cost follows what is visible. Still: only
        # the moved entities are looked at, so the cost follows what moved (100 of N here).
        for camera, pan, movers in (("pans", True, 100), ("still", False, 100), ("pans", True, 0)):
            first: float | None = None
            for n in ns:
                # 100 movers whatever N, to see what the world's size alone costs; then 10%
                # of N moving, the heavy case (the index churned by thousands of moves).
                moving = min(1.0, movers / n) if movers else 0.1
                r = run_culling(n, pan, moving, args.frames, args.warmup, args.seed)
                print(markdown_row([
                    f"{n:,}", camera, f"{round(moving * n):,}", f"{r['visible']:.0f}",
                    f"{r['ours']:.3f}", f"{r['brute']:.2f}", ratio(r["brute"], r["ours"]),
                ]), flush=True)
                if first is None:
                    first = r["ours"]
                elif n == ns[-1] and movers:
                    summary.append(
                        f"- camera {camera}, {movers} moving: N = {n:,} costs "
                        f"{r['ours'] / first:.2f} times N = {ns[0]:,}"
                    )
        print()
        print("\n".join(summary))
    if args.scenario in ("all", "proximity"):
        ns = args.n or [10_000, 50_000]
        movings = args.moving or [1.0, 0.1, 0.01]
        print(f"\n## proximity: {WATCHER_FRACTION:.0%} of N are watchers, radius {RADIUS:g}\n")
        print(markdown_table(["N", "moving", "ProximityProcessor ms", "re-query all ms",
                              "brute scan ms", "re-query / ours", "brute / ours"]))
        for n in ns:
            for moving in movings:
                with quiet_gc():
                    r = run_proximity(
                        n,
                        moving,
                        args.frames,
                        args.warmup,
                        args.seed,
                        args.brute_watchers,
                        args.brute_frames,
                    )
                scaled = r["brute_scaled"]
                note = "" if scaled == 1 else f" (x{scaled:.0f} from {args.brute_watchers})"
                print(markdown_row([
                    f"{n:,}", f"{moving:.0%}", f"{r['ours']:.2f}", f"{r['requery']:.2f}",
                    f"{r['brute']:.0f}{note}", ratio(r["requery"], r["ours"]),
                    ratio(r["brute"], r["ours"]),
                ]), flush=True)
    if args.scenario in ("all", "esper"):
        ns = args.n or [10_000, 50_000]
        print(
            "\n## through esper: SpatialProcessor, CullingProcessor (panning camera), "
            f"ProximityProcessor ({WATCHER_FRACTION:.0%} watchers, radius {RADIUS:g})\n"
        )
        print(markdown_table(["N", "moving", "movement ms", "SpatialProcessor ms", "Culling ms",
                              "Proximity ms"]))
        for n in ns:
            for moving in args.moving or [0.1, 0.01]:
                r = run_esper(n, moving, args.frames, args.warmup, args.seed)
                print(markdown_row([
                    f"{n:,}", f"{moving:.0%}", f"{r['movement']:.2f}", f"{r['spatial']:.2f}",
                    f"{r['culling']:.2f}", f"{r['proximity']:.2f}",
                ]), flush=True)
    if args.scenario in ("all", "nearest"):
        ns = args.n or [10_000, 100_000]
        print(
            f"\n## nearest: us per query from 1,000 random points, median of {args.frames} "
            "repetitions (a still world)\n"
        )
        print(markdown_table(["N", "query_point", "nearest", "nearest / query_point",
                              "nearest, k = 5", "doubling query_radius", "radius / nearest"]))
        for n in ns:
            r = run_nearest(n, args.frames, args.seed)
            print(markdown_row([
                f"{n:,}", f"{r['query_point']:.1f}", f"{r['nearest']:.1f}",
                f"{r['nearest'] / r['query_point']:.2f}", f"{r['nearest5']:.1f}",
                f"{r['radius']:.1f}", ratio(r["radius"], r["nearest"]),
            ]), flush=True)

    if args.scenario in ("all", "casts"):
        ns = args.n or [100_000]
        print(
            f"\n## casts: us per query over 200 rays one world side long (cast_box: an "
            f"{CAST_SIDE:g} x {CAST_SIDE:g} box), median of {args.frames} repetitions "
            "(a still world)\n"
        )
        print(markdown_table(["N", "index", "first hit at (median)", "raycast",
                              "raycast_first", "raycast / first", "cast_box",
                              "cast_box_first", "cast_box / first"]))
        for n in ns:
            for label, r in run_casts(n, args.frames, args.seed).items():
                print(markdown_row([
                    f"{n:,}", label, f"{r['distance']:.0f} of {40 * math.sqrt(n):,.0f}",
                    f"{r['raycast']:.1f}", f"{r['raycast_first']:.1f}",
                    ratio(r["raycast"], r["raycast_first"]), f"{r['cast_box']:.1f}",
                    f"{r['cast_box_first']:.1f}", ratio(r["cast_box"], r["cast_box_first"]),
                ]), flush=True)


def _dispatch_proximity(exits: list[tuple[int, int]], enters: list[tuple[int, int]]) -> None:
    """The proximity events of a frame, as the library orders them: exits, then enters, each
    sorted (the baselines' shared tail)."""
    exits.sort()
    enters.sort()
    dispatch = esper.dispatch_event
    for w, o in exits:
        dispatch(PROXIMITY_EXIT, w, o)
    for w, o in enters:
        dispatch(PROXIMITY_ENTER, w, o)
