"""How the leaf capacity (``threshold``) changes ecs_spatial's speed, scenario by scenario.

``QuadTree`` and ``SpatialProcessor`` take ``threshold=16`` by default (their contract): a leaf
splits when it would hold more. This runs the suite's scenarios (``python -m bench peers
--list``)
with ecs_spatial's own contenders only, once per threshold, all of them interleaved frame by
frame in one run by the harness, and reports each one's ms per frame (index time, the world's
step excluded) and its ratio to the same contender with the default threshold. The
contenders: the QuadTree with ``find_all_intersections`` every frame; where only part of the
world moves, the QuadTree with the incremental pair search too; and, for pair scenarios, the
SpatialProcessor through esper, which chooses between the two searches itself.

    python -m bench thresholds                        # every scenario at 10k and 50k, ~15 min
    python -m bench thresholds --scenarios uniform,cull --n 10000 --thresholds 16,64
    python -m bench thresholds --save                 # also write <out>/thresholds.md
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial

from bench.contender import Contender
from bench.harness import ScenarioResult, run_scenario
from bench.ours import ProcessorContender, QuadTreeContender, QuadTreeIncrementalContender
from bench.peers import SCENARIOS, Scenario, frames_for
from bench.record import add_output_options, machine, markdown_table, saved
from bench.world import World

DEFAULT = 16

#: The kinds of contender, by the label the tables use.
KINDS = ("QuadTree", "QuadTree, incremental pairs", "SpatialProcessor")


def contenders(s: Scenario, thresholds: list[int]) -> list[Contender]:
    """Each kind of ecs_spatial contender that scenario ``s`` runs, once per threshold,
    named ``"<kind> t=<threshold>"``."""
    out: list[Contender] = []
    for kind in KINDS:
        if kind == KINDS[1] and not (s.kind == "pairs" and s.moving < 1.0):
            continue
        if kind == KINDS[2] and s.kind != "pairs":
            continue
        for t in thresholds:
            c: Contender
            if kind == KINDS[0]:
                c = QuadTreeContender(threshold=t)
            elif kind == KINDS[1]:
                c = QuadTreeIncrementalContender(threshold=t)
            else:
                c = ProcessorContender(threshold=t)
            c.name = f"{kind} t={t}"
            out.append(c)
    return out


def rows(s: Scenario, n: int, result: ScenarioResult, thresholds: list[int]) -> list[str]:
    """Markdown rows: one per kind of contender, ms per frame and the ratio to t=16."""
    out = []
    for kind in KINDS:
        cells = {t: result.get(f"{kind} t={t}") for t in thresholds}
        if not any(cells.values()):
            continue
        base = cells.get(DEFAULT)
        base_ms = base.median_ms if base is not None else None
        shown = []
        for t in thresholds:
            c = cells[t]
            if c is None:
                shown.append("")
            elif base_ms is None or t == DEFAULT:
                shown.append(f"{c.median_ms:.1f}")
            else:
                shown.append(f"{c.median_ms:.1f} ({c.median_ms / base_ms:.2f}x)")
        timed = {t: c.median_ms for t, c in cells.items() if c is not None}
        best = min(timed, key=lambda t: timed[t])
        out.append(f"| {s.key} | {n:,} | {kind} | " + " | ".join(shown) + f" | {best} |")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench thresholds", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument(
        "--scenarios",
        default="uniform,uniform-10,uniform-1,clustered,mixed,churn,cull,radius",
        help="comma-separated keys of python -m bench peers --list",
    )
    parser.add_argument("--n", default="10000,50000", help="comma-separated sizes")
    parser.add_argument("--thresholds", default="16,32,64,128", help="comma-separated")
    parser.add_argument("--frames", type=int, help="timed frames (default: by N, as the suite)")
    parser.add_argument("--reps", type=int, help="repetitions (default: by N, as the suite)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: two scenarios at N=200, thresholds 16 and 32, 2 frames",
    )
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.scenarios, args.n, args.thresholds = "uniform-10,cull", "200", "16,32"
        args.frames, args.reps = 2, 1
    keys = args.scenarios.split(",")
    unknown = [k for k in keys if k not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown}: see python -m bench peers --list")
    sizes = [int(n) for n in args.n.split(",")]
    thresholds = sorted({int(t) for t in args.thresholds.split(",")} | {DEFAULT})

    header = ["scenario", "N", "contender"]
    header += [f"t={t}" + (" (default)" if t == DEFAULT else "") for t in thresholds]
    header.append("fastest")
    with saved(args, "thresholds", argv):
        print(f"# ecs_spatial by leaf capacity (`threshold`)\n\n{machine()}.\n")
        print(
            "Median ms per frame of the index (the world's step excluded), and in brackets "
            f"the ratio to the same contender with the default `threshold={DEFAULT}` in the "
            "same run: below 1 is faster. Every contender ran interleaved with the others, "
            "frame by frame, on the same world.\n"
        )
        print(markdown_table(header, []), flush=True)
        for key in keys:
            s = SCENARIOS[key]
            for n in sizes:
                frames, reps = frames_for(n)
                result = run_scenario(
                    f"{s.title}, N={n}",
                    partial(
                        World, n, seed=args.seed, variant=s.variant, moving=s.moving,
                        churn=s.churn,
                    ),
                    contenders(s, thresholds),
                    kind=s.kind,
                    frames=args.frames or frames,
                    reps=args.reps or reps,
                )
                for row in rows(s, n, result, thresholds):
                    print(row, flush=True)
    return 0
