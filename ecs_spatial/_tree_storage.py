"""The quadtree's storage: the fields every unit of the class reads and writes (its slots,
``INDEX_FIELDS``, laid out as "Layout" in ``quadtree``'s module docstring says), how a tree is
made and emptied (``__new__``, ``__init__``, ``_reset``), and the container protocol (``len``,
``in``, iteration, ``[]``, ``get``) with the configuration's properties.

The class ``quadtree.QuadTree`` is composed of one mixin per unit: this module's ``_Storage``,
``_tree_nodes._Nodes``, ``_tree_updates._Updates`` and so on. A unit reaches the others only
through ``self``, and imports from this module only plain constants (the layout's) and, for
the type checker alone, ``TreeBase``: the types of the fields, and of the methods one unit
calls on another. At run time every mixin is a plain class of empty ``__slots__``, so that an
instance keeps the fields above and no ``__dict__``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from operator import index
from typing import TYPE_CHECKING, Any, TypeVar

from ._records import Rec, coords, lookup_id, missing, to_box
from ._snapshots import Quick, Snap, StraddlerSnapshots
from ._wrap import Period, period_of
from .geometry import Box

__all__ = [
    "BAD_SETTING",
    "BUSY",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_THRESHOLD",
    "INDEX_FIELDS",
    "ITEMS",
    "KIDS",
    "NODE",
    "Geom",
    "Kids",
    "TreeBase",
]

_coords = coords
_lookup_id = lookup_id
_missing = missing
_to_box = to_box
_int = int

#: The reference ``QuadTree``'s own fields (its ``__slots__``): what a pickle of format 0
#: wrote for it (but ``_busy`` and ``_pending``, added since, which no state holds: a tree is
#: busy, and holds deferred discards, only while a call of its own runs), and never a
#: subclass's own slots, which a copy or a pickle carries (``_tree_state``).
INDEX_FIELDS = (
    "_bounds_hint",
    "_busy",
    "_count",
    "_fit",
    "_free",
    "_geom",
    "_home",
    "_items",
    "_kids",
    "_level",
    "_max_depth",
    "_parent",
    "_pending",
    "_root",
    "_snap",
    "_snapshots",
    "_threshold",
    "_wrap",
)

#: A node's geometry: (min_x, min_y, max_x, max_y, split_x, split_y), for queries; and its
#: fit bounds with the same split point, for placement: (fit_x0, fit_y0, fit_x1, fit_y1, ...).
Geom = tuple[float, float, float, float, float, float]
#: A node's four children: low-left, low-right, high-left, high-right.
Kids = tuple[int, int, int, int]
#: Where a node's *home record*, which the entity map points at, holds its entries, its node
#: id and its children: a mutable list [fit_x0, fit_y0, fit_x1, fit_y1, split_x, split_y,
#: entries, node id, children or None], kept in step with the per-node lists on split and merge.
ITEMS, NODE, KIDS = 6, 7, 8
#: What a change made while the tree is busy raises, in both classes (the compiled core's
#: ``guard`` raises this very string, read from here): see "Calls back into
#: Python" in ``quadtree``'s module docstring.
#: The refusal of a setting (threshold, max_depth): its name, its least value, the value (a
#: template the compiled core formats too: _cquadtree_src/constants.h).
BAD_SETTING = "{} must be an int >= {}, got {!r}"
BUSY = (
    "QuadTree changed while it was busy (a where= predicate, a conversion or an iterator it "
    "called, a finaliser run by the garbage collector, or another thread)"
)
#: ``QuadTree()``'s defaults (the class docstring says why 16), which the compiled core's
#: generated header states too (scripts/gen_core_headers.py).
DEFAULT_THRESHOLD = 16
DEFAULT_MAX_DEPTH = 8


class TreeBase:
    """What every unit of the class may use of ``self``, for the type checker alone: the
    mixins derive from it only under ``TYPE_CHECKING`` (from ``object`` at run time), so it
    adds nothing to the class's MRO and no method of its can ever run. It states the fields'
    types, as ``_reset`` makes them, and the signatures of the methods one unit calls on
    another, each defined in exactly one unit (which the type checker holds to them). No
    ``__slots__`` here: the type checker would refuse the units' writes to the fields, which
    only ``_Storage`` declares."""

    _bounds_hint: Box | None
    _threshold: int
    _max_depth: int
    _home: dict[int, list[Any]]
    _geom: list[Geom]
    _fit: list[list[Any]]
    _kids: list[Kids | None]
    _parent: list[int]
    _level: list[int]
    _count: list[int]
    _items: list[dict[int, Rec]]
    _free: list[int]
    _snap: list[Snap | Quick | None]
    _snapshots: StraddlerSnapshots
    _root: int
    _busy: bool
    _pending: list[int]
    _wrap: Period | None

    @abstractmethod
    def __contains__(self, entity: object) -> bool: ...

    @abstractmethod
    def _reset(self, hint: Box | None, threshold: int, max_depth: int) -> None: ...

    @abstractmethod  # _tree_nodes
    def _clear_nodes(self) -> None: ...

    @abstractmethod
    def _new_root(self, bounds: tuple[float, float, float, float], level: int) -> int: ...

    @abstractmethod
    def _place(self, rec: Rec) -> None: ...

    @abstractmethod  # _tree_queries
    def _wrapped_query(self, x0: float, y0: float, x1: float, y1: float) -> list[int]: ...

    @abstractmethod
    def _contains(self, node: int, rec: Rec) -> bool: ...

    @abstractmethod
    def _descend(self, node: int, batch: list[Rec]) -> None: ...

    @abstractmethod
    def _relocate(self, node: int, rec: Rec) -> None: ...

    @abstractmethod
    def _merge(self, node: int) -> None: ...

    @abstractmethod
    def _grow_to(self, box: tuple[float, ...]) -> None: ...

    @abstractmethod
    def _rebuild(self, bounds: tuple[float, float, float, float], level: int) -> None: ...

    @abstractmethod  # _tree_updates
    def _insert(self, entity: object, box: Any) -> None: ...

    @abstractmethod
    def _insert_records(self, records: list[Rec]) -> None: ...

    @abstractmethod
    def _remove(self, entity: object) -> None: ...

    @abstractmethod
    def _settle(self) -> None: ...


if TYPE_CHECKING:
    _Base = TreeBase
else:
    _Base = object


_T = TypeVar("_T", bound="_Storage")


class _Storage(_Base):
    """The fields, the making of a tree and the container protocol (see the module
    docstring)."""

    __slots__ = INDEX_FIELDS  # one tuple: pickles and copies know these fields


    def __new__(cls: type[_T], *args: object, **kwargs: object) -> _T:
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
        wrap: Box | tuple[float, float, float, float] | None = None,
    ) -> None:
        if getattr(self, "_busy", False):  # a subclass's __new__ may have skipped ours
            raise RuntimeError(BUSY)
        # type(), not isinstance(): an object can claim to be an int through __class__.
        # index(): an int subclass's own comparisons are not asked, nor is it kept (a cycle
        # through it would keep the tree alive where the compiled class cannot collect it).
        if type(threshold) is bool or not issubclass(type(threshold), int) or index(threshold) < 1:
            raise ValueError(BAD_SETTING.format("threshold", 1, threshold))
        if type(max_depth) is bool or not issubclass(type(max_depth), int) or index(max_depth) < 0:
            raise ValueError(BAD_SETTING.format("max_depth", 0, max_depth))
        period = None if wrap is None else period_of(wrap)
        if bounds is None and period is not None:
            bounds = Box(period[0], period[1], period[4], period[5])
        self._reset(None if bounds is None else Box(*_coords(bounds)), threshold, max_depth)
        self._wrap = period

    def _reset(self, hint: Box | None, threshold: int, max_depth: int) -> None:
        """Become an empty tree with this configuration (``__init__``'s, checked)."""
        self._bounds_hint = hint
        self._threshold = index(threshold)  # an exact int, as the compiled class keeps
        self._max_depth = index(max_depth)
        # entity -> the *home record* of its node (below): one lookup gives move() all it needs.
        self._home: dict[int, list[Any]] = {}
        self._geom: list[Geom] = []
        self._fit: list[list[Any]] = []
        self._kids: list[Kids | None] = []
        self._parent: list[int] = []
        self._level: list[int] = []
        self._count: list[int] = []
        self._items: list[dict[int, Rec]] = []
        self._free: list[int] = []
        # Each node's straddler snapshot, None until needed and again once stale (the update
        # paths write that None inline); built and read by ``_snapshots``.
        self._snap: list[Snap | Quick | None] = []
        self._snapshots = StraddlerSnapshots(self._items, self._geom, self._snap)
        self._root: int = -1
        if self._bounds_hint is not None:
            self._root = self._new_root(self._bounds_hint, 0)
        # True while a call runs Python: every change then raises (never pickled), but a
        # discard, deferred to _pending until the outermost busy call ends.
        self._busy: bool = False
        self._pending: list[int] = []
        # The period of a wrapped tree (``_wrap``), None for a plain one: set after _reset.
        self._wrap: Period | None = None

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
        return _to_box(home[ITEMS][key])

    def get(self, entity: int, default: Box | None = None) -> Box | None:
        """The current box of ``entity``, or ``default`` if it is not in the index (nor for
        any value that is not an id: see ``in``)."""
        key = entity if type(entity) is _int else _lookup_id(entity)
        home = self._home.get(key)  # type: ignore[arg-type]
        return default if home is None else _to_box(home[ITEMS][key])

    def __repr__(self) -> str:
        wrap = "" if self._wrap is None else f", wrap={self.wrap!r}"
        return (
            f"QuadTree(bounds={self.bounds!r}, threshold={self._threshold}, "
            f"max_depth={self._max_depth}{wrap}, entities={len(self._home)})"
        )

    @property
    def wrap(self) -> Box | None:
        """The period of a wrapped tree, as the box ``(x0, y0, x0 + W, y0 + H)`` whose min
        corner is the canonical range's (``None`` for a plain tree): see the class
        docstring."""
        period = self._wrap
        if period is None:
            return None
        return Box(period[0], period[1], period[4], period[5])

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
