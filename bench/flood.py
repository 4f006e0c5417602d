"""Hash flooding: the compiled index's table of ids against ids chosen to collide.

The compiled core finds an entity's slot through an open-addressing table of its ids. Were
its hash unkeyed and invertible, ids chosen to land in one bucket would make inserting,
moving and removing n of them O(n^2); ids may come from outside (a network game, a save), so
the hash is keyed per process. This times N ids inserted, moved and removed one by one:
random ids, esper's consecutive ones, ids that collide under the unkeyed hash (splitmix64's
finaliser, inverted below), and the reference (a dict) for scale.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench import harness, record
from bench.record import markdown_table
from ecs_spatial import NATIVE, PyQuadTree, QuadTree
from ecs_spatial.geometry import Box

M64 = 2**64 - 1
#: The low bits the colliding ids share once hashed: a table of up to 2**24 buckets (the
#: core's for 8 million entities) sends them all to bucket 0.
SHARED_BITS = 24


def mix64(x: int) -> int:
    """splitmix64's finaliser: the table's hash unkeyed (and the state hash's
    mixer, ``_tree_state.mix64``)."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def _unshift(y: int, s: int) -> int:
    """The x with ``x ^ (x >> s) == y``."""
    x = y
    for _ in range(64 // s + 1):
        x = y ^ (x >> s)
    return x & M64


def unmix64(h: int) -> int:
    """The x with ``mix64(x) == h``: each step of the finaliser undone, last first."""
    x = _unshift(h, 31)
    x = (x * pow(0x94D049BB133111EB, -1, 2**64)) & M64
    x = _unshift(x, 27)
    x = (x * pow(0xBF58476D1CE4E5B9, -1, 2**64)) & M64
    return _unshift(x, 30)


def signed(x: int) -> int:
    return x - 2**64 if x >= 2**63 else x


def colliding_ids(n: int) -> list[int]:
    """n ids whose unkeyed hash ends in SHARED_BITS zero bits: all in one bucket of an
    unkeyed table, at every size it grows through."""
    ids = [signed(unmix64(j << SHARED_BITS)) for j in range(1, n + 1)]
    assert all(mix64(e % 2**64) & ((1 << SHARED_BITS) - 1) == 0 for e in ids[:100])
    return ids


def random_ids(n: int, rng: random.Random) -> list[int]:
    ids: set[int] = set()
    while len(ids) < n:
        ids.add(rng.getrandbits(64) - 2**63)
    return list(ids)


def churn(cls: Callable[..., Any], ids: list[int], seed: int) -> tuple[float, float, float]:
    """Seconds to insert every id one by one, move each once, and remove each: a fresh tree
    over a 1000 x 1000 world, small boxes."""
    rng = random.Random(seed)
    boxes = [(x, y, x + 1.0, y + 1.0) for x, y in
             ((rng.uniform(0, 999), rng.uniform(0, 999)) for _ in ids)]
    moves = [(x, y, x + 1.0, y + 1.0) for x, y in
             ((rng.uniform(0, 999), rng.uniform(0, 999)) for _ in ids)]
    tree = cls(Box(0, 0, 1000, 1000))
    insert, move, remove = tree.insert, tree.move, tree.remove
    t0 = time.perf_counter()
    for e, box in zip(ids, boxes, strict=True):
        insert(e, box)
    t1 = time.perf_counter()
    for e, box in zip(ids, moves, strict=True):
        move(e, box)
    t2 = time.perf_counter()
    for e in ids:
        remove(e)
    t3 = time.perf_counter()
    assert len(tree) == 0
    return t1 - t0, t2 - t1, t3 - t2


def best(cls: Callable[..., Any], ids: list[int], repeat: int) -> tuple[float, ...]:
    """The fastest of ``repeat`` runs, by total (one warm-up run first)."""
    runs = [churn(cls, ids, seed) for seed in range(repeat + 1)][1:]
    return min(runs, key=sum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = record.command("flood", __doc__, quick="a smoke run: N = 2,000, once")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 10_000, 20_000],
                        help="N, the ids of each row")
    parser.add_argument("--repeat", type=int, default=5, help="runs per row, the best kept")
    args = record.parse(parser, argv, quick={"sizes": [2_000], "repeat": 1})
    with record.saved(args):
        core = "the compiled core" if NATIVE else "the reference (no compiled core)"
        print(f"{record.machine()}; {core}; insert, move and remove of N ids one by one, best of "
              f"{args.repeat}\n")
        rows = []
        for n in args.sizes:
            kinds = {
                "random": random_ids(n, random.Random(n)),
                "consecutive (esper)": list(range(1, n + 1)),
                "colliding": colliding_ids(n),
            }
            base = 0.0
            for label, cls, ids, repeat in [  # the reference on two of them, for scale
                *((kind, QuadTree, ids, args.repeat) for kind, ids in kinds.items()),
                *((f"{kind}, the reference", PyQuadTree, kinds[kind], max(1, args.repeat // 2))
                  for kind in ("random", "colliding"))]:
                times = best(cls, ids, repeat)
                base = base or sum(times)
                rows.append([f"{n:,}", label, *(f"{t * 1e3:.1f}" for t in times),
                             f"{sum(times) * 1e3:.1f}", f"{sum(times) / base:.2f}"])
        print(markdown_table(["N", "ids", "insert ms", "move ms", "remove ms", "total ms",
                              "/ random"], rows, right=True))
        colliding = next(float(r[-1]) for r in reversed(rows) if r[1] == "colliding")
        record.print_targets([harness.target(
            f"N = {args.sizes[-1]:,}: colliding / random ids", colliding, 2.0)], args.quick)
    return 0
