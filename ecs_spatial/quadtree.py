"""A quadtree of closed axis-aligned boxes keyed by int entity ids, written for CPython.

Each entry lives in the *smallest node that contains it*, so a large box never degrades the
tree (the design of "Quadtree and Collision Detection"); a moving entry is updated in place
while it still belongs to its node and otherwise climbs only as far as it must and sinks back
down ("Yet Another Quad Tree Tutorial"). The index stands alone: it imports nothing outside
the standard library.

Modules
    Each of the index's modules imports only those listed before it: ``geometry`` (the
    ``Box`` and the boundary rule); ``_records`` (an entry's record, and how ids, boxes and
    points are read); ``_growth`` (how the root grows); ``_snapshots`` (the straddler
    snapshots); ``_tree_check`` (``check()``: the invariants below); ``_tree_state`` (the
    pickle state both classes share); and this one, the ``QuadTree`` class: its node storage
    and structural upkeep, the queries (the casts among them) and the two pair searches.

Layout
    Nodes are int ids into flat parallel lists (bounds and split point, fit bounds,
    children, parent, level, subtree count, entries); the entries of a node are a ``dict``
    from entity id to a record ``(min_x, min_y, max_x, max_y, id)``; and a ``dict`` from
    entity id to its node's *home record* sits beside the tree, so that ``move`` and
    ``remove`` need only the id. The home record is one mutable list per node (fit bounds,
    split point, entries, node id, children): a move that stays in its node costs one
    lookup and one unpack. Records are plain tuples: they unpack in one step, sort on
    their ``min_x`` alone (``itemgetter(0)``, compared in C), and spare callers the cost
    of a ``Box`` (any 4-tuple is accepted and checked inline; ``tree[id]`` hands back a
    ``Box``). A record holds four floats and an int, whatever the caller passed: an int
    coordinate is rounded to the nearest float on the way in, as ``Box`` rounds it, so that
    ``2**53 + 1`` is ``2.0**53`` for the index as for the boxes it is checked against.

    The entries of an internal node all touch its split lines, and near the root there are
    many of them (their number grows with the world's side). Such a node keeps a sorted
    *snapshot* of them, built when first needed and dropped when they change, with the
    bounding box of each half: queries and the per-entity pair search bisect a window or,
    for a box away from the lines, skip the node in four comparisons. A node with fewer
    entries caches those four comparisons' bounds alone, once a per-entity search needs
    them.

The fit rule
    A box goes down into a child only if it lies *strictly* on one side of the node's split
    lines (``max_x < cx`` or ``min_x > cx``, the same on y). A box that touches a split line
    stays in the node. Boxes are closed, so two boxes in different child subtrees are then
    always strictly apart, and the all-pairs search never needs to look across siblings.
    The rule holds for entries that stay put as much as for entries that sink: each node
    keeps *fit bounds*, strict on every edge that is an ancestor's split line and closed on
    the root's outer edges, and an entry belongs in a node only while it lies strictly
    inside them (one uniform test, ``fx0 < min_x and max_x < fx1 ...``).

Invariants (``check()`` asserts every one; the tests call it after every step)
    1. Every entity is in exactly one node, and the entity-to-node map agrees with the tree;
       its id is an int from ``-2**63`` to ``2**63 - 1`` and its record holds four floats.
    2. The entity's box lies strictly inside its node's fit bounds (so inside its closed
       bounds); only the root may hold a box outside them, and only once the root can grow
       no further (see *Bounds*).
    3. An entry of an internal node does not fit strictly into any of its children.
    4. Each node's count is the number of entries in its subtree.
    5. An internal node holds more than ``threshold`` entries in its subtree, and lies above
       ``max_depth``; a leaf holds at most ``threshold`` entries unless it is at ``max_depth``.
       (So a subtree that drops to ``threshold`` or fewer has been merged back, and the shape
       of the tree is a function of the set of boxes alone, whatever the order of updates.)
    6. A child's bounds are exactly its quadrant of its parent's bounds, split at the
       ``geometry.midpoint`` of each axis; every bound and split point is a finite float.
    7. A node's cached snapshot, if it has one, is exactly what its entries give now.

Calls back into Python
    ``nearest``, ``raycast_first`` and ``cast_box_first`` call their ``where=`` predicate in
    the middle of a search. The tree is *busy* meanwhile (until the outermost such search
    ends, if a predicate runs one of its own): it may be read in every way, but every change
    (``insert``, ``insert_many``, ``insert_records``, ``move``, ``move_many``,
    ``move_records``, ``remove``, ``discard``, ``clear``, ``__init__`` and ``__setstate__``
    called again) raises ``RuntimeError`` before it touches anything, so the search never
    walks a half-changed tree. These are the calls the compiled core refuses while busy,
    with the same message (its ``guard``). Every change is busy, too, while it runs Python
    of its own (an id's ``__index__``, a coordinate's ``__float__``, an iterator of ids,
    boxes or records), and so is ``find_intersections_for`` while it reads its ids: a
    change made from there is refused in the same way, in both classes, and the call that
    was running raises it with the tree as it was. The flag is never pickled or copied.

    But ``discard`` of an int id while busy is *deferred*, not refused: it is recorded and
    applied when the outermost busy call ends (its answer still includes the entity, as if
    the discard came just after it). So a finaliser that discards its own entity
    (``def __del__(self): tree.discard(self.entity)``), which the garbage collector may run
    in the middle of any call, is never lost. Both classes follow this rule.

Bounds
    ``bounds`` is a hint. A box outside the root makes the root double toward it (the tree is
    rebuilt once around the larger root; this happens at most once per doubling), so nothing
    is ever refused or lost for its position. A doubling that would leave the finite floats
    stops at the largest float instead (a root wider than the range has no finite split
    point), so a root reaches, and then holds, any box at all. ``max_depth`` counts from the
    root the tree was made with: cells never get smaller than ``bounds`` / 2**max_depth,
    however far the root grows (except along an axis where growth was clamped at the
    range's edge, whose cells a clamped doubling leaves narrower). Past ``_growth.MAX_GROWTH``
    doublings the root stops growing and keeps such a box in its own entries, where every
    query still finds it. A tree made without ``bounds`` starts around its first box,
    clamped to the range likewise.
"""

from __future__ import annotations

import copyreg
import math
from array import array
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from heapq import heappop, heappush, heapreplace
from operator import index, itemgetter
from typing import Any, NamedTuple, cast

from . import _snapshots

# The compiled core looks some of these up here by name when it is imported (``_cquadtree.c``,
# ``import_helpers``: ``_coords``, ``_entity_id``, ``_lookup_id``, ``_missing``, ``_point``,
# ``_STATE_FORMAT``, ``_read_state``, ``_own_state``, ``_restore_own_state``, ``_copy_own_state``,
# ``_out_of_range``, ``_BUSY``; and ``QuadTree`` itself, whose methods' signatures the core's take):
# they stay importable from this module under these names, wherever they are written.
from ._growth import first_root as _first_root
from ._growth import grown as _grown
from ._records import ID_MAX as _ID_MAX
from ._records import ID_MIN as _ID_MIN
from ._records import BoxLike as _BoxLike
from ._records import Rec as _Rec
from ._records import bbox as _bbox
from ._records import coords as _coords
from ._records import entity_id as _entity_id
from ._records import from_buffers as _from_buffers
from ._records import lookup_id as _lookup_id
from ._records import missing as _missing
from ._records import new_id as _new_id
from ._records import out_of_range as _out_of_range  # noqa: F401 (the core reads it here)
from ._records import point as _point
from ._records import to_box as _to_box
from ._snapshots import Quick as _Quick
from ._snapshots import Snap as _Snap
from ._snapshots import StraddlerSnapshots
from ._tree_check import check_tree
from ._tree_state import INDEX_FIELDS
from ._tree_state import MASK64 as _MASK64
from ._tree_state import STATE_FORMAT as _STATE_FORMAT  # noqa: F401 (the core reads it here)
from ._tree_state import State as _State
from ._tree_state import copy_own_state as _copy_own_state
from ._tree_state import entry_hash as _entry_hash
from ._tree_state import mix64 as _mix64
from ._tree_state import own_state as _own_state
from ._tree_state import read_state as _read_state
from ._tree_state import restore_own_state as _restore_own_state
from ._tree_state import state_of as _state_of
from .geometry import (
    Box,
    floats_segment_entry,
    floats_sweep_time,
    midpoint,
    reach,
    to_float,
)
from .geometry import motion_floats as _motion

__all__ = ["NodeInfo", "QuadTree"]

_hypot = math.hypot
_INF = math.inf
_float = float
_int = int

# A node's geometry: (min_x, min_y, max_x, max_y, split_x, split_y), for queries; and its
# fit bounds with the same split point, for placement: (fit_x0, fit_y0, fit_x1, fit_y1, ...).
_Geom = tuple[float, float, float, float, float, float]
_nextafter = math.nextafter
_Kids = tuple[int, int, int, int]
#: A cast's test of one box (a record, a node's geometry): the fraction at which the ray or
#: the moving box first touches it, or None.
_Hit = Callable[[tuple[float, ...]], "float | None"]
# A node's *home record*, which the entity map points at: a mutable list
# [fit_x0, fit_y0, fit_x1, fit_y1, split_x, split_y, entries, node id, children or None],
# kept in step with the per-node lists on split and merge.
_ITEMS, _NODE, _KIDS = 6, 7, 8
_NO_REC: _Rec = (0.0, 0.0, 0.0, 0.0, 0)  # a placeholder that is never read
_min_x = itemgetter(0)  # a record's sort key in the all-pairs sweep
#: The record after a sweep's last, which starts right of every box: it ends every scan.
_END: _Rec = (_INF, _INF, _INF, _INF, 0)
#: What a change made while the tree is busy raises, in both classes (the compiled core's
#: ``guard`` raises this very string): see "Calls back into Python" in the module docstring.
_BUSY = (
    "QuadTree changed while it was busy (a where= predicate, a conversion or an iterator it "
    "called, a finaliser run by the garbage collector, or another thread)"
)
#: ``cls.__new__(cls)``, which pickle writes as its NEWOBJ opcode (typeshed omits it).
_newobj: Callable[..., Any] = copyreg.__newobj__  # type: ignore[attr-defined]
#: ``QuadTree()``'s defaults (the class docstring says why 16), which the compiled core's
#: generated header states too (scripts/gen_core_headers.py).
DEFAULT_THRESHOLD = 16
DEFAULT_MAX_DEPTH = 8


class NodeInfo(NamedTuple):
    """One node of the tree, as ``QuadTree.nodes()`` reports it (for drawing and debugging)."""

    box: Box
    depth: int
    entries: int


class QuadTree:
    """A spatial index of closed boxes keyed by int entity ids (from ``-2**63`` to
    ``2**63 - 1``: see ``insert``).

    >>> tree = QuadTree(Box(0, 0, 100, 100))
    >>> tree.insert(1, Box(10, 10, 20, 20)); tree.insert(2, Box(20, 20, 30, 30))
    >>> tree.find_all_intersections()
    [(1, 2)]

    ``bounds`` is a hint for the extent of the world (anything outside it is still indexed);
    a leaf splits when it would hold more than ``threshold`` entries unless it is
    ``max_depth`` levels below the root, and a subtree merges back into its root when it
    holds ``threshold`` or fewer.

    The default of 16 suits worlds where few entries move each frame. Where most of them
    move every frame, ``threshold=64`` measured 0.72 to 0.74 times the default's time per
    frame (moves plus ``find_all_intersections``, N = 10,000 and 50,000), at the price of
    1.04 to 1.2 times the cost of ``find_intersections_for``, which scans whole leaves
    (``thresholds.md`` in ``bench/results/``, ``python -m bench thresholds``).

    Threads: use a tree from one thread at a time, or hold a lock around every call (as for
    an esper world). The tree is *busy* while one of its calls runs Python (a ``where=``
    predicate, a conversion or an iterator it called; see "Calls back into Python" in the
    module docstring), and a change from another thread that arrives meanwhile is refused
    with the busy ``RuntimeError``: the compiled class's structure is never corrupted, but
    the change is not made, and the pure-Python class gives no such guarantee between two
    threads that both run Python.

    Finalisers: ``discard(entity)`` with an int id made while the tree is busy (by a
    ``__del__`` that the garbage collector runs in the middle of a call, or by a ``where=``
    predicate) is deferred to the end of the outermost busy call instead of refused; every
    other change is refused meanwhile.
    """

    __slots__ = INDEX_FIELDS  # one tuple, named in _tree_state: pickles know these fields

    def __new__(cls, *args: object, **kwargs: object) -> QuadTree:
        """An empty tree with ``__init__``'s defaults (no bounds, ``threshold=16``,
        ``max_depth=8``), which ``__init__`` then configures from the arguments (left to
        it). So ``cls.__new__(cls)`` (pickle's and ``copy``'s way) is a usable tree, as the
        compiled class's is."""
        tree = super().__new__(cls)
        tree._reset(None, DEFAULT_THRESHOLD, DEFAULT_MAX_DEPTH)
        return tree

    def __init__(
        self,
        bounds: Box | tuple[float, float, float, float] | None = None,
        *,
        threshold: int = DEFAULT_THRESHOLD,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        if getattr(self, "_busy", False):  # a subclass's __new__ may have skipped ours
            raise RuntimeError(_BUSY)
        # type(), not isinstance(): an object can claim to be an int through __class__.
        # index(): an int subclass's own comparisons are not asked, nor is it kept (a cycle
        # through it would keep the tree alive where the compiled class cannot collect it).
        if type(threshold) is bool or not issubclass(type(threshold), int) or index(threshold) < 1:
            raise ValueError(f"threshold must be an int >= 1, got {threshold!r}")
        if type(max_depth) is bool or not issubclass(type(max_depth), int) or index(max_depth) < 0:
            raise ValueError(f"max_depth must be an int >= 0, got {max_depth!r}")
        self._reset(None if bounds is None else Box(*_coords(bounds)), threshold, max_depth)

    def _reset(self, hint: Box | None, threshold: int, max_depth: int) -> None:
        """Become an empty tree with this configuration (``__init__``'s, checked)."""
        self._bounds_hint = hint
        self._threshold = index(threshold)  # an exact int, as the compiled class keeps
        self._max_depth = index(max_depth)
        # entity -> the *home record* of its node (below): one lookup gives move() all it needs.
        self._home: dict[int, list[Any]] = {}
        self._geom: list[_Geom] = []
        self._fit: list[list[Any]] = []
        self._kids: list[_Kids | None] = []
        self._parent: list[int] = []
        self._level: list[int] = []
        self._count: list[int] = []
        self._items: list[dict[int, _Rec]] = []
        self._free: list[int] = []
        # Each node's straddler snapshot, None until needed and again once stale (the update
        # paths write that None inline); built and read by ``_snapshots``.
        self._snap: list[_Snap | _Quick | None] = []
        self._snapshots = StraddlerSnapshots(self._items, self._geom, self._snap)
        self._root = -1
        if self._bounds_hint is not None:
            self._root = self._new_root(self._bounds_hint, 0)
        # True while a call runs Python: every change then raises (never pickled), but a
        # discard, deferred to _pending until the outermost busy call ends.
        self._busy = False
        self._pending: list[int] = []

    # ------------------------------------------------------------------ container protocol

    def __len__(self) -> int:
        return len(self._home)

    def __contains__(self, entity: object) -> bool:
        """Whether ``entity`` is in the index. A value that is not an id (a float, a bool, a
        str) is in no index, even one equal to an id (``1.0``, ``True``); an integer-like
        id (a numpy integer) is looked up as its int, and an int outside the 64-bit range of
        ids (see ``insert``) is in no index either. Every method that looks ids up (``in``,
        ``[]``, ``get``, ``remove``, ``discard``, ``query_entity``,
        ``find_intersections_for``, and ``move``, ``move_many``, ``move_records`` for their
        ``KeyError``) follows this rule; those that store one (``insert``, ``insert_many``,
        ``insert_records``) refuse a non-id with ``TypeError``."""
        if type(entity) is not _int:
            entity = _lookup_id(entity)
        return entity in self._home

    def __iter__(self) -> Iterator[int]:
        """Every id in the index, in ascending order: the same order in both classes and
        whatever the history of inserts, moves and pickles (lockstep games and replays rely
        on it), as every answer that is a set of ids.

        Complexity: O(n log n), the sort, when the iteration starts."""
        return iter(sorted(self._home))

    def __getitem__(self, entity: int) -> Box:
        """The current box of ``entity`` (``KeyError`` if it is not in the index, as for any
        value that is not an id: see ``in``)."""
        key = entity if type(entity) is _int else _lookup_id(entity)
        home = self._home.get(key)  # type: ignore[arg-type]
        if home is None:
            raise _missing(entity)
        return _to_box(home[_ITEMS][key])

    def get(self, entity: int, default: Box | None = None) -> Box | None:
        """The current box of ``entity``, or ``default`` if it is not in the index (nor for
        any value that is not an id: see ``in``)."""
        key = entity if type(entity) is _int else _lookup_id(entity)
        home = self._home.get(key)  # type: ignore[arg-type]
        return default if home is None else _to_box(home[_ITEMS][key])

    # ------------------------------------------------------------------ copies and pickles

    def __copy__(self) -> QuadTree:
        """An independent copy (``copy.copy``): changing either tree leaves the other as it
        is. The nodes, their entry dicts and the entity map are new; the records and the
        snapshots, which are never changed in place, are shared; a subclass's own attributes
        (its ``__dict__`` and slots) are shared, as ``copy.copy`` shares them.

        Complexity: O(n + nodes).
        """
        new = self._copy_index()
        _copy_own_state(self, new, None)
        return new

    def __deepcopy__(self, memo: dict[int, Any] | None) -> QuadTree:
        """An independent copy (``copy.deepcopy``): the index is ids and floats, immutable,
        so ``__copy__``'s is deep already; a subclass's own attributes are deep-copied, the
        new tree entered in ``memo`` first (an attribute may refer back to the tree; a
        ``memo`` of None, from a direct call, stands for a new one)."""
        new = self._copy_index()
        _copy_own_state(self, new, {} if memo is None else memo)
        return new

    def _copy_index(self) -> QuadTree:
        """A new tree of the same class holding a copy of this one's index (``__copy__``)."""
        new = type(self).__new__(type(self))
        new._bounds_hint = self._bounds_hint
        new._threshold = self._threshold
        new._max_depth = self._max_depth
        new._root = self._root
        new._geom = list(self._geom)
        new._kids = list(self._kids)
        new._parent = list(self._parent)
        new._level = list(self._level)
        new._count = list(self._count)
        new._free = list(self._free)
        new._snap = list(self._snap)
        items = new._items = [dict(entries) for entries in self._items]
        fit = new._fit = [
            [*home[:_ITEMS], items[home[_NODE]], home[_NODE], home[_KIDS]] for home in self._fit
        ]
        new._home = {entity: fit[home[_NODE]] for entity, home in self._home.items()}
        new._snapshots = StraddlerSnapshots(items, new._geom, new._snap)
        new._busy = False  # a copy made by a where= predicate is not busy itself
        new._pending = []
        return new

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as ``__getstate__``'s plain state, which the compiled class reads too (and
        writes: either class loads the other's pickles)."""
        return _newobj, (type(self),), self.__getstate__()

    def __getstate__(self) -> dict[str, Any]:
        """The tree as plain data, the same for both classes (``_STATE_FORMAT``): the
        configuration, the root's bounds and level, and each entity's id and box. The shape
        of the tree is a function of these (invariant 5), so ``__setstate__`` rebuilds it
        node for node, whichever class reads them.

        Complexity: O(n).
        """
        state = self._index_state()
        state.update(_own_state(self))
        return state

    def __setstate__(self, state: object) -> None:
        """Become the tree ``state`` describes (``__getstate__``'s, written by either class,
        or a pickle of an earlier version): ``ValueError`` or ``TypeError`` naming what is
        wrong with it, before anything changes.

        Complexity: O(n) to read the state, then what ``insert_many`` takes for n entities.
        """
        # A tree made by __reduce__ (copyreg.__newobj__) has no fields yet.
        if getattr(self, "_busy", False):
            raise RuntimeError(_BUSY)
        read = _read_state(state, type(self), getattr(self, "_bounds_hint", None))
        # A subclass may refuse one of its own attributes, which come last: the index it
        # replaced is then put back (the attributes put themselves back).
        before = self._index_state() if read.attributes or read.slots else None
        self._become(read)
        try:
            _restore_own_state(self, read.attributes, read.slots)
        except BaseException:
            if before is not None:
                self._become(_read_state(before, type(self), self._bounds_hint))
            raise

    def _index_state(self) -> dict[str, Any]:
        """``__getstate__`` without a subclass's own attributes."""
        hint = self._bounds_hint
        return _state_of(
            None if hint is None else tuple(hint), self._threshold, self._max_depth,
            self._root, self._geom, self._level, self._home,
        )

    def _become(self, read: _State) -> None:
        """Hold the index a checked state describes (``__setstate__``'s)."""
        QuadTree.__init__(self, read.hint, threshold=read.threshold, max_depth=read.max_depth)
        self._clear_nodes()
        self._root = -1
        if read.root is not None:
            self._root = self._new_root(read.root, read.level)
            self._insert_records(read.records)  # grows the root as inserts would, if need be

    def __repr__(self) -> str:
        return (
            f"QuadTree(bounds={self.bounds!r}, threshold={self._threshold}, "
            f"max_depth={self._max_depth}, entities={len(self._home)})"
        )

    @property
    def bounds(self) -> Box | None:
        """The root's current bounds (they grow to reach boxes outside the hint)."""
        if self._root < 0:
            return None
        g = self._geom[self._root]
        return Box(g[0], g[1], g[2], g[3])

    @property
    def threshold(self) -> int:
        """How many entries a leaf holds before it splits."""
        return self._threshold

    @property
    def max_depth(self) -> int:
        """How many levels below the original root a leaf may lie."""
        return self._max_depth

    # ------------------------------------------------------------------ updates

    def insert(self, entity: int, box: _BoxLike) -> None:
        """Add ``entity`` with ``box`` (a ``Box`` or any ``(min_x, min_y, max_x, max_y)``).

        Ids are ints in the signed 64-bit range, ``-2**63`` to ``2**63 - 1`` (esper's are
        small ints; the compiled core and the buffers hold them in 64 bits): an integer-like
        id (a numpy integer, an int subclass) is stored as the exact int ``operator.index``
        gives. ``TypeError`` if ``entity`` is not an int (a bool is refused too),
        ``OverflowError`` if it is outside that range, ``ValueError`` if it is already
        present or the box is invalid, checked in that order; nothing changes then.

        Complexity: O(depth) on average, plus an occasional split of O(threshold).
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            self._insert(entity, box)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _insert(self, entity: object, box: _BoxLike) -> None:
        """``insert`` without the busy check (the tree is busy already)."""
        if type(entity) is not _int or not _ID_MIN <= entity <= _ID_MAX:
            entity = _new_id(entity)
        if entity in self._home:
            raise ValueError(f"entity {entity!r} is already in the index")
        x0, y0, x1, y1 = _coords(box, entity)
        rec = (x0, y0, x1, y1, entity)
        root = self._root
        if root < 0 or not self._contains(root, rec):
            self._grow_to(rec)
        self._place(rec)

    def insert_many(
        self, entities: Iterable[int], boxes: Iterable[_BoxLike] | array[float] | memoryview[float]
    ) -> None:
        """Add each of ``entities`` with the box at the same position in ``boxes``: a level
        or a saved game loaded in one call (the counterpart of rtree's bulk loading).

        All or nothing: an id already present, listed twice or not an int, a bad box, or
        ``boxes`` of another length raises as ``insert`` would, naming the entity and the
        value, before anything changes. The tree is then built top-down: the root grows once
        to take in every new box, and the new entries go down the tree together, each leaf
        that overflows split once with all of them, instead of one descent and one split
        after another per entry. The entries and every answer are those the same ``insert``
        calls would give, and so is the tree itself unless the root had to grow (it grows
        toward all the new boxes at once rather than toward each in turn).

        Measured (``python -m bench build``, 10,000 and 100,000 boxes): 1.2 to 1.5 times
        faster than one ``insert`` per box, validation included.

        ``entities`` and ``boxes`` may also be buffers: 8-byte ints (``array('q')``, a numpy
        ``int64`` array) and doubles, 4 per box, flat or in rows of 4 (``array('d')``, a
        numpy ``float64`` array). The compiled core reads them without a Python object per
        entity; here they are read into lists first. Either way they are checked as any
        ids and boxes are.

        Complexity: O(k depth) for k new entries.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            buffers = _from_buffers(entities, boxes, "insert_many")
            if buffers is not None:
                entities, boxes = buffers
            # Not buffers: an iterable of boxes (one of floats fails below, as in the core).
            boxes = cast("Iterable[_BoxLike]", boxes)
            homes = self._home
            fresh: dict[int, _Rec] = {}
            try:
                for entity, box in zip(entities, boxes, strict=True):
                    if type(entity) is not _int or not _ID_MIN <= entity <= _ID_MAX:
                        entity = _new_id(entity)
                    x0, y0, x1, y1 = _coords(box, entity)
                    if entity in fresh or entity in homes:
                        raise ValueError(
                            f"entity {entity!r} is already in the index"
                            if entity in homes
                            else f"entity {entity!r} is listed twice"
                        )
                    fresh[entity] = (x0, y0, x1, y1, entity)
            except ValueError as error:
                if str(error).startswith("zip()"):
                    raise ValueError("insert_many: entities and boxes differ in length") from None
                raise
            if fresh:
                self._insert_records(list(fresh.values()))
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def insert_records(self, records: Iterable[_Rec]) -> None:
        """Add the entities of ``(min_x, min_y, max_x, max_y, entity)`` records: what
        :meth:`insert_many` does, for a caller that keeps its boxes as such records (the
        SpatialProcessor), with the same checks and errors, all or nothing; a record of four
        floats and an int id is kept as it is, as the entry itself. Anything but a 5-tuple
        is refused with a ``TypeError``.

        Complexity: as :meth:`insert_many`.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        records = iter(records)  # its __iter__ before the busy part, as in the core
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            homes = self._home
            fresh: dict[int, _Rec] = {}
            for rec in records:
                if not issubclass(type(rec), tuple) or len(rec) != 5:
                    raise TypeError(
                        f"records are (min_x, min_y, max_x, max_y, entity) tuples, got {rec!r}"
                    )
                x0, y0, x1, y1, entity = rec
                # Four floats of a valid box and an int id (the processor's records): kept as
                # they are after one chained test each; anything else goes the careful way.
                kept = (
                    type(rec) is tuple
                    and type(entity) is _int
                    and type(x0) is _float
                    and type(y0) is _float
                    and type(x1) is _float
                    and type(y1) is _float
                    and -_INF < x0 <= x1 < _INF
                    and -_INF < y0 <= y1 < _INF
                    and _ID_MIN <= entity <= _ID_MAX
                )
                if not kept:
                    if type(entity) is not _int or not _ID_MIN <= entity <= _ID_MAX:
                        entity = _new_id(entity)
                    x0, y0, x1, y1 = _coords(rec[:4], entity)
                if entity in fresh or entity in homes:
                    raise ValueError(
                        f"entity {entity!r} is already in the index"
                        if entity in homes
                        else f"entity {entity!r} is listed twice"
                    )
                fresh[entity] = rec if kept else (x0, y0, x1, y1, entity)
            if fresh:
                self._insert_records(list(fresh.values()))
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _insert_records(self, records: list[_Rec]) -> None:
        """Add these ``(min_x, min_y, max_x, max_y, entity)`` records, kept as they are: the
        bulk half of ``insert_many``, for callers whose boxes are checked and whose ids are
        new and distinct (``insert_many``, the SpatialProcessor, ``_rebuild``).

        The root first grows to take in all of them at once; then they go down from the
        root together (``_descend``), each dealt into a list once per level and stored in a
        dict once, where it ends.
        """
        if not records:
            return
        if self._root < 0:
            self._root = self._new_root(_first_root(records[0]), 0)
        # Toward the bounding box of them all: once it holds that box it holds every record;
        # if it cannot (growth exhausted), it can grow toward none of them either.
        self._grow_to(_bbox(records))
        self._descend(self._root, records)

    def _descend(self, node: int, batch: list[_Rec]) -> None:
        """Place ``batch`` (records not yet counted anywhere, each of which ``node``
        contains) at or below ``node``: an internal node keeps the records that touch its
        split lines and deals out the others to its children; a leaf takes its batch, or,
        if the batch would overflow it (below ``max_depth``), becomes an internal node on
        the spot, its own entries joining the batch. Only the root may hold boxes beyond its
        bounds (past the farthest it may grow); they stay in it.
        """
        threshold = self._threshold
        max_depth = self._max_depth
        items_of = self._items
        fit_of = self._fit
        kids_of = self._kids
        level_of = self._level
        geom = self._geom
        count = self._count
        homes = self._home
        snap = self._snap
        root = self._root
        rx0, ry0, rx1, ry1 = fit_of[root][:4]
        stack: list[tuple[int, list[_Rec]]] = [(node, batch)]
        while stack:
            node, batch = stack.pop()
            count[node] += len(batch)
            snap[node] = None
            items = items_of[node]
            kids = kids_of[node]
            if kids is None:
                if len(items) + len(batch) <= threshold or level_of[node] >= max_depth:
                    here = {r[4]: r for r in batch}
                    items.update(here)
                    homes.update(dict.fromkeys(here, fit_of[node]))
                    continue
                # The batch overflows this leaf: it becomes internal, and its own entries
                # go down with the batch.
                kids = self._make_kids(node)
                batch.extend(items.values())
                items.clear()
            if node == root:
                # Only the root may hold a box beyond its bounds (one past the farthest it
                # may grow): such a box stays in its entries.
                beyond = {
                    r[4]: r for r in batch
                    if not (rx0 < r[0] and r[2] < rx1 and ry0 < r[1] and r[3] < ry1)
                }
                if beyond:
                    items.update(beyond)
                    homes.update(dict.fromkeys(beyond, fit_of[node]))
                    batch = [r for r in batch if r[4] not in beyond]
            _, _, _, _, cx, cy = geom[node]
            low_left: list[_Rec] = []
            low_right: list[_Rec] = []
            high_left: list[_Rec] = []
            high_right: list[_Rec] = []
            kept: dict[int, _Rec] = {}
            for rec in batch:
                # _sink's rule: into a child only strictly below (max < c) or above (min > c)
                # both split lines; a box that touches one stays here.
                if rec[2] < cx:
                    if rec[3] < cy:
                        low_left.append(rec)
                    elif rec[1] > cy:
                        high_left.append(rec)
                    else:
                        kept[rec[4]] = rec
                elif rec[0] > cx:
                    if rec[3] < cy:
                        low_right.append(rec)
                    elif rec[1] > cy:
                        high_right.append(rec)
                    else:
                        kept[rec[4]] = rec
                else:
                    kept[rec[4]] = rec
            if kept:
                items.update(kept)
                homes.update(dict.fromkeys(kept, fit_of[node]))
            quadrants = (low_left, low_right, high_left, high_right)
            for child, part in zip(kids, quadrants, strict=True):
                if part:
                    stack.append((child, part))

    def move(self, entity: int, box: _BoxLike) -> None:
        """Give ``entity`` a new ``box``. ``KeyError`` if it is not in the index,
        ``TypeError`` if ``entity`` is not an int id (as ``insert`` decides: a float or a
        bool is refused, even one equal to an id; an integer-like id stands for its int),
        ``TypeError`` or ``ValueError`` if the box is invalid; nothing changes then.

        A box that still belongs to its node is updated in place; otherwise the entry climbs
        only to the first ancestor that contains the new box and sinks from there. A plain
        tuple of floats is the cheapest box to pass (building a ``Box`` costs more than the
        move; an int coordinate is rounded to a float on a slower path).

        Complexity: O(1) while the box stays in its node, else O(distance climbed).
        """
        # A bool, not a counter, whose test is an identity check: about 50 instructions a
        # move, +0.5% of a loop of moves (callgrind; an int flag's truth test took 85).
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            try:
                fx0, fy0, fx1, fy1, cx, cy, items, node, kids = self._home[entity]
                x0, y0, x1, y1 = box
                # Fast path (97% of moves in the benchmark world): strictly inside the node's
                # fit bounds and, for an internal node, still touching a split line. The
                # comparisons also refuse NaN, infinities and inverted boxes, and the type
                # tests anything but float coordinates and an int id (an int must become a
                # float before it is compared: 2**53 + 1; 1.0 must not pass for the id 1; and
                # type(), not __class__, which an object may fake): all fall through to the
                # careful path. Comparisons written apart, not chained: what this costs and
                # saves is in bench/results/amd-epyc-2026-11-24/decisions.md.
                if (
                    fx0 < x0
                    and x0 <= x1
                    and x1 < fx1
                    and fy0 < y0
                    and y0 <= y1
                    and y1 < fy1
                    and type(x0) is _float
                    and type(y0) is _float
                    and type(x1) is _float
                    and type(y1) is _float
                    and type(entity) is _int
                ):
                    if kids is None:
                        items[entity] = (x0, y0, x1, y1, entity)
                        return
                    if not ((x1 < cx or x0 > cx) and (y1 < cy or y0 > cy)):
                        items[entity] = (x0, y0, x1, y1, entity)
                        self._snap[node] = None  # a straddler moved: its node's order is stale
                        return
                box = (x0, y0, x1, y1)  # read once: an iterator of four is spent now
            except (KeyError, TypeError, ValueError):
                pass  # an unknown or unhashable id, not four numbers: _move_target names it
            node, rec = self._move_target(entity, box)
            self._relocate(node, rec)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _move_target(self, entity: object, box: object) -> tuple[int, _Rec]:
        """The careful path of a move: the node of ``entity`` and its new record, its id an
        int and its box four valid floats, or the error that names what is wrong (the id's
        type first, then its absence, then the box, as ``insert`` checks them). An int
        outside the range of ids is absent, as in every lookup."""
        if type(entity) is not _int:
            entity = _entity_id(entity)
        home = self._home.get(entity)
        if home is None:
            raise _missing(entity)
        x0, y0, x1, y1 = _coords(box, entity)
        return home[_NODE], (x0, y0, x1, y1, entity)

    def move_many(
        self,
        entities: Iterable[int],
        boxes: Iterable[_BoxLike] | array[float] | memoryview[float],
        *,
        atomic: bool = True,
    ) -> None:
        """Give each of ``entities`` the box at the same position in ``boxes``, in order
        (an entity listed twice ends with its last box): a frame's moves in one call.

        The same as ``move`` for each pair, minus a Python call per entity; pass the boxes
        as a generator to save building a list of them too. An unknown entity, a bad box
        or ``boxes`` of another length raises as ``move`` would, naming the entity and the
        value. With ``atomic`` (the default) every move already made in the call is then
        undone, so the tree is exactly as it was. ``atomic=False`` skips the undo log and,
        on such an error, keeps the moves made before the bad one: for callers whose ids
        and boxes are known to be good, as the benchmark world's are.

        Measured on 10,000 moves (``python -m bench.tools.ab``, callgrind): ``atomic=False`` fed a
        generator takes 29% fewer instructions than 10,000 ``move`` calls, but on this
        project's shared VM, where the update is bound by memory, about the same
        wall-clock time (within 5%). The undo log keeps every old box alive to the end of
        the call, so new ones cannot reuse their memory: it adds ~50% to the call's time.

        ``entities`` and ``boxes`` may also be buffers, as for :meth:`insert_many`.

        Complexity: as many ``move`` calls.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            atomic = bool(atomic)  # once, before anything: the compiled core's order
            buffers = _from_buffers(entities, boxes, "move_many")
            if buffers is not None:
                entities, boxes = buffers
            # Not buffers: an iterable of boxes (one of floats fails below, as in the core).
            boxes = cast("Iterable[_BoxLike]", boxes)
            homes = self._home
            snap = self._snap
            entries = self._items
            done: list[_Rec] = []  # each applied move's previous record: the undo log
            log = done.append
            root = self._root
            root_before = (self._geom[root], self._level[root]) if root >= 0 else None
            float_ = _float
            int_ = _int
            type_ = type
            try:
                # move()'s fast path inlined: see there. One loop without the undo log and one
                # with it, rather than a test of ``atomic`` per move.
                if not atomic:
                    for entity, box in zip(entities, boxes, strict=True):
                        try:
                            fx0, fy0, fx1, fy1, cx, cy, items, node, kids = homes[entity]
                            x0, y0, x1, y1 = box
                            if (
                                fx0 < x0
                                and x0 <= x1
                                and x1 < fx1
                                and fy0 < y0
                                and y0 <= y1
                                and y1 < fy1
                                and type_(x0) is float_
                                and type_(y0) is float_
                                and type_(x1) is float_
                                and type_(y1) is float_
                                and type_(entity) is int_
                            ):
                                if kids is None:
                                    items[entity] = (x0, y0, x1, y1, entity)
                                    continue
                                if not ((x1 < cx or x0 > cx) and (y1 < cy or y0 > cy)):
                                    items[entity] = (x0, y0, x1, y1, entity)
                                    snap[node] = None
                                    continue
                            box = (x0, y0, x1, y1)  # read once, as in move()
                        except (KeyError, TypeError, ValueError):
                            pass  # _move_target names the problem
                        node, rec = self._move_target(entity, box)
                        self._relocate(node, rec)
                    return
                for entity, box in zip(entities, boxes, strict=True):
                    try:
                        fx0, fy0, fx1, fy1, cx, cy, items, node, kids = homes[entity]
                        x0, y0, x1, y1 = box
                        if (
                            fx0 < x0
                            and x0 <= x1
                            and x1 < fx1
                            and fy0 < y0
                            and y0 <= y1
                            and y1 < fy1
                            and type_(x0) is float_
                            and type_(y0) is float_
                            and type_(x1) is float_
                            and type_(y1) is float_
                            and type_(entity) is int_
                        ):
                            if kids is None:
                                log(items[entity])
                                items[entity] = (x0, y0, x1, y1, entity)
                                continue
                            if not ((x1 < cx or x0 > cx) and (y1 < cy or y0 > cy)):
                                log(items[entity])
                                items[entity] = (x0, y0, x1, y1, entity)
                                snap[node] = None
                                continue
                        box = (x0, y0, x1, y1)  # read once, as in move()
                    except (KeyError, TypeError, ValueError):
                        pass  # _move_target names the problem
                    node, rec = self._move_target(entity, box)
                    log(entries[node][rec[4]])
                    self._relocate(node, rec)
            except BaseException as error:
                # Undo newest first: each step is a valid move, and the tree's shape is a
                # function of its boxes and its root, so this restores the tree exactly.
                for rec in reversed(done):
                    self._relocate(*self._move_target(rec[4], rec[:4]))
                root = self._root
                if atomic and root_before is not None and (
                    (self._geom[root], self._level[root]) != root_before
                ):
                    (x0, y0, x1, y1, _, _), level = root_before
                    self._rebuild((x0, y0, x1, y1), level)  # a move had grown the root
                kept = "" if atomic else " (move_many stopped there: the moves before it stand)"
                if isinstance(error, ValueError) and str(error).startswith("zip()"):
                    raise ValueError(
                        f"move_many: entities and boxes differ in length{kept}"
                    ) from None
                if kept and isinstance(error, (KeyError, TypeError, ValueError)):
                    message = error.args[0] if len(error.args) == 1 else str(error)
                    raise type(error)(f"{message}{kept}") from None
                raise
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def move_records(self, records: Iterable[_Rec]) -> None:
        """Move each entity to its ``(min_x, min_y, max_x, max_y, entity)`` record, which
        the index then keeps as it is: ``move_many(atomic=False)`` for a caller that keeps
        its boxes as such records (the SpatialProcessor), with the same checks and errors
        (the moves before a bad record stand).

        Measured on the headline scene (2,000 moving boxes, callgrind): 4% fewer
        instructions per frame than ``move_many`` fed two ``map`` iterators, which also
        built every record a second time.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        records = iter(records)  # its __iter__ before the busy part, as in the core
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            homes = self._home
            snap = self._snap
            float_ = _float
            int_ = _int
            tuple_ = tuple
            type_ = type  # type(x) is one specialised instruction; x.__class__ a slower lookup
            # move()'s fast path, the record stored as it is: see there. A 5-tuple of four
            # floats and an int id (70 ns of type tests, decisions.md); the fit comparisons then
            # refuse NaN, infinities and inverted boxes too, so only a record that leaves its
            # node is tested for those before it moves. Anything else goes the careful way,
            # which names what is wrong.
            for rec in records:
                try:
                    x0, y0, x1, y1, entity = rec
                    if (
                        type_(rec) is tuple_
                        and type_(entity) is int_
                        and type_(x0) is float_
                        and type_(y0) is float_
                        and type_(x1) is float_
                        and type_(y1) is float_
                    ):
                        fx0, fy0, fx1, fy1, cx, cy, items, node, kids = homes[entity]
                        # Comparisons apart rather than chained: see decisions.md.
                        if (
                            fx0 < x0 and x0 <= x1 and x1 < fx1
                            and fy0 < y0 and y0 <= y1 and y1 < fy1
                        ):
                            if kids is None:
                                items[entity] = rec
                                continue
                            if not ((x1 < cx or x0 > cx) and (y1 < cy or y0 > cy)):
                                items[entity] = rec
                                snap[node] = None
                                continue
                            self._relocate(node, rec)
                            continue
                        if -_INF < x0 <= x1 < _INF and -_INF < y0 <= y1 < _INF:
                            self._relocate(node, rec)
                            continue
                except (KeyError, TypeError, ValueError):
                    pass
                self._move_record_carefully(rec)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _move_record_carefully(self, rec: object) -> None:
        """A record that is not four floats of a valid box and the int id of an entry:
        refused as the compiled core refuses it (its shape, then its id, then its box, then
        whether the id is in the index), or moved as ``move`` would move it."""
        # isinstance() believes a __class__ that claims tuple: type() as well
        if not isinstance(rec, tuple) or not issubclass(type(rec), tuple) or len(rec) != 5:
            raise TypeError(
                f"records are (min_x, min_y, max_x, max_y, entity) tuples, got {rec!r}"
            )
        entity = rec[4] if type(rec[4]) is _int else _entity_id(rec[4])
        box = _coords(rec[:4], entity)
        if entity not in self._home:
            raise _missing(entity)
        self._relocate(*self._move_target(entity, box))

    def remove(self, entity: int) -> None:
        """Remove ``entity``. ``KeyError`` if it is not in the index (as for any value that is
        not an id: see ``in``).

        Complexity: O(depth), plus a merge of O(threshold) when a subtree empties out.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True
        try:
            self._remove(entity)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _remove(self, entity: object) -> None:
        """``remove`` without the busy check (the tree is busy already)."""
        key = entity if type(entity) is _int else _lookup_id(entity)
        home = self._home.pop(key, None)  # type: ignore[arg-type]
        if home is None:
            raise _missing(entity)
        entity = key
        node = home[_NODE]
        del self._items[node][entity]
        self._snap[node] = None
        count = self._count
        parent = self._parent
        highest_mergeable = -1
        n = node
        while n >= 0:
            count[n] -= 1
            if count[n] <= self._threshold and self._kids[n] is not None:
                highest_mergeable = n
            n = parent[n]
        if highest_mergeable >= 0:
            self._merge(highest_mergeable)

    def discard(self, entity: int) -> None:
        """Remove ``entity`` if it is present; do nothing otherwise (nor for a value that is
        not an id: see ``in``). While the tree is busy (see "Calls back into Python" in the
        module docstring) a discard of an int is deferred to the end of the outermost busy
        call, and of anything else refused with ``RuntimeError``."""
        if self._busy:
            if type(entity) is _int:
                self._pending.append(entity)  # a finaliser's: see "Calls back into Python"
                return
            raise RuntimeError(_BUSY)
        self._busy = True
        try:
            if entity in self:
                self._remove(entity)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _settle(self) -> None:
        """Apply the discards deferred while the tree was busy (its outermost busy call has
        just ended), busy meanwhile: a finaliser run by one of them defers its own."""
        self._busy = True
        try:
            pending = self._pending
            while pending:
                entity = pending.pop()
                if entity in self._home:
                    self._remove(entity)
        finally:
            self._busy = False

    def clear(self) -> None:
        """Remove every entity; the tree returns to the bounds it was made with."""
        if self._busy:
            raise RuntimeError(_BUSY)
        self._home.clear()
        self._clear_nodes()
        self._root = -1
        if self._bounds_hint is not None:
            self._root = self._new_root(self._bounds_hint, 0)

    # ------------------------------------------------------------------ queries

    def query(self, box: _BoxLike) -> list[int]:
        """Every id whose box intersects ``box`` (touching counts), each once, in ascending
        order.

        The order is the compiled class's too, and no history of inserts, moves or pickles
        changes it, so that game code that acts on the hits in turn does the same on every
        machine (a lockstep game, a replay). Every answer that is a set of ids comes in
        ascending order: ``query_point``, ``query_radius``, ``query_entity``, iterating
        over the tree; ``nearest`` comes by distance, the casts by ``t``, both then by id.

        Complexity: O(log n + k log k) on average (the sort); a subtree wholly inside
        ``box`` is reported without testing its entries one by one.
        """
        x0, y0, x1, y1 = _coords(box)
        out: list[int] = []
        root = self._root
        if root < 0:
            return out
        append = out.append
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        stack = [root]
        pop = stack.pop
        push = stack.append
        scan = self._snapshots.scan
        covered: list[int] = []  # subtrees wholly inside the box: every id, untested
        cover = covered.append
        while stack:
            node = pop()
            kids = kids_of[node]
            if kids is None:
                for bx0, by0, bx1, by1, entity in items[node].values():
                    if bx0 <= x1 and x0 <= bx1 and by0 <= y1 and y0 <= by1:
                        append(entity)
            else:
                scan(node, x0, y0, x1, y1, append)  # straddlers: a sorted window
                for child in kids:
                    if count[child]:
                        nx0, ny0, nx1, ny1, _, _ = geom[child]
                        if nx0 <= x1 and x0 <= nx1 and ny0 <= y1 and y0 <= ny1:
                            if x0 <= nx0 and nx1 <= x1 and y0 <= ny0 and ny1 <= y1:
                                cover(child)
                            else:
                                push(child)
        if covered:
            self._collect(covered, out)  # one walk for all (-5%: no call per subtree)
        out.sort()
        return out

    def query_point(self, x: float, y: float) -> list[int]:
        """Every id whose box contains the point ``(x, y)`` (edges included), each once, in
        ascending order (as ``query``)."""
        x, y = _point(x, y)
        return self.query((x, y, x, y))

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        """Every id whose box has a point within distance ``r`` of ``(x, y)``, that is
        ``box.distance_to_point(x, y) <= r``, each once, in ascending order (as ``query``).

        Complexity: O(log n + k log k) on average.
        """
        x, y = _point(x, y)
        radius = r if type(r) is _float else to_float(r, "radius")
        if not (0.0 <= radius < _INF):
            raise ValueError(f"radius must be finite and >= 0, got {r!r}")
        r = radius
        out: list[int] = []
        root = self._root
        if root < 0:
            return out
        append = out.append
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        # Candidates first pass the box around the circle (geometry.reach: widened a little,
        # since x + r is rounded and a box one float step past it can still be at a computed
        # distance <= r; infinite where the circle passes the float range), then the same
        # hypot expression as Box.distance_to_point decides.
        qx0, qy0, qx1, qy1 = reach(x, y, r)
        stack = [root]
        candidates: list[int] = []
        keep = candidates.append
        snaps = self._snap
        snap_min = _snapshots.SNAP_MIN  # read here, not imported: a test patches it there
        while stack:
            node = stack.pop()
            kids = kids_of[node]
            records: Iterable[_Rec]
            if kids is None:
                records = items[node].values()
            else:
                node_items = items[node]
                snap = snaps[node]
                if snap is not None and not (
                    (snap[0] <= qx1 and qx0 <= snap[1]) or (snap[2] <= qy1 and qy0 <= snap[3])
                ):
                    # Its straddlers all lie far from the circle's box (as in _intersecting;
                    # this, the box test for children instead of a distance, and no empty
                    # comprehension: 135k -> 81k instructions per query, r = 50, N = 50,000).
                    records = ()
                elif len(node_items) < snap_min:
                    records = node_items.values()
                else:  # straddlers: a sorted window of those that reach the circle's box
                    candidates.clear()
                    self._snapshots.scan(node, qx0, qy0, qx1, qy1, keep)
                    records = [node_items[entity] for entity in candidates] if candidates else ()
            for bx0, by0, bx1, by1, entity in records:
                if bx0 <= qx1 and qx0 <= bx1 and by0 <= qy1 and qy0 <= by1:
                    dx = bx0 - x if x < bx0 else (x - bx1 if x > bx1 else 0.0)
                    dy = by0 - y if y < by0 else (y - by1 if y > by1 else 0.0)
                    if _hypot(dx, dy) <= r:
                        append(entity)
            if kids is not None:
                for child in kids:
                    if count[child]:
                        nx0, ny0, nx1, ny1, _, _ = geom[child]
                        if nx0 <= qx1 and qx0 <= nx1 and ny0 <= qy1 and qy0 <= ny1:
                            stack.append(child)
        out.sort()
        return out

    def nearest(
        self,
        x: float,
        y: float,
        k: int = 1,
        *,
        where: Callable[[int], object] | None = None,
        max_distance: float = _INF,
    ) -> list[int]:
        """The ``k`` ids with the smallest ``box.distance_to_point(x, y)``, nearest first,
        ties broken by id (fewer if the index holds fewer).

        ``where``, if given, decides which ids count: the ``k`` nearest of those for which
        ``where(id)`` is true (the nearest enemy, not the nearest thing), which no filter
        on the answer can give, since the ``k`` nearest overall may hold none of them. It is
        asked only about ids near enough to enter the answer when it is asked (roughly from
        the point outward; the order and number of calls are not promised); an error it
        raises comes out of the call unchanged. It may read the tree, never change it: the
        tree is busy while it runs, and a change raises ``RuntimeError`` before it touches
        anything (see "Calls back into Python" in the module docstring).
        ``max_distance`` keeps only ids within it (``distance_to_point <= max_distance``, as
        ``query_radius`` decides), as pymunk's ``point_query_nearest`` does: a turret's
        range. The search then never opens a node beyond it, so a miss costs little.

        Branch and bound, outward from the point: down to the leaf where the point lies, then
        back up, each ancestor's own entries and its other children in turn, nearest child
        first. The ``k`` best so far set a radius, and with it the box of ``geometry.reach``
        that every better entry intersects: a node or an entry that misses the box is never
        measured, and an ancestor's straddlers are read through the sorted snapshot the other
        queries use (a bisected window, or four comparisons that rule them all out). The
        best-first heap of every opened node's entries that this replaces took 10 times as
        long as ``query_point`` on 100,000 boxes (``python -m bench queries --scenario
        nearest`` has the ratio now).

        Complexity: O(log n + k log k) on average.
        """
        x, y = _point(x, y)
        if type(k) is bool or not issubclass(type(k), int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        limit = (
            max_distance if type(max_distance) is _float
            else to_float(max_distance, "max_distance")
        )
        if not limit >= 0.0:  # NaN fails too
            raise ValueError(f"max_distance must be >= 0, got {max_distance!r}")
        if self._root < 0:
            return []
        if where is None:
            return self._nearest(x, y, k, limit, None)
        busy = self._busy  # True already if a where= of an outer search runs this one
        self._busy = True  # where may read the tree, never change it under the search
        try:
            return self._nearest(x, y, k, limit, where)
        finally:
            self._busy = busy
            if not busy and self._pending:
                self._settle()

    def _nearest(
        self, x: float, y: float, k: int, limit: float, where: Callable[[int], object] | None
    ) -> list[int]:
        """``nearest``'s search, its arguments checked and the tree not empty."""
        root = self._root
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        snaps = self._snap
        snapshot = self._snapshots.get
        scan = self._snapshots.scan
        # The k best so far as (-distance, -id): a heap whose first item is the worst of them.
        # An entry must beat it to get in: a distance below r, or r and an id below rid; until
        # there are k, r is the limit and any id at it will do.
        best: list[tuple[float, int]] = []
        r = limit
        rid: float = _INF
        qx0, qy0, qx1, qy1 = reach(x, y, r)
        # Down to the leaf where the point lies; then back up the path, each ancestor's own
        # entries and its other children in turn, with the radius the nearer ones have set:
        # a sibling is tested as its ancestor's turn comes, not stacked on the way down,
        # when there was no radius yet to rule it out (80k -> 72k instructions a query,
        # N = 20,000; query_point takes 52k).
        path: list[int] = []
        node = root
        kids = kids_of[node]
        while kids is not None:
            path.append(node)
            _, _, _, _, cx, cy = geom[node]
            node = kids[(2 if y > cy else 0) + (1 if x > cx else 0)]
            kids = kids_of[node]
        came_from = node
        stack: list[int] = []  # subtrees to search (~node: a node's own entries alone)
        push = stack.append
        pop = stack.pop
        records: Iterable[_Rec] | None = items[node].values()
        found: list[int] = []
        keep = found.append
        while records is not None:
            for bx0, by0, bx1, by1, entity in records:
                if bx0 <= qx1 and qx0 <= bx1 and by0 <= qy1 and qy0 <= by1:
                    dx = bx0 - x if x < bx0 else (x - bx1 if x > bx1 else 0.0)
                    dy = by0 - y if y < by0 else (y - by1 if y > by1 else 0.0)
                    distance = _hypot(dx, dy)
                    if distance < r or (distance == r and entity < rid):
                        if where is not None and not where(entity):
                            continue
                        if len(best) < k:
                            heappush(best, (-distance, -entity))
                            if len(best) < k:
                                continue
                        else:
                            heapreplace(best, (-distance, -entity))
                        worst_distance, worst_id = best[0]
                        r = -worst_distance
                        rid = -worst_id
                        qx0, qy0, qx1, qy1 = reach(x, y, r)
            # The next entries worth reading: a subtree's, else the next ancestor's.
            records = None
            while True:
                if stack:
                    n = pop()
                    if n >= 0:
                        nx0, ny0, nx1, ny1, cx, cy = geom[n]
                        if not (nx0 <= qx1 and qx0 <= nx1 and ny0 <= qy1 and qy0 <= ny1):
                            continue  # the node (never the root) and all it holds miss the box
                        kids = kids_of[n]
                        if kids is None:
                            records = items[n].values()
                            break
                        near = kids[(2 if y > cy else 0) + (1 if x > cx else 0)]
                        if qx0 <= cx <= qx1 or qy0 <= cy <= qy1:
                            for child in kids:
                                if child != near and count[child]:
                                    push(child)
                        if count[near]:
                            push(near)
                        # Its own entries next, then the child nearest the point.
                        n = ~n
                        push(n)
                        continue
                    n = ~n
                elif path:
                    n = path.pop()
                    # The box holds the point, so unless it crosses a split line it lies in
                    # the point's quadrant, and the other three are out: two comparisons
                    # for three bounds tests, here and for a subtree's children (72k -> 61k
                    # instructions a query, N = 20,000).
                    _, _, _, _, cx, cy = geom[n]
                    if qx0 <= cx <= qx1 or qy0 <= cy <= qy1:
                        for child in kids_of[n]:  # type: ignore[union-attr]
                            if child != came_from and count[child]:
                                nx0, ny0, nx1, ny1, _, _ = geom[child]
                                if nx0 <= qx1 and qx0 <= nx1 and ny0 <= qy1 and qy0 <= ny1:
                                    push(child)
                    came_from = n
                else:
                    break
                # n's own entries (an internal node's straddlers, or the root's beyond it).
                own = items[n]
                if not own:
                    continue
                snap = snaps[n]
                if snap is None:
                    snap = snapshot(n)
                # Straddlers hug their split lines: most ancestors' miss the box (the quick
                # test of _intersecting).
                if not (
                    (snap[0] <= qx1 and qx0 <= snap[1]) or (snap[2] <= qy1 and qy0 <= snap[3])
                ):
                    continue
                if len(snap) > 4:  # a whole snapshot: the bisected window of the box
                    found.clear()
                    scan(n, qx0, qy0, qx1, qy1, keep)
                    records = [own[entity] for entity in found]
                else:
                    records = own.values()
                break
        best.sort(reverse=True)
        return [-negated for _, negated in best]

    def raycast(self, x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, float]]:
        """``(entity, t)`` for every box the segment ``(x0, y0) -> (x1, y1)`` touches, ``t``
        in [0, 1] the fraction of the segment at which it enters the box (0 when it starts
        inside), sorted by ``t`` then id. The first element is the first thing hit.

        Complexity: O(nodes crossed + k log k).
        """
        x0, y0 = _point(x0, y0)
        x1, y1 = _point(x1, y1)
        hits: list[tuple[float, int]] = []
        root = self._root
        if root < 0:
            return []
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        entry = floats_segment_entry
        stack = [root]
        while stack:
            node = stack.pop()
            for rec in items[node].values():
                t = entry(rec, x0, y0, x1, y1)
                if t is not None:
                    hits.append((t, rec[4]))
            kids = kids_of[node]
            if kids is not None:
                for child in kids:
                    if count[child] and entry(geom[child], x0, y0, x1, y1) is not None:
                        stack.append(child)
        hits.sort()
        return [(entity, t) for t, entity in hits]

    # ------------------------------------------------------------------ casts

    def cast_box(self, box: _BoxLike, dx: float, dy: float) -> list[tuple[int, float]]:
        """``(entity, t)`` for every box that ``box`` touches while it moves by ``(dx, dy)``,
        ``t`` in [0, 1] the fraction of the motion at which it first touches it (0 when they
        touch at the start), sorted by ``t`` then id: :func:`geometry.sweep_time` of every
        entry, found without testing them all. "Touch" is ``query``'s (a shared edge or
        corner counts), so ``cast_box(box, 0, 0)`` finds what ``query(box)`` finds, at 0.

        ``box`` is taken as ``query`` takes it; ``dx`` and ``dy`` must be finite real
        numbers (``TypeError`` or ``ValueError`` naming them). A box of zero size gives
        ``raycast`` from its corner (to the bit, wherever ``x + dx - x == dx``).

        >>> tree = QuadTree(Box(0, 0, 100, 100))
        >>> tree.insert(1, Box(50, 0, 60, 10)); tree.insert(2, Box(0, 20, 10, 30))
        >>> tree.cast_box(Box(0, 0, 10, 10), 80, 0)
        [(1, 0.5)]

        Complexity: O(nodes the swept box crosses + k log k).
        """
        moving = _coords(box)
        dx, dy = _motion(dx, dy)
        return self._all_hits(partial(floats_sweep_time, moving, dx, dy))

    def raycast_first(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        *,
        where: Callable[[int], object] | None = None,
    ) -> tuple[int, float] | None:
        """The first thing the segment ``(x0, y0) -> (x1, y1)`` hits, as ``(entity, t)``:
        exactly ``raycast(x0, y0, x1, y1)[0]`` (the smallest ``t``, then the smallest id),
        or ``None`` if it hits nothing.

        ``where``, if given, decides which ids count, as ``nearest``'s does: the first hit
        among the ids for which ``where(id)`` is true (the first enemy the bullet meets, past
        the friends in the way), exactly ``[h for h in raycast(...) if where(h[0])][0]`` or
        ``None``. It is asked only about ids that would be the answer when it is asked (a hit
        before the best accepted so far; the order and number of calls are not promised); an
        error it raises comes out of the call unchanged, the tree as it was. It may read the
        tree, never change it: a change raises ``RuntimeError``, the tree as it was, as in
        ``nearest``.

        The search stops as soon as nothing nearer can exist: nodes are opened in the order
        the segment enters them, and one entered after the best hit so far is never opened
        (a node entered at the same ``t`` still is: it may hold a smaller id at that ``t``).
        A bullet's ray across the whole world costs what lies before what it hits (with
        ``where``, before the first hit it accepts).

        >>> tree = QuadTree(Box(0, 0, 100, 100))
        >>> tree.insert(1, Box(20, 0, 30, 10)); tree.insert(2, Box(60, 0, 70, 10))
        >>> tree.raycast_first(0, 5, 100, 5)
        (1, 0.2)
        >>> tree.raycast_first(0, 5, 100, 5, where=lambda e: e != 1)
        (2, 0.6)

        Complexity: O(m log m), m the nodes the segment enters before its first (accepted) hit.
        """
        x0, y0 = _point(x0, y0)
        x1, y1 = _point(x1, y1)
        return self._first_hit(lambda b: floats_segment_entry(b, x0, y0, x1, y1), where)

    def cast_box_first(
        self,
        box: _BoxLike,
        dx: float,
        dy: float,
        *,
        where: Callable[[int], object] | None = None,
    ) -> tuple[int, float] | None:
        """The first box that ``box`` touches while it moves by ``(dx, dy)``, as
        ``(entity, t)``: exactly ``cast_box(box, dx, dy)[0]``, or ``None``. ``where``, if
        given, keeps only the ids for which ``where(id)`` is true, as ``raycast_first``'s
        does: exactly ``[h for h in cast_box(...) if where(h[0])][0]`` or ``None``. It stops
        as ``raycast_first`` does, as soon as nothing nearer can exist.

        Complexity: O(m log m), m the nodes the swept box enters before its first (accepted)
        hit.
        """
        moving = _coords(box)
        dx, dy = _motion(dx, dy)
        return self._first_hit(partial(floats_sweep_time, moving, dx, dy), where)

    def _all_hits(self, hit: _Hit) -> list[tuple[int, float]]:
        """``(entity, t)`` for every entry with ``hit(record)`` not None, sorted by ``t``
        then id. A node's subtree is searched only if ``hit`` of its bounds is not None: the
        two tests are monotonic (an entry inside a node gives a subinterval of the node's
        ``t``), so a node that is never touched holds nothing that is. The root is always
        read, since it may hold boxes beyond its bounds."""
        root = self._root
        if root < 0:
            return []
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        hits: list[tuple[float, int]] = []
        stack = [root]
        while stack:
            node = stack.pop()
            for rec in items[node].values():
                t = hit(rec)
                if t is not None:
                    hits.append((t, rec[4]))
            kids = kids_of[node]
            if kids is not None:
                for child in kids:
                    if count[child] and hit(geom[child]) is not None:
                        stack.append(child)
        hits.sort()
        return [(entity, t) for t, entity in hits]

    def _first_hit(
        self, hit: _Hit, where: Callable[[int], object] | None
    ) -> tuple[int, float] | None:
        """``_first_search``, the tree busy while ``where`` may run (as in ``nearest``)."""
        if where is None:
            return self._first_search(hit, None)
        busy = self._busy
        self._busy = True
        try:
            return self._first_search(hit, where)
        finally:
            self._busy = busy
            if not busy and self._pending:
                self._settle()

    def _first_search(
        self, hit: _Hit, where: Callable[[int], object] | None
    ) -> tuple[int, float] | None:
        """The least ``(t, id)`` over the entries with ``hit(record)`` not None (and, if
        ``where`` is given, ``where(id)`` true), as ``(id, t)``, or None: best first by the
        ``t`` at which ``hit`` enters a bounding box, a lower bound of every ``t`` inside it
        (see ``_all_hits``). A box whose bound is strictly greater than the best ``t`` found
        is never opened, and the search ends at the first such box the heap gives; an equal
        bound is opened, since a smaller id may wait there at the same ``t``. ``where`` is
        asked only about an entry that beats the best so far: the best is then always the
        best accepted one, and the same bound holds for it (a refused entry sets nothing).

        The heap holds subtrees, by their node's bounds, and the own entries of nodes of
        ``SNAP_MIN`` or more, as the two groups of their snapshot (across the vertical split
        line, and the others), by each group's bounding box: near the root they grow with
        the world's side, hug the split lines, and are read only if the cast gets to them
        first. (Read with their node, they were most of the cost: 162 box tests for a first
        hit near the start of a ray across 50,000 boxes, 51 without them; the full raycast
        made 1,297. ``tests/test_casts.py`` counts them.)"""
        root = self._root
        if root < 0:
            return None
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        snaps = self._snap
        snapshot = self._snapshots.get
        snap_min = _snapshots.SNAP_MIN  # read here, not imported: a test patches it there
        best_t = _INF  # every t is in [0, 1], so the first hit beats it
        best_id = 0
        # (bound, code): code >= 0 a subtree; ~(2 * node + group) a group of a node's own.
        heap: list[tuple[float, int]] = [(0.0, root)]  # the root first: it may hold boxes beyond it
        while heap:
            bound, code = heappop(heap)
            if bound > best_t:
                break  # everything left is entered after the best hit
            records: Iterable[_Rec]
            if code < 0:
                node, group = divmod(~code, 2)
                snap: _Snap = snaps[node]  # type: ignore[assignment]  # fresh: nothing changed
                records = [rec for _, rec in snap[4]] if group == 0 else snap[7]
            else:
                node = code
                own = items[node]
                kids = kids_of[node]
                if len(own) < snap_min or kids is None:  # a leaf's snapshot is not kept fresh
                    records = own.values()
                else:
                    records = ()
                    cached = snaps[node]
                    full: _Snap = cached if cached is not None else snapshot(node)  # type: ignore[assignment]
                    for group, members, box in ((0, full[4], full[6]), (1, full[7], full[9])):
                        if members:  # an empty group's box is inverted: no bound at all
                            t = hit(box)
                            if t is not None and t <= best_t:
                                heappush(heap, (t, ~(2 * node + group)))
                if kids is not None:
                    for child in kids:
                        if count[child]:
                            t = hit(geom[child])
                            if t is not None and t <= best_t:
                                heappush(heap, (t, child))
            for rec in records:
                t = hit(rec)
                if t is not None and (t < best_t or (t == best_t and rec[4] < best_id)):
                    if where is not None and not where(rec[4]):
                        continue
                    best_t = t
                    best_id = rec[4]
        return None if best_t == _INF else (best_id, best_t)

    def query_entity(self, entity: int) -> list[int]:
        """Every other id whose box intersects the box of ``entity``, each once, in
        ascending order (as ``query``).

        Faster than ``query(tree[entity])``: it tests the entry against its ancestors' own
        entries on the way up and searches only its own node's subtree.
        """
        key = entity if type(entity) is _int else _lookup_id(entity)
        home = self._home.get(key)  # type: ignore[arg-type]
        if home is None:
            raise _missing(entity)
        entity = key  # type: ignore[assignment]
        _, out = next(self._intersecting(((home[_NODE], entity),)))
        out.remove(entity)
        out.sort()
        return out

    def find_intersections_for(self, entities: Iterable[int]) -> list[tuple[int, int]]:
        """Every intersecting pair ``(a, b)``, ``a < b``, that involves at least one of
        ``entities``, each once, sorted. Ids not in the index are ignored, and so are values
        that are not ids (see ``in``).

        This is the incremental pair search: when k entities moved, their pairs cost
        O(k log n) instead of a search over the whole tree.
        """
        homes = self._home
        # Visit the entities node by node: those of one node and its siblings share
        # their ancestors, which the next one then finds in the CPU's cache. Measured
        # per entity at 10% moving (paired medians, frame by frame): -10% at
        # N = 10,000, -12 to -15% at N = 50,000.
        order: list[tuple[int, int]] = []
        put = order.append
        it = iter(entities)  # its __iter__ before the busy part, as in the compiled core
        # Busy while Python reads the ids (and lets go of their iterator, whose finaliser
        # may run): a change then would leave `order` naming stale nodes. And until the
        # pairs are found, as the compiled core: a discard deferred meanwhile waits for them.
        busy = self._busy
        self._busy = True
        try:
            for entity in it:
                if type(entity) is not _int:
                    entity = _lookup_id(entity)  # type: ignore[assignment]
                home = homes.get(entity)
                if home is not None:
                    put((home[_NODE], entity))
            del it
            order.sort()
            found: set[tuple[int, int]] = set()
            add = found.add
            for entity, partners in self._intersecting(order):
                for other in partners:
                    if other != entity:
                        add((entity, other) if entity < other else (other, entity))
        finally:
            self._busy = busy
            if not busy and self._pending:
                self._settle()
        return sorted(found)

    def state_hash(self) -> int:
        """A 64-bit integer equal for equal sets of ``(id, box)``, whatever the order of
        insertion, the process or ``PYTHONHASHSEED``, and equal between the compiled and
        the pure-Python class (Box2D's ``b2World_GetStateHash``): for lockstep games and
        replay tests. Different sets give different hashes but for collisions at the odds of
        a 64-bit hash. The definition is in ``_tree_state``.

        Complexity: O(n).
        """
        total = 0
        for entity, home in self._home.items():
            total += _entry_hash(home[_ITEMS][entity])
        return _mix64((total & _MASK64) ^ len(self._home))

    def find_all_intersections_array(self) -> array[int]:
        """:meth:`find_all_intersections` flattened into an ``array('q')``: ``a0, b0, a1,
        b1, ...``, the same pairs in the same order. The compiled core builds it with no
        Python object per pair (a numpy user takes it with ``numpy.frombuffer``)."""
        return array("q", [entity for pair in self.find_all_intersections() for entity in pair])

    def find_all_intersections(self) -> list[tuple[int, int]]:
        """Every pair ``(a, b)`` of ids whose boxes intersect, ``a < b``, each exactly once,
        as a sorted list. The same set of boxes gives the same list, whatever the order of
        insertion.

        One top-down walk carries the entries of the ancestors that overlap the current
        node; each node tests its own entries against each other and against those
        inherited ones, so an entry is tested only against nodes it actually overlaps.

        Complexity: O(n log n + pairs) for boxes of similar size spread over the world.
        """
        pairs: list[tuple[int, int]] = []
        root = self._root
        if root < 0:
            return pairs
        append = pairs.append
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        # Each stack entry: a node and the records of its ancestors that overlap it, sorted.
        stack: list[tuple[int, list[_Rec]]] = [(root, [])]
        pop = stack.pop
        push = stack.append
        while stack:
            node, inherited = pop()
            # Sort and sweep: the node's own records and those inherited from its
            # ancestors in one list, by min_x; a record's scan stops at the first later
            # record that starts right of it, and is skipped outright when the very next
            # one does (the common case). The key is min_x alone: a float key compares in
            # C without first testing whole tuples for equality (the search's instructions
            # at N = 10,000: -7% with threshold 16, -12% with 64); the order of ties does
            # not matter to the sweep.
            own = items[node]
            if inherited:
                sweep = list(own.values())
                sweep += inherited
                sweep.sort(key=_min_x)
            else:
                sweep = sorted(own.values(), key=_min_x)
            n = len(sweep)
            prev = sweep[0] if n else _NO_REC
            # A record that starts right of everything ends each record's scan, so the scan
            # is a bare while loop: no range object per record, no bounds test per read
            # (with the first candidate tested before the loop, which the peek has already
            # placed: -23% of the search's instructions with threshold 16, -30% with 64).
            sweep.append(_END)
            for i in range(1, n):
                # Peek at the next record before unpacking this one (-2% over unpacking
                # first: half the records have no candidate at all).
                cur = sweep[i]
                if cur[0] > prev[2]:
                    prev = cur
                    continue
                _, ay0, ax1, ay1, a = prev
                _, by0, _, by1, b = prev = cur
                # The own check skips two inherited records: they met higher up already.
                if by0 <= ay1 and ay0 <= by1 and (not inherited or a in own or b in own):
                    append((a, b) if a < b else (b, a))
                j = i + 1
                while True:
                    bx0, by0, _, by1, b = sweep[j]
                    if bx0 > ax1:
                        break
                    if by0 <= ay1 and ay0 <= by1 and (not inherited or a in own or b in own):
                        append((a, b) if a < b else (b, a))
                    j += 1
            sweep.pop()  # the end marker: the records are dealt to the children below
            kids = kids_of[node]
            if kids is None:
                continue
            # Every record here overlaps this node, so it overlaps a child exactly when it
            # reaches that child's side of both split lines: two comparisons, not four. One
            # pass deals them out (-7% of the search against a comprehension per child).
            _, _, _, _, cx, cy = geom[node]
            low_left: list[_Rec] = []
            low_right: list[_Rec] = []
            high_left: list[_Rec] = []
            high_right: list[_Rec] = []
            for rec in sweep:
                if rec[0] <= cx:
                    if rec[1] <= cy:
                        low_left.append(rec)
                    if rec[3] >= cy:
                        high_left.append(rec)
                if rec[2] >= cx:
                    if rec[1] <= cy:
                        low_right.append(rec)
                    if rec[3] >= cy:
                        high_right.append(rec)
            q0, q1, q2, q3 = kids
            if count[q0]:
                push((q0, low_left))
            if count[q1]:
                push((q1, low_right))
            if count[q2]:
                push((q2, high_left))
            if count[q3]:
                push((q3, high_right))
        pairs.sort()
        return pairs

    # ------------------------------------------------------------------ introspection

    def nodes(self, box: _BoxLike | None = None) -> Iterator[NodeInfo]:
        """Each node's box, depth below the root and number of entries held in the node
        itself, root first, depth-first: each node followed by its children's subtrees in
        the order low-left, low-right, high-left, high-right (``x`` then ``y`` below or
        above the split point). Both classes build the same tree from the same boxes, so
        they give the same nodes in the same order. For drawing the tree and for debugging.

        With ``box`` (taken and checked as ``query`` takes it, when ``nodes`` is called),
        only the nodes whose box intersects it (touching counts): exactly
        ``[n for n in nodes() if n.box.intersects(box)]``, in the same order, found without
        opening a subtree whose root misses it (a child lies inside its parent). A node's box
        is its quadrant, the ``NodeInfo.box`` it is reported with, not the extent of what it
        holds: a root that keeps boxes beyond it (grown as far as it may) is not listed for
        them. A debug overlay draws the nodes in a camera's view at the cost of those alone.

        The nodes are listed when ``nodes`` is called: a change to the tree during the
        iteration leaves them as they were.

        Complexity: O(nodes); with ``box``, O(k) for the k nodes listed (each one's four
        children tested).
        """
        # A list: the nodes as they are now, as the compiled class gives them, whatever
        # happens to the tree while the caller iterates (a generator walked the live tree).
        nodes = self._nodes_meeting(None if box is None else _coords(box))
        return iter(list(nodes))

    def _nodes_meeting(self, box: tuple[float, float, float, float] | None) -> Iterator[NodeInfo]:
        """``nodes(box)``'s walk, ``box`` already four checked floats (or None: every node)."""
        root = self._root
        if root < 0:
            return
        geom = self._geom
        if box is None:
            qx0, qy0, qx1, qy1 = -_INF, -_INF, _INF, _INF  # every node meets it
        else:
            qx0, qy0, qx1, qy1 = box
            x0, y0, x1, y1, _, _ = geom[root]
            if not (x0 <= qx1 and qx0 <= x1 and y0 <= qy1 and qy0 <= y1):
                return
        stack = [(root, 0)]
        while stack:
            node, depth = stack.pop()
            g = geom[node]
            yield NodeInfo(Box(g[0], g[1], g[2], g[3]), depth, len(self._items[node]))
            kids = self._kids[node]
            if kids is not None:
                for child in reversed(kids):
                    x0, y0, x1, y1, _, _ = geom[child]
                    if x0 <= qx1 and qx0 <= x1 and y0 <= qy1 and qy0 <= y1:
                        stack.append((child, depth + 1))

    def depth(self) -> int:
        """The number of levels below the root of the deepest node (0 for a lone root)."""
        return max((info.depth for info in self.nodes()), default=0)

    def check(self) -> None:
        """Assert every structural invariant listed in the module docstring.

        Raises ``AssertionError`` naming the first broken one. O(n); for tests.
        """
        check_tree(
            homes=self._home,
            root=self._root,
            geom=self._geom,
            fit=self._fit,
            kids_of=self._kids,
            parent=self._parent,
            level=self._level,
            count=self._count,
            items_of=self._items,
            free=self._free,
            snaps=self._snap,
            threshold=self._threshold,
            max_depth=self._max_depth,
        )

    # ------------------------------------------------------------------ internals

    def _clear_nodes(self) -> None:
        for lst in (
            self._geom, self._fit, self._kids, self._parent, self._level, self._count,
            self._items, self._snap,
        ):
            lst.clear()
        self._free.clear()

    def _new_root(self, bounds: tuple[float, float, float, float], level: int) -> int:
        """A root node: its fit bounds are its bounds, closed (one ulp outward)."""
        x0, y0, x1, y1 = bounds
        fit = (_nextafter(x0, -_INF), _nextafter(y0, -_INF), _nextafter(x1, _INF),
               _nextafter(y1, _INF))
        return self._new_node(bounds, fit, -1, level)

    def _new_node(
        self,
        bounds: tuple[float, float, float, float],
        fit: tuple[float, float, float, float],
        parent: int,
        level: int,
    ) -> int:
        x0, y0, x1, y1 = bounds
        cx = midpoint(x0, x1)  # (x0 + x1) * 0.5 would overflow past 9e307
        cy = midpoint(y0, y1)
        geom: _Geom = (x0, y0, x1, y1, cx, cy)
        items: dict[int, _Rec] = {}
        if self._free:
            node = self._free.pop()
            self._geom[node] = geom
            self._kids[node] = None
            self._parent[node] = parent
            self._level[node] = level
            self._count[node] = 0
            self._items[node] = items
            self._snap[node] = None
            self._fit[node] = [fit[0], fit[1], fit[2], fit[3], cx, cy, items, node, None]
        else:
            node = len(self._geom)
            self._geom.append(geom)
            self._kids.append(None)
            self._parent.append(parent)
            self._level.append(level)
            self._count.append(0)
            self._items.append(items)
            self._snap.append(None)
            self._fit.append([fit[0], fit[1], fit[2], fit[3], cx, cy, items, node, None])
        return node

    def _place(self, rec: _Rec) -> None:
        """Add a record under the root: sink it if the root contains it, else keep it in the
        root's own entries (a box beyond the farthest the root may grow)."""
        root = self._root
        self._count[root] += 1
        if self._contains(root, rec):
            self._sink(rec, root)
            return
        items = self._items[root]
        items[rec[4]] = rec
        self._snap[root] = None
        self._home[rec[4]] = self._fit[root]
        if (
            self._kids[root] is None
            and len(items) > self._threshold
            and self._level[root] < self._max_depth
        ):
            self._split(root)

    def _contains(self, node: int, rec: _Rec) -> bool:
        """Whether the box belongs in ``node`` or below: strictly inside its fit bounds."""
        home = self._fit[node]
        x0: float = home[0]
        y0: float = home[1]
        x1: float = home[2]
        y1: float = home[3]
        return x0 < rec[0] and rec[2] < x1 and y0 < rec[1] and rec[3] < y1

    def _sink(self, rec: _Rec, node: int) -> None:
        """Place a record at or below ``node`` (whose count already includes it), counting
        it in every node it passes, and split the leaf it lands in if that overflows."""
        x0, y0, x1, y1, entity = rec
        kids_of = self._kids
        geom = self._geom
        count = self._count
        kids = kids_of[node]
        while kids is not None:
            _, _, _, _, cx, cy = geom[node]
            if x1 < cx:
                q = 0
            elif x0 > cx:
                q = 1
            else:
                break
            if y0 > cy:
                q += 2
            elif y1 >= cy:
                break
            node = kids[q]
            count[node] += 1
            kids = kids_of[node]
        items = self._items[node]
        items[entity] = rec
        self._snap[node] = None
        self._home[entity] = self._fit[node]
        if kids is None and len(items) > self._threshold and self._level[node] < self._max_depth:
            self._split(node)

    def _relocate(self, node: int, rec: _Rec) -> None:
        """Move an entry out of ``node``: climb to the first ancestor that contains its new
        box (uncounting it on the way), sink from there, then merge the highest node the
        climb left at or under ``threshold``.

        The containment test is inlined and the climb kept in a loop of its own (a few
        hundred relocations a frame when everything moves).
        """
        x0, y0, x1, y1, entity = rec
        fit = self._fit
        parent = self._parent
        n = node
        while True:
            fx0, fy0, fx1, fy1, _, _, _, _, _ = fit[n]
            if fx0 < x0 and x1 < fx1 and fy0 < y0 and y1 < fy1:
                break
            if n == self._root:
                # Beyond the root: take it out and insert it afresh, which grows the root
                # (one rebuild per doubling) or keeps it at the root if it can grow no
                # further.
                self._remove(entity)
                self._insert(entity, rec[:4])
                return
            n = parent[n]
        del fit[node][_ITEMS][entity]
        self._snap[node] = None
        count = self._count
        kids_of = self._kids
        threshold = self._threshold
        highest_mergeable = -1
        m = node
        while m != n:  # the nodes climbed, which no longer hold the entry
            count[m] -= 1
            if count[m] <= threshold and kids_of[m] is not None:
                highest_mergeable = m
            m = parent[m]
        self._sink(rec, n)
        if highest_mergeable >= 0:
            self._merge(highest_mergeable)

    def _split(self, node: int) -> None:
        """Give an overflowing leaf four children and push down each entry that fits
        strictly into one; split again any child that still overflows (identical boxes
        stop at max_depth). The leaf's entries go down as one batch (``_descend``): dealt
        into lists level by level, each stored in a dict once, where it ends.
        """
        items = self._items[node]
        batch = list(items.values())
        items.clear()
        self._count[node] -= len(batch)
        self._descend(node, batch)

    def _make_kids(self, node: int) -> _Kids:
        """Give a leaf its four (empty) children: the leaf becomes an internal node."""
        x0, y0, x1, y1, cx, cy = self._geom[node]
        home = self._fit[node]
        fx0, fy0, fx1, fy1 = home[:4]
        level = self._level[node] + 1
        new_node = self._new_node
        # A child's fit bounds: its parent's on the outer edges, the split lines inside.
        kids: _Kids = (
            new_node((x0, y0, cx, cy), (fx0, fy0, cx, cy), node, level),
            new_node((cx, y0, x1, cy), (cx, fy0, fx1, cy), node, level),
            new_node((x0, cy, cx, y1), (fx0, cy, cx, fy1), node, level),
            new_node((cx, cy, x1, y1), (cx, cy, fx1, fy1), node, level),
        )
        self._kids[node] = kids
        home[_KIDS] = kids
        return kids

    def _merge(self, node: int) -> None:
        """Collapse the subtree under ``node`` into ``node`` itself, freeing its nodes."""
        items = self._items[node]
        homes = self._home
        home = self._fit[node]
        stack = list(self._kids[node] or ())
        self._kids[node] = None
        self._snap[node] = None
        home[_KIDS] = None
        while stack:
            n = stack.pop()
            for entity, rec in self._items[n].items():
                items[entity] = rec
                homes[entity] = home
            self._items[n] = {}
            kids = self._kids[n]
            if kids is not None:
                stack.extend(kids)
                self._kids[n] = None
            self._free.append(n)

    def _collect(self, stack: list[int], out: list[int]) -> None:
        """Append every id in the subtrees of the nodes in ``stack`` (emptied) to ``out``."""
        items = self._items
        kids_of = self._kids
        pop = stack.pop
        extend = stack.extend
        add = out.extend
        while stack:
            n = pop()
            add(items[n])
            kids = kids_of[n]
            if kids is not None:
                # Every child, empty ones too: cheaper than a generator that skips them
                # (bench/results/amd-epyc-2026-11-24/decisions.md).
                extend(kids)

    def _intersecting(self, order: Iterable[tuple[int, int]]) -> Iterator[tuple[int, list[int]]]:
        """For each ``(node, entity)`` of ``order``: the entity and every id whose box
        intersects its box, the entity itself included (callers drop it: cheaper than a
        test per hit). Its ancestors' own entries first, then its node's subtree, pruned
        by bounds. One generator for a batch spares a call and its set-up per entity.

        Records are read by subscript, not unpacked: most fail the first or second test
        (with the generator, -8% instructions per entity at 10% moving, N = 10,000)."""
        items = self._items
        parent = self._parent
        scan = self._snapshots.scan
        snaps = self._snap
        snapshot = self._snapshots.get
        kids_of = self._kids
        geom = self._geom
        count = self._count
        for node, entity in order:
            found: list[int] = []
            report = found.append
            x0, y0, x1, y1, _ = items[node][entity]
            n = parent[node]
            while n >= 0:
                # Most ancestors' straddlers lie far from a small box: their snapshot's
                # bounding boxes say so in a few comparisons, without a call (6.9 ancestors
                # per entity at N = 200,000, 0.05 of them worth a look).
                snap = snaps[n]
                if snap is None:
                    snap = snapshot(n)
                # The straddlers across the vertical line lie in a narrow x-range about
                # it, the others in a narrow y-range about the horizontal one: two
                # subscripts and a comparison or two rule out most ancestors (-4%).
                if (snap[0] <= x1 and x0 <= snap[1]) or (snap[2] <= y1 and y0 <= snap[3]):
                    if len(snap) > 4:  # a whole snapshot: bisect its windows
                        scan(n, x0, y0, x1, y1, report)
                    else:  # a small node (most ancestors far from the root): read it here
                        for rec in items[n].values():
                            if rec[0] <= x1 and x0 <= rec[2] and rec[1] <= y1 and y0 <= rec[3]:
                                report(rec[4])
                n = parent[n]
            if kids_of[node] is None:  # a leaf (most entities): no walk to set up (-3%)
                for rec in items[node].values():
                    if rec[0] <= x1 and x0 <= rec[2] and rec[1] <= y1 and y0 <= rec[3]:
                        report(rec[4])
                yield entity, found
                continue
            stack = [node]
            while stack:
                n = stack.pop()
                kids = kids_of[n]
                if kids is None:
                    for rec in items[n].values():
                        if rec[0] <= x1 and x0 <= rec[2] and rec[1] <= y1 and y0 <= rec[3]:
                            report(rec[4])
                    continue
                scan(n, x0, y0, x1, y1, report)
                for child in kids:
                    if count[child]:
                        nx0, ny0, nx1, ny1, _, _ = geom[child]
                        if nx0 <= x1 and x0 <= nx1 and ny0 <= y1 and y0 <= ny1:
                            stack.append(child)
            yield entity, found

    def _grow_to(self, box: tuple[float, ...]) -> None:
        """Make a root that contains ``box`` if one can: the first root, or the current root
        doubled toward ``box`` as often as needed (at most ``_growth.MAX_GROWTH`` doublings past
        the original bounds, each edge clamped to the finite range), the tree rebuilt once
        around it."""
        root = self._root
        if root < 0:
            # No bounds given and nothing indexed yet: a square around the first box.
            self._root = self._new_root(_first_root(box), 0)
            return
        bounds, level = _grown(self._geom[root], self._level[root], box)
        if level != self._level[root]:
            self._rebuild(bounds, level)

    def _rebuild(self, bounds: tuple[float, float, float, float], level: int) -> None:
        """Rebuild the tree, with every entry, under a new root with these bounds (which
        hold every entry the root can reach: the caller grew them)."""
        records = [home[_ITEMS][e] for e, home in self._home.items()]
        self._home.clear()
        self._clear_nodes()
        self._root = self._new_root(bounds, level)
        if records:
            self._descend(self._root, records)
