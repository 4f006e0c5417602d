"""Memory safety of the compiled core, tested rather than assumed (issue 18).

- **Leaks**: a long churn of every method, error paths included (they are where a C
  extension forgets a reference), must leave the interpreter's allocated blocks, tracemalloc's
  traced memory and the process's RSS flat. The test suite runs a short churn; the command
  line runs a million operations::

      python tests/test_native_soak.py --leaks 1000000

  and the same of the SpatialProcessor's frame in an esper world with every kind of change
  (``frame_churn``), over 100,000 frames::

      python tests/test_native_soak.py --frames 100000

- **AddressSanitizer**: ``--asan`` builds a copy of the extension with ``-fsanitize=address``
  in a temporary directory (the checkout's own build is left alone) and runs the differential
  stresses of ``tests/test_native_quadtree.py``, ``tests/test_casts.py`` and
  ``tests/test_ccomponents.py`` (the compiled components), the churn, and the
  collector fuzzer and thread stress of ``tests/test_gc_safety.py`` against it, with the
  sanitizer's runtime preloaded into the interpreter (``LD_PRELOAD``; leak detection off,
  since the interpreter itself keeps memory to the end)::

      python tests/test_native_soak.py --asan --seeds 300 --steps 300

- **valgrind**: ``--valgrind`` runs the same stress under memcheck (slow: use few seeds).

Any error report makes the run fail.
"""

from __future__ import annotations

import argparse
import copy
import gc
import math
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from array import array
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: the checkout's package (imported: the caller's)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytest

from ecs_spatial.geometry import Box

try:
    from ecs_spatial._cquadtree import QuadTree
except ImportError:  # a pure-Python build: nothing to soak
    QuadTree = None  # type: ignore[assignment,misc]

ROOT = Path(__file__).resolve().parent.parent
MAX = sys.float_info.max
#: The period of the wrapped churn: inside the churn's world, so boxes cross its seams.
WRAP = (0.0, 0.0, 1000.0, 1000.0)


class Unjudgeable:
    """A where= verdict whose truth cannot be told (its ``__bool__`` raises)."""

    def __init__(self, entity: int) -> None:
        self.entity = entity

    def __bool__(self) -> bool:
        raise ValueError(f"no verdict on {self.entity}")


def churn(tree: Any, rng: random.Random, ops: int) -> int:
    """``ops`` random calls of every method on ``tree``, many of them failing on purpose;
    returns how many raised. Ids stay in a small range so that the tree neither grows nor
    shrinks without bound."""
    raised = 0
    bad_boxes: list[object] = [(math.nan, 0.0, 1.0, 1.0), (5.0, 0.0, 1.0, 1.0), "abcd", None,
                               (0, 0, 10**400, 1), (0.0, 0.0, 1.0)]
    for _ in range(ops):
        e = rng.randrange(2000)
        x, y = rng.uniform(-50, 1050), rng.uniform(-50, 1050)
        box = (x, y, x + rng.uniform(0, 20), y + rng.uniform(0, 20))
        op = rng.randrange(20)
        try:
            if op < 4:
                tree.insert(e, box if op else Box(*box))
            elif op < 8:
                tree.move(e, box if op != 4 else list(box))
            elif op == 8:
                tree.remove(e)
            elif op == 9:
                tree.discard(e)
            elif op == 10:
                k = rng.randrange(8)
                ids = [rng.randrange(2000) for _ in range(k)]
                boxes = [(x + i, y, x + i + 1, y + 1) for i in range(k)]
                if rng.random() < 0.5:
                    tree.move_many(ids, boxes, atomic=rng.random() < 0.5)
                else:
                    tree.move_many(array("q", ids), array("d", [c for b in boxes for c in b]))
            elif op == 11:
                k = rng.randrange(6)
                ids = [2000 + rng.randrange(400) for _ in range(k)]
                tree.insert_many(ids, [box] * k)
                for i in ids:
                    tree.discard(i)
            elif op == 12:
                tree.query(box)
                tree.query_point(x, y)
                tree.query_radius(x, y, rng.uniform(0, 40))
                # Many at once: a buffer, pairs, radii per point, and now and then a bad
                # point or radius (the error paths free what they took).
                k = rng.randrange(6)
                pts = [rng.uniform(-50, 1050) for _ in range(2 * k)]
                if pts and rng.random() < 0.2:
                    pts[rng.randrange(len(pts))] = math.nan
                radii = [rng.uniform(0, 40) for _ in range(k)] + ([-1.0] if k == 5 else [])
                tree.query_radius_many(array("d", pts) if rng.random() < 0.5 else
                                       list(zip(pts[::2], pts[1::2], strict=True)),
                                       rng.choice([rng.uniform(0, 40), radii, array("d", radii)]))
            elif op == 13:
                tree.nearest(x, y, rng.randrange(1, 5), where=lambda i: i % 2 == 0,
                             max_distance=rng.choice([math.inf, 30.0]))
            elif op == 14:
                tree.raycast(x, y, rng.uniform(0, 1000), rng.uniform(0, 1000))
                tree.raycast_first(x, y, rng.uniform(-50, 1050), rng.uniform(-50, 1050))
                # The casts, a bad box or motion now and then (their error paths too).
                dx, dy = rng.choice([(rng.uniform(-900, 900), rng.uniform(-900, 900)),
                                     (0.0, 0.0), (math.nan, 1.0), ("x", 0), (1, 10**400)])
                # The _first casts' where= (with a bad motion too): refusing some, raising
                # (itself or its verdict's truth), not callable, reading the tree (a pair
                # search among it), changing it (refused).
                where = rng.choice([lambda i: i % 3 != 0, lambda i: 1 / 0, 5, Unjudgeable,
                                    lambda i: len(tree.find_intersections_for([i])) < 2,
                                    lambda i: tree.remove(i)])
                x1, y1 = rng.uniform(-50, 1050), rng.uniform(-50, 1050)
                calls: list[Callable[[], object]] = [
                    partial(tree.raycast_first, x, y, x1, y1, where=where),
                    partial(tree.cast_box_first, box, dx, dy, where=where),
                ]
                for call in calls:
                    try:
                        call()
                    except RuntimeError as error:  # the change refused: nothing else may
                        if "changed while it was busy" not in str(error):
                            raise
                        raised += 1
                    except (ValueError, TypeError, ZeroDivisionError):
                        raised += 1
                cast = rng.choice([tree.cast_box, tree.cast_box_first, tree.cast_box_first])
                cast(box if rng.random() < 0.9 else rng.choice(bad_boxes), dx, dy)
            elif op == 15:
                tree.query_entity(e)
                tree.find_intersections_for([e, e + 1, "x", 1.5])
            elif op == 16:
                if rng.random() < 0.1:
                    tree.find_all_intersections()
                    tree.find_all_intersections_array()
                tree.get(e)
                _ = e in tree, tree[e]
            elif op == 17:
                tree.insert(rng.choice([1.5, True, "7", None, 2**70]), box)
            elif op == 18:
                tree.move(e, rng.choice(bad_boxes))
            elif op == 19 and rng.random() < 0.5:
                tree.move(e, hostile_box(rng, box))
            else:
                if rng.random() < 0.02:
                    state = tree.__getstate__()
                    tree.__setstate__(state)
                    _ = (list(tree.nodes()), tree.depth(), repr(tree), list(tree))
                tree.nearest(x, y, where=lambda i: 1 / 0)
        except (KeyError, ValueError, TypeError, OverflowError, ZeroDivisionError):
            raised += 1
    return raised


class _Real(float):
    """A float subclass (numpy.float64 is one): not a plain float."""


class _SubBox(Box):
    __slots__ = ()


def hostile_box(rng: random.Random, box: tuple[float, float, float, float]) -> Box:
    """``Box(...)`` through the compiled call of the class (index.py installs it): the
    four floats of ``box``, or some replaced by hostile values (NaN, inf, an int past the
    float range, a bool, a float subclass, a string), by keyword, too few or too many, or a
    subclass; raises as the reference's Box does."""
    hostile: list[object] = [math.nan, math.inf, 10**400, True, _Real(1.0), "1", None, 3]
    args: list[object] = list(box)
    for i in range(4):
        if rng.random() < 0.1:
            args[i] = rng.choice(hostile)
    shape = rng.randrange(8)
    if shape == 0:
        return Box(**dict(zip(("min_x", "min_y", "max_x", "max_y"), args, strict=True)))  # type: ignore[arg-type]
    if shape == 1:
        return Box(*[*args, 1.0][: rng.randrange(6)])  # type: ignore[arg-type]
    cls = _SubBox if shape == 2 else Box
    return cls(*args)  # type: ignore[arg-type]


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def leak_check(
    ops: int, rounds: int = 4, wrap: tuple[float, float, float, float] | None = None
) -> tuple[list[int], list[int], list[int]]:
    """Allocated blocks, traced bytes and RSS after each round of ``ops`` operations, the
    first round a warm-up that fills the tree and the interpreter's caches; on a wrapped
    tree (issue 28) if ``wrap`` is given, its boxes across the seams."""
    rng = random.Random(1)
    tree = QuadTree(Box(0, 0, 1000, 1000), threshold=8, wrap=wrap)
    blocks: list[int] = []
    traced: list[int] = []
    rss: list[int] = []
    tracemalloc.start()
    try:
        for round_ in range(rounds):
            churn(tree, rng, 2 * ops if round_ == 0 else ops)  # the first round: a warm-up
            tree.check()
            gc.collect()
            blocks.append(sys.getallocatedblocks())
            traced.append(tracemalloc.get_traced_memory()[0])
            rss.append(_rss_kib() if sys.platform.startswith("linux") else 0)
    finally:
        tracemalloc.stop()
    return blocks, traced, rss


def assert_flat(
    blocks: list[int], traced: list[int], rss: list[int], ops: int, *, check_rss: bool = True
) -> None:
    """After the warm-up, nothing grows with the number of operations: not the interpreter's
    blocks (a leaked reference keeps one alive per call), not the traced bytes (the tree's
    own arrays are traced: PyMem), not the RSS (C memory outside both)."""
    # A reference leaked by one of the churn's twenty kinds of call would leak ops / 20
    # blocks a round; the interpreter's own caches settle by a few dozen blocks a round.
    limit = (len(blocks) - 2) * ops / 50
    assert blocks[-1] - blocks[1] < limit, f"allocated blocks grew: {blocks}"
    assert traced[-1] - traced[1] < 256 * 1024, f"traced memory grew: {traced}"
    if rss[1] and check_rss:  # not under a sanitizer, whose quarantine holds freed memory
        assert rss[-1] - rss[1] < 4096, f"RSS grew (KiB): {rss}"
    print(f"{ops:,} operations per round: blocks {blocks}, traced {traced}, RSS KiB {rss}")


@pytest.mark.skipif(QuadTree is None, reason="the C core is not built")
def test_no_leaks_over_a_long_churn() -> None:
    """Every method, failing calls included, over 3 x 8,000 operations after a warm-up:
    the interpreter's blocks, the traced memory and the RSS stay flat (the command line runs
    a million: see the module docstring)."""
    blocks, traced, rss = leak_check(8_000)
    assert_flat(blocks, traced, rss, 8_000)


@pytest.mark.skipif(QuadTree is None, reason="the C core is not built")
def test_no_leaks_over_a_long_wrapped_churn() -> None:
    """The same churn on a wrapped tree (its period inside the churn's world, so that boxes
    lie across its seams and every wrapped path runs, its refusals included)."""
    blocks, traced, rss = leak_check(8_000, wrap=WRAP)
    assert_flat(blocks, traced, rss, 8_000)


def frame_churn(frames: int, rounds: int = 4) -> tuple[list[int], list[int], list[int]]:
    """Allocated blocks, traced bytes and RSS after each round of ``frames`` frames of an esper
    world whose SpatialProcessor sees every kind of change a frame: 200 entities, all moving,
    one in 20 deleted and made again, one in 50 given a replaced Position, filters added and
    removed, a box that is no number now and then (the frame raises; the next one mends it),
    ints and stores behind the property (members in and out of the members table), the
    processor pickled now and then, enter and exit handlers subscribed. The first round is a
    warm-up."""
    import esper

    from ecs_spatial import AABB, CollisionFilter, Position, SpatialProcessor

    rng = random.Random(2)
    esper.switch_world("frame churn")
    spatial = SpatialProcessor(Box(0, 0, 500, 500))
    esper.add_processor(spatial)
    seen: list[tuple[int, int]] = []

    def handle(a: int, b: int) -> None:
        seen.append((a, b))

    for kind in ("collision_enter", "collision_exit"):
        esper.set_handler(kind, handle)
    entities = [esper.create_entity(Position(rng.uniform(0, 500), rng.uniform(0, 500)),
                                    AABB(10.0, 10.0)) for _ in range(200)]
    blocks: list[int] = []
    traced: list[int] = []
    rss: list[int] = []
    made = 0
    tracemalloc.start()
    try:
        for round_ in range(rounds):
            for _ in range(2 * frames if round_ == 0 else frames):
                for i, e in enumerate(entities):
                    pos = esper.component_for_entity(e, Position)
                    pos.x = (pos.x + rng.uniform(-3, 3)) % 500
                    pos.y += 1.0 if pos.y < 490 else -480
                    roll = rng.random()
                    if roll < 0.05:
                        esper.delete_entity(e, immediate=rng.random() < 0.5)
                        entities[i] = esper.create_entity(Position(pos.x, pos.y), AABB(8, 12))
                    elif roll < 0.07:
                        esper.add_component(e, Position(pos.x, pos.y))
                    elif roll < 0.09:
                        if esper.has_component(e, CollisionFilter):
                            esper.remove_component(e, CollisionFilter)
                        else:
                            esper.add_component(e, CollisionFilter(mask=rng.choice([1, 2])))
                    elif roll < 0.0905:
                        pos.x = math.nan
                    elif roll < 0.092:
                        pos.x = int(pos.x)  # the members table drops it, and binds it again
                    elif roll < 0.093:
                        pos._x = pos.x + 1.0  # behind the property: dropped too
                made += 1
                if made % 50 == 7:  # a copy, made and dropped: the pending flushed
                    pickle.loads(pickle.dumps(spatial))
                try:
                    esper.process()
                except ValueError:
                    for _, p in esper.get_component(Position):
                        if p.x != p.x:
                            p.x = 1.0
                seen.clear()
            spatial.index.check()
            gc.collect()
            blocks.append(sys.getallocatedblocks())
            traced.append(tracemalloc.get_traced_memory()[0])
            rss.append(_rss_kib() if sys.platform.startswith("linux") else 0)
    finally:
        tracemalloc.stop()
        for kind in ("collision_enter", "collision_exit"):
            esper.event_registry.pop(kind, None)
        esper.switch_world("default")
        esper.delete_world("frame churn")
    return blocks, traced, rss


@pytest.mark.skipif(QuadTree is None, reason="the C core is not built")
def test_no_leaks_over_many_frames() -> None:
    """The SpatialProcessor's frame, compiled parts and all, over 3 x 300 frames of churn
    after a warm-up (200 entities; the command line runs 100,000 frames: ``--frames``): the
    interpreter's blocks, the traced memory and the RSS stay flat."""
    blocks, traced, rss = frame_churn(300)
    assert_flat(blocks, traced, rss, 300 * 20)


@pytest.mark.skipif(QuadTree is None, reason="the C core is not built")
def test_move_many_keeps_no_slot_hints_it_cannot_use() -> None:
    """A buffered move_many remembers the slot of each position for the next call, and no
    more: a call that fails lets go of them (one of 100,000 absent ids kept 400,000 bytes for
    the tree's life), a call of more ids than the tree holds makes none, and clear(),
    __init__ and __setstate__ let go of them; the hints a call that succeeded made stay, 4
    bytes a position. ``__sizeof__`` counts them (and a copy has none); tracemalloc sees the
    memory go."""
    n, k = 10, 100_000
    rows = [(float(i), 0.0, i + 1.0, 1.0) for i in range(n)]
    tree = QuadTree(Box(0, 0, 100, 100))
    tree.insert_many(range(n), rows)

    def hints() -> int:  # what the tree holds beyond its copy: no pair search ran, so hints
        return int(tree.__sizeof__() - copy.copy(tree).__sizeof__())

    boxes = array("d", [1.0, 1.0, 2.0, 2.0] * k)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with pytest.raises(KeyError):
            tree.move_many(array("q", [0] + [10**6] * (k - 1)), boxes)
        assert tracemalloc.get_traced_memory()[0] - before < 64 * 1024
    finally:
        tracemalloc.stop()
    assert hints() == 0
    tree.move_many(array("q", list(range(n)) * 2), boxes[: 8 * n])  # more than it holds
    assert hints() == 0
    for reset in ("clear", "__init__", "__setstate__"):
        tree.move_many(array("q", range(n)), boxes[: 4 * n])
        assert hints() == 4 * n  # for the next frame's call
        state = tree.__getstate__()
        if reset == "clear":
            tree.clear()
        elif reset == "__init__":
            tree.__init__(Box(0, 0, 100, 100))  # type: ignore[misc]
        else:
            tree.__setstate__(state)
        assert hints() == 0, reset
        if len(tree) == 0:
            tree.insert_many(range(n), rows)


@pytest.mark.skipif(QuadTree is None, reason="the C core is not built")
def test_ids_chosen_to_collide_cost_what_random_ids_cost() -> None:
    """Hash flooding: 8,000 ids chosen to share one bucket of the id table under its former,
    unkeyed hash cost as much as random ids to insert, move and remove (30 times as much
    with that hash, and O(n^2): ``python -m bench flood``). The margin is wide: the figures
    are wall clock."""
    from bench.flood import best, colliding_ids, random_ids

    n = 8_000
    assert QuadTree is not None
    spent = {kind: sum(best(QuadTree, ids, 3)) for kind, ids in
             (("random", random_ids(n, random.Random(1))), ("colliding", colliding_ids(n)))}
    assert spent["colliding"] < 4 * spent["random"], spent


# ---------------------------------------------------------------------------- sanitizers


def build_sanitized(dest: Path) -> Path:
    """The package with its extension built with AddressSanitizer, in ``dest``."""
    env = dict(os.environ, CFLAGS="-fsanitize=address -fno-omit-frame-pointer -g",
               LDFLAGS="-fsanitize=address")
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(dest / "lib"),
         "--build-temp", str(dest / "tmp"), "--force"],
        cwd=ROOT, env=env, check=True,
    )
    package = dest / "lib" / "ecs_spatial"
    for core in ("_cquadtree", "_cmembers", "_ccomponents", "_cpair_set", "_cgeometry",
                 "_cneighbours"):
        if not list(package.glob(f"{core}*.so")):
            raise SystemExit(f"the sanitized build produced no {core} (see the notice above)")
    for source in (ROOT / "ecs_spatial").glob("*.py"):
        shutil.copy(source, package / source.name)
    return dest / "lib"


def run_under(wrapper: list[str], env: dict[str, str], lib: Path, seeds: int, steps: int,
              leaks: int, threads: float = 10.0) -> None:
    """The differential stress and a churn of the index (plain and wrapped, and the wrapped
    trees side by side: ``TorusDriver``), then the processor's compiled read
    loop (its differential test, and the fault model of the processors, which runs it every
    frame, the differential game of ``tests/test_processor_differential.py`` and the frame
    churn with its memory checks), then the compiled components (their differential test,
    misuse, empty slots, the reference-count and memory checks, and the constructor from a
    saved world's float columns, untracked or born tracked, of ``tests/test_ccomponents.py``;
    the members table on a torus against no table, and its refusals, of
    ``tests/test_members_table.py`` and ``tests/test_processor_torus.py``), then the compiled pair
    diff (its differential tests and a long loop of frames with reference counts checked,
    ``tests/test_cpair_set.py``), then the compiled Box (its differential tests, subclasses,
    finalizers, counts and a churn, ``tests/test_box_construction.py``), then the kernels of
    NeighbourArrays (their differential tests, refusals and counts, the processor against
    query_radius, a soak of a flock on a torus, the grid on cell edges and seams,
    ``tests/test_neighbour_arrays.py``), then the index's all-moving frame against the
    reference on the period's edges and seams (``tests/test_tree_frame.py``), then the index
    under the collector and threads (``tests/test_gc_safety.py``: its fuzzer, and
    ``threads`` seconds of its thread stress), in a fresh interpreter that imports the
    package from ``lib``."""
    script = (
        "import sys\n"
        f"sys.path[:0] = [{str(lib)!r}, {str(ROOT / 'tests')!r}]\n"
        # the tests' hypothesis profile (conftest's, which a script does not load): no
        # per-example deadline, the sanitizer making each example several times slower
        "import hypothesis\n"
        "hypothesis.settings.register_profile('soak', deadline=None)\n"
        "hypothesis.settings.load_profile('soak')\n"
        "import ecs_spatial._cquadtree as c\n"
        f"assert c.__file__.startswith({str(lib)!r}), c.__file__\n"
        "import test_native_quadtree as d, test_native_soak as s, test_casts as casts\n"
        f"d.main(['--seeds', '{seeds}', '--steps', '{steps}'])\n"
        f"casts.main(['--seeds', '{max(seeds // 3, 2)}', '--steps', '{steps}'])\n"
        f"s.assert_flat(*s.leak_check({leaks}), {leaks}, check_rss=False)\n"
        f"s.assert_flat(*s.leak_check({leaks}, wrap=s.WRAP), {leaks}, check_rss=False)\n"
        "import random\n"
        f"for seed in range({seeds}): d.TorusDriver(d.Chooser(random.Random(seed))).run({steps})\n"
        "import ecs_spatial._members as p, test_cmembers as cp, test_fault_model as fm\n"
        "assert p.read_boxes.__module__ == 'ecs_spatial._cmembers', p.read_boxes\n"
        "cp.test_the_compiled_loop_does_what_the_reference_does()\n"
        f"fm.main(['--seeds', '{max(seeds // 5, 2)}', '--frames', '{max(steps // 5, 20)}'])\n"
        "import test_processor_differential as pd\n"
        f"for seed in range({max(seeds // 5, 2)}): pd.record(seed, {max(steps // 5, 20)})\n"
        "s.assert_flat(*s.frame_churn(200), 4000, check_rss=False)\n"
        "import test_arrays as ta\n"
        f"ta.soak({max(seeds // 5, 2)})\n"
        "import ecs_spatial.components as comps, test_ccomponents as cc\n"
        f"assert comps._twins.__file__.startswith({str(lib)!r}), comps._twins.__file__\n"
        "assert comps.Position is comps._twins.Position, comps.Position\n"
        "cc.test_the_twins_do_the_same_thing()\n"
        "cc.test_misuse_is_refused_in_the_same_words()\n"
        "cc.test_empty_slots_and_deletions_raise_alike()\n"
        "cc.test_reference_counts_and_memory_stay_flat()\n"
        "cc.test_a_dropped_component_frees_its_references()\n"
        "cc.test_sink_objects_that_are_not_lists_get_append_called()\n"
        "cc.test_from_columns_makes_what_new_and_setstate_make()\n"
        "cc.test_from_columns_refuses_what_it_does_not_make()\n"
        "cc.test_from_columns_leaves_counts_and_memory_flat()\n"
        "cc.test_from_columns_with_a_sink_makes_them_tracked_as_the_reference_path()\n"
        "cc.test_from_columns_refuses_a_sink_ids_or_pending_it_cannot_track_with()\n"
        "import test_members_table as mt, test_processor_torus as tor, _worlds\n"
        f"for seed in range({max(seeds // 5, 2)}):\n"
        "    with _worlds.fresh_world('t') as a, _worlds.fresh_world('p') as b:\n"
        "        mt.test_a_processor_with_the_table_does_what_one_without_does("
        "(a, b), seed, mt.TORUS)\n"
        "for case in tor.REFUSALS:\n"
        "    tor.test_a_refusal_is_the_same_with_the_members_table_and_without(case)\n"
        "import ecs_spatial.pair_set as ps, test_cpair_set as cps\n"
        "assert ps.diff_sorted.__module__ == 'ecs_spatial._cpair_set', ps.diff_sorted\n"
        "cps.test_sorted_pairs_diff_alike()\n"
        "cps.test_any_lists_diff_alike()\n"
        "cps.test_a_list_subclass_and_odd_calls_get_the_references_answer_or_error()\n"
        "cps.test_reference_counts_and_memory_stay_flat()\n"
        "cps.test_sorted_flat_pairs_diff_alike()\n"
        "cps.test_any_flat_ints_diff_alike()\n"
        "for mark in cps.test_chosen_flat_cases_diff_alike.pytestmark:\n"
        "    for case in mark.args[1] if mark.name == 'parametrize' else ():\n"
        "        cps.assert_flat_same(*case)\n"
        "cps.test_flat_reference_counts_and_memory_stay_flat()\n"
        "cps.test_touched_diffs_alike()\n"
        "for mark in cps.test_chosen_touched_cases_diff_alike.pytestmark:\n"
        "    for case in mark.args[1] if mark.name == 'parametrize' else ():\n"
        "        cps.test_chosen_touched_cases_diff_alike(*case)\n"
        "cps.test_touched_odd_calls_and_memory()\n"
        "for seed in range(30): cps.test_many_touched_diff_alike(seed)\n"
        "for seed in range(40): cp.test_the_row_read_skips_only_blocks_that_are_the_same(seed)\n"
        "cps.soak(20_000)\n"
        "for seed in range(40): cps.test_apply_diff_alike_over_frames(seed)\n"
        "for mark in cps.test_chosen_apply_cases_alike.pytestmark:\n"
        "    for case in mark.args[1] if mark.name == 'parametrize' else ():\n"
        "        cps.test_chosen_apply_cases_alike(*case)\n"
        "cps.test_apply_diff_odd_calls_and_memory()\n"
        "import ecs_spatial._cgeometry as cg, ecs_spatial.geometry as g\n"
        "import test_box_construction as bc\n"
        f"assert cg.__file__.startswith({str(lib)!r}) and g.COMPILED, cg.__file__\n"
        "bc.test_any_construction_is_the_references()\n"
        "bc.test_four_floats_are_the_references()\n"
        "bc.test_the_box_is_the_references_box()\n"
        "bc.test_a_new_or_init_put_on_box_is_called()\n"
        "bc.test_subclass_instances_are_released()\n"
        "bc.test_a_del_put_on_box_is_called()\n"
        "bc.test_many_alive_at_once()\n"
        "bc.test_no_reference_kept_or_lost()\n"
        f"bc.churn({max(steps, 20) * 500})\n"
        "import ecs_spatial.neighbours as nbm, test_neighbour_arrays as tnb\n"
        "assert nbm.near_csr.__module__ == 'ecs_spatial._cneighbours', nbm.near_csr\n"
        "tnb.test_near_csr_is_its_reference()\n"
        "tnb.test_grid_csr_is_every_pair_tested_and_its_twin()\n"
        "tnb.test_grid_csr_at_scale_is_every_pair_tested()\n"
        "tnb.test_diff_csr_and_without_self_are_their_references()\n"
        "tnb.test_translate_is_its_reference()\n"
        "tnb.test_gather_and_gather_moves_are_their_references()\n"
        "tnb.test_the_kernels_refuse_bad_buffers()\n"
        "tnb.test_the_kernels_keep_no_reference_and_no_memory()\n"
        "tnb.test_the_answer_is_query_radius_from_each_centre()\n"
        "tnb.test_array_entities_across_the_seams_are_answered_from_their_records()\n"
        f"tnb.soak({max(steps, 20)})\n"
        "for mark in tnb.test_grid_csr_on_cell_edges_and_across_both_seams.pytestmark:\n"
        "    for case in mark.args[1] if mark.name == 'parametrize' else ():\n"
        "        tnb.test_grid_csr_on_cell_edges_and_across_both_seams(*case)\n"
        "tnb.test_diff_csr_of_the_same_watchers_is_its_reference()\n"
        "for mark in tnb.test_gather_moves_on_the_edges_of_the_canonical_range.pytestmark:\n"
        "    for case in mark.args[1] if mark.name == 'parametrize' else ():\n"
        "        tnb.test_gather_moves_on_the_edges_of_the_canonical_range(case)\n"
        "import itertools, test_tree_frame as ttf\n"
        "for p, s in itertools.product(ttf.PERIODS, range(4)):\n"
        "    ttf.test_buffered_wrapped_moves_on_the_edges_agree(p, s)\n"
        "for p, t in itertools.product(ttf.PERIODS, (1, 3, 16)):\n"
        "    ttf.test_wrapped_pairs_across_the_seams_agree(p, t)\n"
        "for p, t, g in itertools.product(ttf.PERIODS, (1, 4), (False, True)):\n"
        "    ttf.test_small_boxes_on_the_seams_meet_through_them(p, t, g)\n"
        "for w, s in itertools.product((False, True), range(3)):\n"
        "    ttf.test_small_steps_onto_split_lines_agree(w, s)\n"
        "for p, s in itertools.product(ttf.PERIODS, range(6)):\n"
        "    ttf.test_row_read_on_a_torus_refuses_as_the_reference(p, s)\n"
        # the compiled delivery loop (tests/test_delivery_compiled.py)
        "import ecs_spatial.delivery as dl, test_delivery_compiled as tdc\n"
        "assert dl._deliver_pairs.__module__ == 'ecs_spatial._cpair_set', dl._deliver_pairs\n"
        f"for seed in range({max(seeds, 40)}):\n"
        "    with _worlds.fresh_world('dl') as w:\n"
        "        tdc.test_the_compiled_loop_delivers_as_the_python_loop(w, seed)\n"
        "with _worlds.fresh_world('dl') as w: tdc.test_the_compiled_loop_keeps_nothing(w)\n"
        "tdc.test_the_compiled_loops_answers()\n"
        # the compiled delivery loop's world stamp and the event it hands back
        "tdc.test_the_stamp_passes_the_deletion_rule_only_while_it_holds()\n"
        "for at in (None, 1, 3):\n"
        "    with _worlds.fresh_world('dl') as w:\n"
        "        tdc.test_the_event_handed_back_is_delivered_and_resumed_as_by_the_python_loop("
        "w, at)\n"
        "with _worlds.fresh_world('dl') as w: tdc.test_a_deletion_in_a_handler_ends_the_stamps_"
        "proof(w)\n"
        # the single calls' fast paths and Box's tag check (tests/test_single_calls.py)
        "import test_single_calls as tsc\n"
        f"tsc.soak({max(seeds // 50, 1)})\n"
        "bc.test_a_change_of_the_class_is_seen_after_many_calls()\n"
        "import test_gc_safety as gcs\n"
        f"gcs.main(['--seeds', '{max(seeds // 5, 2)}', '--steps', '{steps}', '--threads', "
        f"'{threads}'])\n"
        # BoxArrays of positions: the compiled row read with a size (tests/test_position_arrays.py)
        "import test_position_arrays as tpa\n"
        f"tpa.soak({max(seeds // 5, 2)})\n"
        # BoxArrays of positions with per-row sizes: the compiled sized row read
        f"tpa.soak_sizes({max(seeds // 5, 2)})\n"
        "print('clean')\n"
    )
    subprocess.run([*wrapper, sys.executable, "-c", script], env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaks", type=int, default=0, help="operations per round of the churn")
    parser.add_argument("--frames", type=int, default=0,
                        help="processor frames of churn, over three rounds")
    parser.add_argument("--asan", action="store_true", help="build with AddressSanitizer, stress")
    parser.add_argument("--valgrind", action="store_true", help="stress under valgrind memcheck")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    if args.leaks:
        blocks, traced, rss = leak_check(args.leaks // 3, rounds=4)
        assert_flat(blocks, traced, rss, args.leaks // 3)
    if args.frames:
        blocks, traced, rss = frame_churn(args.frames // 3, rounds=4)
        assert_flat(blocks, traced, rss, args.frames // 3 * 20)
    if args.asan:
        runtime = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                                 text=True, check=True).stdout.strip()
        with tempfile.TemporaryDirectory(prefix="ecs-spatial-asan-") as tmp:
            lib = build_sanitized(Path(tmp))
            env = dict(os.environ, LD_PRELOAD=runtime, PYTHONMALLOC="malloc",
                       ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1")
            run_under([], env, lib, args.seeds, args.steps, 20_000)
    if args.valgrind:
        # The interpreter itself trips memcheck here and there (int.from_bytes at import):
        # the run fails on any report whose stack passes through the compiled core.
        with tempfile.TemporaryDirectory(prefix="ecs-spatial-valgrind-") as tmp:
            log = Path(tmp) / "memcheck.log"
            env = dict(os.environ, PYTHONMALLOC="malloc")
            run_under(["valgrind", "--tool=memcheck", "--quiet", "--num-callers=40",
                       f"--log-file={log}"], env, ROOT, args.seeds, args.steps, 2_000, 2.0)
            found = re.split(r"==\d+== ?\n", log.read_text())  # one report per block
            cores = ("_cquadtree", "_cmembers", "_ccomponents", "_cpair_set", "_cgeometry")
            reports = [r for r in found if any(core in r for core in cores)]
            if reports:
                print("\n\n".join(reports), file=sys.stderr)
                return 1
            print("memcheck: no report through the compiled core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
