"""What the SpatialProcessor's pair diff costs a frame after a full search, path by path.

The benchmark world (``bench.world.World``, N = 10,000 all moving) in the compiled index, its
pairs one frame apart: ``find`` is ``find_all_intersections`` alone (for scale), ``sets`` the
diff as PairSet.update made it before the merge (set differences, then sorting), ``reference``
and ``compiled`` the two merges (``pair_set.diff_sorted_reference``, ``_cpair_set.diff_sorted``),
``update`` the whole ``PairSet.update`` of a full search with the previous frame's sorted pairs
at hand (as after a full search), the search included. The flat path (a full search with no
filter): ``find_array`` is ``find_all_intersections_array`` alone, ``flat_reference`` and
``flat`` the two merges of the frames' flat arrays (``pair_set.diff_sorted_flat_reference``,
``_cpair_set.diff_sorted_flat``), ``update_flat`` the whole ``PairSet.update`` with no filter
(``accept`` None) and the previous frame's flat pairs at hand. Wall clock, best of
``--repeats``::

    python -m tools.pair_diff_cost

or one path inside ``operator.call`` (CPython 3.11 and later), for callgrind::

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=_operator_call \\
        python -m tools.pair_diff_cost --only compiled

A path the checkout does not have (the merges, before them) is left out.
"""

from __future__ import annotations

import argparse
import operator
import time
from array import array
from collections.abc import Callable
from typing import Any

from bench.world import World
from ecs_spatial import QuadTree, pair_set
from ecs_spatial.pair_set import PairSet

Pair = tuple[int, int]


def _keep(found: list[Pair]) -> list[Pair]:
    return found


Prepared = Callable[[], Callable[[], object]]


def paths(n: int) -> tuple[dict[str, Prepared], dict[str, int]]:
    """Each path as what prepares a call with no arguments (only the call is measured),
    and the frame's counts."""
    world = World(n, moving=1.0)
    tree = QuadTree()
    boxes = world.boxes()
    tree.insert_many(list(boxes), list(boxes.values()))
    for _ in range(2):
        world.step()
        boxes = world.boxes()
        tree.move_many(list(boxes), list(boxes.values()))
    previous = tree.find_all_intersections()
    world.step()
    boxes = world.boxes()
    tree.move_many(list(boxes), list(boxes.values()))
    found = tree.find_all_intersections()
    old = dict.fromkeys(previous)

    def sets() -> object:
        fresh = set(found)
        return sorted(old.keys() - fresh), sorted(fresh - old.keys())

    def update() -> Callable[[], object]:
        p = PairSet()
        p.replace(list(previous))
        p.choice.measured = [True, True]
        return lambda: p.update(tree, "full", n, set, set(), _keep)

    calls: dict[str, Prepared] = {
        "find": lambda: tree.find_all_intersections,
        "sets": lambda: sets,
    }
    reference: Any = getattr(pair_set, "diff_sorted_reference", None)
    if reference is not None:
        calls["reference"] = lambda: lambda: reference(previous, found)
    compiled: Any = getattr(pair_set, "diff_sorted", reference)
    if compiled is not reference:  # the compiled core is in use
        calls["compiled"] = lambda: lambda: compiled(previous, found)
    calls["update"] = update
    flat_reference: Any = getattr(pair_set, "diff_sorted_flat_reference", None)
    if flat_reference is not None:
        previous_flat = array("q", [e for pair in previous for e in pair])
        found_flat = tree.find_all_intersections_array()

        def update_flat() -> Callable[[], object]:
            p = PairSet()
            p.replace(list(previous))
            p.flat_pairs = array("q", previous_flat)
            p.sorted_pairs = None
            p.choice.measured = [True, True]
            return lambda: p.update(tree, "full", n, set, set(), None)

        calls["find_array"] = lambda: tree.find_all_intersections_array
        calls["flat_reference"] = lambda: lambda: flat_reference(previous_flat, found_flat)
        flat: Any = getattr(pair_set, "diff_sorted_flat", flat_reference)
        if flat is not flat_reference:
            calls["flat"] = lambda: lambda: flat(previous_flat, found_flat)
        if pair_set.FLAT_PAIRS:
            calls["update_flat"] = update_flat
    fresh = set(found)
    counts = {"pairs": len(found), "exits": len(set(previous) - fresh),
              "enters": len(fresh - set(previous))}
    return calls, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.pair_diff_cost", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--only", help="run this path once inside operator.call (callgrind)")
    args = parser.parse_args(argv)
    calls, counts = paths(args.n)
    if args.only:
        inside: Callable[[Callable[[], object]], object] = vars(operator)["call"]  # 3.11 on
        inside(calls[args.only]())
        return 0
    print(f"N = {args.n:,} all moving, one frame: " + ", ".join(
        f"{value:,} {key}" for key, value in counts.items()))
    for name, prepare in calls.items():
        best = float("inf")
        for _ in range(args.repeats):
            call = prepare()
            started = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - started)
        print(f"{name:14} {best * 1e3:7.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
