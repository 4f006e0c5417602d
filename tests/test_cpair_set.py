"""The frame's pair diff, compiled (``_cpair_set.diff_sorted``) against its reference
(``pair_set.diff_sorted_reference``), and PairSet's update against today's set-based one.

- the two merges, driven side by side on the same lists, return the same exits and enters,
  holding the very same objects, or raise the same error, whatever the lists hold: sorted
  pairs (empty, identical, disjoint, interleaved), repeats and disorder, ints near and
  beyond the 64 bits the fast path compares, bools and other int subclasses, tuple
  subclasses, tuples of other lengths, non-tuples; and an int subclass that logs its
  comparisons sees the same comparisons from both;
- PairSet.update, through random frames of both searches (and replace, clear, sorted and
  contacts between them), gives the exits, enters, pairs, order and partners of the
  set-based update it replaced (kept below as the model);
- reference counts and traced memory stay flat over a long loop of both paths;
- the upkeep of the pairs and partners after a diff (``_cpair_set.apply_diff`` against
  ``pair_set.apply_diff_reference``) leaves the same pairs (in the same order) and
  partners, or raises the same error at the same point, on a frame's consistent exits and
  enters and on input that breaks the invariants or is not of the exact types, and keeps
  no reference or memory;
- the incremental search's diff (``_cpair_set.diff_touched`` against
  ``pair_set.diff_touched_reference``) gives the same exits and enters, or the same error,
  on the partners, groups and found pairs a PairSet hands it and on every other kind of
  input (lists, frozensets, int subclasses, bools, ints beyond 64 bits, unsorted or
  repeated pairs, non-pairs), and keeps no reference or memory.
"""

from __future__ import annotations

import contextlib
import gc
import random
import tracemalloc
from array import array
from collections.abc import Callable, Collection, Iterable, Set
from functools import partial
from typing import Any, ClassVar

import pytest
from _churn import churn_frame
from _leaks import assert_loop_keeps_nothing
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_spatial import NATIVE, Box, pair_set
from ecs_spatial.pair_set import (
    SEARCHES,
    PairSet,
    apply_diff_reference,
    diff_sorted_flat_reference,
    diff_sorted_reference,
    diff_touched_reference,
)

_cpair_set = pytest.importorskip("ecs_spatial._cpair_set") if NATIVE else None
compiled_only = pytest.mark.skipif(
    _cpair_set is None, reason="the compiled core is not in use (a pure-Python build, or "
    "ECS_SPATIAL_PURE=1)"
)

Pair = tuple[int, int]
Diff = Callable[..., tuple[list[Any], list[Any]]]


def compiled() -> Diff:
    assert _cpair_set is not None
    fn: Diff = _cpair_set.diff_sorted
    return fn


def test_the_compiled_merge_is_in_use_with_the_compiled_core() -> None:
    if NATIVE and _cpair_set is not None:
        assert pair_set.diff_sorted is _cpair_set.diff_sorted
        assert pair_set.diff_sorted_flat is _cpair_set.diff_sorted_flat
        assert pair_set.diff_touched is _cpair_set.diff_touched
        assert pair_set.apply_diff is _cpair_set.apply_diff
        assert pair_set.FLAT_PAIRS is True
    else:
        assert pair_set.diff_sorted is diff_sorted_reference
        assert pair_set.diff_sorted_flat is diff_sorted_flat_reference
        assert pair_set.diff_touched is diff_touched_reference
        assert pair_set.apply_diff is apply_diff_reference
        assert pair_set.FLAT_PAIRS is False


# ------------------------------------------------------------------ the merge, side by side


class Int(int):
    """An int subclass: the fast path does not take it."""


class LoggedInt(int):
    """An int subclass that logs each comparison it takes part in."""

    log: ClassVar[list[tuple[str, int, int]]] = []

    def __eq__(self, other: object) -> bool:
        LoggedInt.log.append(("==", int(self), int(other)))  # type: ignore[call-overload]
        return int(self) == other

    def __lt__(self, other: int) -> bool:
        LoggedInt.log.append(("<", int(self), int(other)))
        return int(self) < other

    def __gt__(self, other: int) -> bool:
        LoggedInt.log.append((">", int(self), int(other)))
        return int(self) > other

    __hash__ = int.__hash__


class Pairish(tuple):  # type: ignore[type-arg]
    """A tuple subclass: the fast path does not take it."""


EDGE = [0, 1, -1, 2**31, 2**62, 2**63 - 2, 2**63 - 1, -(2**63) + 1, -(2**63),
        2**63, -(2**63) - 1, 2**64, 2**100, -(2**100)]

small = st.integers(-4, 12)
ints = st.one_of(small, small, small, st.sampled_from(EDGE), st.integers())
exact_pairs = st.tuples(ints, ints)
odd_items = st.one_of(
    st.tuples(small, small).map(lambda p: (Int(p[0]), p[1])),
    st.tuples(small, small).map(lambda p: (p[0], LoggedInt(p[1]))),
    st.tuples(small, small).map(lambda p: (bool(p[0] % 2), p[1])),
    st.tuples(small, small).map(Pairish),
    st.tuples(small),
    st.tuples(small, small, small),
    st.tuples(small, st.floats(-3, 3)),
    st.lists(small, min_size=2, max_size=2),
    small,
    st.none(),
    st.text(max_size=2),
)
items = st.one_of(exact_pairs, exact_pairs, exact_pairs, odd_items)


def outcome(fn: Diff, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What ``fn`` answers (with the ids of the objects it holds) or raises, and the
    comparisons LoggedInt saw meanwhile."""
    LoggedInt.log = []
    try:
        exits, enters = fn(*args, **kwargs)
    except Exception as error:  # the same type and text from both, compared below
        return ("raised", type(error), str(error), LoggedInt.log)
    return ("returned", exits, enters, [id(x) for x in exits], [id(x) for x in enters],
            type(exits), type(enters), LoggedInt.log)


def assert_same(old: Any, new: Any) -> None:
    expected = outcome(diff_sorted_reference, old, new)
    assert outcome(compiled(), old, new) == expected
    if expected[0] == "returned" and isinstance(old, list) and isinstance(new, list):
        for x in expected[1]:
            assert any(x is y for y in old)
        for x in expected[2]:
            assert any(x is y for y in new)


@compiled_only
@settings(max_examples=300, deadline=None)
@given(st.lists(exact_pairs, max_size=30), st.lists(exact_pairs, max_size=30),
       st.lists(exact_pairs, max_size=10))
def test_sorted_pairs_diff_alike(old: list[Pair], new: list[Pair], shared: list[Pair]) -> None:
    """The processor's case (sorted, no repeats): both merges, and the set difference."""
    both = sorted(set(shared))
    old_sorted = sorted(set(old) | set(both))
    new_sorted = sorted(set(new) | set(both))
    # the same objects in both lists where they are equal, as frame after frame they are not
    new_sorted = [next((x for x in old_sorted if x == y), y) for y in new_sorted]
    assert_same(old_sorted, new_sorted)
    exits, enters = compiled()(old_sorted, new_sorted)
    assert exits == sorted(set(old_sorted) - set(new_sorted))
    assert enters == sorted(set(new_sorted) - set(old_sorted))


@compiled_only
@settings(max_examples=400, deadline=None)
@given(st.lists(items, max_size=20), st.lists(items, max_size=20), st.booleans())
def test_any_lists_diff_alike(old: list[Any], new: list[Any], sort: bool) -> None:
    """Disorder, repeats, big ints, subclasses, non-tuples: the reference's answer or error."""
    if sort:
        for seq in (old, new):
            with contextlib.suppress(TypeError):
                seq.sort()
    assert_same(old, new)
    assert_same(new, old)
    assert_same(old, old)
    assert_same(old, list(old))


@compiled_only
@pytest.mark.parametrize(("old", "new"), [
    ([], []),
    ([(1, 2)], []),
    ([], [(1, 2)]),
    ([(1, 2), (3, 4)], [(1, 2), (3, 4)]),
    ([(1, 2), (3, 4)], [(5, 6), (7, 8)]),
    ([(5, 6), (7, 8)], [(1, 2), (3, 4)]),
    ([(1, 2), (1, 4), (2, 3)], [(1, 3), (1, 4), (2, 2)]),
    ([(1, 2), (1, 2)], [(1, 2)]),
    ([(3, 4), (1, 2)], [(1, 2), (3, 4)]),
    ([(2**63 - 1, 2**63 - 1)], [(2**63 - 1, 2**63 - 2), (2**63, 0)]),
    ([(-(2**63), 0)], [(-(2**63) - 1, 0), (-(2**63), 0)]),
    ([(2**100, 1)], [(2**100, 1)]),
    ([(True, 2)], [(1, 2)]),
    ([(1, 2)], [Pairish((1, 2))]),
    ([(1, 2)], [(1, 2, 3)]),
    ([(1,)], [(1, 2)]),
    ([(1, 2)], [[1, 2]]),
    ([(1, 2)], ["x"]),
    ([(1, 2), "tail", None], [(1, 2)]),
    ([(1, 2)], [(1, 2), None, "tail"]),
    (((1, 2), (3, 4)), [(3, 4)]),
    ([(1, 2), (3, 4)], ((3, 4),)),
    (None, []),
    ([], 5),
])
def test_chosen_cases_diff_alike(old: Any, new: Any) -> None:
    assert_same(old, new)


@compiled_only
def test_a_list_subclass_and_odd_calls_get_the_references_answer_or_error() -> None:
    class Listish(list):  # type: ignore[type-arg]
        def __getitem__(self, index: Any) -> Any:
            return list.__getitem__(self, index)

    assert_same(Listish([(1, 2), (3, 4)]), [(3, 4)])
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}), (([],), {}), (([], [], []), {}), ((), {"old": [(1, 2)], "new": []}),
        (([(1, 2)],), {"new": [(1, 2)]}), (([], []), {"other": 1})]
    for args, kwargs in calls:
        assert outcome(compiled(), *args, **kwargs) == outcome(
            diff_sorted_reference, *args, **kwargs), (args, kwargs)


@compiled_only
def test_configure_takes_a_callable() -> None:
    assert _cpair_set is not None
    with pytest.raises(TypeError, match="takes a callable"):
        _cpair_set.configure(5)
    calls: list[Any] = []

    def spy(old: Any, new: Any) -> tuple[list[Any], list[Any]]:
        calls.append((old, new))
        return diff_sorted_reference(old, new)

    try:
        _cpair_set.configure(spy)
        assert compiled()([(1, 2)], [(1, 3)]) == ([(1, 2)], [(1, 3)])
        assert calls == []  # the fast path took it
        assert compiled()([(1, 2)], [(1, 2**70)]) == ([(1, 2)], [(1, 2**70)])
        assert calls == [([(1, 2)], [(1, 2**70)])]
    finally:
        _cpair_set.configure(
            diff_sorted_reference, diff_sorted_flat_reference, diff_touched_reference,
            apply_diff_reference,
        )


@compiled_only
def test_reference_counts_and_memory_stay_flat() -> None:
    """Both paths and the error path, many times: no reference gained or lost, no memory kept."""
    rng = random.Random(7)
    base = sorted({(rng.randrange(500), rng.randrange(500, 1000)) for _ in range(300)})
    old = [p for p in base if rng.random() < 0.7]
    new = [p for p in base if rng.random() < 0.7]
    slow = [*new, (1, 2**70)]
    bad = [(0, 0), "x"]
    watched = [old, new, slow, bad, *old[:20], *new[:20], bad[1]]
    fn = compiled()

    def loop(times: int) -> None:
        for _ in range(times):
            fn(old, new)
            fn(old, slow)
            with contextlib.suppress(TypeError):
                fn(bad, [(0, 1)])

    assert_loop_keeps_nothing(loop, watched)


# ------------------------------------------------------------- the flat merge, side by side


def compiled_flat() -> Diff:
    assert _cpair_set is not None
    fn: Diff = _cpair_set.diff_sorted_flat
    return fn


INT64_EDGE = [0, 1, -1, 2**31, 2**62, 2**63 - 2, 2**63 - 1, -(2**63) + 1, -(2**63)]
int64s = st.one_of(small, small, small, st.sampled_from(INT64_EDGE),
                   st.integers(-(2**63), 2**63 - 1))
int64_pairs = st.tuples(int64s, int64s)
#: How a flat buffer is handed over: an array('q'), read-only bytes cast to 'q', a view of
#: every other item, a reversed view.
LAYOUTS = ["array", "bytes", "stepped", "reversed"]


def flat(pairs: Iterable[Pair]) -> array[int]:
    return array("q", [e for pair in pairs for e in pair])


def laid_out(ints: array[int], layout: str) -> Any:
    """``ints`` as the buffer ``layout`` names, holding the same items in the same order."""
    if layout == "bytes":
        return memoryview(ints.tobytes()).cast("q")
    if layout == "stepped":
        spread = array("q", [0]) * (2 * len(ints))
        spread[::2] = ints
        return memoryview(spread)[::2]
    if layout == "reversed":
        return memoryview(array("q", reversed(ints)))[::-1]
    return ints


def flat_outcome(fn: Diff, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What ``fn`` answers (with the types of the lists, the tuples and the ints) or raises."""
    try:
        exits, enters = fn(*args, **kwargs)
    except Exception as error:  # the same type and text from both, compared below
        return ("raised", type(error), str(error))
    both = [*exits, *enters]
    return ("returned", exits, enters, type(exits), type(enters),
            {type(x) for x in both}, {type(v) for x in both for v in x})


def assert_flat_same(old: Any, new: Any) -> tuple[Any, ...]:
    """Both flat merges answer or raise alike, and neither keeps a buffer exported (an
    array('q') given to them can be resized again, on every path)."""
    expected = flat_outcome(diff_sorted_flat_reference, old, new)
    assert flat_outcome(compiled_flat(), old, new) == expected
    for arg in (old, new):
        if isinstance(arg, array):
            arg.append(0)
            arg.pop()
    return expected


@compiled_only
@settings(max_examples=300, deadline=None)
@given(st.lists(int64_pairs, max_size=30), st.lists(int64_pairs, max_size=30),
       st.lists(int64_pairs, max_size=20), st.sampled_from(LAYOUTS),
       st.sampled_from(LAYOUTS))
def test_sorted_flat_pairs_diff_alike(old: list[Pair], new: list[Pair], shared: list[Pair],
                                      old_layout: str, new_layout: str) -> None:
    """The processor's case (sorted, no repeats, overlapping heavily): both flat merges, the
    tuple merge and the set difference agree, the answer of tuples of exact ints."""
    old_sorted = sorted(set(old) | set(shared))
    new_sorted = sorted(set(new) | set(shared))
    outcome_ = assert_flat_same(laid_out(flat(old_sorted), old_layout),
                                laid_out(flat(new_sorted), new_layout))
    assert outcome_[0] == "returned"
    exits, enters = outcome_[1], outcome_[2]
    assert exits == sorted(set(old_sorted) - set(new_sorted))
    assert enters == sorted(set(new_sorted) - set(old_sorted))
    assert (exits, enters) == diff_sorted_reference(old_sorted, new_sorted)
    assert outcome_[3:] == (list, list, {tuple} if exits or enters else set(),
                            {int} if exits or enters else set())


@compiled_only
@settings(max_examples=300, deadline=None)
@given(st.lists(int64s, max_size=40), st.lists(int64s, max_size=40),
       st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS))
def test_any_flat_ints_diff_alike(old: list[int], new: list[int], old_layout: str,
                                  new_layout: str) -> None:
    """Disorder, repeats and odd lengths: the same answer (what the merge makes of the pairs)
    or the same error from both."""
    a = laid_out(array("q", old), old_layout)
    b = laid_out(array("q", new), new_layout)
    for x, y in ((a, b), (b, a), (a, a)):
        got = assert_flat_same(x, y)
        if len(x) % 2 == 0 and len(y) % 2 == 0:  # as the tuple merge makes of the pairs
            pairs_x = list(zip(x[::2], x[1::2], strict=True))
            pairs_y = list(zip(y[::2], y[1::2], strict=True))
            assert got[1:3] == diff_sorted_reference(pairs_x, pairs_y)
        else:
            assert got[:2] == ("raised", ValueError)


def _q(*ints: int) -> array[int]:
    return array("q", ints)


def _released() -> memoryview:
    view = memoryview(_q(1, 2))
    view.release()
    return view


@compiled_only
@pytest.mark.parametrize(("old", "new"), [
    (_q(), _q()),
    (_q(1, 2), _q()),
    (_q(), _q(1, 2)),
    (_q(3, 4, 1, 2), _q(1, 2, 3, 4)),             # unsorted
    (_q(1, 2, 1, 2), _q(1, 2)),                   # repeats
    (_q(2**63 - 1, -(2**63)), _q(-(2**63), 2**63 - 1)),
    (_q(1), _q()),                                 # odd lengths
    (_q(), _q(1, 2, 3)),
    (_q(1), _q(1, 2, 3)),                          # both wrong: old first
    (array("d", [1.0, 2.0]), _q()),                # wrong formats
    (_q(), array("i", [1, 2])),
    (array("l", [1, 2]), _q()),
    (array("Q", [1, 2]), _q()),
    (b"", _q()),
    (bytes(16), _q()),
    (bytearray(16), _q()),
    (memoryview(bytes(16)).cast("q", [1, 2]), _q()),  # two-dimensional
    (_q(), memoryview(bytes(32)).cast("q", [2, 2])),
    (memoryview(bytes(8)).cast("q", []), _q()),       # zero-dimensional
    (memoryview(bytes(16)).cast("q"), memoryview(bytes(16)).cast("q")),
    (array("d", [1.0]), array("i", [1])),         # both wrong: old first
    (None, _q()),                                  # not buffers
    (_q(), 5),
    ([1, 2], _q()),
    ((1, 2), _q()),
    ("ab", _q()),
    (_released(), _q()),                           # a released view: its own error
], ids=repr)
def test_chosen_flat_cases_diff_alike(old: Any, new: Any) -> None:
    assert_flat_same(old, new)


@compiled_only
def test_odd_calls_of_the_flat_merge_get_the_references_answer_or_error() -> None:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}), ((_q(),), {}), ((_q(), _q(), _q()), {}),
        ((), {"old": _q(1, 2), "new": _q()}), ((_q(1, 2),), {"new": _q(1, 2)}),
        ((_q(), _q()), {"other": 1}), ((_q(1),), {"new": _q()})]
    for args, kwargs in calls:
        assert flat_outcome(compiled_flat(), *args, **kwargs) == flat_outcome(
            diff_sorted_flat_reference, *args, **kwargs), (args, kwargs)


@compiled_only
def test_configure_takes_an_optional_flat_reference() -> None:
    assert _cpair_set is not None
    with pytest.raises(TypeError, match="takes a callable, got int"):
        _cpair_set.configure(diff_sorted_reference, 5)
    with pytest.raises(TypeError):
        _cpair_set.configure()
    try:
        _cpair_set.configure(diff_sorted_reference)  # no flat reference: odd calls refused
        with pytest.raises(RuntimeError, match="before configure"):
            compiled_flat()(_q())
        with pytest.raises(RuntimeError, match="before configure"):  # nor the upkeep's
            _cpair_set.apply_diff({}, None, [], [])
        assert compiled_flat()(_q(1, 2), _q()) == ([(1, 2)], [])  # the merge needs none
    finally:
        _cpair_set.configure(
            diff_sorted_reference, diff_sorted_flat_reference, diff_touched_reference,
            apply_diff_reference,
        )
    assert flat_outcome(compiled_flat(), _q()) == flat_outcome(
        diff_sorted_flat_reference, _q())


@compiled_only
def test_flat_reference_counts_and_memory_stay_flat() -> None:
    """The flat merge and its errors, many times: no reference gained or lost, no buffer
    left exported, no memory kept."""
    rng = random.Random(11)
    base = sorted({(rng.randrange(500), rng.randrange(500, 1000)) for _ in range(300)})
    old = flat(p for p in base if rng.random() < 0.7)
    new = flat(p for p in base if rng.random() < 0.7)
    odd = _q(1, 2, 3)
    wrong = array("d", [1.0, 2.0])
    view = memoryview(new)[::-1]
    watched = [old, new, odd, wrong, view]
    fn = compiled_flat()

    def loop(times: int) -> None:
        for _ in range(times):
            fn(old, new)
            fn(view, old)
            for bad in ((old, odd), (odd, new), (wrong, new), (old, wrong), (old, None)):
                with contextlib.suppress(TypeError, ValueError):
                    fn(*bad)

    assert_loop_keeps_nothing(loop, watched)
    view.release()
    for arr in (old, new, odd):  # nothing left exported
        arr.append(0)
        arr.pop()


# --------------------------------------------------------- PairSet against today's update


class ModelPairSet(PairSet):
    """PairSet with the update it had before the merge: set differences, then sorting, and
    never the flat pairs (its ``flat_pairs`` stays None, so its sorted() sorts ``pairs``);
    ``accept`` None accepts every pair."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        self.flat_pairs = None

    def clear(self) -> None:
        super().clear()
        self.flat_pairs = None

    def update(
        self,
        index: Any,
        strategy: str,
        k: int,
        touched: Callable[[], Collection[int]],
        removed: Set[int],
        accept: Callable[[list[Pair]], list[Pair]] | None,
    ) -> tuple[list[Pair], list[Pair]]:
        if not k and not removed:
            return [], []
        if accept is None:
            accept = _keep_all
        pairs = self.pairs
        partners = self.partners
        n = len(index)
        choice = self.choice
        incremental = choice.choose(strategy, k, n)
        if incremental:
            if partners is None:
                partners = self.partners = pair_set._partners_of(pairs)
            stale: set[Pair] = set()
            entities = touched()
            for group in (entities, removed):
                for entity in group:
                    for other in partners.get(entity) or ():
                        stale.add((entity, other) if entity < other else (other, entity))
            fresh = set(accept(index.find_intersections_for(entities)))
            exits = stale - fresh
            enters = fresh - stale
            if exits or enters:
                self.sorted_pairs = None
        else:
            found = accept(index.find_all_intersections())
            fresh = set(found)
            exits = pairs.keys() - fresh
            enters = fresh - pairs.keys()
            self.sorted_pairs = found
        if k:
            choice.record(incremental, 1e-6 * (k if incremental else n), k, n)
        if not incremental and choice.idle[0] > 1 and not self.keep_partners:
            partners = self.partners = None
        for pair in exits:
            del pairs[pair]
        if enters:
            pairs.update(dict.fromkeys(enters))
        if partners is not None:
            for a, b in exits:
                for x, y in ((a, b), (b, a)):
                    others = partners[x]
                    others.discard(y)
                    if not others:
                        del partners[x]
            pair_set._add_partners(partners, enters)
        return sorted(exits), sorted(enters)


def _keep_all(found: list[Pair]) -> list[Pair]:
    return found


def _random_box(rng: random.Random, side: float) -> Box:
    x, y = rng.uniform(0.0, side), rng.uniform(0.0, side)
    return Box(x, y, x + rng.uniform(0.0, 14.0), y + rng.uniform(0.0, 14.0))


def _filtered(found: list[Pair]) -> list[Pair]:
    return [p for p in found if (p[0] + p[1]) % 7]


def _state(p: PairSet) -> tuple[Any, ...]:
    """The pairs, partners and whether they are kept; and each cache that is there checked
    against the pairs (a flat PairSet keeps ``flat_pairs`` where the model keeps
    ``sorted_pairs``)."""
    now = sorted(p.pairs)
    if p.sorted_pairs is not None:
        assert p.sorted_pairs == now
    if p.flat_pairs is not None:
        assert p.flat_pairs.tolist() == [e for pair in now for e in pair]
    partners = None if p.partners is None else {e: set(o) for e, o in p.partners.items()}
    return (set(p.view()), partners, p.keep_partners)


@pytest.mark.parametrize("flat", [True, False], ids=["flat", "tuples"])
@pytest.mark.parametrize("seed", range(24))
def test_update_matches_the_set_based_model(tree_class: type, seed: int, flat: bool) -> None:
    """Random frames, each search forced or chosen, filtered, unfiltered or with no filter
    (``accept`` None, the flat path when ``flat``), with replace(), clear(), sorted() and
    contacts() between them: the same answers and state as the model."""
    rng = random.Random(seed)
    side = 90.0
    tree = tree_class(Box(0.0, 0.0, side, side), threshold=4)
    boxes: dict[int, Box] = {}
    next_id = 1
    ours, model = PairSet(), ModelPairSet()
    ours.flat = flat
    accept: Callable[[list[Pair]], list[Pair]] | None = (
        _filtered, _keep_all, None)[seed % 3]
    for _ in range(60):
        touched, removed, next_id = churn_frame(
            rng, tree, boxes, next_id, most_ops=15, move_below=0.85,
            make_box=lambda r: _random_box(r, side),
        )
        extra = rng.random()
        if extra < 0.05:
            found = tree.find_all_intersections()
            if accept is not None:
                found = accept(found)
            ours.replace(list(found))
            model.replace(list(found))
        elif extra < 0.08:
            ours.clear()
            model.clear()
        elif extra < 0.2 and boxes:
            e = rng.choice(sorted(boxes))
            assert ours.contacts(e) == model.contacts(e)
        elif extra < 0.3:
            assert ours.sorted() == model.sorted()
        strategy = rng.choice([*SEARCHES, "full", "full"])
        for p in (ours, model):  # the same choice for both, whatever the clock measured
            p.choice.cost_full, p.choice.cost_incremental = 1e-6, 1e-6
        got = ours.update(tree, strategy, len(touched), set(touched).copy, removed, accept)
        want = model.update(tree, strategy, len(touched), set(touched).copy, removed, accept)
        assert got == want
        assert _state(ours) == _state(model)
        assert ours.sorted() == model.sorted() == sorted(ours.view())


def test_the_full_search_merges_when_the_sorted_pairs_are_at_hand(
        tree_class: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """The merge runs when the previous sorted pairs exist, the sets when they do not."""
    calls: list[int] = []

    def spy(old: Any, new: Any) -> tuple[list[Any], list[Any]]:
        calls.append(len(old))
        return diff_sorted_reference(old, new)

    monkeypatch.setattr(pair_set, "diff_sorted", spy)
    tree = tree_class(Box(0.0, 0.0, 100.0, 100.0))
    tree.insert_many([1, 2, 3], [Box(0, 0, 10, 10), Box(5, 5, 15, 15), Box(50, 50, 60, 60)])
    p = PairSet()
    keep: Callable[[list[Pair]], list[Pair]] = lambda found: found  # noqa: E731
    assert p.update(tree, "full", 3, set, set(), keep) == ([], [(1, 2)])
    assert calls == [0]
    p.sorted_pairs = None  # as after an incremental frame that changed the pairs
    tree.move(3, Box(8, 8, 20, 20))
    assert p.update(tree, "full", 1, set, set(), keep) == ([], [(1, 3), (2, 3)])
    assert calls == [0]
    tree.move(1, Box(80, 80, 90, 90))
    assert p.update(tree, "full", 1, set, set(), keep) == ([(1, 2), (1, 3)], [])
    assert calls == [0, 3]


def _ids(pairs: Iterable[Pair]) -> list[int]:
    return [id(p) for p in pairs]


def test_the_answer_holds_the_found_pairs_themselves(tree_class: type) -> None:
    """The enters are this frame's found tuples, the exits the previous frame's."""
    tree = tree_class(Box(0.0, 0.0, 100.0, 100.0))
    tree.insert_many([1, 2, 3], [Box(0, 0, 10, 10), Box(5, 5, 15, 15), Box(50, 50, 60, 60)])
    p = PairSet()
    seen: list[list[Pair]] = []

    def keep(found: list[Pair]) -> list[Pair]:
        seen.append(found)
        return found

    _, enters = p.update(tree, "full", 3, set, set(), keep)
    assert _ids(enters) == _ids(seen[-1])
    before = seen[-1]
    tree.move(1, Box(80, 80, 90, 90))
    exits, _ = p.update(tree, "full", 1, set, set(), keep)
    assert _ids(exits) == _ids(before)


def soak(frames: int, seed: int = 3) -> None:
    """``frames`` frames of 150 boxes moving in the index in use, the pairs by the full search
    (so by the merge in use, and with no filter by the flat merge in use) and now and then the
    incremental one, checked against the model every frame; traced memory flat from the first
    quarter to the end. The AddressSanitizer
    soak runs it long (``tests/test_native_soak.py --asan``)."""
    from ecs_spatial import QuadTree

    rng = random.Random(seed)
    side = 200.0
    tree = QuadTree(Box(0.0, 0.0, side, side), threshold=6)
    boxes = {e: _random_box(rng, side) for e in range(150)}
    tree.insert_many(list(boxes), list(boxes.values()))
    ours, flat, model = PairSet(), PairSet(), ModelPairSet()
    keep: Callable[[list[Pair]], list[Pair]] = lambda found: found  # noqa: E731
    first = 0
    tracemalloc.start()
    try:
        for frame in range(frames):
            moved = set(rng.sample(sorted(boxes), 40))
            for e in moved:
                boxes[e] = _random_box(rng, side)
                tree.move(e, boxes[e])
            strategy = "incremental" if frame % 10 == 9 else "full"
            got = ours.update(tree, strategy, len(moved), moved.copy, set(), keep)
            assert got == model.update(tree, strategy, len(moved), moved.copy, set(), keep)
            assert got == flat.update(tree, strategy, len(moved), moved.copy, set(), None)
            assert ours.pairs == model.pairs == flat.pairs
            if frame % 50 == 49:
                assert flat.sorted() == model.sorted()
            if frame == frames // 4:
                gc.collect()
                first = tracemalloc.get_traced_memory()[0]
        gc.collect()
        last = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert last - first < 64 * 1024, (first, last)


def test_a_long_loop_of_frames_stays_flat() -> None:
    soak(400)


# ------------------------------------------------- the incremental search's diff, side by side


def touched_outcome(fn: Diff, *args: Any) -> Any:
    """What a call gives: the answer (with each item's type, so that an int subclass or a
    tuple subclass shows), or the error's type and text."""
    try:
        exits, enters = fn(*args)
    except Exception as error:  # the error is the outcome compared
        return ("raised", type(error).__name__, str(error))
    return tuple([(type(p).__name__, p, [type(v).__name__ for v in p]
                   if isinstance(p, tuple) else None) for p in side]
                 for side in (exits, enters))


ids = st.integers(0, 12)


@st.composite
def touched_inputs(draw: st.DrawFn) -> tuple[dict[int, set[int]], tuple[set[int], ...], list[Pair]]:
    """Last frame's partners (symmetric, as PairSet keeps them), the touched and removed
    entities, and this frame's pairs of the touched, sorted, as the search finds them."""
    pairs = draw(st.sets(st.tuples(ids, ids).filter(lambda p: p[0] < p[1]), max_size=30))
    partners: dict[int, set[int]] = {}
    for a, b in pairs:
        partners.setdefault(a, set()).add(b)
        partners.setdefault(b, set()).add(a)
    touched = draw(st.sets(ids, max_size=8))
    removed = draw(st.sets(ids, max_size=3))
    found = sorted(draw(st.sets(st.tuples(ids, ids).filter(lambda p: p[0] < p[1]),
                                max_size=20)))
    return partners, (touched, removed), found


@compiled_only
@settings(max_examples=300, deadline=None)
@given(touched_inputs())
def test_touched_diffs_alike(
    case: tuple[dict[int, set[int]], tuple[set[int], ...], list[Pair]],
) -> None:
    partners, groups, found = case
    assert _cpair_set is not None
    ours = touched_outcome(_cpair_set.diff_touched, partners, groups, found)
    assert ours == touched_outcome(diff_touched_reference, partners, groups, found)
    # the touched as the processor passes them where one move buffer holds them all: an
    # array('q') (repeats allowed), which the compiled diff reads as a buffer
    moved = array("q", [*groups[0], *list(groups[0])[:2]])
    assert touched_outcome(_cpair_set.diff_touched, partners, (moved, groups[1]), found) == ours
    assert touched_outcome(diff_touched_reference, partners, (moved, groups[1]), found) == ours
    # and the model: the stale pairs of the groups against the found ones
    stale = {(min(e, o), max(e, o)) for g in groups for e in g for o in partners.get(e, ())}
    assert ours[0] == [("tuple", p, ["int", "int"]) for p in sorted(stale - set(found))]
    assert ours[1] == [("tuple", p, ["int", "int"]) for p in sorted(set(found) - stale)]



@compiled_only
@pytest.mark.parametrize("seed", range(30))
def test_many_touched_diff_alike(seed: int) -> None:
    """Hundreds of stale pairs (the compiled diff sorts them with a merge sort of its own
    past 16): ids spread over the whole int64 range, negative ones and both ends included,
    pairs shared by two touched entities (a repeat to drop), against the reference and the
    model."""
    rng = random.Random(seed)
    pool = [rng.randrange(-2**63, 2**63) for _ in range(rng.randrange(2, 300))]
    pool += [-2**63, 2**63 - 1, -1, 0, 1]
    pairs = {tuple(sorted(rng.sample(pool, 2))) for _ in range(rng.randrange(0, 900))}
    partners: dict[int, set[int]] = {}
    for a, b in pairs:
        partners.setdefault(a, set()).add(b)
        partners.setdefault(b, set()).add(a)
    touched = set(rng.sample(pool, rng.randrange(0, len(pool))))
    removed = set(rng.sample(pool, rng.randrange(0, 4)))
    stale = {(min(e, o), max(e, o)) for g in (touched, removed) for e in g
             for o in partners.get(e, ())}
    kept = [p for p in stale if rng.random() < 0.8]
    fresh = [tuple(sorted(rng.sample(pool, 2))) for _ in range(rng.randrange(0, 50))]
    found = sorted(set(kept) | set(fresh))
    assert _cpair_set is not None
    ours = touched_outcome(_cpair_set.diff_touched, partners, (touched, removed), found)
    assert ours == touched_outcome(diff_touched_reference, partners, (touched, removed), found)
    moved = array("q", touched)
    assert touched_outcome(_cpair_set.diff_touched, partners, (moved, removed), found) == ours
    assert ours[0] == [("tuple", p, ["int", "int"]) for p in sorted(stale - set(found))]
    assert ours[1] == [("tuple", p, ["int", "int"]) for p in sorted(set(found) - stale)]


BIG = 2**70


@compiled_only
@pytest.mark.parametrize(("partners", "groups", "found"), [
    ({}, (), []),
    ({1: {2}, 2: {1}}, ({1},), [(1, 2)]),                      # unchanged
    ({1: {2}, 2: {1}}, ({1}, {2}), []),                        # both sides: one exit
    ({1: set()}, ({1},), [(1, 3)]),                            # an empty partner set
    ({1: {2}}, ({1},), [(2, 1)]),                              # found not normalised
    ({1: {2}}, ({1},), [(1, 3), (1, 2)]),                      # found unsorted
    ({1: {2}}, ({1},), [(1, 2), (1, 2)]),                      # found repeats
    ({1: {2}}, ({1},), ((1, 2),)),                             # found a tuple
    ({1: {2}}, ([1],), [(1, 3)]),                              # a group a list
    ({1: {2}}, (frozenset({1}),), [(1, 3)]),                   # a frozenset
    ({1: [2]}, ({1},), [(1, 3)]),                              # partners a list
    ({1: {Int(2)}}, ({1},), [(1, 3)]),                         # an int subclass
    ({True: {2}}, ({True},), [(1, 3)]),                        # a bool
    ({BIG: {2}}, ({BIG},), [(2, BIG)]),                        # beyond 64 bits
    ({1: {2}}, ({1},), [(1, BIG)]),
    ({1: {2}}, ({1},), [(1, 2, 3)]),                           # not a pair
    ({1: {2}}, ({1},), [5]),
    ({1: {"a"}}, ({1},), [(1, 3)]),                            # uncomparable: raises
    ({1: {2}}, ({1},), None),                                  # not iterable: raises
    ({1: {2}}, [{1}], [(1, 3)]),                               # groups a list
    ({1: {2}}, (array("q", [1, 1]),), [(1, 3)]),               # an int64 buffer, a repeat
    ({1: {2}}, (memoryview(array("q", [1])),), [(1, 3)]),
    ({1: {2}}, (array("i", [1]),), [(1, 3)]),                  # not int64: the reference
    ({1: {2}}, (memoryview(array("q", [1, 5]))[::2],), [(1, 3)]),  # not contiguous
    ({1: {2}}, (b"\x01",), [(1, 3)]),                          # bytes: ints of the reference
    ({1: [2]}, (array("q", [1]),), [(1, 3)]),                  # partners a list
    ({-2**63: {2}}, (array("q", [-2**63]),), []),               # the int64 range's end
    (None, ({1},), [(1, 3)]),                                  # partners not a mapping
], ids=repr)
def test_chosen_touched_cases_diff_alike(partners: Any, groups: Any, found: Any) -> None:
    assert _cpair_set is not None
    ours = touched_outcome(_cpair_set.diff_touched, partners, groups, found)
    assert ours == touched_outcome(diff_touched_reference, partners, groups, found)
    # found as an iterator (the fallback takes it), made afresh for each
    if isinstance(found, list):
        assert touched_outcome(_cpair_set.diff_touched, partners, groups, iter(found)) == \
            touched_outcome(diff_touched_reference, partners, groups, iter(found))


@compiled_only
def test_touched_odd_calls_and_memory() -> None:
    """Keywords and other numbers of arguments get the reference's error; a long loop of the
    fast path and the fallback keeps no reference and no memory."""
    assert _cpair_set is not None
    fn = _cpair_set.diff_touched
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}), (({},), {}), (({}, (), [], 1), {}), (({}, ()), {"found": []})]
    reference: Any = diff_touched_reference
    for args, kwargs in calls:
        assert touched_outcome(partial(fn, **kwargs), *args) == touched_outcome(
            partial(reference, **kwargs), *args)
    partners = {i: {i + 1} for i in range(0, 200, 2)}
    partners.update({i + 1: {i} for i in range(0, 200, 2)})
    groups = (set(range(0, 200, 3)), {7})
    found = sorted((i, i + 2) for i in range(0, 200, 5))
    slow = (set(range(0, 200, 3)), [7])
    ids = (array("q", range(0, 200, 3)), {7})  # a buffer held and released each call
    watched = [partners, groups, found, ids[0], *found[:10]]

    def loop(times: int) -> None:
        for _ in range(times):
            fn(partners, groups, found)
            fn(partners, slow, found)
            fn(partners, ids, found)
        ids[0].append(0)  # not still exported
        ids[0].pop()

    assert_loop_keeps_nothing(loop, watched)


# -- the upkeep after a diff: apply_diff ----------------------------------------------------------


class _Partners(set[int]):
    """A set subclass: the compiled upkeep calls its methods, as Python does."""


def apply_outcome(fn: Any, pairs: Any, partners: Any, exits: Any, enters: Any) -> Any:
    """What ``fn`` leaves of copies of its input (pairs in order, partners as sorted lists
    in key order) and raises (type and text), as a comparable value."""
    pairs = dict(pairs) if type(pairs) is dict else pairs
    if type(partners) is dict:
        partners = {k: type(v)(v) if isinstance(v, set) else v for k, v in partners.items()}
    try:
        fn(pairs, partners, exits, enters)
        error = None
    except Exception as exc:
        error = (type(exc), str(exc))
    held = None if partners is None else [
        (k, type(v).__name__, sorted(v) if isinstance(v, set) else v)
        for k, v in partners.items()]
    return list(pairs) if isinstance(pairs, dict) else pairs, held, error


def _frame_diff(rng: random.Random, pairs: dict[Pair, None]) -> tuple[list[Pair], list[Pair]]:
    """A frame's consistent exits (some current pairs) and enters (new pairs), sorted."""
    exits = sorted(p for p in pairs if rng.random() < 0.3)
    enters = sorted({(a, a + rng.randint(1, 6)) for a in (rng.randint(0, 30) for _ in range(
        rng.randint(0, 8)))} - pairs.keys())
    return exits, enters


@compiled_only
@pytest.mark.parametrize("seed", range(40))
def test_apply_diff_alike_over_frames(seed: int) -> None:
    """Frame after frame of consistent exits and enters, with partners kept or not, the
    compiled upkeep leaves what the reference leaves."""
    assert _cpair_set is not None
    rng = random.Random(seed)
    ours: dict[Pair, None] = {}
    theirs: dict[Pair, None] = {}
    our_partners: dict[int, set[int]] | None = {}
    their_partners: dict[int, set[int]] | None = {}
    for _ in range(30):
        exits, enters = _frame_diff(rng, ours)
        if rng.random() < 0.1:
            our_partners = their_partners = None
        elif our_partners is None:
            our_partners = pair_set._partners_of(ours)
            their_partners = pair_set._partners_of(theirs)
        _cpair_set.apply_diff(ours, our_partners, list(exits), list(enters))
        apply_diff_reference(theirs, their_partners, list(exits), list(enters))
        assert list(ours) == list(theirs)
        assert our_partners == their_partners
        if our_partners is not None:
            assert our_partners == pair_set._partners_of(ours)


@compiled_only
@pytest.mark.parametrize(("pairs", "partners", "exits", "enters"), [
    ({(1, 2): None}, {1: {2}, 2: {1}}, [(1, 2)], [(2, 3)]),
    ({}, {}, [], []),
    ({(1, 2): None}, None, [(1, 2)], [(1, 3), (1, 4)]),
    ({}, {}, [], [(1, 2), (1, 2)]),  # a repeat: one pair, one partner each
    ({(1, 2): None}, {1: {2}, 2: {1}}, [(1, 3)], []),  # not a pair: KeyError((1, 3))
    ({(1, 2): None}, {2: {1}}, [(1, 2)], []),  # no partners of 1: KeyError(1)
    ({(1, 2): None}, {1: {2}}, [(1, 2)], []),  # no partners of 2, after 1's went
    ({(1, 2): None}, {1: _Partners({2}), 2: _Partners({1, 5})}, [(1, 2)], [(2, 4)]),
    ({}, {1: None}, [], [(1, 2)]),  # a None where a set was: a new set, as .get() sees it
    ({}, {1: 7}, [], [(1, 2)]),  # not a set: the same AttributeError
    ({(True, 2): None}, {1: {2}, 2: {1}}, [(True, 2)], []),  # a bool: the reference
    ({(1, 2): None}, {1: {2}, 2: {1}}, [[1, 2]], []),  # not a tuple: the reference
    ({(1, 2, 3): None}, {}, [(1, 2, 3)], []),  # three ids: the reference
    ({(1, 2): None}, {1: {2}, 2: {1}}, ((1, 2),), []),  # a tuple of pairs: the reference
    ({(1, 2): None}, {1: {2}, 2: {1}}, [(1, 2)], [(2 ** 70, 2 ** 71)]),  # beyond 64 bits
])
def test_chosen_apply_cases_alike(pairs: Any, partners: Any, exits: Any, enters: Any) -> None:
    """The same pairs, partners and error as the reference, whatever the input."""
    assert _cpair_set is not None
    assert apply_outcome(_cpair_set.apply_diff, pairs, partners, exits, enters) == \
        apply_outcome(apply_diff_reference, pairs, partners, exits, enters)


@compiled_only
def test_apply_diff_odd_calls_and_memory() -> None:
    """Keywords and other numbers of arguments get the reference's error; a long loop of
    the fast path (with partners and without) and the fallback keeps nothing."""
    assert _cpair_set is not None
    fn = _cpair_set.apply_diff
    reference: Any = apply_diff_reference
    def error_of(f: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            f(*args, **kwargs)
        except Exception as exc:
            return type(exc), str(exc)
        return None

    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}), (({},), {}), (({}, None, []), {"enters": []}), (({}, None, [], [], 1), {})]
    for args, kwargs in calls:
        assert error_of(fn, *args, **kwargs) == error_of(reference, *args, **kwargs)
        assert error_of(fn, *args, **kwargs) is not None or args[2:] == ([],)
    pairs: dict[Pair, None] = {}
    partners: dict[int, set[int]] = {}
    batch = [(i, i + 1) for i in range(0, 100, 2)]
    slow = [(True, 5)]
    watched = [pairs, partners, batch, *batch[:10]]

    def loop(times: int) -> None:
        for _ in range(times):
            fn(pairs, partners, [], batch)
            fn(pairs, partners, batch, [])
            fn(pairs, None, [], batch)
            fn(pairs, None, batch, [])
            fn(pairs, partners, [], slow)
            fn(pairs, partners, slow, [])

    assert_loop_keeps_nothing(loop, watched)
    assert pairs == {} and partners == {}
