"""The suite: ecs_spatial's index against pyqtree, rtree, pymunk, shapely and the baselines,
scenario by scenario, with memory per entity and touching-box exactness.

The suite's runs accumulate in the results folder's ``peers.json`` as each is measured (short
runs on a shared machine add up to the full table); every run rewrites ``peers.md`` and
``peers.png`` from them. ``--set`` runs other contenders in the same scenarios and prints
their tables (``--save``: ``<out>/<set>.md``): ``baselines``, the QuadTree (leaves of 16 and
64) against the tutorial quadtree, the seed port (rebuilt, and kept by remove-then-add),
sort-and-sweep and brute force (N <= 2,000); ``thresholds``, ecs_spatial at each leaf
capacity (the QuadTree, the incremental pair search, the SpatialProcessor) against itself at
16; ``build``, building each index from scratch, no frames.

    python -m bench peers --scenarios uniform --n 1000,10000
    python -m bench peers --set thresholds --n 10000,50000 --save
    python -m bench peers --report --out bench/results/intel-xeon   # only rewrite the report

"ms": the median over frames of a contender's update and answer, the world's step apart;
ratios: contender / ecs_spatial QuadTree (3.0: ecs_spatial three times faster).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import record
from bench.baselines import BruteContender, SeedContender, SweepContender, TutorialContender
from bench.harness import Ask, Contender, Result, run, table, target
from bench.ours import EsperGame, IncrementalContender, QuadTreeContender, tuned_name
from bench.record import ROOT, default_out, machine, markdown_table, now, revision, shown
from bench.world import World
from ecs_spatial import PyQuadTree, QuadTree

OURS = "ecs_spatial QuadTree"
#: Leaves of 64 measured fastest wherever most of the world moves (``--set thresholds``).
LARGE = 64
OURS_NAMES = (OURS, tuned_name(OURS, LARGE), "ecs_spatial QuadTree (incremental pairs)")
PYMUNK = ("pymunk (batch)", "pymunk (callbacks)")
PROCESSOR = "ecs_spatial SpatialProcessor (esper)"


@dataclass(frozen=True)
class Scenario:
    """One scenario of the suite: a world variant and what each frame asks."""

    key: str
    title: str
    variant: str = "uniform"
    moving: float = 1.0
    churn: float = 0.0
    kind: str = "pairs"
    sizes: tuple[int, ...] = (1_000, 10_000, 50_000)

    def ask(self) -> Ask:
        if self.kind == "view":
            return Ask("view", lambda w: w.views(100))
        if self.kind == "radius":
            return Ask("radius", lambda w: w.proximity_centres(0.1))
        return Ask(self.kind)


SCENARIOS: dict[str, Scenario] = {s.key: s for s in (
    Scenario("uniform", "uniform, 100% moving, all pairs"),
    Scenario("uniform-10", "uniform, 10% moving, all pairs", moving=0.1,
             sizes=(1_000, 10_000, 50_000, 200_000)),
    Scenario("uniform-1", "uniform, 1% moving, all pairs", moving=0.01,
             sizes=(1_000, 10_000, 50_000, 200_000)),
    Scenario("clustered", "clustered (8 clusters), 100% moving, all pairs", "clustered"),
    Scenario("mixed", "mixed (1% huge static boxes), 100% moving, all pairs", "mixed"),
    Scenario("churn", "churn: 1% deleted and 1% created per frame, 100% moving", churn=0.01),
    Scenario("cull", "culling: 100 view boxes of 1/16 of the world per frame", kind="view"),
    Scenario("radius", "proximity: radius 50 around 10% of the entities", kind="radius"),
)}
#: Timed frames by N: a stable median, and a scenario at one N within a minute or two.
FRAMES = {1_000: 90, 10_000: 30, 50_000: 12, 200_000: 6}


def peer_contenders(kind: str) -> tuple[list[Contender], str]:
    """The peers installed here (the ``bench`` extra), and what is missing."""
    try:
        from bench import adapters
    except ImportError as exc:
        return [], f"peers not installed ({exc}): pip install -e '.[bench]'"
    return [*([adapters.PymunkContender("batch")] if kind == "pairs" else []),
            adapters.PymunkContender("callbacks"), adapters.ShapelyContender(),
            adapters.RtreeContender(), adapters.PyqtreeContender()], ""


def suite(s: Scenario, n: int, args: argparse.Namespace) -> list[Contender]:
    """ecs_spatial first (the ratio base), the peers, then the baselines fast enough."""
    pairs = s.kind == "pairs"
    return [
        QuadTreeContender(), QuadTreeContender(threshold=LARGE),
        *([IncrementalContender()] if pairs and s.moving < 1.0 else []), EsperGame(),
        *([EsperGame(tuned_name(PROCESSOR, LARGE), spatial={"threshold": LARGE})]
          if pairs else []),
        *peer_contenders(s.kind)[0],
        *([TutorialContender()] if n <= 50_000 else []),
        *([SeedContender("rebuild")] if n <= 10_000 else []),
        *([BruteContender()] if n <= 1_000 else []),
    ]


def baselines(s: Scenario, n: int, args: argparse.Namespace) -> list[Contender]:
    return [QuadTreeContender(), QuadTreeContender(threshold=LARGE), TutorialContender(),
            SeedContender("rebuild"), SeedContender("remove-add"), SweepContender(),
            *([BruteContender()] if n <= 2_000 else [])]


def thresholds(s: Scenario, n: int, args: argparse.Namespace) -> list[Contender]:
    cs: list[Contender] = []
    for t in args.thresholds:
        cs.append(QuadTreeContender(f"QuadTree t={t}", threshold=t))
        if s.kind == "pairs" and s.moving < 1.0:
            cs.append(IncrementalContender(threshold=t, name=f"QuadTree, incremental t={t}"))
        if s.kind == "pairs":
            cs.append(EsperGame(f"SpatialProcessor t={t}", spatial={"threshold": t}))
    return cs


def build(s: Scenario, n: int, args: argparse.Namespace) -> list[Contender]:
    # pymunk indexes its shapes in its first step(), which finds the pairs too: left out.
    peers = [p for p in peer_contenders("radius")[0] if not p.name.startswith("pymunk")]
    return [QuadTreeContender(bulk=True), QuadTreeContender(), EsperGame(), *peers]


SETS: dict[str, Callable[[Scenario, int, argparse.Namespace], list[Contender]]] = {
    "suite": suite, "baselines": baselines, "thresholds": thresholds, "build": build,
}


def print_set(name: str, result: Result, args: argparse.Namespace) -> None:
    """The table of one run, as its set reads it."""
    if name == "build":
        first = result.contenders[0].build_ms
        print(markdown_table(["contender", "build ms", "/ insert_many"], (
            [c.name, f"{c.build_ms:.1f}", f"{c.build_ms / first:.2f}"] for c in result.contenders
        ), right=True))
    elif name == "thresholds":
        rows = []
        for kind in dict.fromkeys(c.name.rsplit(" t=", 1)[0] for c in result.contenders):
            base = result[f"{kind} t=16"]
            rows.append([result.label, kind, *(
                f"{c.ms():.2f}" + (f" ({c.ratio(base):.2f}x)" if t != 16 else "")
                for t in args.thresholds for c in [result[f"{kind} t={t}"]])])
        print(markdown_table(["scenario", "contender", *(f"t={t}" for t in args.thresholds)],
                             rows, right=True))
    else:
        print(table(result))
    if name == "baselines":
        ours, step = result.contenders[0], result.step
        seed = min(c.ratio(ours, plus=step) for c in result.contenders if "seed" in c.name)
        record.print_targets([
            target(f"tutorial quadtree / {ours.name}",
                   result[TutorialContender.name].ratio(ours, plus=step), 10, at_most=False),
            target(f"seed port, faster mode / {ours.name}", seed, 8, at_most=False),
        ], args.quick, "targets (a frame, the world's step included)")


# -- memory and semantics -----------------------------------------------------------------------

PEERS_MEMORY = ("ecs_spatial QuadTree", "SpatialProcessor", "pyqtree", "rtree", "shapely")


def memory_contender(name: str) -> Contender:
    """A contender of the memory tables by its name there."""
    if name in ("ecs_spatial QuadTree", "SpatialProcessor"):
        return QuadTreeContender() if name == PEERS_MEMORY[0] else EsperGame()
    if name.startswith(("reference", "compiled")):  # "<class>, insert_many" or ", insert loop"
        return QuadTreeContender(cls=PyQuadTree if name.startswith("reference") else QuadTree,
                                 bulk=name.endswith("insert_many"))
    from bench import adapters

    if name == "shapely":
        return adapters.ShapelyContender()
    return (adapters.PyqtreeContender if name == "pyqtree" else adapters.RtreeContender)(
        incremental=True)


def memory_one(name: str, n: int, traced: bool) -> dict[str, float]:
    """Build one contender on a world of ``n`` in this (fresh) process, then run a frame
    (every box moved, all pairs found): the bytes held after each, by tracemalloc (Python's
    allocators, which the compiled core uses; a C++ library's own memory is invisible to it)
    or by the resident set's growth (everything, allocator slack included)."""
    world = World(n, seed=1)
    world.boxes()  # warm what the world allocates lazily, so that it is not counted
    contender = memory_contender(name)
    contender.phases = {}

    def held() -> int:
        if traced:
            return tracemalloc.get_traced_memory()[0]
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    gc.collect()
    if traced:
        tracemalloc.start()
    before = held()
    contender.build(world, Ask())
    gc.collect()
    built = held() - before
    contender.update(world, world.step())
    contender.answer([])
    gc.collect()
    return {"built": float(built), "frame": float(held() - before)}


def measure_memory(names: Sequence[str], n: int, rss: bool = True) -> dict[str, Any]:
    """Each contender in a fresh interpreter traced, and (``rss``) in another untraced."""
    rows = []
    for name in names:
        row: dict[str, Any] = {"name": name}
        for kind in ("traced", "rss")[: 1 + rss]:
            cmd = [sys.executable, "-m", "bench", "peers", "--memory-one", name, "--n", str(n)]
            got = json.loads(subprocess.run(
                cmd + (["--traced"] if kind == "traced" else []), capture_output=True,
                text=True, check=True, cwd=ROOT).stdout.splitlines()[-1])
            row[f"{kind}_per_entity"] = got["built"] / n
            row[f"{kind}_frame_per_entity"] = got["frame"] / n
        print(f"  {name:24s}" + "".join(f"  {kind} {row[kind + '_per_entity']:.1f} B/entity "
              f"({row[kind + '_frame_per_entity']:.1f} after a frame)"
              for kind in ("traced", "rss")[: 1 + rss]))
        rows.append(row)
    return {"n": n, "rows": rows, "machine": machine(), "when": now()}


def measure_semantics(n: int = 3000, frames: int = 5) -> dict[str, Any]:
    """How far each contender's pairs differ from the closed-box rule on worlds with integer
    coordinates, where many boxes touch exactly: where libraries' rules differ."""
    rows: dict[str, dict[str, float]] = {}
    total = 0.0
    for variant in ("uniform", "clustered"):
        cs = [QuadTreeContender(), *peer_contenders("pairs")[0]]
        result = run(f"semantics {variant}", World(n, seed=5, variant=variant, snap=True), cs,
                     frames=0, warmup=frames, verify=frames, strict=False)
        total += result.answers * frames
        _KEEP_ALIVE.extend(cs)
        for c in result.contenders:
            r = rows.setdefault(c.name, {"missing": 0.0, "extra": 0.0})
            r["missing"] += c.missing * frames
            r["extra"] += c.extra * frames
    for name, r in rows.items():
        print(f"  {name:44s} missing {r['missing']:5.0f}  extra {r['extra']:5.0f}  of {total:.0f}")
    return {"n": n, "frames": 2 * frames, "pairs": total, "rows": rows, "when": now()}


# -- the stored suite and its report ------------------------------------------------------------


def store(data: dict[str, Any], s: Scenario, result: Result) -> None:
    data["runs"][f"{s.key}@{result.n}"] = {
        "scenario": s.key, "n": result.n, "frames": result.frames, "step_ms": result.step_ms,
        "answers": result.answers, "machine": machine(), "when": now(), "revision": revision(),
        "contenders": [{
            "name": c.name, "note": c.note, "skipped": c.skipped, "build_ms": c.build_ms,
            "missing": c.missing, "extra": c.extra,
            **{f"{k}_ms": None if c.skipped else c.ms(k if k != "median" else "frame")
               for k in ("median", "update", "answer")},
        } for c in result.contenders],
    }


def _get(run: dict[str, Any], name: str, field: str = "median_ms") -> float | None:
    """A contender's figure in a stored run, or None if it did not run or was skipped."""
    v = next((c.get(field) for c in run["contenders"] if c["name"] == name), None)
    return None if v is None else float(v)


def targets(runs: dict[str, Any]) -> list[list[str]]:
    """The suite's targets against the peers, judged on what is stored; ecs_spatial's figure
    is the fastest of its QuadTree rows."""
    def worst(what: str, ratios: list[tuple[str, float]]) -> list[str]:
        key, value = max(ratios, key=lambda kv: kv[1], default=("", math.nan))
        return target(f"{what}: the worst run" + (f" ({key})" if key else ""), value, 1.0)

    def fastest(run: dict[str, Any], names: Sequence[str] = OURS_NAMES,
                field: str = "median_ms") -> float:
        return min((v for p in names if (v := _get(run, p, field))), default=math.nan)

    few = [r for r in runs.values() if SCENARIOS[r["scenario"]].kind == "pairs"
           and SCENARIOS[r["scenario"]].moving <= 0.1]
    head = runs.get("uniform@10000")
    rows = [
        worst("ecs_spatial / pyqtree, rtree, the tutorial quadtree", [
            (k, fastest(r) / v) for k, r in runs.items()
            for p in ("pyqtree", "rtree", TutorialContender.name) if (v := _get(r, p))]),
        worst("ecs_spatial / pymunk's faster mode, 10% or less moving",
              [(f"{r['scenario']}@{r['n']}", fastest(r) / fastest(r, PYMUNK)) for r in few]),
        target("ecs_spatial / pymunk's faster mode, N = 10,000 all moving",
               fastest(head) / fastest(head, PYMUNK) if head else None, 1.0),
    ]
    for field, what in (("median_ms", "update and queries"), ("answer_ms", "queries alone")):
        rows.append(worst(f"ecs_spatial / pymunk, rtree in culling and radius ({what})", [
            (k, fastest(r, field=field) / v) for k, r in runs.items()
            if r["scenario"] in ("cull", "radius")
            for p in ("pymunk (callbacks)", "rtree") if (v := _get(r, p, field))]))
    return [row for row in rows if row[1] != "-"]


def write_report(data: dict[str, Any], out: Path) -> list[Path]:
    """Rewrite ``peers.md`` (and ``peers.png`` with matplotlib) in ``out`` from the stored
    runs; return the files written."""
    runs = data["runs"]
    lines = [
        "# ecs_spatial against the peers", "",
        "Written by `python -m bench peers` from `peers.json`; do not edit by hand.", "",
        f"Machine: {'; '.join(sorted({r['machine'] for r in runs.values()}))}; ecs_spatial at "
        f"{', '.join(sorted({r['revision'] for r in runs.values()}))}; measured "
        f"{min((r['when'] for r in runs.values()), default='-')} to "
        f"{max((r['when'] for r in runs.values()), default='-')}, "
        "on a shared, noisy machine: compare ratios within one table.", "",
        "Each cell: **index ms per frame** (the world's own step excluded) and, in brackets, the "
        "ratio to ecs_spatial's QuadTree (3.0x: ecs_spatial three times faster). Every "
        "contender's answers were checked against a sort-and-sweep (pairs) or brute-force "
        "(queries) reference on the first frames. \u2014: not run at that size; \u2020 missing / "
        "extra answers per checked frame (a peer with its own contact rules).", "",
        "## Targets", "", markdown_table(["target", "measured", "limit", ""], targets(runs)), "",
    ]
    notes: dict[str, str] = {}
    for key, s in SCENARIOS.items():
        srun = {r["n"]: r for r in runs.values() if r["scenario"] == key}
        sizes = sorted(srun)
        names = list(dict.fromkeys(c["name"] for n in sizes for c in srun[n]["contenders"]))
        notes.update((c["name"], c["note"]) for n in sizes for c in srun[n]["contenders"]
                     if c["note"])
        for field, title in (("median_ms", s.title), ("answer_ms", "the queries alone")):
            if not srun or (field == "answer_ms" and s.kind == "pairs"):
                continue
            rows = [[name, *(_cell(srun[n], name, field) for n in sizes)] for name in names]
            if field == "median_ms":
                rows.append(["*world step*", *(f"{srun[n]['step_ms']:.2f}" for n in sizes)])
            lines += [f"## {title}", "", markdown_table(
                ["contender", *(f"N = {n:,}" for n in sizes)], rows, right=True), ""]
    if mem := data.get("memory"):
        lines += [f"## Memory at N = {mem['n']:,}", "", "Bytes per entity held after building "
                  "the index, each in a fresh interpreter: traced by tracemalloc (Python "
                  "allocations: the C++ memory of rtree and shapely does not show), and the "
                  "resident set's growth.", "", markdown_table(
                      ["index", "traced B/entity", "RSS growth B/entity"],
                      ([r["name"], f"{r['traced_per_entity']:,.0f}",
                        f"{r['rss_per_entity']:,.0f}"] for r in mem["rows"]), right=True), ""]
    if sem := data.get("semantics"):
        lines += ["## Semantics: touching boxes", "", f"Integer coordinates, so that many boxes "
                  f"touch exactly; N = {sem['n']:,}, {sem['frames']} frames (uniform and "
                  f"clustered), {sem['pairs']:,.0f} pairs: those each contender missed or "
                  "added.", "", markdown_table(["contender", "missing", "extra"], (
                      [name, f"{r['missing']:.0f}", f"{r['extra']:.0f}"]
                      for name, r in sem["rows"].items()), right=True), ""]
    lines += ["## How each contender is driven", "",
              *(f"- **{name}**: {note}" for name, note in notes.items()), ""]
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.md").write_text("\n".join(lines))
    plotted = importlib.util.find_spec("matplotlib") is not None and plot(runs, out / "peers.png")
    return [out / "peers.md", *([out / "peers.png"] if plotted else [])]


def _cell(run: dict[str, Any], name: str, field: str) -> str:
    c = next((c for c in run["contenders"] if c["name"] == name), None)
    ms, base = _get(run, name, field), _get(run, OURS, field)
    if c is None or ms is None:
        return f"*skipped* ({c['skipped']})" if c and c["skipped"] else "\u2014"
    diff = f" \u2020{c['missing']:.1f}/{c['extra']:.1f}" if c["missing"] or c["extra"] else ""
    return f"{ms:.2f}" + (f" ({ms / base:.1f}x)" if base and name != OURS else "") + diff


def plot(runs: dict[str, Any], path: Path) -> bool:
    """Log-log index ms per frame against N, a panel per scenario, a line per contender."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in SCENARIOS if any(r["scenario"] == k for r in runs.values())]
    if not keys:
        return False
    cols, rows = min(3, len(keys)), math.ceil(len(keys) / 3)
    fig, axes = plt.subplots(rows, cols, squeeze=False,
                             figsize=(max(5.2 * cols, 11), 4.2 * rows + 1))
    names = list(dict.fromkeys(c["name"] for r in runs.values() for c in r["contenders"]))
    for ax, key in zip(axes.flat, keys, strict=False):
        srun = sorted((r for r in runs.values() if r["scenario"] == key), key=lambda r: r["n"])
        for i, name in enumerate(names):
            ours = name.startswith("ecs_spatial")
            if pts := [(r["n"], v) for r in srun if (v := _get(r, name))]:
                ax.plot(*zip(*pts, strict=True), label=name, color=plt.get_cmap("tab20")(i % 20),
                        linewidth=2.8 if ours else 1.3, marker="o" if ours else ".",
                        linestyle=":" if "threshold" in name or "incremental" in name else "-")
        ax.set(xscale="log", yscale="log", xlabel="N (boxes)", ylabel="index ms per frame")
        ax.set_title(SCENARIOS[key].title, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    legend = {label: h for ax in axes.flat for h, label in zip(*ax.get_legend_handles_labels(),
                                                               strict=True)}
    labels = list(legend)
    fig.legend(list(legend.values()), labels, loc="lower center", ncol=4, fontsize=8,
               frameon=False)
    fig.suptitle("ecs_spatial vs peers: ms per frame (world step excluded), lower is better")
    fig.tight_layout(rect=(0, (0.25 + 0.2 * math.ceil(len(labels) / 4)) / fig.get_figheight(),
                           1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = record.command(
        "peers", __doc__, quick="a smoke run: every scenario at N=300, 2 frames, nothing written")
    parser.add_argument("--set", choices=list(SETS), default="suite", help="the contenders")
    parser.add_argument("--scenarios", default="", help="comma-separated keys (see --list) or "
                        "'all' (default: uniform; --set thresholds and --quick: all)")
    parser.add_argument("--n", default="", help="comma-separated sizes (default: each's own; "
                        "--set thresholds: 10000,50000)")
    parser.add_argument("--frames", type=int, default=0, help="timed frames (default: by N)")
    parser.add_argument("--builds", type=int, default=0,
                        help="builds of each contender (default 1; --set build: 5)")
    parser.add_argument("--thresholds", default="16,32,64,128", help="for --set thresholds")
    parser.add_argument("--seed", type=int, default=1, help="the world's seed")
    parser.add_argument("--list", action="store_true", help="list the scenarios")
    parser.add_argument("--report", action="store_true", help="only rewrite the suite's report")
    parser.add_argument("--memory", action="store_true", help="memory per entity at N=50,000")
    parser.add_argument("--semantics", action="store_true", help="touching-box semantics")
    parser.add_argument("--memory-one", help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = record.parse(parser, argv, quick={"n": "300", "frames": 2, "scenarios": "all"})
    args.thresholds = sorted({16, *(int(t) for t in args.thresholds.split(","))})
    if args.memory_one:
        print(json.dumps(memory_one(args.memory_one, int(args.n or 50_000), args.traced)))
        return 0
    if args.list:
        for s in SCENARIOS.values():
            print(f"{s.key:12s} {s.title}  [N = {', '.join(f'{n:,}' for n in s.sizes)}]")
        return 0
    out: Path = args.out or default_out()
    data = json.loads((out / "peers.json").read_text()) if (out / "peers.json").exists() else {
        "runs": {}, "memory": None, "semantics": None}
    stored = args.set == "suite" and not args.quick and not args.report
    if args.report and not data["runs"]:
        parser.error(f"no results in {shown(out)}: choose the folder with --out")
    if stored and {r["machine"] for r in data["runs"].values()} - {machine()}:
        parser.error(f"{shown(out)} holds another machine's figures: choose another --out")
    if stored:
        record.note_run(out, args.command)
    if args.memory:  # ecs_spatial's rows alone without the peers, as the other tables
        if missing := peer_contenders("pairs")[1]:
            print(f"memory: {missing}")
        names = PEERS_MEMORY[:2] if missing else PEERS_MEMORY
        data["memory"] = measure_memory(names, int(args.n or 50_000))
    if args.semantics:
        data["semantics"] = measure_semantics()
    if not (args.memory or args.semantics or args.report):
        default = "all" if args.set == "thresholds" else "uniform"
        keys = (args.scenarios or default).split(",")
        keys = list(SCENARIOS) if keys == ["all"] else keys
        if unknown := set(keys) - set(SCENARIOS):
            parser.error(f"unknown scenarios {sorted(unknown)}: see --list")
        with record.saved(args, args.set):
            print(machine())
            for key in keys:
                measure(SCENARIOS[key], args, data, out if stored else None)
    if stored or args.report:
        (out / "peers.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        for path in write_report(data, out):
            print(f"wrote {shown(path)}")
    return 0


def measure(s: Scenario, args: argparse.Namespace, data: dict[str, Any], out: Path | None
            ) -> None:
    """Every size of one scenario: run, print and (``out``: the suite) store."""
    sizes = args.n or ("10000,50000" if args.set == "thresholds" else "")
    building = args.set == "build"
    for n in [int(x) for x in sizes.split(",")] if sizes else s.sizes:
        missing = peer_contenders(s.kind)[1] if args.set in ("suite", "build") else ""
        print(f"\n{s.key} @ N={n:,}: {s.title}" + (f" ({missing})" if missing else "") + "\n")
        contenders = SETS[args.set](s, n, args)
        frames = 0 if building else args.frames or FRAMES.get(n, max(3, 30_000 // n))
        result = run(f"{s.key} @ N={n:,}", World(n, seed=args.seed, variant=s.variant,
                                                 moving=s.moving, churn=s.churn),
                     contenders, s.ask(), frames=frames, warmup=3 if frames else 1,
                     verify=2 if frames else 1, builds=args.builds or (5 if building else 1),
                     max_frame_s=3.0 if args.set == "suite" else None, log=print)
        print_set(args.set, result, args)
        _KEEP_ALIVE.extend(contenders)
        if out is not None:
            store(data, s, result)
            (out / "peers.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


#: Every contender built in this process, kept alive until the end: pymunk frees a space in
#: O(shapes x arbiters), minutes for a large world, and nothing of that belongs in a
#: benchmark; ``python -m bench`` leaves with ``os._exit``.
_KEEP_ALIVE: list[Contender] = []
