"""PairSet and SearchChoice without esper: a bare index, random frames, brute force."""

from __future__ import annotations

import random
from typing import Any

import pytest
from _churn import churn_frame

from ecs_spatial import Box
from ecs_spatial import pair_set as pair_set_module
from ecs_spatial.pair_set import SEARCHES, PairSet, SearchChoice

Pair = tuple[int, int]


def brute(boxes: dict[int, Box]) -> set[Pair]:
    ids = sorted(boxes)
    return {
        (a, b)
        for i, a in enumerate(ids)
        for b in ids[i + 1:]
        if boxes[a].intersects(boxes[b])
    }


def keep_all(found: list[Pair]) -> list[Pair]:
    return found


def random_box(rng: random.Random, side: float) -> Box:
    x, y = rng.uniform(0.0, side), rng.uniform(0.0, side)
    return Box(x, y, x + rng.uniform(0.0, 12.0), y + rng.uniform(0.0, 12.0))


@pytest.mark.parametrize("seed", range(12))
def test_update_matches_brute_force_frame_by_frame(tree_class: type, seed: int) -> None:
    """Whatever the search each frame (forced or chosen), the pairs equal brute force, and
    the exits and enters are exactly the difference from the frame before, sorted."""
    rng = random.Random(seed)
    side = 100.0
    tree = tree_class(Box(0.0, 0.0, side, side), threshold=4)
    boxes: dict[int, Box] = {}
    next_id = 1
    pair_set = PairSet()
    before: set[Pair] = set()
    for _ in range(40):
        touched, removed, next_id = churn_frame(
            rng, tree, boxes, next_id, most_ops=12, move_below=0.8,
            make_box=lambda r: random_box(r, side),
        )
        strategy = rng.choice(SEARCHES)
        frame_touched = set(touched)
        exits, enters = pair_set.update(
            tree, strategy, len(frame_touched), frame_touched.copy, removed, keep_all
        )
        now = brute(boxes)
        assert set(pair_set.view()) == now
        assert exits == sorted(before - now)
        assert enters == sorted(now - before)
        assert pair_set.sorted() == sorted(now)
        before = now


def test_replace_then_incremental_rebuilds_the_partners(tree_class: type) -> None:
    """After replace() (the lazy ``pairs`` of a processor with no events), the incremental
    search still finds the exits of a moved entity: the partners are rebuilt."""
    tree = tree_class(Box(0.0, 0.0, 100.0, 100.0))
    tree.insert(1, Box(0.0, 0.0, 10.0, 10.0))
    tree.insert(2, Box(5.0, 5.0, 15.0, 15.0))
    pair_set = PairSet()
    pair_set.replace(tree.find_all_intersections())
    assert set(pair_set.view()) == {(1, 2)}
    tree.move(1, Box(50.0, 50.0, 60.0, 60.0))
    exits, enters = pair_set.update(tree, "incremental", 1, lambda: {1}, set(), keep_all)
    assert (exits, enters) == ([(1, 2)], [])
    assert not pair_set.view()


def test_a_frame_with_nothing_touched_searches_nothing(tree_class: type) -> None:
    tree = tree_class(Box(0.0, 0.0, 10.0, 10.0))
    pair_set = PairSet()
    choice = pair_set.choice
    assert pair_set.update(tree, "auto", 0, set, set(), keep_all) == ([], [])
    assert choice.idle == [0, 0] and choice.measured == [False, False]


class TestSearchChoice:
    def test_a_forced_strategy_is_obeyed(self) -> None:
        choice = SearchChoice()
        assert choice.choose("incremental", 10_000, 10) is True
        assert choice.choose("full", 1, 10_000) is False
        assert choice.idle == [1, 0]

    def test_the_cheaper_prediction_wins_once_both_are_measured(self) -> None:
        choice = SearchChoice()
        choice.measured = [True, True]
        choice.cost_incremental, choice.cost_full = 1.0, 1.0
        assert choice.choose("auto", 10, 100) is True    # 10 against 100
        assert choice.choose("auto", 100, 10) is False   # 100 against 10

    def test_a_close_call_is_rechecked_after_thirty_frames(self) -> None:
        choice = SearchChoice()
        choice.measured = [True, True]
        choice.cost_incremental, choice.cost_full = 1.0, 1.0
        runs = [choice.choose("auto", 15, 20) for _ in range(32)]  # within 2x
        assert runs[:30] == [True] * 30
        assert runs[30] is False  # the full walk, idle for 30 frames, runs once
        assert runs[31] is True

    def test_a_clear_choice_is_never_second_guessed(self) -> None:
        choice = SearchChoice()
        choice.measured = [True, True]
        choice.cost_incremental, choice.cost_full = 1.0, 1.0
        assert not any(choice.choose("auto", 100, 10) for _ in range(100))

    def test_an_unrun_search_is_tried_unless_four_times_dearer(self) -> None:
        choice = SearchChoice()
        choice.measured = [False, True]
        choice.cost_incremental, choice.cost_full = 3.0, 0.1
        assert choice.choose("auto", 1, 10) is False  # the full walk first (1 against 3)
        assert choice.choose("auto", 1, 10) is True   # the incremental one, never run: tried
        far = SearchChoice()
        far.measured = [False, True]
        far.cost_incremental, far.cost_full = 5.0, 0.1
        assert not any(far.choose("auto", 1, 10) for _ in range(10))

    def test_the_incremental_search_is_not_tried_on_half_the_index(self) -> None:
        choice = SearchChoice()
        choice.measured = [False, True]
        choice.cost_incremental, choice.cost_full = 3.0, 1.0  # 150 against 100: close
        assert not any(choice.choose("auto", 50, 100) for _ in range(10))

    def test_the_first_measurement_replaces_the_prior_then_moves_a_quarter(self) -> None:
        choice = SearchChoice()
        choice.cost_incremental = 1.0  # a prior; samples are clipped to 4x either way
        choice.record(True, 2.0, 1, 100)
        assert choice.cost_incremental == 2.0 and choice.measured[0]
        choice.record(True, 4.0, 1, 100)
        assert choice.cost_incremental == 2.5
        choice.record(True, 1000.0, 1, 100)  # clipped to 4x the estimate
        assert choice.cost_incremental == 2.5 + 0.25 * (10.0 - 2.5)
        choice.cost_full = 1.0
        choice.record(False, 50.0, 1, 100)
        assert choice.cost_full == 0.5 and choice.measured[1]


def test_the_processor_refuses_an_unknown_search() -> None:
    from ecs_spatial import SpatialProcessor

    spatial = SpatialProcessor()
    with pytest.raises(ValueError, match="pair_search must be one of"):
        spatial.pair_search = "fastest"
    assert spatial.pair_search == "auto"


def test_contacts_keep_the_partners_through_full_searches(tree_class: type) -> None:
    """Once contacts() is asked for, the full search no longer drops the partners, so each
    later call reads them (O(contacts)) instead of rebuilding them from every pair."""
    tree = tree_class(Box(0.0, 0.0, 100.0, 100.0))
    for e in range(1, 11):
        tree.insert(e, Box(e * 5.0, 0.0, e * 5.0 + 6.0, 6.0))
    pair_set = PairSet()
    for _ in range(3):  # the full walk, again and again: the partners are dropped
        pair_set.update(tree, "full", 10, set, set(), keep_all)
    assert pair_set.partners is None
    assert pair_set.contacts(5) == {4, 6}
    tree.move(5, Box(90.0, 90.0, 91.0, 91.0))
    for _ in range(3):
        pair_set.update(tree, "full", 1, set, set(), keep_all)
    assert pair_set.partners is not None
    assert pair_set.contacts(5) == frozenset() and pair_set.contacts(4) == {3}


# ------------------------------------------------- accept=None: the flat path and its caches


def flattened(pairs: list[Pair]) -> list[int]:
    return [entity for pair in pairs for entity in pair]


def check_caches(p: PairSet) -> None:
    """The class's invariants: each cache, when present, is exactly the pairs."""
    __tracebackhide__ = True
    now = sorted(p.pairs)
    if p.sorted_pairs is not None:
        assert p.sorted_pairs == now
    if p.flat_pairs is not None:
        assert p.flat_pairs.typecode == "q"
        assert p.flat_pairs.tolist() == flattened(now)
    if p.partners is not None:
        assert p.partners == pair_set_module._partners_of(now)


def made(flat: bool) -> PairSet:
    p = PairSet()
    p.flat = flat
    return p


@pytest.mark.parametrize("seed", range(10))
def test_no_filter_flat_or_not_matches_brute_force(tree_class: type, seed: int) -> None:
    """accept=None, a PairSet on the flat path and one off it, frames of both searches with
    replace(), clear(), sorted() and contacts() between them: every frame the same exits,
    enters and pairs, those of brute force, and every cache exactly the pairs."""
    rng = random.Random(seed)
    side = 90.0
    tree = tree_class(Box(0.0, 0.0, side, side), threshold=4)
    boxes: dict[int, Box] = {}
    next_id = 1
    flat, tuples = made(True), made(False)
    before: set[Pair] = set()
    for _ in range(50):
        touched, removed, next_id = churn_frame(
            rng, tree, boxes, next_id, most_ops=12, move_below=0.85,
            make_box=lambda r: random_box(r, side),
        )
        extra = rng.random()
        if extra < 0.06:
            found = tree.find_all_intersections()
            for p in (flat, tuples):
                p.replace(list(found))
            before = set(found)
        elif extra < 0.1:  # as the processor does when its world goes: the index too
            for p in (flat, tuples):
                p.clear()
            tree.clear()
            boxes.clear()
            before = set()
        elif extra < 0.2 and boxes:
            e = rng.choice(sorted(boxes))
            assert flat.contacts(e) == tuples.contacts(e)
        elif extra < 0.35:
            assert flat.sorted() == tuples.sorted() == sorted(before)
        strategy = rng.choice([*SEARCHES, "full", "full", "full"])
        answers = []
        for p in (flat, tuples):
            p.choice.cost_full = p.choice.cost_incremental = 1e-6  # the same choice for both
            answers.append(p.update(tree, strategy, len(touched), set(touched).copy, removed,
                                    None))
            check_caches(p)
        now = brute(boxes)
        assert answers[0] == answers[1] == (sorted(before - now), sorted(now - before))
        assert set(flat.view()) == set(tuples.view()) == now
        if rng.random() < 0.3:
            assert flat.sorted() == tuples.sorted() == sorted(now)
        before = now


@pytest.mark.parametrize("between", ["incremental", "filtered", "replace", "clear"])
def test_the_flat_cache_never_goes_stale(tree_class: type, between: str) -> None:
    """A flat full search, a frame that changes the pairs another way, a flat full search
    again: the second flat diff is against the pairs as they are, not the first array."""
    tree = tree_class(Box(0.0, 0.0, 100.0, 100.0))
    tree.insert_many([1, 2, 3], [Box(0, 0, 10, 10), Box(5, 5, 15, 15), Box(50, 50, 60, 60)])
    p = made(True)
    assert p.update(tree, "full", 3, set, set(), None) == ([], [(1, 2)])
    tree.move(3, Box(8, 8, 20, 20))  # (1, 3) and (2, 3) begin
    if between == "incremental":
        assert p.update(tree, "incremental", 1, lambda: {3}, set(), None) == (
            [], [(1, 3), (2, 3)])
    elif between == "filtered":
        assert p.update(tree, "full", 1, set, set(), keep_all) == ([], [(1, 3), (2, 3)])
    elif between == "replace":
        p.replace(tree.find_all_intersections())
    else:
        p.clear()
    check_caches(p)
    tree.move(1, Box(80, 80, 90, 90))  # (1, 2) and (1, 3) end
    exits, enters = p.update(tree, "full", 1, set, set(), None)
    if between == "clear":
        assert (exits, enters) == ([], [(2, 3)])
    else:
        assert (exits, enters) == ([(1, 2), (1, 3)], [])
    assert set(p.view()) == {(2, 3)} and p.sorted() == [(2, 3)]
    check_caches(p)


def test_the_flat_path_runs_only_without_filters_and_when_chosen(
        tree_class: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """accept=None on a flat PairSet: find_all_intersections_array and the flat diff; with a
    filter, or off the flat path: find_all_intersections and the tuple diff."""
    calls: list[str] = []

    def flat_spy(old: Any, new: Any) -> tuple[list[Pair], list[Pair]]:
        calls.append("flat")
        return pair_set_module.diff_sorted_flat_reference(old, new)

    def spy(old: Any, new: Any) -> tuple[list[Any], list[Any]]:
        calls.append("tuples")
        return pair_set_module.diff_sorted_reference(old, new)

    monkeypatch.setattr(pair_set_module, "diff_sorted_flat", flat_spy)
    monkeypatch.setattr(pair_set_module, "diff_sorted", spy)
    tree = tree_class(Box(0.0, 0.0, 100.0, 100.0))
    tree.insert_many([1, 2], [Box(0, 0, 10, 10), Box(5, 5, 15, 15)])
    for flat in (True, False):
        p = made(flat)
        for accept in (None, keep_all, None):
            calls.clear()
            assert p.update(tree, "full", 2, set, set(), accept)[1] in ([], [(1, 2)])
            assert calls == ["flat" if flat and accept is None else "tuples"]


def test_the_choice_is_taken_when_the_pair_set_is_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A PairSet made while the module's diffs and FLAT_PAIRS are the reference's keeps
    them, whatever they are set to afterwards (a compiled and a reference processor side by
    side in one process)."""
    monkeypatch.setattr(pair_set_module, "FLAT_PAIRS", False)
    monkeypatch.setattr(pair_set_module, "diff_sorted", pair_set_module.diff_sorted_reference)
    monkeypatch.setattr(pair_set_module, "diff_sorted_flat",
                        pair_set_module.diff_sorted_flat_reference)
    reference = PairSet()
    monkeypatch.setattr(pair_set_module, "FLAT_PAIRS", True)
    monkeypatch.setattr(pair_set_module, "diff_sorted", None)
    monkeypatch.setattr(pair_set_module, "diff_sorted_flat", None)
    flat = PairSet()
    assert reference.flat is False and flat.flat is True
    assert reference.diff is pair_set_module.diff_sorted_reference
    assert reference.diff_flat is pair_set_module.diff_sorted_flat_reference
    assert flat.diff is None and flat.diff_flat is None


def test_the_flat_path_is_chosen_with_the_compiled_core_alone() -> None:
    from ecs_spatial import NATIVE

    assert pair_set_module.FLAT_PAIRS is (
        NATIVE and pair_set_module.diff_sorted_flat is not
        pair_set_module.diff_sorted_flat_reference)
    assert PairSet().flat is pair_set_module.FLAT_PAIRS


@pytest.mark.parametrize("seed", range(8))
def test_the_pairs_left_behind_on_the_flat_path_catch_up_when_read(
    tree_class: type, seed: int
) -> None:
    """On the flat path with no reader and no partners, the frames' exits and enters are
    not applied to the dict of pairs (``behind``); whatever reads it then (a copy, the
    pairs, contacts, an incremental or filtered search, a replace) finds it exact, and the
    length and sorted order are exact all along without bringing it up to date."""
    import copy
    import pickle

    rng = random.Random(seed)
    side = 100.0
    tree = tree_class(Box(0.0, 0.0, side, side), threshold=4)
    boxes: dict[int, Box] = {}
    next_id = 1
    p = made(True)
    lagged = 0
    for frame in range(60):
        touched, removed, next_id = churn_frame(
            rng, tree, boxes, next_id, most_ops=12, move_below=0.8,
            make_box=lambda r: random_box(r, side),
        )
        strategy = "full" if rng.random() < 0.8 else rng.choice(SEARCHES)
        accept = None if rng.random() < 0.85 else keep_all
        frame_touched = set(touched)
        p.update(tree, strategy, len(frame_touched) or 1, frame_touched.copy, removed, accept)
        now = brute(boxes)
        lagged += p.behind
        assert len(p) == len(now)
        assert p.sorted() == sorted(now)
        roll = rng.random()
        if roll < 0.1:
            assert set(copy.deepcopy(p).pairs) == now
            assert not p.behind and p.keep_pairs == (frame > 40)  # not kept for a copy
        elif roll < 0.2:
            assert set(pickle.loads(pickle.dumps(p)).pairs) == now
        elif roll < 0.25 and now:
            a, b = min(now)
            assert b in p.contacts(a)
        if frame == 40:
            assert set(p.view()) == now
            assert p.keep_pairs
        if frame > 40:
            assert not p.behind
            check_caches(p)
    assert lagged > 0
    assert set(p.pairs) == brute(boxes)
