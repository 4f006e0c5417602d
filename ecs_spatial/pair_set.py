"""The overlapping pairs of an index, kept from frame to frame, and the policy that chooses
how a frame finds them.

:class:`PairSet` holds the current pairs (``(a, b)``, ``a < b``, as dict keys, so that
``view()`` is a read-only live set), each entity's partners (what the incremental search
needs to find the pairs a moved entity left) and the pairs' sorted order (a cache for the
``collision`` events). :meth:`PairSet.update` brings them up to date with an index after a
frame's changes and returns the frame's exits and enters, sorted. After a full search it
finds them by :func:`diff_sorted`, one merge of the previous frame's sorted pairs with this
frame's, compiled (``_cpair_set.c``) with the compiled index; :func:`diff_sorted_reference`
is its reference, and ``tests/test_cpair_set.py`` drives both side by side. When no filter
is in effect and the compiled index is in use (:data:`FLAT_PAIRS`), a full search takes the
pairs flattened into an ``array('q')`` (``find_all_intersections_array``) and diffs them
with the previous frame's by :func:`diff_sorted_flat`, so that only the exits and enters
become tuples.

:class:`SearchChoice` decides, frame by frame, between the two searches the index offers:
``find_intersections_for`` over the touched entities (cost in proportion to them) and
``find_all_intersections`` (one walk of the whole index). The crossover moves with the
index's size, the machine and the index's own code, so it is measured rather than fixed:
two running estimates, seconds per touched entity for the incremental search and per indexed
entity for the full one, each refined by the search that ran. The figures behind its
constants: docs/design.md#decisions (``python -m bench esper --parts crossover``).

Neither knows esper: the SpatialProcessor owns one PairSet and feeds it; the tests drive it
with a bare index (``tests/test_pair_set.py``).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Collection, Iterable, KeysView, Mapping, Sequence, Set
from itertools import chain
from typing import Any, Protocol

from .index import NATIVE

__all__ = [
    "FLAT_PAIRS",
    "SEARCHES",
    "PairSet",
    "SearchChoice",
    "diff_sorted",
    "diff_sorted_flat",
    "diff_sorted_flat_reference",
    "diff_sorted_reference",
    "diff_touched",
    "diff_touched_reference",
]

Pair = tuple[int, int]
#: The accepted ``pair_search`` settings: "auto" chooses; the others force one search.
SEARCHES = ("auto", "incremental", "full")

_clock = time.perf_counter

#: Frames after which a close call between the two searches re-runs the one not chosen.
_RECHECK_FRAMES = 30
#: Priors, seconds per touched entity (incremental) and per indexed entity (full), from the
#: N = 10,000 benchmark world; a search's first measurement replaces its prior.
_PRIOR_INCREMENTAL = 8e-6
_PRIOR_FULL = 1.5e-6


def diff_sorted_reference(
    old: Sequence[Any], new: Sequence[Any]
) -> tuple[list[Any], list[Any]]:
    """The exits and the enters between two frames' pairs, each sorted: the items of ``old``
    not in ``new`` and those of ``new`` not in ``old``, for ``old`` and ``new`` each sorted
    and without repeats (``sorted(set(old) - set(new))`` and ``sorted(set(new) - set(old))``
    then). One merge of the two lists, so the answer holds the very objects of the lists and
    nothing is built but the two lists returned. On lists that are not sorted, or repeat an
    item, the answer is what this merge makes of them (``_cpair_set.diff_sorted``, the
    compiled twin, makes the same). The reference for that twin, which :data:`diff_sorted`
    is with the compiled index.

    >>> diff_sorted_reference([(1, 2), (1, 3), (2, 5)], [(1, 3), (2, 4)])
    ([(1, 2), (2, 5)], [(2, 4)])

    Complexity: O(len(old) + len(new)).
    """
    exits: list[Any] = []
    enters: list[Any] = []
    i = j = 0
    n_old = len(old)
    n_new = len(new)
    while i < n_old and j < n_new:
        a = old[i]
        b = new[j]
        if a == b:
            i += 1
            j += 1
        elif a < b:
            exits.append(a)
            i += 1
        else:
            enters.append(b)
            j += 1
    exits.extend(old[i:])
    enters.extend(new[j:])
    return exits, enters


def diff_sorted_flat_reference(old: Any, new: Any) -> tuple[list[Pair], list[Pair]]:
    """:func:`diff_sorted_reference` over two frames' pairs flattened: ``old`` and ``new``
    are buffers of native int64 (format ``'q'``, as ``array('q')`` and
    ``QuadTree.find_all_intersections_array()`` give), ``a0, b0, a1, b1, ...``, any stride.
    Returns the exits and the enters as lists of ``(a, b)`` tuples of ints: the pairs of
    ``old`` not in ``new`` and those of ``new`` not in ``old``, each sorted when both are
    sorted without repeats; otherwise what the same merge makes of them.

    Refused, ``old`` checked first, then ``new``: not a buffer, or not of format ``'q'``
    (or ``'@q'``; a numpy int64 array's ``'l'`` too, cast it), TypeError; more or fewer
    than one dimension, an indirect buffer, an odd number of ints, ValueError. The reference
    for ``_cpair_set.diff_sorted_flat``, which :data:`diff_sorted_flat` is with the compiled
    index and which gives the same answers and errors without a tuple per unchanged pair.

    >>> diff_sorted_flat_reference(array("q", [1, 2, 1, 3]), array("q", [1, 3, 2, 4]))
    ([(1, 2)], [(2, 4)])

    Complexity: O(len(old) + len(new)).
    """
    return diff_sorted_reference(_flat_pairs(old, "old"), _flat_pairs(new, "new"))


def _flat_pairs(flat: Any, name: str) -> list[Pair]:
    """The pairs of the flat int64 buffer ``flat`` (the argument ``name``), checked as
    :func:`diff_sorted_flat_reference` says."""
    try:
        view = memoryview(flat)
    except TypeError:
        raise TypeError(
            f"diff_sorted_flat() {name} must be a buffer of int64 (format 'q'), "
            f"not {type(flat).__name__}"
        ) from None
    with view:
        if view.format not in ("q", "@q"):
            raise TypeError(
                f"diff_sorted_flat() {name} must be a buffer of int64 (format 'q'), "
                f"not of format '{view.format}'"
            )
        if view.ndim != 1:
            raise ValueError(
                f"diff_sorted_flat() {name} must be one-dimensional, not "
                f"{view.ndim}-dimensional"
            )
        if view.suboffsets:
            raise ValueError(
                f"diff_sorted_flat() {name} must not be an indirect (suboffsets) buffer"
            )
        if len(view) % 2:
            raise ValueError(
                f"diff_sorted_flat() {name} holds an odd number of ints ({len(view)}): it "
                "must be pairs flattened, a0, b0, a1, b1, ..."
            )
        ints: list[int] = view.tolist()
    return _unflattened(ints)


def _unflattened(flat: Sequence[int]) -> list[Pair]:
    """The pairs ``(flat[0], flat[1]), (flat[2], flat[3]), ...`` of an even-length ``flat``."""
    return list(zip(flat[::2], flat[1::2], strict=True))


def diff_touched_reference(
    partners: Mapping[int, Set[int]], groups: tuple[Iterable[int], ...], found: Iterable[Pair]
) -> tuple[list[Pair], list[Pair]]:
    """The exits and the enters of an incremental search, each sorted: the pairs that the
    entities of ``groups`` (the touched, the removed) formed with their ``partners``, as of
    the last frame, and that ``found`` (this frame's pairs of the touched entities) does not
    hold; and the pairs of ``found`` they did not form. The reference for
    ``_cpair_set.diff_touched``, its compiled twin, which :data:`diff_touched` is with the
    compiled index.

    >>> diff_touched_reference({1: {2}, 2: {1, 3}, 3: {2}}, ({2},), [(2, 3), (2, 4)])
    ([(1, 2)], [(2, 4)])

    Complexity: O(s log s + f) for s stale and f found pairs.
    """
    stale: set[Pair] = set()
    add = stale.add
    for group in groups:
        for entity in group:
            others = partners.get(entity)
            if others:
                for other in others:
                    add((entity, other) if entity < other else (other, entity))
    fresh = set(found)
    return sorted(stale - fresh), sorted(fresh - stale)


def apply_diff_reference(
    pairs: dict[Pair, None],
    partners: dict[int, set[int]] | None,
    exits: list[Pair],
    enters: list[Pair],
) -> None:
    """Take a frame's ``exits`` out of ``pairs`` and put its ``enters`` in, then (unless
    ``partners`` is None) the same in each id's partners, an id with none left dropped.
    The reference for ``_cpair_set.apply_diff``, its compiled twin, which
    :data:`apply_diff` is with the compiled index: the same steps in the same order.

    >>> pairs, partners = {(1, 2): None}, {1: {2}, 2: {1}}
    >>> apply_diff_reference(pairs, partners, [(1, 2)], [(2, 3)])
    >>> pairs, partners
    ({(2, 3): None}, {2: {3}, 3: {2}})

    Complexity: O(exits + enters).
    """
    for pair in exits:
        del pairs[pair]
    if enters:
        pairs.update(dict.fromkeys(enters))
    if partners is not None:
        for a, b in exits:
            others = partners[a]
            others.discard(b)
            if not others:
                del partners[a]
            others = partners[b]
            others.discard(a)
            if not others:
                del partners[b]
        _add_partners(partners, enters)


DiffSorted = Callable[[Sequence[Any], Sequence[Any]], tuple[list[Any], list[Any]]]
DiffSortedFlat = Callable[[Any, Any], tuple[list[Pair], list[Pair]]]
DiffTouched = Callable[
    [Mapping[int, Set[int]], tuple[Iterable[int], ...], Iterable[Pair]],
    tuple[list[Pair], list[Pair]],
]
ApplyDiff = Callable[
    [dict[Pair, None], dict[int, set[int]] | None, list[Pair], list[Pair]], None
]


def _compiled_diffs() -> tuple[DiffSorted, DiffSortedFlat, DiffTouched, ApplyDiff] | None:
    """``_cpair_set.diff_sorted``, ``diff_sorted_flat``, ``diff_touched`` and
    ``apply_diff``, the compiled twins of :func:`diff_sorted_reference`,
    :func:`diff_sorted_flat_reference`, :func:`diff_touched_reference` and
    :func:`apply_diff_reference`, when the compiled index is in use (not in a pure-Python
    build, nor under ``ECS_SPATIAL_PURE=1``)."""
    if not NATIVE:
        return None
    try:
        from . import _cpair_set
    except ImportError:  # built without it: the Python merges, with the same answers
        return None
    _cpair_set.configure(
        diff_sorted_reference, diff_sorted_flat_reference, diff_touched_reference,
        apply_diff_reference,
    )
    return (
        _cpair_set.diff_sorted, _cpair_set.diff_sorted_flat, _cpair_set.diff_touched,
        _cpair_set.apply_diff,
    )


_compiled = _compiled_diffs()
#: The merge PairSet.update runs after a full search: compiled where it can be, else the
#: reference (why: docs/design.md#decisions).
diff_sorted: DiffSorted = diff_sorted_reference if _compiled is None else _compiled[0]
#: The merge over flat int64 pairs that PairSet.update runs after a full search with no
#: filter, when :data:`FLAT_PAIRS`: compiled where it can be, else the reference.
diff_sorted_flat: DiffSortedFlat = (
    diff_sorted_flat_reference if _compiled is None else _compiled[1]
)
#: Whether a PairSet made from now on takes a full search's pairs flat when no filter is in
#: effect (``find_all_intersections_array`` and :data:`diff_sorted_flat`): with the compiled
#: core only, whose array is built with no Python object per pair; the reference index's
#: array is made from its tuples, so there the flat path would only add work.
#: The diff PairSet.update runs after an incremental search: compiled where it can be, else
#: the reference.
diff_touched: DiffTouched = diff_touched_reference if _compiled is None else _compiled[2]
#: The upkeep of the pairs and partners after a diff: compiled where it can be, else the
#: reference.
apply_diff: ApplyDiff = apply_diff_reference if _compiled is None else _compiled[3]
FLAT_PAIRS = _compiled is not None
del _compiled


class SearchChoice:
    """Which search a frame runs, from the costs measured in the frames before."""

    __slots__ = ("cost_full", "cost_incremental", "idle", "measured")

    def __init__(self) -> None:
        self.cost_incremental = _PRIOR_INCREMENTAL
        self.cost_full = _PRIOR_FULL
        #: Whether each search ([incremental, full]) has run yet.
        self.measured = [False, False]
        #: Frames since each search last ran ([incremental, full]).
        self.idle = [0, 0]

    def choose(self, strategy: str, k: int, n: int) -> bool:
        """True for the incremental search over ``k`` touched entities, False for the full
        walk of ``n``; ``strategy`` is one of :data:`SEARCHES`. Counts the frame."""
        if strategy == "auto":
            predicted_incremental = k * self.cost_incremental
            predicted_full = n * self.cost_full
            incremental = predicted_incremental <= predicted_full
            # An estimate is refined only by the search that runs, so a stale one could keep
            # the slower search chosen for good. A close call (within a factor of two)
            # re-runs the other search after _RECHECK_FRAMES without it; a clear-cut choice
            # is never second-guessed. A search that has never run has only its prior, a
            # guess from another machine and world: it is tried on the next frame unless
            # predicted four times dearer. Not the incremental one when half the index or
            # more was touched, though: per entity it costs several times the full walk
            # (docs/design.md#decisions), so it cannot win there, and a small world's
            # first frames, dear per entity, could otherwise make it look close.
            other = 1 if incremental else 0
            measured = self.measured[other]
            if (
                self.idle[other] >= (_RECHECK_FRAMES if measured else 1)
                and (measured or other == 1 or 2 * k < n)
                and max(predicted_incremental, predicted_full)
                <= (2.0 if measured else 4.0) * min(predicted_incremental, predicted_full)
            ):
                incremental = not incremental
        else:
            incremental = strategy == "incremental"
        ran = 0 if incremental else 1
        self.idle[ran] = 0
        self.idle[1 - ran] += 1
        return incremental

    def record(self, incremental: bool, seconds: float, k: int, n: int) -> None:
        """Refine the estimate of the search that ran, from its ``seconds`` over ``k``
        touched or ``n`` indexed entities."""
        if incremental:
            if k:
                self.cost_incremental = _refined(
                    self.cost_incremental, seconds / k, self.measured[0]
                )
                self.measured[0] = True
        elif n:
            self.cost_full = _refined(self.cost_full, seconds / n, self.measured[1])
            self.measured[1] = True


class _Index(Protocol):
    """What PairSet needs of an index (both QuadTree classes have it)."""

    def __len__(self) -> int: ...
    def find_all_intersections(self) -> list[Pair]: ...
    def find_all_intersections_array(self) -> array[int]: ...
    def find_intersections_for(self, entities: Iterable[int]) -> list[Pair]: ...


class PairSet:
    """The current pairs, their partners and their sorted order, and the search choice.

    What holds between frames (``tests/test_pair_set.py`` checks it frame by frame):

    - ``pairs`` holds exactly the current pairs, and ``partners`` (when not None) exactly
      their ids' partners; a frame changes both by its exits and enters only;
    - ``sorted_pairs``, when not None, is exactly ``sorted(pairs)``; ``sorted()`` builds it
      when it is None and keeps it until the pairs change;
    - ``flat_pairs``, when not None, is exactly the pairs in order, flattened into an
      ``array('q')``. Only a full search with no filter on the flat path (``flat``) sets it,
      to the search's own array; every other change of the pairs (an incremental search
      that found any, a full search with filters, :meth:`replace`) sets it to None, and
      :meth:`clear` to an empty array, so the flat diff never merges against a stale array.
      A flat full search without it flattens ``sorted_pairs`` (or ``sorted(pairs)``).

    - on the flat path, while nobody has read the pairs (``pairs``, :meth:`view`,
      :meth:`contacts`) and no partners are kept, the dict behind ``pairs`` is left behind
      ``flat_pairs`` (``behind``: the frame's exits and enters are not applied to it, a
      third of the flat path's upkeep at 10,000 all moving); the first read brings it up
      to date from ``flat_pairs`` and from then on it is kept up to date every frame
      (``keep_pairs``), so that a view handed out stays live.

    The diffs and the ``flat`` choice are taken from this module when the PairSet is made
    (:data:`diff_sorted`, :data:`diff_sorted_flat`, :data:`diff_touched`,
    :data:`apply_diff`, :data:`FLAT_PAIRS`), so that a test can
    make one that runs only the reference merges beside one that runs the compiled ones.
    """

    __slots__ = (
        "_pairs",
        "apply_diff",
        "behind",
        "choice",
        "diff",
        "diff_flat",
        "diff_touched",
        "flat",
        "flat_pairs",
        "keep_pairs",
        "keep_partners",
        "partners",
        "sorted_pairs",
    )

    def __init__(self) -> None:
        self._pairs: dict[Pair, None] = {}
        # Whether _pairs lags flat_pairs (see the class docstring), and whether it has been
        # read, so that it is kept up to date from now on.
        self.behind = False
        self.keep_pairs = False
        # Each entity's partners in ``pairs``, which only the incremental search reads: kept
        # while that search is in use, None once the full walk has run twice in a row (and
        # rebuilt from ``pairs`` when the incremental search returns); its upkeep is a cost
        # the full walk does not need.
        self.partners: dict[int, set[int]] | None = {}
        # sorted(pairs), None when stale: whenever it is a list it holds exactly the keys of
        # ``pairs``, which is what lets a full search diff by a merge (diff_sorted).
        self.sorted_pairs: list[Pair] | None = []
        # The pairs flattened (a0, b0, a1, b1, ...), None when stale: see the class docstring.
        self.flat_pairs: array[int] | None = array("q")
        self.choice = SearchChoice()
        # Set once contacts() is asked for: the partners are then kept whatever the search.
        self.keep_partners = False
        self.diff = diff_sorted
        self.diff_flat = diff_sorted_flat
        self.diff_touched = diff_touched
        self.apply_diff = apply_diff
        # Whether a full search with no filter takes the pairs flat.
        self.flat = FLAT_PAIRS

    #: What a PairSet takes from this module where it is loaded, not from its pickle: the
    #: compiled diffs of the process that saved it may not exist where it loads (a pickle
    #: made by the compiled core loads under ECS_SPATIAL_PURE=1, or without the core built).
    _PER_PROCESS = ("apply_diff", "diff", "diff_flat", "diff_touched", "flat")
    #: Not saved: a pickle holds the pairs up to date (as ``pairs``, its name in the saved
    #: layout), and a copy has handed out no view.
    _UNSAVED = ("_pairs", "behind", "keep_pairs")

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        state = {
            name: getattr(self, name) for name in self.__slots__
            if name not in self._PER_PROCESS and name not in self._UNSAVED
            and hasattr(self, name)
        }
        state["pairs"] = self._current()
        return None, state

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        self.behind = self.keep_pairs = False
        for name, value in state[1].items():
            if name == "pairs":
                self._pairs = value
            elif name not in self._PER_PROCESS:
                setattr(self, name, value)
        self.diff, self.diff_flat = diff_sorted, diff_sorted_flat
        self.diff_touched, self.flat = diff_touched, FLAT_PAIRS
        self.apply_diff = apply_diff

    @property
    def pairs(self) -> dict[Pair, None]:
        """The pairs (keys; the values are None). Read once, they are kept up to date
        every frame from then on, so that the dict read stays current."""
        self.keep_pairs = True
        return self._current()

    def _current(self) -> dict[Pair, None]:
        """The dict of pairs, brought up to date from ``flat_pairs`` if it lags (in place:
        O(pairs), once after frames with no reader)."""
        pairs = self._pairs
        if self.behind:
            flat = self.flat_pairs
            assert flat is not None
            pairs.clear()
            pairs.update(dict.fromkeys(_unflattened(flat)))
            self.behind = False
        return pairs

    def __len__(self) -> int:
        """How many pairs there are, O(1), without bringing ``pairs`` up to date."""
        if self.behind:
            flat = self.flat_pairs
            assert flat is not None
            return len(flat) // 2
        return len(self._pairs)

    def view(self) -> KeysView[Pair]:
        """The pairs, as a read-only live set."""
        return self.pairs.keys()

    def sorted(self) -> list[Pair]:
        """The pairs in order (cached until they change)."""
        current = self.sorted_pairs
        if current is None:
            flat = self.flat_pairs
            current = sorted(self._current()) if flat is None else _unflattened(flat)
            self.sorted_pairs = current
        return current

    def contacts(self, entity: int) -> frozenset[int]:
        """The entities that form a pair with ``entity``. The first call builds the partners
        from the pairs (O(pairs)) if the full search had dropped them, and from then on they
        are kept up to date every frame, so each call costs O(contacts)."""
        partners = self.partners
        if partners is None:
            partners = self.partners = _partners_of(self._current())
        self.keep_partners = True
        return frozenset(partners.get(entity, ()))

    def replace(self, found: list[Pair]) -> None:
        """Make the pairs ``found``, a sorted list (no exits or enters reported). The
        partners are dropped, to be rebuilt if the incremental search runs."""
        self._pairs = dict.fromkeys(found)
        self.behind = False
        self.sorted_pairs = found
        self.flat_pairs = None
        self.partners = None

    def clear(self) -> None:
        """No pairs."""
        self._pairs = {}
        self.behind = False
        self.partners = {}
        self.sorted_pairs = []
        self.flat_pairs = array("q")

    def update(
        self,
        index: _Index,
        strategy: str,
        k: int,
        touched: Callable[[], Collection[int]],
        removed: Set[int],
        accept: Callable[[list[Pair]], list[Pair]] | None,
    ) -> tuple[list[Pair], list[Pair]]:
        """Bring the pairs up to date with ``index`` after a frame that touched ``k``
        entities (``touched()`` gives them, built only if the incremental search runs) and
        removed ``removed``; ``accept`` keeps the pairs the filters accept, in order, and
        None accepts every pair (which lets a full search take them flat, see the class
        docstring). Returns the frame's exits and enters, each sorted.

        Complexity: O(k log n + pairs of k) for k touched entities, or one all-pairs walk
        of the index, whichever :class:`SearchChoice` predicts cheaper.
        """
        if not k and not removed:
            return [], []
        partners = self.partners
        n = len(index)
        choice = self.choice
        incremental = choice.choose(strategy, k, n)
        flat_path = not incremental and accept is None and self.flat
        # the flat path with no partners and no reader leaves the dict behind flat_pairs
        lag = flat_path and partners is None and not self.keep_pairs
        pairs = self._pairs if lag else self._current()
        if incremental and partners is None:
            # not timed: a one-off after full searches, which would make the incremental
            # search look dear per entity for good (a clear-cut choice is never re-checked)
            partners = self.partners = _partners_of(pairs)
        started = _clock()
        if incremental:
            assert partners is not None
            entities = touched()
            found = index.find_intersections_for(entities)
            exits, enters = self.diff_touched(
                partners, (entities, removed), found if accept is None else accept(found)
            )
            if exits or enters:
                self.sorted_pairs = None
                self.flat_pairs = None
        elif flat_path:
            flat = index.find_all_intersections_array()
            previous_flat = self.flat_pairs
            if previous_flat is None:
                previous = self.sorted_pairs
                if previous is None:
                    previous = sorted(pairs)
                previous_flat = array("q", chain.from_iterable(previous))
            exits, enters = self.diff_flat(previous_flat, flat)
            self.flat_pairs = flat  # sorted, and now equal to the pairs
            self.sorted_pairs = None  # built from flat_pairs if asked for
        else:
            found = index.find_all_intersections()
            if accept is not None:
                found = accept(found)
            previous = self.sorted_pairs
            if previous is None and self.flat_pairs is not None:
                previous = _unflattened(self.flat_pairs)
            if previous is None:
                fresh = set(found)
                exits = sorted(pairs.keys() - fresh)
                enters = sorted(fresh - pairs.keys())
            else:  # both sorted: one merge, no sets and no sorting
                exits, enters = self.diff(previous, found)
            self.sorted_pairs = found  # sorted, and now equal to the pairs
            self.flat_pairs = None
        if k:
            choice.record(incremental, _clock() - started, k, n)
        if not incremental and choice.idle[0] > 1 and not self.keep_partners:
            partners = self.partners = None
        if exits or enters:
            if lag:
                self.behind = True  # flat_pairs holds them: the dict catches up when read
            else:
                self.apply_diff(pairs, partners, exits, enters)
        return exits, enters


def _refined(estimate: float, sample: float, measured: bool = True) -> float:
    """``estimate`` moved a quarter of the way toward ``sample`` (clipped to 4x either way,
    so one frame cut short by the scheduler or the GC barely moves it), or replaced by it if
    the estimate was only a prior (not ``measured``)."""
    sample = min(max(sample, estimate * 0.25), estimate * 4.0)
    return estimate + 0.25 * (sample - estimate) if measured else sample


def _partners_of(pairs: Iterable[Pair]) -> dict[int, set[int]]:
    """Each entity's partners in ``pairs``."""
    partners: dict[int, set[int]] = {}
    _add_partners(partners, pairs)
    return partners


def _add_partners(partners: dict[int, set[int]], pairs: Iterable[Pair]) -> None:
    """Record each pair's two ids as each other's partners."""
    for a, b in pairs:
        others = partners.get(a)
        if others is None:
            partners[a] = {b}
        else:
            others.add(b)
        others = partners.get(b)
        if others is None:
            partners[b] = {a}
        else:
            others.add(a)
