"""state_hash(): equal for equal states, whatever the order, the process, PYTHONHASHSEED or
the class; different when anything in the state differs."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from pathlib import Path

import esper
import pytest

from ecs_spatial import AABB, Box, CollisionFilter, Position, PyQuadTree, SpatialProcessor
from ecs_spatial.index import NATIVE, QuadTree

ROOT = Path(__file__).resolve().parent.parent

Entries = list[tuple[int, tuple[float, float, float, float]]]


def entries(seed: int, n: int = 300) -> Entries:
    rng = random.Random(seed)
    out: Entries = []
    for e in {rng.randrange(-(2**62), 2**62) for _ in range(n)}:
        x, y = rng.uniform(-1e6, 1e6), rng.uniform(-1e6, 1e6)
        out.append((e, (x, y, x + rng.uniform(0, 50), y + rng.uniform(0, 50))))
    out.append((7, (1e308, -1e308, 1.7e308, 5e-324)))
    return out


def built(cls: type[PyQuadTree], items: Entries, how: str) -> PyQuadTree:
    tree = cls(Box(0, 0, 1000, 1000), threshold=4)
    if how == "one by one":
        for e, box in items:
            tree.insert(e, box)
    elif how == "in one batch":
        tree.insert_many([e for e, _ in items], [box for _, box in items])
    else:  # moved there from elsewhere, with removals on the way
        for e, _ in items:
            tree.insert(e, (0.0, 0.0, 1.0, 1.0))
        tree.insert(10**15, (5.0, 5.0, 6.0, 6.0))
        for e, box in items:
            tree.move(e, box)
        tree.remove(10**15)
    return tree


def test_equal_sets_hash_alike_in_any_order_and_either_class(tree_class: type) -> None:
    items = entries(1)
    expected = built(PyQuadTree, items, "one by one").state_hash()
    shuffled = items[:]
    random.Random(2).shuffle(shuffled)
    for how in ("one by one", "in one batch", "moved"):
        tree = built(tree_class, shuffled, how)
        assert tree.state_hash() == expected, how
    assert 0 <= expected < 2**64


def test_any_difference_changes_the_hash(tree_class: type) -> None:
    items = entries(3, 50)
    base = built(tree_class, items, "one by one")
    seen = {base.state_hash()}
    e, box = items[10]
    base.move(e, (math.nextafter(box[0], math.inf), *box[1:]))  # one ulp
    seen.add(base.state_hash())
    base.remove(e)
    seen.add(base.state_hash())
    base.insert(e + 1, box)  # the same box under another id
    seen.add(base.state_hash())
    base.clear()
    seen.add(base.state_hash())
    assert len(seen) == 5


def test_negative_zero_is_zero(tree_class: type) -> None:
    a, b = tree_class(), tree_class()
    a.insert(1, (-0.0, -0.0, 0.0, 1.0))
    b.insert(1, (0.0, 0.0, 0.0, 1.0))
    assert a.state_hash() == b.state_hash()


@pytest.mark.parametrize("pure", ["1", "0"])
def test_the_hash_is_the_same_in_every_process(pure: str) -> None:
    """Across PYTHONHASHSEED values, in fresh interpreters, on either class."""
    if pure == "0" and not NATIVE:
        pytest.skip("the compiled core is not in use")
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])\n"
        "from test_state_hash import entries, built\n"
        "from ecs_spatial import QuadTree\n"
        "print(built(QuadTree, entries(1), 'in one batch').state_hash())\n"
    )
    expected = built(QuadTree, entries(1), "in one batch").state_hash()
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed, ECS_SPATIAL_PURE=pure)
        out = subprocess.run(
            [sys.executable, "-c", script, str(ROOT), str(ROOT / "tests")],
            env=env, capture_output=True, text=True, check=True,
        ).stdout
        assert int(out) == expected


def world_hash(order: list[int], filtered: bool, moved: bool) -> int:
    """A world of the same entities, created in ``order`` over two frames."""
    spatial = SpatialProcessor()
    esper.add_processor(spatial)
    made: dict[int, int] = {}
    for step, k in enumerate(order):
        extra = [CollisionFilter(category=0b10)] if filtered and k == 3 else []
        made[k] = esper.create_entity(Position(k * 5.0, 0.0), AABB(8.0, 8.0), *extra)
        if step == len(order) // 2:
            esper.process()
    esper.process()
    if moved:
        esper.component_for_entity(made[4], Position).x = 100.0
        esper.process()
    ids = sorted(made.values())
    assert ids == list(range(1, len(order) + 1))  # the same ids however they were made
    return spatial.state_hash()


def test_the_processor_hash_follows_boxes_pairs_and_filters(world: str) -> None:
    def fresh(order: list[int], filtered: bool = False, moved: bool = False) -> int:
        esper.clear_database()
        esper.remove_processor(SpatialProcessor)
        return world_hash(order, filtered, moved)

    plain = fresh([0, 1, 2, 3, 4, 5])
    assert fresh([0, 1, 2, 3, 4, 5]) == plain
    assert fresh([0, 1, 2, 3, 4, 5], filtered=True) != plain
    assert fresh([0, 1, 2, 3, 4, 5], moved=True) != plain
