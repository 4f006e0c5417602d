"""PairSet and SearchChoice without esper: a bare index, random frames, brute force."""

from __future__ import annotations

import random

import pytest

from ecs_spatial import Box
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
        touched: set[int] = set()
        removed: set[int] = set()
        for _ in range(rng.randint(0, 12)):
            action = rng.random()
            if action < 0.3 or not boxes:
                boxes[next_id] = random_box(rng, side)
                tree.insert(next_id, boxes[next_id])
                touched.add(next_id)
                next_id += 1
            elif action < 0.8:
                e = rng.choice(sorted(boxes))
                boxes[e] = random_box(rng, side)
                tree.move(e, boxes[e])
                touched.add(e)
            else:
                e = rng.choice(sorted(boxes))
                del boxes[e]
                tree.remove(e)
                touched.discard(e)
                removed.add(e)
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
