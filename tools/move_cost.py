"""Instructions per move of each way to feed the index its moves, for callgrind.

One path's loop over N = 10,000 moves of the benchmark world (``bench.world.World``, seed 4,
all moving) runs inside ``operator.call`` (CPython 3.11 and later), so that callgrind can
count that loop alone::

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=_operator_call \\
        python -m tools.move_cost stay move_box

and the instructions collected over N are the path's cost per move, the loop included.
``stay``: each box moves to its next frame's place (mostly within its leaf); ``jump``: each
to another box's place (mostly to another node). The paths (``--list``): the loop alone,
``Box(...)`` alone, a tuple alone, a loop of ``move(e, Box(...))``, of ``move(e, tuple)``,
of ``move`` of prebuilt Boxes and tuples, and ``move_many`` of a list of tuples and of
buffers.
"""

from __future__ import annotations

import argparse
import operator
import random
from array import array
from collections.abc import Callable
from functools import partial
from typing import Any

from bench.world import World
from ecs_spatial import Box, QuadTree

LOOPS = {
    "empty": "for e, x0, y0, x1, y1 in rows: pass",
    "box_alone": "for e, x0, y0, x1, y1 in rows: Box(x0, y0, x1, y1)",
    "tuple_alone": "for e, x0, y0, x1, y1 in rows: (x0, y0, x1, y1)",
    "move_box": "for e, x0, y0, x1, y1 in rows: move(e, Box(x0, y0, x1, y1))",
    "move_tuple": "for e, x0, y0, x1, y1 in rows: move(e, (x0, y0, x1, y1))",
    "move_prebox": "for e, b in prebuilt_boxes: move(e, b)",
    "move_pretuple": "for e, b in prebuilt_tuples: move(e, b)",
    "many_tuples": "move_many(moved, tuples, atomic=False)",
    "many_buffers": "move_many(ids, coords, atomic=False)",
}


def measured(kind: str, path: str, n: int) -> Callable[[], object]:
    """The loop of ``path`` over ``n`` moves of ``kind``, as a call of no arguments (its
    names the loop's locals, as a caller's loop keeps them)."""
    world = World(n, seed=4)
    boxes = world.boxes()
    tree = QuadTree((0.0, 0.0, world.side, world.side))
    tree.insert_many(boxes, boxes.values())
    moved = list(world.step().moved)
    if kind == "stay":
        new = {e: world.box(e) for e in moved}
    else:
        others = moved[:]
        random.Random(7).shuffle(others)
        new = {e: world.box(o) for e, o in zip(moved, others, strict=True)}
    scope = {
        "rows": [(e, *new[e]) for e in moved], "tuples": [new[e] for e in moved],
        "prebuilt_boxes": [(e, Box(*new[e])) for e in moved],
        "prebuilt_tuples": [(e, new[e]) for e in moved], "moved": moved,
        "ids": array("q", moved), "coords": array("d", [c for e in moved for c in new[e]]),
        "move": tree.move, "move_many": tree.move_many, "Box": Box,
    }
    head, _, body = LOOPS[path].partition(": ")
    code = (f"def loop({', '.join(scope)}):\n    {head}:\n        {body}\n" if body else
            f"def loop({', '.join(scope)}):\n    {head}\n")
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # the loop's text above, its names the function's locals
    return partial(namespace["loop"], **scope)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.move_cost", description=(__doc__ or "").split("\n", 1)[0]
    )
    parser.add_argument("kind", nargs="?", choices=("stay", "jump"), default="stay")
    parser.add_argument("path", nargs="?", choices=list(LOOPS), default="move_box")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--list", action="store_true", help="print the paths' loops")
    args = parser.parse_args(argv)
    if args.list:
        for name, loop in LOOPS.items():
            print(f"{name:14s} {loop}")
        return 0
    call: Callable[[Callable[[], object]], object] = vars(operator)["call"]  # 3.11 and later
    call(measured(args.kind, args.path, args.n))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
