"""The queries: the culling and proximity processors against brute force, nearest, the
casts.

Every part runs through the one frame loop; ``--parts`` (default: all):

- ``cull``: a camera that sees about 1,000 entities pans over the world or stands still,
  with 100 entities moving whatever N, then 10% of N: the CullingProcessor against a
  brute-force scan, both diffing and dispatching the changes, each in a pass of its own over
  the same frames (so that neither meets a cache the other emptied). The panning window
  should cost about as much over 200,000 entities as over 1,000: the lines under the table.
- ``proximity``: 10% of the entities watch their neighbours within radius 50: the
  ProximityProcessor against re-querying every watcher (``query_radius`` and a diff) and a
  brute-force scan timed on ``--brute-watchers`` and scaled to all of them.
- ``nearest``: ``nearest(x, y)`` from 1,000 points a frame, beside ``query_point``, the 5
  nearest and a ``query_radius`` doubled until it finds something.
- ``casts``: ``raycast_first`` and ``cast_box_first`` against the full casts along 200 rays
  one world side long from empty space, both index classes: the first hit should cost what
  lies before it, not the segment's length.

The processors read a small ``Feed`` that plays the SpatialProcessor's part (timed apart, as
their ``update``), so that their ``answer`` is their own cost.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import esper

import ecs_spatial as es
from bench import record
from bench.harness import Ask, BoxT, Contender, Figures, in_radius, in_view, run, target
from bench.ours import InEsper, nothing_of
from bench.record import markdown_row, markdown_table
from bench.world import Step, World
from ecs_spatial import Box, PyQuadTree, QuadTree

RADIUS = 50.0
#: A window that sees about 1,000 entities: the world holds N boxes per (40 sqrt N)^2.
WINDOW = 40.0 * math.sqrt(1000)
#: The side of the box that ``cast_box`` moves along each ray.
CAST_SIDE = 8.0


def ratio(theirs: float, ours: float) -> str:
    """``theirs / ours`` with two significant digits (10: ours ten times faster)."""
    q = theirs / ours
    return f"{q:.2f}" if q < 1 else (f"{q:.1f}" if q < 10 else f"{q:.0f}")


_shared: dict[tuple[Any, ...], Any] = {}


def shared(key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """One object per key (which holds the world's id) for the contenders of a run: the
    feed or the tree they all read, as a game has one."""
    if key not in _shared:
        _shared[key] = make()
    return _shared[key]


class Feed:
    """Plays the SpatialProcessor's part: the index, the frame count, this frame's ``moved``,
    ``removed`` and ``filters_changed`` (no filters), and the boxes for the brute scans."""

    def __init__(self, world: World) -> None:
        self.index = tree_of(QuadTree, world)
        self.boxes = world.boxes()
        self.moved: set[int] = set()
        self.removed: set[int] = set()
        self.filters_changed: set[int] = set()
        self.filters: dict[int, tuple[int, int, int]] = {}
        self.frame = 0

    def apply(self, world: World, step: Step) -> None:
        self.frame += 1
        index, boxes = self.index, self.boxes
        for e in step.deleted:
            index.remove(e)
            del boxes[e]
        for e in step.moved:
            boxes[e] = box = world.box(e)
            index.move(e, Box(*box))
        for e in step.created:
            boxes[e] = box = world.box(e)
            index.insert(e, Box(*box))
        self.moved = set(step.moved)
        self.moved.update(step.created)
        self.removed = set(step.deleted)


class Processor(InEsper):
    """A query processor or its baseline, in an esper world of its own whose events go to
    handlers that do nothing, on the run's one ``Feed``: ``update`` applies the frame to it
    (the first contender of the frame), ``answer`` is the processor's own work."""

    def build(self, world: World, ask: Ask) -> None:
        self.enter()
        for kind in (es.VIEW_ENTER, es.VIEW_EXIT, es.PROXIMITY_ENTER, es.PROXIMITY_EXIT):
            esper.set_handler(kind, nothing_of)
        self.key = ("feed", id(world))
        self.feed: Feed = shared(self.key, lambda: Feed(world))
        self.setup(world, ask)

    def setup(self, world: World, ask: Ask) -> None:
        raise NotImplementedError

    def update(self, world: World, step: Step) -> None:
        self.enter()
        if self.feed.frame < world.frame:
            self.feed.apply(world, step)

    def close(self) -> None:
        _shared.pop(self.key, None)
        super().close()


def _dispatch(events: list[tuple[str, list[Any]]]) -> None:
    """A frame's events as the library orders them: each kind's list sorted, in turn."""
    dispatch = esper.dispatch_event
    for kind, keys in events:
        keys.sort()
        for key in keys:
            dispatch(kind, *(key if isinstance(key, tuple) else (key,)))


class Culling(Processor):
    """The CullingProcessor, or (``brute``) a scan of every box against the view, diffed
    with the previous frame's and dispatched sorted. The view is the frame's question."""

    def __init__(self, brute: bool) -> None:
        self.brute = brute
        self.name = "brute scan" if brute else "CullingProcessor"

    def setup(self, world: World, ask: Ask) -> None:
        self.view: BoxT = (0.0, 0.0, 0.0, 0.0)
        self.visible: set[int] = set()
        self.processor = es.CullingProcessor(self.feed, lambda: Box(*self.view))

    def answer(self, questions: list[Any]) -> Any:
        self.view = questions[0]
        if not self.brute:
            self.processor.process()
            return [self.processor.visible]
        now = set(in_view(self.feed.boxes, self.view))
        _dispatch([(es.VIEW_EXIT, list(self.visible - now)),
                   (es.VIEW_ENTER, list(now - self.visible))])
        self.visible = now
        return [now]


class Near(Processor):
    """Every watcher's neighbours within the radius (the frame's questions: the watchers):
    the ProximityProcessor (``how="processor"``), every watcher re-queried with
    ``query_radius`` and diffed (``"requery"``), or every box scanned for the first
    ``sample`` watchers (``"brute"``, its figures scaled to all of them); each dispatches the
    changes sorted."""

    def __init__(self, how: str, sample: int = 0, frames: int | None = None) -> None:
        self.how, self.sample, self.limit = how, sample, frames
        self.name = {"processor": "ProximityProcessor", "requery": "re-query all",
                     "brute": "brute scan"}[how]

    def setup(self, world: World, ask: Ask) -> None:
        self.radius = ask.radius
        watchers = ask.questions(world)
        if self.how == "brute":
            self.scale = len(watchers) / min(self.sample, len(watchers))
            watchers = watchers[:self.sample]
        self.neighbours: dict[int, set[int]] = {w: set() for w in watchers}
        if self.how == "processor":
            chosen = set(watchers)
            for e in range(1, world.n + 1):  # esper numbers entities 1, 2, ... as World does
                made = esper.create_entity(*([es.Proximity(self.radius)] if e in chosen else []))
                assert made == e
            self.processor = es.ProximityProcessor(self.feed)
            self.components = {w: esper.component_for_entity(w, es.Proximity) for w in watchers}

    def answer(self, questions: list[Any]) -> Any:
        if self.how == "processor":
            self.processor.process()
            return [self.components[w].neighbors for w in questions]
        r, boxes, index = self.radius, self.feed.boxes, self.feed.index
        exits: list[Any] = []
        enters: list[Any] = []
        for w, old in self.neighbours.items():
            x0, y0, x1, y1 = boxes[w]
            x, y = (x0 + x1) * 0.5, (y0 + y1) * 0.5
            if self.how == "requery":
                now = set(index.query_radius(x, y, r))
            else:
                now = set(in_radius(boxes, x, y, r))
            now.discard(w)
            if now != old:
                exits += [(w, o) for o in old - now]
                enters += [(w, o) for o in now - old]
                self.neighbours[w] = now
        _dispatch([(es.PROXIMITY_EXIT, exits), (es.PROXIMITY_ENTER, enters)])
        return list(self.neighbours.values())


class Method(Contender):
    """A query method (its name, or a function of the tree) of the run's tree of ``cls``
    over a still world, called once per question with the question's values and ``more``;
    ``full``: it answers a list whose head is what the others answer."""

    def __init__(self, name: str, method: str | Callable[..., Any], cls: Any = QuadTree, *,
                 more: tuple[Any, ...] = (), exact: bool | None = True, full: bool = False
                 ) -> None:
        self.name, self.method, self.cls, self.more = name, method, cls, more
        self.exact, self.full = exact, full

    def build(self, world: World, ask: Ask) -> None:
        self.key = (self.cls, id(world))
        self.tree = shared(self.key, partial(tree_of, self.cls, world))

    def update(self, world: World, step: Step) -> None:
        assert not (step.moved or step.created or step.deleted), "a still world"

    def answer(self, questions: list[Any]) -> Any:
        m, more = self.method, self.more
        call = getattr(self.tree, m) if isinstance(m, str) else partial(m, self.tree)
        if more:
            return [call(*q, *more) for q in questions]
        if len(questions[0]) == 2:
            return [call(x, y) for x, y in questions]
        return [call(*q) for q in questions]

    def close(self) -> None:
        _shared.pop(self.key, None)

    def normal(self, raw: Any) -> list[Any]:
        return [a[0] if a else None for a in raw] if self.full else super().normal(raw)


def tree_of(cls: Any, world: World) -> Any:
    """A tree of ``cls`` holding the world's boxes."""
    tree = cls((0.0, 0.0, world.side, world.side))
    boxes = world.boxes()
    tree.insert_many(boxes, boxes.values())
    return tree


def radius_nearest(tree: Any, x: float, y: float) -> list[int]:
    """The nearest id by ``query_radius`` alone: a radius doubled from 16 until it finds
    something, then the least (distance, id) among what it found (nothing beyond the radius
    can be nearer than what is within it)."""
    r = 16.0
    while not (found := tree.query_radius(x, y, r)):
        r *= 2.0
    return [min(found, key=lambda e: (tree[e].distance_to_point(x, y), e))]


# -- the parts ----------------------------------------------------------------------------------


def cull_part(args: argparse.Namespace) -> list[list[str]]:
    ns = args.n or [1_000, 10_000, 50_000, 200_000]
    print(markdown_table(["N", "camera", "movers", "visible", "CullingProcessor ms",
                          "brute scan ms", "brute / ours"]))
    summary = []
    for camera, pan, movers in (("pans", True, 100), ("still", False, 100), ("pans", True, 0)):
        ask = Ask("view", partial(lambda w, pan: [w.camera(WINDOW, pan)], pan=pan))
        first: Figures | None = None
        for n in ns:
            moving = min(1.0, movers / n) if movers else 0.1
            ours, brute = (run("cull", World(n, seed=args.seed, moving=moving), [c], ask,
                               frames=args.frames, warmup=args.warmup)
                           for c in (Culling(brute=False), Culling(brute=True)))
            o, b = ours.contenders[0], brute.contenders[0]
            print(markdown_row([f"{n:,}", camera, f"{round(moving * n):,}", f"{ours.answers:.0f}",
                                f"{o.ms('answer'):.3f}", f"{b.ms('answer'):.2f}",
                                ratio(b.ms("answer"), o.ms("answer"))]), flush=True)
            first = first or o
            if n == ns[-1] and movers and len(ns) > 1:
                summary.append(f"- camera {camera}, {movers} moving: N = {n:,} costs "
                               f"{o.ms('answer') / first.ms('answer'):.2f} times N = {ns[0]:,}")
    print("\n" + "\n".join(summary))
    return []


def proximity_part(args: argparse.Namespace) -> list[list[str]]:
    print(markdown_table(["N", "moving", "ProximityProcessor ms", "re-query all ms",
                          "brute scan ms", "re-query / ours", "brute / ours"]))
    for n in args.n or [10_000, 50_000]:
        for moving in args.moving:
            r = run("proximity", World(n, seed=args.seed, moving=moving), [
                Near("processor"), Near("requery"),
                Near("brute", args.brute_watchers, args.brute_frames),
            ], Ask("near", lambda w: w.watchers(0.1), RADIUS), frames=args.frames,
                warmup=args.warmup, collect=True, quiet=True)
            ours, requery, brute = (c.ms("answer") for c in r.contenders)
            scale = r.contenders[2].scale
            note = "" if scale == 1 else f" (x{scale:.0f} from {args.brute_watchers})"
            print(markdown_row([f"{n:,}", f"{moving:.0%}", f"{ours:.2f}", f"{requery:.2f}",
                                f"{brute:.0f}{note}", ratio(requery, ours), ratio(brute, ours)]),
                  flush=True)
    return []


def nearest_part(args: argparse.Namespace) -> list[list[str]]:
    print(markdown_table(["N", "query_point", "nearest", "nearest / query_point",
                          "nearest, k = 5", "doubling query_radius", "radius / nearest"]))
    rows = []
    for n in args.n or [10_000, 100_000]:
        world = World(n, seed=args.seed, moving=0.0)
        points = world.points(1000)  # the same every frame
        r = run("nearest", world, [
            Method("query_point", "query_point", exact=None),
            Method("nearest", "nearest"),
            Method("nearest5", "nearest", more=(5,), exact=None),
            Method("radius", radius_nearest),
        ], Ask.fixed("nearest", points), frames=args.frames, warmup=1)
        us = {c.name: c.ms("answer") for c in r.contenders}  # ms for 1,000: us each
        print(markdown_row([f"{n:,}", f"{us['query_point']:.1f}", f"{us['nearest']:.1f}",
                            f"{r['nearest'].ratio(r['query_point'], 'answer'):.2f}",
                            f"{us['nearest5']:.1f}", f"{us['radius']:.1f}",
                            ratio(us["radius"], us["nearest"])]), flush=True)
        rows = [target(f"N = {n:,}: nearest / query_point",
                       r["nearest"].ratio(r["query_point"], "answer"), 1.5)]
    return rows


def rays(world: World, tree: Any, count: int = 200) -> list[BoxT]:
    """``count`` rays, each from a random point in empty space of ``tree`` (so that its first
    hit lies ahead) one world side long in a random direction."""
    rng = random.Random(world.seed + 47)
    side = world.side
    out: list[BoxT] = []
    while len(out) < count:
        x, y = rng.uniform(0, side), rng.uniform(0, side)
        if not tree.query((x, y, x + CAST_SIDE, y + CAST_SIDE)):
            angle = rng.uniform(0.0, 2.0 * math.pi)
            out.append((x, y, x + side * math.cos(angle), y + side * math.sin(angle)))
    return out


def casts_part(args: argparse.Namespace) -> list[list[str]]:
    print(markdown_table(["N", "index", "first hit at (median)", "raycast", "raycast_first",
                          "raycast / first", "cast_box", "cast_box_first", "cast_box / first"]))
    classes = [("compiled", QuadTree)] if QuadTree is not PyQuadTree else []
    classes.append(("reference", PyQuadTree))
    for n in args.n or [100_000]:
        world = World(n, seed=args.seed, moving=0.0)
        tree = tree_of(QuadTree, world)
        segments = rays(world, tree)
        movers = [(Box(x0, y0, x0 + CAST_SIDE, y0 + CAST_SIDE), x1 - x0, y1 - y0)
                  for x0, y0, x1, y1 in segments]
        us: dict[str, float] = {}
        for questions, names in ((segments, ("raycast", "raycast_first")),
                                 (movers, ("cast_box", "cast_box_first"))):
            cs = [Method(f"{label} {name}", name, cls, full=not name.endswith("first"))
                  for label, cls in classes for name in names]
            r = run("casts", world, cs, Ask.fixed("cast", questions),
                    frames=args.frames, warmup=1)
            us.update((c.name, c.ms("answer") * 1e3 / len(questions)) for c in r.contenders)
        hits = [hit[1] for s in segments if (hit := tree.raycast_first(*s))]
        at = statistics.median(hits) * world.side if hits else math.nan
        for label, _ in classes:
            ray, ray1, box, box1 = (us[f"{label} {name}"] for name in (
                "raycast", "raycast_first", "cast_box", "cast_box_first"))
            print(markdown_row([f"{n:,}", label, f"{at:.0f} of {world.side:,.0f}", f"{ray:.1f}",
                                f"{ray1:.1f}", ratio(ray, ray1), f"{box:.1f}", f"{box1:.1f}",
                                ratio(box, box1)]), flush=True)
    return []


PARTS: dict[str, Callable[[argparse.Namespace], list[list[str]]]] = {
    "cull": cull_part, "proximity": proximity_part, "nearest": nearest_part, "casts": casts_part,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = record.command("queries", __doc__, parts=list(PARTS),
                            quick="a smoke run: every part at N=300, 2 frames")
    parser.add_argument("--n", type=int, nargs="*", help="world sizes (default per part)")
    parser.add_argument("--moving", type=float, nargs="*", default=[1.0, 0.1, 0.01],
                        help="moving fractions for proximity")
    parser.add_argument("--frames", type=int, default=30, help="timed frames")
    parser.add_argument("--warmup", type=int, default=3, help="frames before the timed ones")
    parser.add_argument("--seed", type=int, default=1, help="the world's seed")
    parser.add_argument("--brute-watchers", type=int, default=100,
                        help="watchers the brute force is timed on (then scaled to all)")
    parser.add_argument("--brute-frames", type=int, default=3,
                        help="timed frames of the brute force")
    args = record.parse(parser, argv, quick={
        "n": [300], "moving": [0.1], "frames": 2, "warmup": 1, "brute_frames": 1,
        "brute_watchers": 10})
    with record.saved(args):
        print(f"{record.machine()}; median ms per frame over {args.frames} frames after "
              f"{args.warmup} of warm-up")
        record.print_parts(args, PARTS, args)
    return 0
