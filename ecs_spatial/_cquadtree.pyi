"""Type stub of the compiled core: the reference's API (ecs_spatial.quadtree.QuadTree), plus
buffers in the batch methods and the pairs as an array.

The same contract as the reference's, argument names and keywords included (a call the
reference refuses is refused with its TypeError, word for word). Ids are ints in the signed
64-bit range (``OverflowError`` on the way in, absent to every lookup). Answers that are sets
of ids come in ascending order; ``nearest`` by distance then id; the casts by ``t`` then id.
"""

from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .geometry import Box
from .quadtree import NodeInfo

_BoxLike = Box | tuple[float, float, float, float]
_Record = tuple[float, float, float, float, int]

class QuadTree:
    def __init__(
        self,
        bounds: _BoxLike | None = None,
        *,
        threshold: int = 16,
        max_depth: int = 8,
        wrap: _BoxLike | None = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    def __contains__(self, entity: object) -> bool: ...
    def __iter__(self) -> Iterator[int]:
        """Every id, in ascending order."""
    def __getitem__(self, entity: int) -> Box: ...
    def get(self, entity: int, default: Box | None = None) -> Box | None: ...
    @property
    def bounds(self) -> Box | None: ...
    @property
    def threshold(self) -> int: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def wrap(self) -> Box | None: ...
    def insert(self, entity: int, box: _BoxLike) -> None:
        """Add ``entity`` (an int from -2**63 to 2**63 - 1, else OverflowError)."""
    def insert_many(
        self, entities: Iterable[int] | Any, boxes: Iterable[_BoxLike] | Any
    ) -> None: ...
    def move(self, entity: int, box: _BoxLike) -> None: ...
    def move_many(
        self,
        entities: Iterable[int] | Any,
        boxes: Iterable[_BoxLike] | Any,
        *,
        atomic: bool = True,
    ) -> None: ...
    def remove(self, entity: int) -> None: ...
    def discard(self, entity: int) -> None: ...
    def clear(self) -> None: ...
    def query(self, box: _BoxLike) -> list[int]:
        """Every id whose box intersects ``box``, each once, in ascending order."""
    def query_point(self, x: float, y: float) -> list[int]:
        """Every id whose box contains the point, each once, in ascending order."""
    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        """Every id whose box lies within ``r`` of the point, each once, in ascending order."""
    def query_radius_many(
        self,
        points: Iterable[tuple[float, float]] | Any,
        radius: float | Iterable[float] | Any,
    ) -> tuple[array[int], array[int]]:
        """``query_radius`` for each point: ``(offsets, ids)``, two ``array('q')`` (CSR)."""
    def nearest(
        self,
        x: float,
        y: float,
        k: int = 1,
        *,
        where: Callable[[int], object] | None = None,
        max_distance: float = ...,
    ) -> list[int]:
        """The ``k`` nearest ids, by distance, then by id."""
    def raycast(self, x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, float]]:
        """``(id, t)`` for every box the segment touches, by ``t``, then by id."""
    def cast_box(self, box: _BoxLike, dx: float, dy: float) -> list[tuple[int, float]]:
        """``(id, t)`` for every box the moving box touches, by ``t``, then by id."""
    def raycast_first(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        *,
        where: Callable[[int], object] | None = None,
    ) -> tuple[int, float] | None: ...
    def cast_box_first(
        self,
        box: _BoxLike,
        dx: float,
        dy: float,
        *,
        where: Callable[[int], object] | None = None,
    ) -> tuple[int, float] | None: ...
    def query_entity(self, entity: int) -> list[int]:
        """Every other id whose box intersects ``entity``'s, each once, in ascending order."""
    def find_intersections_for(self, entities: Iterable[int]) -> list[tuple[int, int]]:
        """The pairs ``(a, b)``, ``a < b``, involving ``entities``, sorted."""
    def find_all_intersections(self) -> list[tuple[int, int]]:
        """Every pair ``(a, b)``, ``a < b``, of intersecting boxes, sorted."""
    def find_all_intersections_array(self) -> array[int]:
        """``find_all_intersections()`` flattened into an ``array('q')``, in its order."""
    def state_hash(self) -> int: ...
    def nodes(self, box: _BoxLike | None = None) -> Iterator[NodeInfo]:
        """The nodes, root first, depth-first, children low-left to high-right."""
    def depth(self) -> int: ...
    def check(self) -> None: ...
    def insert_records(self, records: Iterable[_Record]) -> None: ...
    def move_records(self, records: Iterable[_Record]) -> None: ...
    def __copy__(self) -> QuadTree: ...
    def __deepcopy__(self, memo: dict[int, Any] | None) -> QuadTree: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def __getstate__(self) -> dict[str, Any]:
        """The reference's state, its ids in ascending order."""
    def __setstate__(self, state: object) -> None: ...

def _hypot(dx: float, dy: float) -> float: ...
def _segment_entry(
    box: tuple[float, float, float, float], x0: float, y0: float, x1: float, y1: float
) -> float | None: ...
def _sweep_time(
    box: tuple[float, float, float, float],
    dx: float,
    dy: float,
    other: tuple[float, float, float, float],
) -> float | None: ...
def _midpoint(a: float, b: float) -> float: ...
def _ulp(x: float) -> float: ...
