"""``python -m bench``: every measurement of ecs_spatial, one subcommand each."""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

#: Every measurement: its subcommand and its module, whose docstring is its ``--help``.
MEASUREMENTS = {"peers": "bench.peers", "native": "bench.native", "esper": "bench.game",
                "queries": "bench.queries", "flood": "bench.flood", "agents": "bench.agents",
                "arrays": "bench.arrays"}


def summary(module: str) -> str:
    """The first sentence of a module's docstring, read without importing it."""
    path = Path(__file__).parent / f"{module.removeprefix('bench.')}.py"
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return " ".join(doc.split("\n\n")[0].split()).replace("``", "")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure ecs_spatial. Each measurement is a subcommand with its own "
        "--help and a --quick smoke run (tiny worlds, seconds, nothing written); --save "
        "writes its figures to bench/results/<machine>/ with the machine, the Python and "
        "the git revision.",
        epilog="Investigation tools (profiles, A/B runs, callgrind drivers) are not "
        "measurements: see tools/README.md (python -m tools.<name> --help).",
    )
    sub = top.add_subparsers(dest="measurement", metavar="MEASUREMENT", title="measurements")
    for name, module in MEASUREMENTS.items():
        sub.add_parser(name, help=summary(module), add_help=False)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in MEASUREMENTS:
        run: Callable[[Sequence[str]], int] = importlib.import_module(
            MEASUREMENTS[args[0]]).main
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
    # Without teardown: pymunk frees a space in O(shapes x arbiters), and nothing after a
    # measurement needs it.
    os._exit(status)
