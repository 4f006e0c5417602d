"""``python -m bench``: every measurement of ecs_spatial, one subcommand each.

Run from the repository root (the ``bench`` package sits beside ``ecs_spatial``):

    python -m bench --help
    python -m bench peers --list
    python -m bench processor --quick

Each subcommand has its own ``--help`` and a ``--quick`` smoke run (tiny worlds, seconds,
nothing written); ``--save`` (``peers`` always) writes its figures to
``bench/results/<machine>-<YYYY-MM-DD>/`` or the folder ``--out`` names. The investigation
tools (profiles, A/B comparisons, self-checks) are not measurements: they are listed apart, and
run as ``python -m bench.tools.<name>``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import textwrap
from collections.abc import Callable, Sequence

#: Every measurement: its subcommand, its module, what it measures.
MEASUREMENTS: dict[str, tuple[str, str]] = {
    "peers": (
        "bench.peers",
        "the suite: ecs_spatial against pyqtree, rtree, pymunk, shapely and the baselines, "
        "8 scenarios (all pairs, culling, radius queries) from N = 1,000 to 200,000; memory "
        "and touching-box semantics",
    ),
    "frame": (
        "bench.frame",
        "one frame (move everything, find all pairs): the QuadTree against the tutorial "
        "quadtree, the seed port, sort-and-sweep and brute force",
    ),
    "thresholds": (
        "bench.thresholds",
        "ecs_spatial alone in the suite's scenarios at leaf capacities 16, 32, 64, 128",
    ),
    "build": (
        "bench.build",
        "building an index of N boxes from scratch (insert, insert_many, esper), beside the peers",
    ),
    "processor": (
        "bench.processor",
        "the SpatialProcessor through esper: its frame against the user's movement and a bare "
        "tree, its phases, static worlds, the pair-search crossover",
    ),
    "queries": (
        "bench.queries",
        "the CullingProcessor and ProximityProcessor against brute force and re-querying; the "
        "whole stack through esper; nearest",
    ),
    "native": (
        "bench.native",
        "the compiled core against the pure-Python reference, numpy and pymunk: frames, "
        "queries, moves, memory, and its targets",
    ),
    "handlers": (
        "bench.handlers",
        "collision handlers by component type (on_collision) against the plain events, "
        "through esper",
    ),
    "dispatch": (
        "bench.dispatch",
        "delivering events: ecs_spatial's Outbox against esper.dispatch_event",
    ),
}

#: The investigation tools, listed apart: ``python -m bench.tools.<name>``.
TOOLS: dict[str, str] = {
    "profile_targets": "where the index's time goes in the scenarios whose targets are missed",
    "scene_profile": "the headline scene's (examples/collisions.py) processor cost and a "
    "cProfile, without a window",
    "handlers_frames": "frames of one bench handlers contender, for callgrind's instruction "
    "counts",
    "overlay_cost": "the pyglet debug overlay's cost a frame in the scenes, and nodes(view)",
    "ab": "A/B wall-clock of copies of quadtree.py, interleaved frame by frame",
    "check_baselines": "the baselines' pairs and queries against brute force, touching boxes "
    "included",
}


def parser() -> argparse.ArgumentParser:
    tools = "\n".join(
        textwrap.fill(what, 79, initial_indent=f"  {name:18s} ", subsequent_indent=" " * 21)
        for name, what in TOOLS.items()
    )
    top = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure ecs_spatial. Each measurement is a subcommand with its own "
        "--help and a --quick smoke run; --save (peers: always) writes its figures to "
        "bench/results/<machine>-<YYYY-MM-DD>/ with the machine, the Python and the git "
        "revision.",
        epilog="investigation tools (not measurements; python -m bench.tools.<name> --help):\n"
        + tools,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = top.add_subparsers(dest="measurement", metavar="MEASUREMENT", title="measurements")
    for name, (_, what) in MEASUREMENTS.items():
        sub.add_parser(name, help=what, add_help=False)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in MEASUREMENTS:
        module = importlib.import_module(MEASUREMENTS[args[0]][0])
        run: Callable[[Sequence[str]], int] = module.main
        return run(args[1:])
    top = parser()
    if not args:
        top.print_help()
        return 2
    top.parse_args(args)  # --help, or an error naming the measurements
    return 2


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Without teardown: pymunk frees a space in O(shapes x arbiters) (over ten minutes for
    # 50,000 clustered boxes), and nothing after a measurement needs it (bench/peers.py).
    os._exit(status)
