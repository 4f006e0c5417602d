"""A ``where=`` predicate may read the tree, never change it: both classes alike.

``nearest``, ``raycast_first`` and ``cast_box_first`` call ``where`` in the middle of their
search. While it runs the tree is busy: every change (``insert``, ``insert_many``,
``insert_records``, ``move``, ``move_many``, ``move_records``, ``remove``, ``discard`` of
anything but an int, ``clear``, ``__init__``, ``__setstate__``) raises the compiled core's
``RuntimeError``, word for word, before it touches anything, so ``check()`` passes and
``state_hash()`` is what it was (a ``discard`` of an int waits for the end of the search);
every read answers as it would outside. The busy flag ends with the search (also when
``where`` raises), belongs to the tree searched (a copy, an unpickled tree, another tree are
free), and is never pickled.
"""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_spatial import index
from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

BUSY = (
    "QuadTree changed while it was busy (a where= predicate, a conversion or an iterator it "
    "called, a finaliser run by the garbage collector, or another thread)"
)
N = 300
SIDE = 200.0

needs_core = pytest.mark.skipif(not index.NATIVE, reason=f"no compiled core: {index.REASON}")


def world(cls: type[PyQuadTree], seed: int = 1) -> PyQuadTree:
    """N small boxes over (0, 0, SIDE, SIDE), leaves of 4: a tree several levels deep."""
    rng = random.Random(seed)
    tree = cls(Box(0, 0, SIDE, SIDE), threshold=4)
    for e in range(N):
        x, y = rng.uniform(0, SIDE - 6), rng.uniform(0, SIDE - 6)
        tree.insert(e, (x, y, x + rng.uniform(0, 6), y + rng.uniform(0, 6)))
    return tree


#: Each change a predicate may try, as a function of the tree and the id it is asked about.
CHANGES: dict[str, Callable[[Any, int], object]] = {
    "insert": lambda t, e: t.insert(10_000, (1.0, 1.0, 2.0, 2.0)),
    "insert present": lambda t, e: t.insert(e, (1.0, 1.0, 2.0, 2.0)),
    "insert_many": lambda t, e: t.insert_many([10_000, 10_001], [(1, 1, 2, 2), (3, 3, 4, 4)]),
    "insert_many empty": lambda t, e: t.insert_many([], []),
    "insert_records": lambda t, e: t.insert_records([(1.0, 1.0, 2.0, 2.0, 10_000)]),
    "move in place": lambda t, e: t.move(e, tuple(t[e])),
    "move far": lambda t, e: t.move(e, (1e6, 1e6, 1e6 + 1, 1e6 + 1)),
    "move absent": lambda t, e: t.move(10_000, (1.0, 1.0, 2.0, 2.0)),
    "move_many": lambda t, e: t.move_many([e], [(5.0, 5.0, 6.0, 6.0)]),
    "move_many not atomic": lambda t, e: t.move_many([e], [(5.0, 5.0, 6.0, 6.0)],
                                                     atomic=False),
    "move_records": lambda t, e: t.move_records([(5.0, 5.0, 6.0, 6.0, e)]),
    "remove": lambda t, e: t.remove(e),
    "remove absent": lambda t, e: t.remove(10_000),
    "discard a non-int": lambda t, e: t.discard(str(e)),
    "clear": lambda t, e: t.clear(),
    "__init__": lambda t, e: t.__init__(Box(0, 0, 1, 1)),
    "__setstate__": lambda t, e: t.__setstate__(t.__getstate__()),
}

#: The three searches that take where=, each as a function of the tree and the predicate.
SEARCHES: dict[str, Callable[[Any, Callable[[int], object]], object]] = {
    "nearest": lambda t, w: t.nearest(SIDE / 2, SIDE / 2, 3, where=w),
    "raycast_first": lambda t, w: t.raycast_first(0, SIDE / 2, SIDE, SIDE / 2 + 7, where=w),
    "cast_box_first": lambda t, w: t.cast_box_first((0, 90, 4, 94), SIDE, 13, where=w),
}


#: The verdicts of the predicates below: accept every id, the even ones, none.
VERDICTS: dict[str, Callable[[int], bool]] = {
    "all": lambda e: True, "even": lambda e: e % 2 == 0, "none": lambda e: False,
}


def changing(tree: Any, change: Callable[[Any, int], object], at: int, accept: str) -> tuple[
        Callable[[int], bool], list[int]]:
    """A predicate that accepts ids as ``VERDICTS[accept]`` does and, at its ``at``-th call
    (0 the first), tries ``change``; and the list of ids it was asked about."""
    verdict = VERDICTS[accept]
    asked: list[int] = []

    def where(entity: int) -> bool:
        asked.append(entity)
        if len(asked) == at + 1:
            change(tree, entity)
        return verdict(entity)

    return where, asked


def attempt(tree: Any, search: str, change: str, at: int = 0, accept: str = "all") -> tuple[
        object, list[int]]:
    """The search with a predicate that tries the change: its error (type and text), or
    its answer if nothing was raised; and the ids the predicate was asked about."""
    where, asked = changing(tree, CHANGES[change], at, accept)
    try:
        answer: object = SEARCHES[search](tree, where)
    except Exception as error:  # the error is the answer here
        answer = ("raised", type(error).__name__, str(error))
    return answer, asked


@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_a_change_from_where_raises_and_changes_nothing(
    tree_class: type[PyQuadTree], search: str, change: str
) -> None:
    """Every change raises RuntimeError with the core's text, the tree exactly as it was
    (check, state_hash, bounds, nodes); and it is no longer busy after: the same change
    made outside succeeds or fails as it would on any tree."""
    tree = world(tree_class)
    before = (tree.state_hash(), len(tree), tree.bounds, list(tree.nodes()))
    answer, asked = attempt(tree, search, change)
    assert asked, "the search never asked where"
    assert answer == ("raised", "RuntimeError", BUSY)
    tree.check()
    assert (tree.state_hash(), len(tree), tree.bounds, list(tree.nodes())) == before
    entity = asked[0]
    try:  # not busy now: what the change does outside, on a copy made by the other path
        CHANGES[change](tree, entity)
    except (KeyError, ValueError) as error:
        assert change in ("insert present", "move absent", "remove absent"), error
    tree.check()


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_a_change_refused_late_in_the_search_changes_nothing(
    tree_class: type[PyQuadTree], search: str
) -> None:
    """The change tried at a later call of where (the search well under way, where's
    earlier verdicts taken): the same error, the same tree."""
    tree = world(tree_class, seed=3)
    before = tree.state_hash()
    # How often this class asks (the number of calls is not promised, so not compared).
    _, everyone = attempt(world(tree_class, seed=3), search, "insert", 10**9, accept="none")
    at = len(everyone) - 1
    assert at >= 1
    answer, asked = attempt(tree, search, "remove", at, accept="none")
    assert answer == ("raised", "RuntimeError", BUSY)
    assert len(asked) == at + 1
    tree.check()
    assert tree.state_hash() == before


def check(tree: PyQuadTree) -> bool:
    tree.check()
    return True


def test_where_may_read_the_tree_in_every_way(tree_class: type[PyQuadTree]) -> None:
    """Inside where, each read answers what it answers outside: lookups, queries, searches
    (a nested nearest with a where of its own), the pair searches, nodes, copies, pickles."""
    tree = world(tree_class)
    box = (50.0, 50.0, 90.0, 70.0)

    def reads() -> tuple[object, ...]:
        return (
            len(tree), 7 in tree, tree[7], tree.get(10_000), sorted(tree)[:5], tree.bounds,
            sorted(tree.query(box)), sorted(tree.query_point(60, 60)),
            sorted(tree.query_radius(60, 60, 9)), tree.nearest(10, 10, 4),
            tree.nearest(10, 10, 2, where=lambda e: e % 2 == 0),
            tree.raycast(0, 0, SIDE, SIDE)[:5], tree.raycast_first(0, 0, SIDE, SIDE),
            tree.cast_box(box, 10, 10)[:5], tree.cast_box_first(box, -30, 5, where=bool),
            sorted(tree.query_entity(7)), tree.find_intersections_for([7, 8, 9]),
            tree.find_all_intersections(), list(tree.nodes()), list(tree.nodes(box)),
            tree.depth(), tree.state_hash(), copy.copy(tree).state_hash(),
            copy.deepcopy(tree).state_hash(), pickle.loads(pickle.dumps(tree)).state_hash(),
            check(tree),
        )

    outside = reads()
    inside: list[tuple[object, ...]] = []

    def where(entity: int) -> bool:
        if not inside:
            inside.append(reads())
        return True

    for search in SEARCHES.values():
        inside.clear()
        search(tree, where)
        assert inside == [outside]


def test_a_nested_search_leaves_the_tree_busy_for_the_outer_one(
    tree_class: type[PyQuadTree],
) -> None:
    """A where that runs a search with a where of its own: once the inner search ends the
    tree is still busy for the outer one (a change still raises), and free after both."""
    tree = world(tree_class)
    before = tree.state_hash()

    def outer(entity: int) -> bool:
        tree.nearest(20, 20, 2, where=lambda e: e != entity)
        tree.remove(entity)  # the outer search still runs: refused
        return True

    for search in SEARCHES.values():
        with pytest.raises(RuntimeError) as refused:
            search(tree, outer)
        assert str(refused.value) == BUSY
        assert tree.state_hash() == before
    tree.remove(0)
    tree.check()


def test_an_error_in_where_ends_the_busy_spell(tree_class: type[PyQuadTree]) -> None:
    """where raising (its own error, out of the call unchanged) leaves the tree free: the
    next change goes through."""
    tree = world(tree_class)

    def boom(entity: int) -> bool:
        raise ZeroDivisionError(f"no verdict on {entity}")

    for search in SEARCHES.values():
        with pytest.raises(ZeroDivisionError, match="no verdict on"):
            search(tree, boom)
    tree.insert(10_000, (1.0, 1.0, 2.0, 2.0))
    tree.move(10_000, (3.0, 3.0, 4.0, 4.0))
    tree.remove(10_000)
    tree.check()


def test_only_the_searched_tree_is_busy(tree_class: type[PyQuadTree]) -> None:
    """Inside where, another tree, a copy of this one (shallow or deep) and one unpickled
    from it all take changes; the busy flag is no part of the pickled state."""
    tree, other = world(tree_class), world(tree_class, seed=2)
    made: list[Any] = []

    def where(entity: int) -> bool:
        other.insert(10_000 + len(made), (1.0, 1.0, 2.0, 2.0))
        for twin in (copy.copy(tree), copy.deepcopy(tree), pickle.loads(pickle.dumps(tree))):
            twin.remove(entity)
            twin.insert(entity, (5.0, 5.0, 6.0, 6.0))
            twin.check()
            made.append(twin)
        return True

    before = tree.state_hash()
    for search in SEARCHES.values():
        search(tree, where)
    assert made and len(other) == N + len(made) // 3
    assert tree.state_hash() == before
    state = tree.__getstate__()
    assert not any("busy" in key for key in state)
    for twin in made:  # free after the search too, each its own tree
        twin.clear()
        twin.check()


def test_the_reference_keeps_no_busy_flag_in_its_state() -> None:
    """The reference's flag is one of its own fields (INDEX_FIELDS), not a subclass's slot:
    neither a pickle nor a copy of a subclass with slots of its own carries it."""

    class Tagged(PyQuadTree):
        __slots__ = ("tag",)
        tag: str

    tree = Tagged(Box(0, 0, 10, 10))
    tree.tag = "mine"
    tree.insert(1, (1.0, 1.0, 2.0, 2.0))
    seen: list[object] = []

    def where(entity: int) -> bool:
        seen.append(tree.__getstate__())
        seen.append(copy.copy(tree))
        return True

    assert tree.nearest(1, 1, where=where) == [1]
    state, twin = seen
    assert state == tree.__getstate__() and state["slots"] == {"tag": "mine"}
    assert isinstance(twin, Tagged) and twin.tag == "mine"
    twin.insert(2, (3.0, 3.0, 4.0, 4.0))  # the copy is not busy
    twin.check()


@needs_core
@settings(max_examples=30, deadline=None)
@given(
    search=st.sampled_from(sorted(SEARCHES)),
    change=st.sampled_from(sorted(CHANGES)),
    seed=st.integers(0, 2**16),
    at=st.integers(0, 40),
    accept=st.sampled_from(sorted(VERDICTS)),
)
def test_both_classes_refuse_alike(
    search: str, change: str, seed: int, at: int, accept: str
) -> None:
    """Differential: the same world, the same predicate trying the same change at its
    ``at``-th call: the same error when both get that far (the order and number of calls
    are not promised, so not compared), the same answer when neither does, and the same
    tree after."""
    ref, nat = world(PyQuadTree, seed), world(index.QuadTree, seed)
    calls = [len(attempt(world(cls, seed), search, "insert", 10**9, accept)[1])
             for cls in (PyQuadTree, index.QuadTree)]
    got, _ = attempt(nat, search, change, at, accept)
    want, _ = attempt(ref, search, change, at, accept)
    if at < min(calls):
        assert got == want == ("raised", "RuntimeError", BUSY)
    elif at >= max(calls):
        assert got == want and not (isinstance(got, tuple) and got[:1] == ("raised",))
    ref.check()
    nat.check()
    assert nat.state_hash() == ref.state_hash() == world(PyQuadTree, seed).state_hash()


@pytest.mark.parametrize("present", [True, False])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_a_discard_from_where_waits_for_the_search(
    tree_class: type[PyQuadTree], search: str, present: bool
) -> None:
    """``discard`` of an int id while busy (a finaliser's way) is deferred, not refused: the
    search answers as if it had not been made (the entity still there), and when it ends the
    entity is gone; an absent id changes nothing."""
    tree, plain = world(tree_class), world(tree_class)
    asked: list[int] = []

    def where(entity: int) -> bool:
        asked.append(entity)
        if len(asked) == 1:
            tree.discard(entity if present else 10_000)
            assert (entity in tree) is True
        return True

    assert SEARCHES[search](tree, where) == SEARCHES[search](plain, lambda e: True)
    if present:
        plain.discard(asked[0])
    tree.check()
    assert tree.__getstate__() == plain.__getstate__()


def test_the_message_is_one_text(tree_class: type[PyQuadTree]) -> None:
    """Both classes raise the same text, which is written once: the compiled core's guard
    raises the reference's ``_tree_storage.BUSY`` (its source holds no copy of it)."""
    units = Path(__file__).resolve().parent.parent / "ecs_spatial" / "_cquadtree_src"
    source = "\n".join(path.read_text() for path in sorted(units.glob("*.[ch]")))
    assert "while it was busy" not in source
    assert '{"ecs_spatial._tree_storage", "BUSY", &ref_busy}' in source
    tree = world(tree_class)
    with pytest.raises(RuntimeError) as refused:
        tree.nearest(0, 0, where=partial(CHANGES["clear"], tree))
    assert str(refused.value) == BUSY
