"""The suite: ecs_spatial against the peers and the baselines, scenario by scenario, in one run.

Every scenario runs its contenders in the same process, interleaved frame by frame on one
deterministic world (``bench/harness.py``), after checking each contender's answers against
the reference on the first frames. Each ``scenario @ N`` result is stored in the results
folder's ``peers.json`` as soon as it is measured, so that several short runs (a shared
machine: keep each under a few minutes) add up to the full table; every run then rewrites
``peers.md`` and the plot ``peers.png`` beside it from everything stored. The folder is
``bench/results/<machine>-<YYYY-MM-DD>/`` unless ``--out`` names another.

    python -m bench peers --list                              # the scenarios and their sizes
    python -m bench peers --scenarios uniform --n 1000,10000  # a few minutes
    python -m bench peers --scenarios uniform-10,uniform-1 --n 200000
    python -m bench peers --memory                            # tracemalloc / RSS at N=50,000
    python -m bench peers --semantics                         # how far inexact peers differ
    python -m bench peers --report --out bench/results/...    # only rewrite peers.md + plot
    python -m bench peers --quick                             # a smoke run; nothing written

Figures: "index ms" is the median over repetitions of the mean ms per frame that a contender
spends bringing its index up to date and answering the frame's question; the world's own
step (moving the boxes: identical for everyone) is excluded and listed apart. Ratios are
contender / ecs_spatial QuadTree, so 3.0 means ecs_spatial is three times faster.
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

from bench.baselines import BruteContender, SeedContender, TutorialContender, snap, sweep_pairs
from bench.contender import Contender
from bench.harness import ScenarioResult, format_table, run_scenario
from bench.ours import (
    LARGE_LEAVES,
    ProcessorContender,
    QuadTreeContender,
    QuadTreeIncrementalContender,
    tuned_name,
)
from bench.record import (
    ROOT,
    add_output_options,
    default_out,
    machine,
    markdown_table,
    note_run,
    now,
    revision,
)
from bench.world import World

#: The files of the suite in a results folder.
JSON_NAME = "peers.json"
MD_NAME = "peers.md"
PLOT_NAME = "peers.png"

OURS = QuadTreeContender.name
#: The QuadTree with leaves of ``LARGE_LEAVES`` (``python -m bench thresholds``): faster
#: wherever most of the world moves.
OURS_LARGE = tuned_name(OURS, LARGE_LEAVES)
OURS_NAMES = (OURS, OURS_LARGE, QuadTreeIncrementalContender.name)
PROCESSOR_LARGE = tuned_name(ProcessorContender.name, LARGE_LEAVES)


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


SCENARIOS: dict[str, Scenario] = {
    s.key: s
    for s in (
        Scenario("uniform", "uniform, 100% moving, all pairs"),
        Scenario(
            "uniform-10",
            "uniform, 10% moving, all pairs",
            moving=0.1,
            sizes=(1_000, 10_000, 50_000, 200_000),
        ),
        Scenario(
            "uniform-1",
            "uniform, 1% moving, all pairs",
            moving=0.01,
            sizes=(1_000, 10_000, 50_000, 200_000),
        ),
        Scenario("clustered", "clustered (8 clusters), 100% moving, all pairs", "clustered"),
        Scenario("mixed", "mixed (1% huge static boxes), 100% moving, all pairs", "mixed"),
        Scenario("churn", "churn: 1% deleted and 1% created per frame, 100% moving", churn=0.01),
        Scenario("cull", "culling: 100 view boxes of 1/16 of the world per frame", kind="cull"),
        Scenario("radius", "proximity: radius 50 around 10% of the entities", kind="radius"),
    )
}

#: (timed frames, repetitions) per N: enough frames for a stable mean, few enough that a
#: scenario at one N stays within a minute or two with every contender interleaved.
FRAMES = {1_000: (30, 3), 10_000: (10, 3), 50_000: (4, 3), 200_000: (3, 2)}

#: A contender whose first frame takes longer than this is dropped from the scenario.
MAX_FRAME_S = 3.0


def frames_for(n: int) -> tuple[int, int]:
    if n in FRAMES:
        return FRAMES[n]
    return (max(3, int(30_000 / max(n, 1))), 3)


# -- contenders ------------------------------------------------------------------------------


def peer_contenders(kind: str) -> tuple[list[Contender], list[str]]:
    """The peers available in this environment (the ``bench`` extra), and what is missing."""
    try:
        from bench.adapters import (
            PymunkContender,
            PyqtreeContender,
            RtreeContender,
            ShapelyContender,
        )
    except ImportError as exc:  # the bench extra is not installed
        return [], [f"peers not installed ({exc}): pip install -e '.[bench]'"]
    peers: list[Contender] = []
    if kind == "pairs":
        peers.append(PymunkContender("batch"))
    peers += [
        PymunkContender("callbacks"),
        ShapelyContender(),
        RtreeContender(),
        PyqtreeContender(),
    ]
    return peers, []


def contenders_for(s: Scenario, n: int) -> tuple[list[Contender], list[str]]:
    """Every contender of scenario ``s`` at ``n`` (ecs_spatial first: the ratio base). The
    per-entity pair search runs where part of the world moves; the SpatialProcessor chooses
    between the two searches itself, by the library's own rule."""
    cs: list[Contender] = [QuadTreeContender(), QuadTreeContender(threshold=LARGE_LEAVES)]
    notes: list[str] = []
    if s.kind == "pairs" and s.moving < 1.0:
        cs.append(QuadTreeIncrementalContender())
    cs.append(ProcessorContender())
    if s.kind == "pairs":
        cs.append(ProcessorContender(threshold=LARGE_LEAVES))
    peers, missing = peer_contenders(s.kind)
    cs += peers
    notes += missing
    if n <= 50_000:
        cs.append(TutorialContender())
    if n <= 10_000:
        cs.append(SeedContender("rebuild"))
    if n <= 1_000:
        cs.append(BruteContender())
    return cs, notes


# -- storage ---------------------------------------------------------------------------------


def load(out: Path) -> dict[str, Any]:
    path = out / JSON_NAME
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    return {"runs": {}, "memory": None, "semantics": None}


def save(out: Path, data: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / JSON_NAME).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def record(data: dict[str, Any], s: Scenario, result: ScenarioResult) -> None:
    data["runs"][f"{s.key}@{result.n}"] = {
        "scenario": s.key,
        "n": result.n,
        "frames": result.frames,
        "reps": result.reps,
        "step_ms": result.step_ms,
        "answers": result.answers,
        "machine": machine(),
        "when": now(),
        "revision": revision(),
        "contenders": [
            {
                "name": r.name,
                "median_ms": None if r.skipped else r.median_ms,
                "update_ms": None if r.skipped else r.update_ms,
                "answer_ms": None if r.skipped else r.answer_ms,
                "mean_ms": None if r.skipped else r.mean_ms,
                "rep_means_ms": r.rep_means_ms,
                "build_ms": r.build_ms,
                "missing": r.missing,
                "extra": r.extra,
                "skipped": r.skipped,
                "first_frame_ms": r.first_frame_ms,
                "note": r.note,
            }
            for r in result.contenders
        ],
    }


# -- memory ----------------------------------------------------------------------------------

MEMORY_CONTENDERS = ("ecs_spatial QuadTree", "SpatialProcessor", "pyqtree", "rtree", "shapely")


def _make_memory_contender(name: str) -> Contender:
    if name == "ecs_spatial QuadTree":
        return QuadTreeContender()
    if name == "SpatialProcessor":
        return ProcessorContender()
    from bench.adapters import PyqtreeContender, RtreeContender, ShapelyContender

    if name == "pyqtree":
        return PyqtreeContender("incremental")
    if name == "rtree":
        return RtreeContender("incremental")
    if name == "shapely":
        return ShapelyContender()
    raise ValueError(f"unknown memory contender {name!r}")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_one(name: str, n: int, traced: bool) -> dict[str, float]:
    """Build one contender on a world of ``n`` in this (fresh) process; the bytes it holds:
    traced by tracemalloc (Python allocations only: a C library's own memory is invisible to
    it), or the growth of the resident set (everything, allocator slack included)."""
    world = World(n, seed=1)
    world.boxes()  # warm what the world allocates lazily, so it is not counted
    gc.collect()
    contender = _make_memory_contender(name)
    if traced:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
    rss0 = _rss()
    contender.build(world)
    gc.collect()
    out = {"rss_bytes": float(_rss() - rss0)}
    if traced:
        out["traced_bytes"] = float(tracemalloc.get_traced_memory()[0] - before)
        tracemalloc.stop()
    return out


def measure_memory(n: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Each contender in two fresh interpreters (one traced, one for RSS alone)."""
    rows = []
    names = list(MEMORY_CONTENDERS)
    for name in names:
        row: dict[str, Any] = {"name": name}
        for traced in (True, False):
            cmd = [sys.executable, "-m", "bench", "peers", "--memory-one", name]
            cmd += ["--n", str(n)] + (["--traced"] if traced else [])
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            if traced:
                row["traced_per_entity"] = got["traced_bytes"] / n
            else:
                row["rss_per_entity"] = got["rss_bytes"] / n
        log(
            f"  {name:24s} traced {row['traced_per_entity']:8.0f} B/entity   "
            f"RSS growth {row['rss_per_entity']:8.0f} B/entity"
        )
        rows.append(row)
    return {"n": n, "rows": rows, "machine": machine(), "when": now()}


# -- semantics -------------------------------------------------------------------------------


def measure_semantics(log: Callable[[str], None], n: int = 3000, frames: int = 5) -> dict[str, Any]:
    """How far each peer's pairs differ from the closed-box reference on worlds with integer
    coordinates, where many boxes touch exactly (edge to edge, corner to corner): the case
    where libraries' rules differ. On the random worlds of the scenarios every peer is
    checked on the first frames as well (see each scenario's run)."""
    rows: dict[str, dict[str, float]] = {}
    total = 0
    for variant in ("uniform", "clustered"):
        world = World(n, seed=5, variant=variant)
        snap(world)
        cs, _ = peer_contenders("pairs")
        cs = [QuadTreeContender(), *cs]
        for c in cs:
            c.prepare("pairs")
            c.build(world)
        for _ in range(frames):
            step = world.step()
            ref = set(sweep_pairs(world.boxes()))
            total += len(ref)
            for c in cs:
                c.update(world, step)
                got = set(c.pairs())
                r = rows.setdefault(c.name, {"missing": 0.0, "extra": 0.0})
                r["missing"] += len(ref - got)
                r["extra"] += len(got - ref)
            _KEEP_ALIVE.extend(cs)
    for name, r in rows.items():
        log(f"  {name:44s} missing {r['missing']:5.0f}  extra {r['extra']:5.0f}  of {total}")
    return {"n": n, "frames": 2 * frames, "pairs": total, "rows": rows, "when": now()}


# -- report ----------------------------------------------------------------------------------


def _fmt_ms(ms: float) -> str:
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.2f}"


def _ours_best(run: dict[str, Any]) -> float:
    """ecs_spatial's figure for the targets: the faster of its QuadTree rows."""
    vals = [
        c["median_ms"]
        for c in run["contenders"]
        if c["name"] in OURS_NAMES and c["median_ms"] is not None
    ]
    return float(min(vals))


def _get(run: dict[str, Any], name: str, field: str = "median_ms") -> float | None:
    """A contender's figure in one run (``median_ms``, ``update_ms`` or ``answer_ms``), or
    None if it did not run, was skipped, or the run predates that figure."""
    for c in run["contenders"]:
        if c["name"] == name:
            v = c.get(field)
            return None if v is None else float(v)
    return None


def _ordered(runs: dict[str, Any]) -> list[tuple[str, Any]]:
    """The stored runs in scenario order, then by N."""
    order = list(SCENARIOS)

    def key(kv: tuple[str, Any]) -> tuple[int, int]:
        scenario = kv[1]["scenario"]
        return (order.index(scenario) if scenario in order else len(order), kv[1]["n"])

    return sorted(runs.items(), key=key)


def targets(data: dict[str, Any]) -> list[str]:
    """The suite's targets against the peers, checked against what is stored."""
    runs = data["runs"]
    lines = []
    slow = []
    for key, run in _ordered(runs):
        ours = _ours_best(run)
        for peer in ("pyqtree", "rtree", TutorialContender.name):
            v = _get(run, peer)
            if v is not None and v <= ours:
                slow.append(f"{peer} in {key} ({ours / v:.2f}x its time)")
    lines.append(
        "- Ahead of pyqtree, rtree and the tutorial quadtree in every scenario: "
        + ("**met**" if not slow else "**missed** in " + "; ".join(slow))
        + "."
    )
    misses = []
    checked = 0
    for key, run in _ordered(runs):
        s = SCENARIOS.get(run["scenario"])
        if s is None or s.kind != "pairs" or s.moving > 0.1:
            continue
        pm = [v for v in (_get(run, "pymunk (batch)"), _get(run, "pymunk (callbacks)")) if v]
        if not pm:
            continue
        checked += 1
        ours = _ours_best(run)
        if ours >= min(pm):
            misses.append(f"{key}: {ours / min(pm):.2f}x pymunk's time")
    if checked:
        lines.append(
            f"- Ahead of pymunk (its faster variant) where 10% or less moves ({checked} runs): "
            + ("**met**" if not misses else "**missed** in " + "; ".join(misses))
            + "."
        )
    head = runs.get("uniform@10000")
    if head:
        pm = [v for v in (_get(head, "pymunk (batch)"), _get(head, "pymunk (callbacks)")) if v]
        if pm:
            ratio = _ours_best(head) / min(pm)
            lines.append(
                f"- Within 1.0x pymunk at N = 10,000, everything moving: ecs_spatial takes "
                f"{ratio:.2f}x the time of pymunk's faster variant: "
                + ("**met**." if ratio <= 1.0 else "**missed**.")
            )
    for field, what in (
        ("median_ms", "index update plus queries"),
        ("answer_ms", "queries alone, index update excluded"),
    ):
        qmiss = []
        qchecked = 0
        for key, run in _ordered(runs):
            if run["scenario"] not in ("cull", "radius"):
                continue
            got = [v for v in (_get(run, name, field) for name in OURS_NAMES) if v is not None]
            if not got:
                continue
            ours_q = min(got)
            qchecked += 1
            for peer in ("pymunk (callbacks)", "rtree"):
                v = _get(run, peer, field)
                if v is not None and v <= ours_q:
                    qmiss.append(f"{peer} in {key} ({ours_q / v:.2f}x its time)")
        if qchecked:
            lines.append(
                f"- Culling and radius queries ahead of pymunk and rtree ({what}, {qchecked} "
                "runs): "
                + ("**met**" if not qmiss else "**missed** against " + "; ".join(qmiss))
                + "."
            )
    return lines


def write_report(data: dict[str, Any], out_dir: Path) -> list[Path]:
    """Rewrite ``peers.md`` and ``peers.png`` in ``out_dir`` from the stored results; return
    the files written (no plot without matplotlib)."""
    runs = data["runs"]
    machines = sorted({r["machine"] for r in runs.values()})
    whens = sorted(r["when"] for r in runs.values())
    out = [
        "# ecs_spatial benchmark results",
        "",
        f"Written by `python -m bench peers` from `{JSON_NAME}`; do not edit by hand.",
        "",
        f"Machine: {'; '.join(machines) or '-'}.  ",
        "ecs_spatial revision(s) measured: "
        + (", ".join(sorted({r.get("revision", "unknown") for r in runs.values()})) or "-")
        + ".  ",
        f"Measured {whens[0] if whens else '-'} to {whens[-1] if whens else '-'}, on a shared, "
        "noisy machine: compare ratios within one table (same run, contenders interleaved "
        "frame by frame) rather than absolute figures across tables.",
        "",
        "Each cell: **index ms per frame** (median over repetitions of the mean; the world's "
        "own step, identical for all, excluded) and, in brackets, the ratio to ecs_spatial's "
        "QuadTree (3.0x: ecs_spatial is three times faster). Every contender's answers were "
        "checked against a sort-and-sweep (pairs) or brute-force (queries) reference on the "
        "first frames of each run. \u2014 not run at that size; *skipped*: its first frame took "
        f"over {MAX_FRAME_S:.0f} s.",
        "",
        "Reproduce (each command a few minutes; results accumulate in "
        f"`bench/results/<machine>-<date>/{JSON_NAME}`, or in the folder `--out` names):",
        "",
        "```",
        "pip install -e '.[bench]'",
        "python -m bench peers --list",
        "python -m bench peers --scenarios uniform,clustered --n 1000,10000",
        "python -m bench peers --scenarios uniform-10,uniform-1 --n 50000",
        "python -m bench peers --memory && python -m bench peers --semantics",
        "```",
        "",
        "## Targets",
        "",
        "ecs_spatial's figure is the faster of its QuadTree rows: default leaves "
        f"(`threshold=16`), leaves of {LARGE_LEAVES} (`python -m bench thresholds`), and where "
        "only part of the world moves, the incremental pair search.",
        "",
        *targets(data),
        "",
    ]
    if (out_dir / "where-the-time-goes.md").exists():
        out += [
            "Where the time goes in each missed target, and what would close it: "
            "[`where-the-time-goes.md`](where-the-time-goes.md) "
            "(its figures from `python -m bench.tools.profile_targets`).",
            "",
        ]
    notes: dict[str, str] = {}
    for key in SCENARIOS:
        s = SCENARIOS[key]
        srun = {r["n"]: r for r in runs.values() if r["scenario"] == key}
        if not srun:
            continue
        sizes = sorted(srun)
        names: list[str] = []
        for n in sizes:
            for c in srun[n]["contenders"]:
                if c["name"] not in names:
                    names.append(c["name"])
                if c["note"]:
                    notes[c["name"]] = c["note"]
        out += [f"## {s.title}", ""]
        rows: list[list[str]] = []
        for name in names:
            cells = []
            for n in sizes:
                run = srun[n]
                base = _get(run, OURS)
                c = next((c for c in run["contenders"] if c["name"] == name), None)
                if c is None:
                    cells.append("\u2014")
                elif c["skipped"]:
                    cells.append(f"*skipped* (> {c['first_frame_ms'] / 1e3:.1f} s)")
                else:
                    ms = c["median_ms"]
                    ratio = f" ({ms / base:.1f}x)" if base and name != OURS else ""
                    diff = ""
                    if c["missing"] or c["extra"]:
                        diff = f" \u2020{c['missing']:.1f}/{c['extra']:.1f}"
                    cells.append(f"{_fmt_ms(ms)}{ratio}{diff}")
            rows.append([f"**{name}**" if name == OURS else name, *cells])
        rows.append(
            ["*world step (shared, excluded)*", *(_fmt_ms(srun[n]["step_ms"]) for n in sizes)]
        )
        out.append(
            markdown_table(["contender", *(f"N = {n:,}" for n in sizes)], rows, right=True)
        )
        split = [n for n in sizes if _get(srun[n], OURS, "answer_ms") is not None]
        if s.kind != "pairs" and split:
            out += ["", "The queries alone (index update excluded), same runs:", ""]
            rows = []
            for name in names:
                cells = []
                for n in split:
                    q = _get(srun[n], name, "answer_ms")
                    base_q = _get(srun[n], OURS, "answer_ms")
                    if q is None or not base_q:
                        cells.append("\u2014")
                    else:
                        ratio = f" ({q / base_q:.1f}x)" if name != OURS else ""
                        cells.append(f"{_fmt_ms(q)}{ratio}")
                rows.append([f"**{name}**" if name == OURS else name, *cells])
            out.append(
                markdown_table(["contender", *(f"N = {n:,}" for n in split)], rows, right=True)
            )
        elif split:
            parts = []
            for n in split:
                u = _get(srun[n], OURS, "update_ms")
                a = _get(srun[n], OURS, "answer_ms")
                parts.append(f"N = {n:,}: {_fmt_ms(u or 0.0)} + {_fmt_ms(a or 0.0)}")
            out += [
                "",
                "Where ecs_spatial QuadTree's time goes, index update (`move_many`) + pair search, "
                "ms: " + "; ".join(parts) + ".",
            ]
        answers = ", ".join(f"{srun[n]['answers']:,.0f}" for n in sizes)
        what = "pairs" if s.kind == "pairs" else "query hits"
        frames = ", ".join(f"{srun[n]['frames']}x{srun[n]['reps']}" for n in sizes)
        out += [
            "",
            f"{what.capitalize()} per frame: {answers}. Frames x repetitions: {frames}.",
            "",
        ]
    if any("\u2020" in line for line in out):
        out += [
            "\u2020 missing/extra answers per verified frame against the closed-box reference "
            "(a peer with its own contact rules); see *Semantics* below.",
            "",
        ]
    mem = data.get("memory")
    if mem:
        out += [
            f"## Memory at N = {mem['n']:,}",
            "",
            "Bytes per entity held by the index after building it on the benchmark world, each "
            "contender in a fresh interpreter. *traced*: tracemalloc (Python allocations only: "
            "the C++ memory of rtree and shapely does not show); *RSS growth*: the resident set "
            "(everything, allocator slack included).",
            "",
            markdown_table(
                ["index", "traced B/entity", "RSS growth B/entity"],
                (
                    [r["name"], f"{r['traced_per_entity']:,.0f}", f"{r['rss_per_entity']:,.0f}"]
                    for r in mem["rows"]
                ),
                right=True,
            ),
            "",
        ]
    sem = data.get("semantics")
    if sem:
        out += [
            "## Semantics: touching boxes",
            "",
            f"Integer coordinates, so that many boxes touch exactly; N = {sem['n']:,}, "
            f"{sem['frames']} frames (uniform and clustered), {sem['pairs']:,} reference pairs "
            "in all. Pairs each contender missed or added against the closed-box rule "
            "(touching counts).",
            "",
            markdown_table(
                ["contender", "missing", "extra"],
                (
                    [name, f"{r['missing']:.0f}", f"{r['extra']:.0f}"]
                    for name, r in sem["rows"].items()
                ),
                right=True,
            ),
            "",
        ]
    if notes:
        out += ["## How each contender is driven", ""]
        out += [f"- **{name}**: {note}" for name, note in notes.items()]
        out += [
            f"- **{TutorialContender.name}**: the Tuts+ tutorial's Quadtree, cleared and "
            "refilled every frame, `retrieve` per object (its queries: a region-query "
            "extension, since `retrieve` is not one).",
            "- **seed port (rebuild)**: `Quadtree.h` of the seed article, rebuilt every frame "
            "(`python -m bench frame` also times its remove-add mode).",
            "",
        ]
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / MD_NAME]
    written[0].write_text("\n".join(out))
    if importlib.util.find_spec("matplotlib") is None:
        print(f"(no {PLOT_NAME}: matplotlib is not installed; it is in the bench extra)")
    elif plot(data, out_dir / PLOT_NAME):
        written.append(out_dir / PLOT_NAME)
    return written


def plot(data: dict[str, Any], path: Path) -> bool:
    """Log-log index ms per frame against N, one panel per scenario, one line per contender;
    False if there is nothing to plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = data["runs"]
    keys = [k for k in SCENARIOS if any(r["scenario"] == k for r in runs.values())]
    if not keys:
        return False
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(max(5.2 * cols, 11.0), 4.2 * rows + 1.0), squeeze=False
    )
    names: list[str] = []
    for r in runs.values():
        for c in r["contenders"]:
            if c["name"] not in names:
                names.append(c["name"])
    palette = {
        OURS: "black",
        QuadTreeIncrementalContender.name: "dimgray",
        OURS_LARGE: "black",
        ProcessorContender.name: "tab:blue",
        PROCESSOR_LARGE: "tab:blue",
        "pymunk (batch)": "tab:orange",
        "pymunk (callbacks)": "tab:red",
        "shapely STRtree": "tab:green",
        "rtree": "tab:purple",
        "pyqtree": "tab:brown",
        TutorialContender.name: "tab:pink",
        "seed port (rebuild)": "tab:olive",
        "brute force": "tab:gray",
    }
    cmap = plt.get_cmap("tab20")
    ours = (*OURS_NAMES, ProcessorContender.name, PROCESSOR_LARGE)
    dashed = (QuadTreeIncrementalContender.name, OURS_LARGE, PROCESSOR_LARGE)
    style = {
        name: {
            "color": palette.get(name, cmap(i % 20)),
            "linewidth": 2.8 if name in ours else 1.3,
            "linestyle": ":" if name in dashed[1:] else "--" if name in dashed else "-",
            "marker": "o" if name in ours else ".",
        }
        for i, name in enumerate(names)
    }
    for ax, key in zip(axes.flat, keys, strict=False):
        srun = sorted((r for r in runs.values() if r["scenario"] == key), key=lambda r: r["n"])
        for name in names:
            pts = [
                (r["n"], c["median_ms"])
                for r in srun
                for c in r["contenders"]
                if c["name"] == name and c["median_ms"]
            ]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, label=name, **style[name])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(SCENARIOS[key].title, fontsize=9)
        ax.set_xlabel("N (boxes)")
        ax.set_ylabel("index ms per frame")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(
        "ecs_spatial vs peers: ms per frame (world step excluded), lower is better", fontsize=11
    )
    legend_rows = math.ceil(len(labels) / 4)
    fig.tight_layout(rect=(0, (0.25 + 0.2 * legend_rows) / fig.get_figheight(), 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- main ------------------------------------------------------------------------------------


#: ``--quick``: every scenario on a tiny world, one short repetition, nothing written.
QUICK_N = 300


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench peers",
        description="ecs_spatial against pyqtree, rtree, pymunk, shapely and the baselines, "
        "scenario by scenario (the suite); results accumulate in <out>/peers.json, and "
        "<out>/peers.md and peers.png are rewritten from them.",
    )
    parser.add_argument(
        "--scenarios", default="", help="comma-separated keys (see --list), or 'all' "
        "(default: uniform; with --quick, all)"
    )
    parser.add_argument("--n", default="", help="comma-separated sizes (default: each's own)")
    parser.add_argument("--frames", type=int, default=0, help="timed frames (default: by N)")
    parser.add_argument("--reps", type=int, default=0, help="repetitions (default: by N)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up frames")
    parser.add_argument("--verify", type=int, default=2, help="verified warm-up frames")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--list", action="store_true", help="list the scenarios")
    parser.add_argument(
        "--report", action="store_true", help="only rewrite peers.md and peers.png in --out"
    )
    parser.add_argument("--memory", action="store_true", help="memory per entity at N=50,000")
    parser.add_argument("--semantics", action="store_true", help="touching-box semantics")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a smoke run: every scenario at N={QUICK_N}, 2 frames, nothing written",
    )
    add_output_options(parser, save=False)
    parser.add_argument("--memory-one", help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    given = list(sys.argv[1:] if argv is None else argv)

    if args.memory_one:
        n = int(args.n or 50_000)
        print(json.dumps(memory_one(args.memory_one, n, args.traced)))
        return 0
    if args.list:
        for s in SCENARIOS.values():
            size_text = ", ".join(f"{n:,}" for n in s.sizes)
            print(f"{s.key:12s} {s.title}  [N = {size_text}]")
        return 0
    out: Path = args.out or default_out()
    data = load(out)
    if args.report:
        if not data["runs"]:
            parser.error(f"no results in {_shown(out)}: choose the folder with --out")
        for path in write_report(data, out):
            print(f"wrote {_shown(path)}")
        return 0
    here = machine()
    others = sorted({r["machine"] for r in data["runs"].values()} - {here})
    if others and not args.quick:
        parser.error(
            f"{_shown(out)} holds figures from another machine ({'; '.join(others)}): "
            "a results folder holds one machine's; choose another --out"
        )
    if args.quick:
        args.n = args.n or str(QUICK_N)
        args.frames = args.frames or 2
        args.reps = args.reps or 1
        args.warmup = args.verify = 2
        args.scenarios = args.scenarios or "all"
    else:
        note_run(out, " ".join(["python -m bench peers", *given]))
    print(here)
    if args.memory:
        n = int(args.n or 50_000)
        print(f"memory at N = {n:,}:")
        data["memory"] = measure_memory(n, print)
    if args.semantics:
        print("semantics on touching boxes:")
        data["semantics"] = measure_semantics(print)
    if not args.quick and (args.memory or args.semantics):
        save(out, data)
    if not (args.memory or args.semantics):
        scenarios = args.scenarios or "uniform"
        keys = list(SCENARIOS) if scenarios == "all" else scenarios.split(",")
        for key in keys:
            if key not in SCENARIOS:
                parser.error(f"unknown scenario {key!r}: see --list")
        for key in keys:
            s = SCENARIOS[key]
            sizes = [int(x) for x in args.n.split(",")] if args.n else list(s.sizes)
            for n in sizes:
                frames, reps = frames_for(n)
                frames = args.frames or frames
                reps = args.reps or reps
                cs, notes = contenders_for(s, n)
                label = f"{s.key} @ N={n:,}"
                print(f"\n{label}: {s.title}" + (f" ({'; '.join(notes)})" if notes else ""))

                def make_world(s: Scenario = s, n: int = n) -> World:
                    return World(
                        n, seed=args.seed, variant=s.variant, moving=s.moving, churn=s.churn
                    )

                result = run_scenario(
                    label,
                    make_world,
                    cs,
                    kind=s.kind,
                    frames=frames,
                    reps=reps,
                    warmup=args.warmup,
                    verify=args.verify,
                    max_frame_s=MAX_FRAME_S,
                    log=print,
                )
                print(format_table(result))
                for r in result.contenders:
                    if r.missing or r.extra:
                        print(
                            f"  {r.name}: {r.missing:.1f} missing, {r.extra:.1f} extra answers "
                            "per verified frame against the reference"
                        )
                _KEEP_ALIVE.extend(cs)
                if not args.quick:
                    record(data, s, result)
                    save(out, data)
    if args.quick:
        print("\n(--quick: a smoke run on tiny worlds; nothing written)")
        return 0
    print()
    for path in write_report(data, out):
        print(f"wrote {_shown(path)}")
    return 0


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


#: Every contender built in this process, kept alive until the end. pymunk frees a space
#: in O(shapes x arbiters) (each shape's removal filters every cached arbiter): measured
#: 3.5 s for 20,000 boxes and over ten minutes for 50,000 clustered ones. Nothing of that
#: belongs in a benchmark, so the suite never frees them, and ``python -m bench`` leaves
#: with ``os._exit``.
_KEEP_ALIVE: list[Contender] = []
