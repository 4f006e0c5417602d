"""How the leaf capacity (``threshold``) changes ecs_spatial's speed, scenario by scenario.

``QuadTree`` and ``SpatialProcessor`` take ``threshold=16`` by default (their contract): a leaf
splits when it would hold more. This runs the suite's scenarios (``bench/run.py --list``)
with ecs_spatial's own contenders only, once per threshold, all of them interleaved frame by
frame in one run by the harness, and reports each one's ms per frame (index time, the world's
step excluded) and its ratio to the same contender with the default threshold. The
contenders: the QuadTree with ``find_all_intersections`` every frame; where only part of the
world moves, the QuadTree with the incremental pair search too; and, for pair scenarios, the
SpatialProcessor through esper, which chooses between the two searches itself.

    python bench/thresholds.py                        # every scenario at 10k and 50k, ~15 min
    python bench/thresholds.py --scenarios uniform,cull --n 10000 --thresholds 16,64
    python bench/thresholds.py --write                # also rewrite bench/thresholds.md
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``ecs_spatial`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Contender
from bench.harness import ScenarioResult, machine, run_scenario
from bench.ours import (
    ProcessorContender,
    QuadTreeContender,
    QuadTreeIncrementalContender,
    processor_available,
)
from bench.run import SCENARIOS, Scenario, _now, _revision, frames_for
from bench.world import World

OUT = Path(__file__).resolve().parent / "thresholds.md"
DEFAULT = 16

#: The kinds of contender, by the label the tables use.
KINDS = ("QuadTree", "QuadTree, incremental pairs", "SpatialProcessor")


def contenders(s: Scenario, thresholds: list[int]) -> list[Contender]:
    """Each kind of ecs_spatial contender that scenario ``s`` runs, once per threshold,
    named ``"<kind> t=<threshold>"``."""
    out: list[Contender] = []
    for kind in KINDS:
        if kind == KINDS[1] and not (s.kind == "pairs" and (s.moving < 1.0 or s.churn)):
            continue
        if kind == KINDS[2] and not (s.kind == "pairs" and processor_available()):
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--scenarios",
        default="uniform,uniform-10,uniform-1,clustered,mixed,churn,cull,radius",
        help="comma-separated keys of bench/run.py --list",
    )
    parser.add_argument("--n", default="10000,50000", help="comma-separated sizes")
    parser.add_argument("--thresholds", default="16,32,64,128", help="comma-separated")
    parser.add_argument("--frames", type=int, help="timed frames (default: by N, as run.py)")
    parser.add_argument("--reps", type=int, help="repetitions (default: by N, as run.py)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", action="store_true", help=f"also write {OUT.name}")
    args = parser.parse_args(argv)
    keys = args.scenarios.split(",")
    unknown = [k for k in keys if k not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown}: see bench/run.py --list")
    sizes = [int(n) for n in args.n.split(",")]
    thresholds = sorted({int(t) for t in args.thresholds.split(",")} | {DEFAULT})

    header = (
        "| scenario | N | contender | "
        + " | ".join(f"t={t}" + (" (default)" if t == DEFAULT else "") for t in thresholds)
        + " | fastest |"
    )
    lines = [header, "|" + "---|" * (4 + len(thresholds))]
    print(f"ecs_spatial by leaf capacity; {machine()}")
    print(header)
    for key in keys:
        s = SCENARIOS[key]
        for n in sizes:
            frames, reps = frames_for(n)
            frames = args.frames or frames
            reps = args.reps or reps
            result = run_scenario(
                f"{s.title}, N={n}",
                partial(
                    World, n, seed=args.seed, variant=s.variant, moving=s.moving, churn=s.churn
                ),
                contenders(s, thresholds),
                kind=s.kind,
                frames=frames,
                reps=reps,
            )
            for row in rows(s, n, result, thresholds):
                print(row, flush=True)
                lines.append(row)
    if args.write:
        given = sys.argv[1:] if argv is None else argv
        command = " ".join(["python bench/thresholds.py", *given])
        OUT.write_text(
            "# ecs_spatial by leaf capacity (`threshold`)\n\n"
            f"Written by `{command}` at {_now()}, revision {_revision()}; {machine()}.\n\n"
            "Median ms per frame of the index (the world's step excluded), and in brackets "
            f"the ratio to the same contender with the default `threshold={DEFAULT}` in the "
            "same run: below 1 is faster. Every contender ran interleaved with the others, "
            "frame by frame, on the same world.\n\n" + "\n".join(lines) + "\n"
        )
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
