"""Array entities at the speed of the index: a SpatialProcessor's frame over N esper
entities placed by rows of a ``BoxArray``, beside the index's own buffer path on the same
boxes.

One world per N: N agents placed uniformly on a torus of side ``40 * sqrt(N)`` (one agent
per 1,600 square units), boxes 10 wide with their min corner at the agent, velocities
uniform in [-2, 2) a component. A step moves a share of the agents (all, 1%, none) and
writes their rows (numpy where installed, else a Python loop over an ``array('d')``: not
timed either way); then what is timed, CPU time (``time.process_time``), the median of
``--steps`` steps after ``--warmup`` steps of the same share (enough for the processor's
choice of pair search, ``SpatialProcessor.pair_search``, to settle after the share changed:
it re-checks a close call after 30 frames):

- processor: ``esper.process()`` of a world whose only processor is a
  ``SpatialProcessor(wrap=Box(0, 0, side, side))``, collision enter and exit handlers that
  do nothing;
  its phases (``SpatialProcessor.timings``, wall clock) are printed below the table, to
  say where a share's frame goes;
- index: the compiled ``QuadTree(wrap=...)`` fed the same rows: ``move_many`` of all the
  ids and the rows as two buffers (``atomic=False``) and ``find_all_intersections_array``
  (what the processor's frame cannot beat: it does that work and the events).

The contenders run interleaved, step by step, on the same rows. On the first step the
processor's pairs must equal the index's or the run stops.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from array import array
from collections.abc import Sequence
from typing import Any

import esper

from bench import record
from bench.harness import target
from bench.record import markdown_table
from ecs_spatial import (
    COLLISION_ENTER,
    COLLISION_EXIT,
    NATIVE,
    Box,
    BoxArray,
    FrameTimings,
    QuadTree,
    SpatialProcessor,
)

np: Any
try:
    import numpy as np
except ImportError:  # the bench runs without numpy, its steps moved by a Python loop
    np = None

#: The shares of agents moving each step, by name.
SHARES = {"all moving": 1.0, "1% moving": 0.01, "none moving": 0.0}
SIZE = 10.0


def _nothing(a: int, b: int) -> None:
    """A collision handler that does nothing (module-level: esper holds it weakly)."""


class Flock:
    """The agents: positions, velocities and the rows of their boxes (a numpy ``(n, 4)``
    array, else an ``array('d')``), and ``step(share)``, which moves the first
    ``share * n`` agents and writes their rows."""

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.side = n, 40.0 * math.sqrt(n)
        rng = random.Random(seed)
        xy = [rng.uniform(0.0, self.side) for _ in range(2 * n)]
        v = [rng.uniform(-2.0, 2.0) for _ in range(2 * n)]
        if np is not None:
            self.pos = np.array(xy).reshape(n, 2)
            self.vel = np.array(v).reshape(n, 2)
            self.rows: Any = np.empty((n, 4))
        else:
            self.pos, self.vel = array("d", xy), array("d", v)
            self.rows = array("d", bytes(32 * n))
        self.ids = array("q", range(n))
        self.step(1.0)

    def step(self, share: float) -> None:
        k = round(share * self.n)
        side = self.side
        if np is not None:
            pos, rows = self.pos[:k], self.rows[:k]
            np.mod(pos + self.vel[:k], side, out=pos)
            rows[:, :2] = pos
            np.add(pos, SIZE, out=rows[:, 2:])
            return
        pos, vel, rows = self.pos, self.vel, self.rows
        for i in range(k):
            x = (pos[2 * i] + vel[2 * i]) % side
            y = (pos[2 * i + 1] + vel[2 * i + 1]) % side
            pos[2 * i], pos[2 * i + 1] = x, y
            rows[4 * i:4 * i + 4] = array("d", (x, y, x + SIZE, y + SIZE))

    def view(self) -> Any:
        """The rows as a flat memoryview of float64 (what ``move_many`` takes)."""
        return memoryview(self.rows).cast("B").cast("d")


class Processor:
    """A world of array entities and its SpatialProcessor on the torus."""

    name = "processor"

    def __init__(self, flock: Flock, world: str) -> None:
        self.world = world
        esper.switch_world(world)
        esper.set_handler(COLLISION_ENTER, _nothing)
        esper.set_handler(COLLISION_EXIT, _nothing)
        self.spatial = SpatialProcessor(wrap=Box(0.0, 0.0, flock.side, flock.side))
        esper.add_processor(self.spatial)
        boxes = BoxArray(flock.rows)
        self.first = esper.create_entity(boxes.row(0))
        for i in range(1, flock.n):
            esper.create_entity(boxes.row(i))
        esper.process()

    def frame(self) -> None:
        esper.switch_world(self.world)
        esper.process()

    def pairs(self) -> set[tuple[int, int]]:
        f = self.first
        return {(a - f, b - f) for a, b in self.spatial.pairs}


class Index:
    """The compiled index fed the rows as buffers."""

    name = "index"

    def __init__(self, flock: Flock) -> None:
        self.flock = flock
        self.tree = QuadTree(wrap=Box(0.0, 0.0, flock.side, flock.side))
        self.tree.insert_many(memoryview(flock.ids), flock.view())
        self.found: Any = None

    def frame(self) -> None:
        self.tree.move_many(memoryview(self.flock.ids), self.flock.view(), atomic=False)
        self.found = self.tree.find_all_intersections_array()

    def pairs(self) -> set[tuple[int, int]]:
        flat = array("q")
        flat.frombytes(bytes(self.found))
        return set(zip(flat[0::2], flat[1::2], strict=True))


def measure(n: int, steps: int, warmup: int, alone: bool = False) -> dict[str, dict[str, float]]:
    """Each share's median ms a step for each contender, with the table printed; with
    ``alone``, the processor only (no index frame between two of its frames to take the
    caches: what a share's frame costs warm)."""
    flock = Flock(n, seed=n)
    world = f"bench_arrays_{n}"
    contenders: list[Any] = [Processor(flock, world)]
    if NATIVE and not alone:
        contenders.append(Index(flock))
    try:
        got: dict[str, dict[str, float]] = {}
        checked = False
        phases: dict[str, list[FrameTimings]] = {}
        for share_name, share in SHARES.items():
            times: dict[str, list[float]] = {c.name: [] for c in contenders}
            phases[share_name] = []
            for step in range(steps + warmup):
                flock.step(share)
                for c in contenders:
                    t0 = time.process_time()
                    c.frame()
                    if step >= warmup:
                        times[c.name].append(time.process_time() - t0)
                if step >= warmup:
                    phases[share_name].append(contenders[0].spatial.timings)
                if not checked and len(contenders) > 1:
                    have, want = (c.pairs() for c in contenders)
                    if have != want:
                        raise AssertionError(
                            f"the processor has {len(have)} pairs, the index {len(want)}")
                    checked = True
            got[share_name] = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    finally:
        esper.switch_world("default")
        esper.delete_world(world)
    print(f"\n## N = {n:,}, side {flock.side:,.0f}, boxes {SIZE:g} wide, torus; ms a step, "
          f"median of {steps}{'' if np is not None else ' (rows written without numpy)'}"
          f"{', the processor alone' if alone else ''}\n")
    names = [c.name for c in contenders]
    rows = []
    for share_name, ms in got.items():
        ratio = ms["processor"] / ms["index"] if "index" in ms else math.nan
        rows.append([share_name, *(f"{ms[k]:.2f}" for k in names),
                     "" if math.isnan(ratio) else f"{ratio:.2f}",
                     f"{ms['processor'] / got['all moving']['processor']:.3f}"])
    print(markdown_table(["step", *(f"{k} ms" for k in names), "processor / index",
                         "/ all moving"], rows, right=True))
    print("\nThe processor's phases (`SpatialProcessor.timings`, wall clock, median ms):\n")
    print(markdown_table(["step", *FrameTimings._fields], [
        [share_name, *(f"{statistics.median(getattr(t, f) for t in took) * 1e3:.3f}"
                       for f in FrameTimings._fields)]
        for share_name, took in phases.items()], right=True))
    if not NATIVE:
        print("\nSkipped: the index (the compiled core is not in use).")
    elif alone:
        print("\nSkipped: the index (--alone).")
    return got


def main(argv: Sequence[str] | None = None) -> int:
    parser = record.command("arrays", __doc__)
    parser.add_argument("--sizes", default="100000", help="the Ns, comma-separated")
    parser.add_argument("--steps", type=int, default=15, help="timed steps per share")
    parser.add_argument("--warmup", type=int, default=40, help="untimed steps per share")
    parser.add_argument("--alone", action="store_true",
                        help="the processor only, no index frames between its own (warm caches)")
    args = record.parse(parser, argv, quick={"sizes": "2000", "steps": 2, "warmup": 2})
    with record.saved(args):
        print(record.machine())
        got = {n: measure(n, args.steps, args.warmup, args.alone)
               for n in map(int, args.sizes.split(","))}
        mid = got.get(100_000)

        def value(share: str, who: str) -> float | None:
            return mid[share].get(who) if mid else None

        all_p, one_p, none_p = (value(s, "processor") for s in SHARES)
        all_i = value("all moving", "index")
        why = "N = 100,000 not measured"
        record.print_targets([
            target("N = 100,000, all moving: processor ms a frame", all_p, 16.7, why_not=why),
            target("N = 100,000, all moving: processor / index",
                   all_p / all_i if all_p and all_i else None, 2.0,
                   why_not="--alone" if args.alone else why if NATIVE
                   else "the compiled core is not in use"),
            target("N = 100,000: 1% moving / all moving",
                   one_p / all_p if one_p is not None and all_p else None, 0.05, why_not=why),
            target("N = 100,000: none moving / all moving",
                   none_p / all_p if none_p is not None and all_p else None, 0.05,
                   why_not=why),
        ], args.quick)
    return 0
