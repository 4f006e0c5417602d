"""One frame of random changes to an index and the boxes it should hold, for the pair-set
tests (tests/test_pair_set.py, tests/test_cpair_set.py): boxes inserted, moved and removed
in the index and in a dict beside it, the same random draws in the same order every time."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ecs_spatial import Box


def churn_frame(
    rng: random.Random,
    tree: Any,
    boxes: dict[int, Box],
    next_id: int,
    *,
    most_ops: int,
    move_below: float,
    make_box: Callable[[random.Random], Box],
) -> tuple[set[int], set[int], int]:
    """Up to ``most_ops`` changes: an insert (three in ten draws, or when ``boxes`` is
    empty), a move (draws up to ``move_below``) or a removal (the rest). Returns the entities
    touched (inserted or moved, and not removed after), those removed, and the next new id."""
    touched: set[int] = set()
    removed: set[int] = set()
    for _ in range(rng.randint(0, most_ops)):
        action = rng.random()
        if action < 0.3 or not boxes:
            boxes[next_id] = make_box(rng)
            tree.insert(next_id, boxes[next_id])
            touched.add(next_id)
            next_id += 1
        elif action < move_below:
            e = rng.choice(sorted(boxes))
            boxes[e] = make_box(rng)
            tree.move(e, boxes[e])
            touched.add(e)
        else:
            e = rng.choice(sorted(boxes))
            del boxes[e]
            tree.remove(e)
            touched.discard(e)
            removed.add(e)
    return touched, removed, next_id
