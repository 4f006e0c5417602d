"""Agent simulations at scale: every agent's neighbours within r, all agents moving,
beside what agent modellers use, scipy's ``cKDTree`` and mesa's ``ContinuousSpace``.

One world per N shared by every contender: N agents placed uniformly in a square of side
``40 * sqrt(N)`` (one agent per 1,600 square units at every N), velocities uniform in
[-2, 2) a component, moved each step by numpy and wrapped modulo the side (not timed). The
question, r = 10: every pair of agents within distance r. A contender's step is its update
(catching up with the new positions) and its query, CPU time (``time.process_time``), the
median of ``--steps`` steps after one of warm-up; mesa (N <= ``--mesa-n`` only) answers
for ``--mesa-sample`` agents, its queries' time scaled to all. What each contender answers
is listed below (a missing package skips its rows). On the first step every contender's
pairs must equal those of the first exact one (scipy, plain, else ours) or the run stops;
a torus contender's pairs beyond r in the plain world (across a seam) are counted instead,
and must equal the first exact torus contender's (scipy's, else ours). The index's memory is
``tree.__sizeof__()`` per agent after the steps.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import math
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

import esper

from bench import record
from bench.harness import target
from bench.record import markdown_table
from ecs_spatial import NATIVE, Box, BoxArray, NeighbourArrays, QuadTree, SpatialProcessor


def _module(name: str) -> Any:
    """The module, or None where it is not installed (the bench extra)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


np, spatial, mesa, space = (_module(m) for m in ("numpy", "scipy.spatial", "mesa", "mesa.space"))
#: mesa 3.5's array-backed space (its newest, experimental; none before mesa 3.1).
arrays_space = _module("mesa.experimental.continuous_space")
#: The peers missing here, and why.
MISSING = {name: f"{name} not installed" for name, m in (("scipy", spatial), ("mesa", space))
           if m is None}
SKIPPED = [*MISSING.values(), *([] if NATIVE else ["the compiled core is not in use"])]
R = 10.0
#: What each contender answers, printed above the tables.
ANSWERS = {
    "scipy, torus": "cKDTree(pos, boxsize=side) rebuilt, query_pairs(r): pairs within r on the "
    "torus (the targets' baseline)",
    "scipy, plain": "cKDTree(pos) rebuilt, query_pairs(r): pairs within r",
    "ours, pairs, torus": "the compiled QuadTree(wrap=Box(0, 0, side, side)): move_many(ids, "
    "boxes of side r centred on the agents, atomic=False), find_all_intersections_array "
    "(|dx| <= r and |dy| <= r on the torus, a superset), the pairs within r by the "
    "minimum-image distance kept by numpy, and the pairs that entered and left since the "
    "last step (numpy's setdiff1d of the sorted pair codes), all timed: pairs within r on "
    "the torus, with enter and exit as arrays",
    "ours, processor, torus": "esper entities placed by the rows of a BoxArray of the "
    "positions (BoxArray.of_positions(pos, size=(0, 0)): points, read in place) in a "
    "SpatialProcessor(wrap=Box(0, 0, side, side), events=()) and a NeighbourArrays(spatial, "
    "r): the array rebound to each step's positions (the step makes a new array), "
    "esper.process(), "
    "then in_rows(flock), all timed: every agent's neighbours within r on the torus as CSR "
    "arrays in rows (each pair twice), with the pairs that entered and exited as arrays",
    "ours, pairs": "the same in a plain world (QuadTree(bounds)): pairs within r, with enter "
    "and exit as arrays",
    "ours, radius": "the compiled QuadTree of points (boxes of size 0): move_many, "
    "query_radius_many(pos, r): each agent's neighbours within r (itself included) as CSR "
    "arrays, each pair twice",
    "mesa, plain": "ContinuousSpace, move_agent per agent, get_neighbors(pos, r) for a sample "
    "of agents, the queries' time scaled to all (x N / sample)",
    "mesa, torus": "the same with torus=True",
    "mesa arrays, plain": "mesa.experimental.continuous_space.ContinuousSpace (mesa 3.5, "
    "positions in one numpy array): the array written from the positions, "
    "get_neighbors_in_radius(r) of a sample of agents (a distance to every agent each), the "
    "queries' time scaled to all",
    "mesa arrays, torus": "the same with torus=True",
}
LEGEND = "What each contender answers:\n\n" + "\n".join(
    f"- {name}: {text}" for name, text in ANSWERS.items())


class Agents:
    """A contender: set up on the first positions (untimed), then each step ``update`` and
    ``query`` (both timed, ``query`` times ``scale``); ``pairs`` of an answer, untimed: every
    pair of two agents once as codes ``i * n + j``, i < j, sorted."""

    name, torus, scale = "?", False, 1.0
    sample: Any = None  # the agents whose neighbours it answers, if not all

    def __init__(self, pos: Any, side: float) -> None:
        self.n, self.side = len(pos), side

    def update(self, pos: Any) -> None:
        raise NotImplementedError

    def query(self) -> Any:
        raise NotImplementedError

    def memory(self) -> float:
        """Its index's bytes per agent, nan if it keeps none between steps."""
        return math.nan

    def pairs(self, answer: Any) -> Any:
        a = np.asarray(answer, dtype=np.int64).reshape(-1, 2)
        a = a[a[:, 0] != a[:, 1]]
        return np.unique(np.minimum(a[:, 0], a[:, 1]) * self.n + np.maximum(a[:, 0], a[:, 1]))


class Scipy(Agents):
    def __init__(self, pos: Any, side: float, torus: bool) -> None:
        super().__init__(pos, side)
        self.name, self.torus = f"scipy, {'torus' if torus else 'plain'}", torus

    def update(self, pos: Any) -> None:
        self.tree = spatial.cKDTree(pos, boxsize=self.side if self.torus else None)

    def query(self) -> Any:
        return self.tree.query_pairs(R, output_type="ndarray")


class Ours(Agents):
    def __init__(self, pos: Any, side: float, radius: bool, torus: bool = False) -> None:
        super().__init__(pos, side)
        self.name = f"ours, {'radius' if radius else 'pairs'}{', torus' if torus else ''}"
        self.radius, self.torus = radius, torus
        self.ids = np.arange(self.n, dtype=np.int64)
        world = Box(0.0, 0.0, side, side)
        self.tree = QuadTree(wrap=world) if torus else QuadTree(world)
        self.rows = np.empty((self.n, 4))
        self.tree.insert_many(self.ids, self.boxes(pos))
        self.codes = np.empty(0, dtype=np.int64)  # last step's pairs within r, as i * n + j
        self.entered = self.exited = self.codes

    def memory(self) -> float:
        return float(self.tree.__sizeof__()) / self.n

    def boxes(self, pos: Any) -> Any:
        h = 0.0 if self.radius else R / 2
        np.subtract(pos, h, out=self.rows[:, :2])
        np.add(pos, h, out=self.rows[:, 2:])
        return self.rows

    def update(self, pos: Any) -> None:
        self.pos = pos
        self.tree.move_many(self.ids, self.boxes(pos), atomic=False)

    def query(self) -> Any:
        if self.radius:
            return self.tree.query_radius_many(self.pos, R)
        p = np.frombuffer(self.tree.find_all_intersections_array(), dtype=np.int64).reshape(-1, 2)
        d = self.pos[p[:, 0]] - self.pos[p[:, 1]]
        if self.torus:
            d -= self.side * np.round(d / self.side)
        near = p[np.einsum("ij,ij->i", d, d) <= R * R]
        codes = near[:, 0] * self.n + near[:, 1]  # sorted: the index gives its pairs sorted
        self.entered = np.setdiff1d(codes, self.codes, assume_unique=True)
        self.exited = np.setdiff1d(self.codes, codes, assume_unique=True)
        self.codes = codes
        return near

    def pairs(self, answer: Any) -> Any:
        if not self.radius:
            return super().pairs(answer)
        offsets, ids = (np.frombuffer(a, dtype=np.int64) for a in answer)
        return super().pairs(np.stack((np.repeat(self.ids, np.diff(offsets)), ids), axis=1))


class Processor(Agents):
    """The library's own path: esper entities on array rows, NeighbourArrays on a torus."""

    name, torus = "ours, processor, torus", True

    def __init__(self, pos: Any, side: float) -> None:
        super().__init__(pos, side)
        self.world = f"bench-agents-{self.n}"
        self.previous = esper.current_world
        esper.switch_world(self.world)
        self.flock = BoxArray.of_positions(pos, size=(0.0, 0.0))
        self.spatial = SpatialProcessor(wrap=Box(0.0, 0.0, side, side), events=())
        self.nb = NeighbourArrays(self.spatial, R)
        esper.add_processor(self.spatial, priority=2)
        esper.add_processor(self.nb, priority=1)
        for i in range(self.n):
            esper.create_entity(self.flock.row(i))
        esper.process()
        esper.switch_world(self.previous)

    def update(self, pos: Any) -> None:
        self.flock.rebind(pos)
        esper.switch_world(self.world)
        esper.process()
        esper.switch_world(self.previous)

    def query(self) -> Any:
        esper.switch_world(self.world)
        rows = self.nb.in_rows(self.flock)
        esper.switch_world(self.previous)
        return rows

    def memory(self) -> float:
        return float(self.spatial.index.__sizeof__()) / self.n

    def pairs(self, answer: Any) -> Any:
        w, offsets, ids = (np.frombuffer(a, dtype=np.int64) for a in answer[:3])
        return super().pairs(np.stack((np.repeat(w, np.diff(offsets)), ids), axis=1))


class MesaBase(Agents):
    """What both of mesa's spaces share: the agents' rows, the sample asked each step and
    the pairs of its answers."""

    agents: list[Any]

    def sampled(self, sample: int) -> None:
        """Number the agents by row and choose the ``sample`` asked each step."""
        self.index = {a: i for i, a in enumerate(self.agents)}
        self.sample = np.random.default_rng(2).choice(self.n, min(sample, self.n), replace=False)
        self.scale = self.n / len(self.sample)

    def pairs(self, answer: Any) -> Any:
        return super().pairs([(i, self.index[a]) for i, nbrs in answer for a in nbrs])


class Mesa(MesaBase):
    def __init__(self, pos: Any, side: float, torus: bool, sample: int) -> None:
        super().__init__(pos, side)
        self.name, self.torus = f"mesa, {'torus' if torus else 'plain'}", torus
        self.space = space.ContinuousSpace(side, side, torus=torus)
        model = mesa.Model(seed=1)
        self.agents = [mesa.Agent(model) for _ in range(self.n)]
        for a, xy in zip(self.agents, pos.tolist(), strict=True):
            self.space.place_agent(a, tuple(xy))
        self.sampled(sample)

    def update(self, pos: Any) -> None:
        move = self.space.move_agent
        for a, xy in zip(self.agents, pos.tolist(), strict=True):
            move(a, tuple(xy))

    def query(self) -> Any:
        near, agents = self.space.get_neighbors, self.agents
        return [(i, near(agents[i].pos, R, include_center=False)) for i in self.sample.tolist()]


class MesaArrays(MesaBase):
    def __init__(self, pos: Any, side: float, torus: bool, sample: int) -> None:
        super().__init__(pos, side)
        self.name, self.torus = f"mesa arrays, {'torus' if torus else 'plain'}", torus
        self.space = arrays_space.ContinuousSpace(
            [[0.0, side], [0.0, side]], torus=torus, random=random.Random(1), n_agents=self.n)
        model = mesa.Model(seed=1)
        self.agents = [arrays_space.ContinuousSpaceAgent(self.space, model)
                       for _ in range(self.n)]
        self.update(pos)
        self.sampled(sample)

    def update(self, pos: Any) -> None:
        self.space.agent_positions[:] = pos  # the agents were added in row order

    def query(self) -> Any:
        agents = self.agents
        return [(i, agents[i].get_neighbors_in_radius(R)[0]) for i in self.sample.tolist()]


def contenders(pos: Any, side: float, args: argparse.Namespace) -> list[Agents]:
    cs: list[Agents] = [] if "scipy" in MISSING else [Scipy(pos, side, t) for t in (True, False)]
    if NATIVE:
        cs += [Ours(pos, side, False, True), Processor(pos, side), Ours(pos, side, False),
               Ours(pos, side, True)]
    if "mesa" not in MISSING and len(pos) <= args.mesa_n:
        cs += [Mesa(pos, side, torus, args.mesa_sample) for torus in (False, True)]
        if arrays_space is not None:
            cs += [MesaArrays(pos, side, torus, args.mesa_sample) for torus in (False, True)]
    return cs


def check(cs: list[Agents], answers: list[Any], pos: Any) -> tuple[list[str], int]:
    """The first step's verdicts (see the module docstring), one per contender, and the
    pairs within r."""
    got = [c.pairs(a) for c, a in zip(cs, answers, strict=True)]
    ref = next(g for c, g in zip(cs, got, strict=True) if not c.torus and c.sample is None)
    ring = next((g for c, g in zip(cs, got, strict=True) if c.torus and c.sample is None), None)
    n, verdicts = len(pos), []
    for c, have in zip(cs, got, strict=True):
        want = ref if c.sample is None else ref[np.isin(ref // n, c.sample)
                                                | np.isin(ref % n, c.sample)]
        d = pos[have // n] - pos[have % n]
        plain = np.einsum("ij,ij->i", d, d) <= R * R
        if not np.array_equal(have[plain] if c.torus else have, want) or (
                c.torus and c.sample is None and not np.array_equal(have, ring)):
            raise AssertionError(f"{c.name}: {len(have)} pairs, not the {len(want)} expected")
        verdicts.append((f"+{np.count_nonzero(~plain):,} across a seam" if c.torus else "exact")
                        + (" (its sample)" if c.sample is not None else ""))
    return verdicts, len(ref)


def measure_n(n: int, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """One N: the table, and each contender's (step ms, bytes per agent)."""
    rng = np.random.default_rng(n)
    side = 40.0 * math.sqrt(n)
    pos, vel = rng.uniform(0.0, side, (n, 2)), rng.uniform(-2.0, 2.0, (n, 2))
    cs = contenders(pos, side, args)
    if not any(c.sample is None and not c.torus for c in cs):
        print(f"\nN = {n:,}: neither scipy nor the compiled core here, nothing to measure.")
        return {}
    times: dict[str, list[tuple[float, float]]] = {c.name: [] for c in cs}
    verdicts, count = list[str](), 0
    # As bench.harness does: the collector runs between the contenders' steps, never inside
    # one, so that no contender pays for the objects another made (mesa's agents, esper's).
    gc.disable()
    try:
        for step in range(1 + args.steps):
            pos = np.mod(pos + vel, side)
            pos[pos >= side] = 0.0  # a tiny negative coordinate wraps to side itself
            answers = []
            for c in cs:
                gc.collect()
                t0 = time.process_time()
                c.update(pos)
                t1 = time.process_time()
                answers.append(c.query())
                t2 = time.process_time()
                if step:
                    times[c.name].append((t1 - t0, (t2 - t1) * c.scale))
            if not step:
                verdicts, count = check(cs, answers, pos)
    finally:
        gc.enable()
    med = {k: (statistics.median(u for u, _ in v) * 1e3, statistics.median(q for _, q in v) * 1e3)
           for k, v in times.items()}
    first = cs[0].name if cs else ""
    print(f"\n## N = {n:,}, side {side:,.0f}: {count:,} pairs within r at the first step; "
          f"ms a step, median of {args.steps}\n")
    print(markdown_table(["contender", "update ms", "query ms", "step ms", f"/ {first}",
                          "index bytes/agent", "first step checked"], [
        [c.name, f"{u:.2f}", f"{q:.2f}" + (f" (x {c.scale:g})" if c.scale != 1 else ""),
         f"{u + q:.2f}", f"{(u + q) / sum(med[first]):.3f}",
         "" if math.isnan(m) else f"{m:.1f}", v]
        for c, v in zip(cs, verdicts, strict=True) for u, q in [med[c.name]]
        for m in [c.memory()]], right=True))
    skipped = SKIPPED + [f"mesa: only at N <= {args.mesa_n:,}"] * (n > args.mesa_n)
    if skipped:
        print(f"\nSkipped: {'; '.join(skipped)}.")
    return {c.name: (sum(med[c.name]), c.memory()) for c in cs}


def main(argv: Sequence[str] | None = None) -> int:
    parser = record.command("agents", f"{__doc__}\n{LEGEND}")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="the Ns, comma-separated")
    parser.add_argument("--steps", type=int, default=9, help="timed steps per N")
    parser.add_argument("--mesa-n", type=int, default=10_000, help="mesa's largest N")
    parser.add_argument("--mesa-sample", type=int, default=1_000, help="mesa's timed queries")
    args = record.parse(parser, argv, quick={"sizes": "1000,3000", "steps": 2, "mesa_n": 1000,
                                             "mesa_sample": 100})
    with record.saved(args):
        print(record.machine())
        if np is None:
            print("\nnumpy not installed: the agents are moved by numpy, nothing to measure.")
            return 0
        print(f"\n{LEGEND}")
        got = {n: measure_n(n, args) for n in map(int, args.sizes.split(","))}
        mid, big = got.get(100_000, {}), got.get(1_000_000, {})
        ring, ours, csr, scipy, proc = (mid.get(k) for k in (
            "ours, pairs, torus", "ours, pairs", "ours, radius", "scipy, torus",
            "ours, processor, torus"))
        big_ring = big.get("ours, pairs, torus")

        def why(n: int) -> str:
            return f"N = {n:,} not measured" if n not in got else "; ".join(SKIPPED)

        record.print_targets([
            target("N = 100,000: ours, pairs, torus / scipy, torus",
                   ring[0] / scipy[0] if ring and scipy else None, 0.2, why_not=why(100_000)),
            target("N = 100,000: ours, pairs, torus, ms a step", ring[0] if ring else None,
                   16.7, why_not=why(100_000)),
            target("N = 100,000: ours, pairs, torus / ours, pairs (plain)",
                   ring[0] / ours[0] if ring and ours else None, 2.5, why_not=why(100_000)),
            target("N = 100,000: ours, processor, torus / scipy, torus",
                   proc[0] / scipy[0] if proc and scipy else None, 0.2, why_not=why(100_000)),
            target("N = 100,000: ours, processor, torus, ms a step", proc[0] if proc else None,
                   16.7, why_not=why(100_000)),
            target("N = 100,000: ours, radius (CSR, plain) / scipy, torus",
                   csr[0] / scipy[0] if csr and scipy else None, 0.2, why_not=why(100_000)),
            target("N = 1,000,000: ours, pairs, torus, index bytes per agent",
                   big_ring[1] if big_ring else None, 120.0, why_not=why(1_000_000)),
        ], args.quick)
    return 0

