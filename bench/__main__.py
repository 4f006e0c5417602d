"""``python -m bench``: every measurement of ecs_spatial, one subcommand each.

Run from the repository root (the ``bench`` package sits beside ``ecs_spatial``). Each
subcommand has its own ``--help`` and a ``--quick`` smoke run (tiny worlds, seconds, nothing
written); ``--save`` writes what it prints to ``bench/results/<machine>/`` or the folder
``--out`` names (``peers`` stores its suite there always). The investigation tools are not
measurements: they live outside the suite, in ``tools/`` (``python -m tools.<name>``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

#: Every measurement: its subcommand, its module, what it measures.
MEASUREMENTS: dict[str, tuple[str, str]] = {
    "peers": ("bench.peers", "the index against pyqtree, rtree, pymunk, shapely and the "
              "baselines in 8 scenarios from N = 1,000 to 200,000, memory and touching-box "
              "semantics (the suite); other sets: the baselines' frame, leaf capacities, "
              "building from scratch"),
    "native": ("bench.native", "the compiled core against the reference, numpy and pymunk: "
               "frames, queries, the ways to feed moves, memory, and its targets"),
    "esper": ("bench.game", "through esper: the SpatialProcessor's frame against the user's "
              "movement and a bare tree, static worlds, the pair-search crossover, typed "
              "handlers, the whole stack, event delivery"),
    "queries": ("bench.queries", "the culling and proximity processors against brute force, "
                "nearest, and the casts"),
    "flood": ("bench.flood", "the compiled core's table of ids against ids chosen to collide "
              "(hash flooding)"),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure ecs_spatial. Each measurement is a subcommand with its own "
        "--help and a --quick smoke run; --save writes its figures to bench/results/<machine>/ "
        "with the machine, the Python and the git revision.",
        epilog="Investigation tools (profiles, A/B runs, callgrind drivers) are not "
        "measurements: see tools/README.md (python -m tools.<name> --help).",
    )
    sub = top.add_subparsers(dest="measurement", metavar="MEASUREMENT", title="measurements")
    for name, (_, what) in MEASUREMENTS.items():
        sub.add_parser(name, help=what, add_help=False)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in MEASUREMENTS:
        run: Callable[[Sequence[str]], int] = importlib.import_module(
            MEASUREMENTS[args[0]][0]).main
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
    # 50,000 clustered boxes), and nothing after a measurement needs it.
    os._exit(status)
