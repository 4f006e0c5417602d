"""Cross-check the baselines (brute force, sort-and-sweep, the tutorial quadtree, the seed
port) against brute force, touching boxes included: the measurements compare ecs_spatial with
them, so they must answer exactly.

    python -m bench.tools.check_baselines
"""

from __future__ import annotations

import argparse
import sys

from bench.baselines import check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tools.check_baselines", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--frames", type=int, default=4, help="frames per world")
    args = parser.parse_args(argv)
    failures = check(frames=args.frames)
    print("baselines agree with brute force" if not failures else f"{failures} MISMATCHES")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
