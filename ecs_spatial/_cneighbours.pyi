"""The array work of ``neighbours.py``, compiled (see ``_cneighbours.c``)."""

from array import array
from collections.abc import Callable, Iterable
from typing import Any

_Period = tuple[float, float, float, float, float, float] | None

def near_csr(
    candidates: Any, boxes: Any, rank: Any, entities: Any, n: int, radius: float,
    period: _Period, /,
) -> tuple[array[int], array[int]]: ...
def grid_csr(
    boxes: Any, rank: Any, entities: Any, n: int, radius: float, period: _Period, /,
) -> tuple[array[int], array[int]] | None: ...
def without_self(
    watchers: Any, offsets: Any, ids: Any, /
) -> tuple[array[int], array[int]]: ...
def diff_csr(
    old_watchers: Any, old_offsets: Any, old_ids: Any, watchers: Any, offsets: Any, ids: Any,
    /,
) -> tuple[array[int], array[int]]: ...
def translate(table: Any, values: Any, /) -> array[int]: ...
def gather(
    get: Callable[[int], Any], entities: Iterable[int], slot_of: dict[int, int], boxes: Any,
    radius: float, period: _Period, /,
) -> tuple[array[int], array[float], list[int], bool]: ...
def gather_moves(
    ids: Any, boxes: Any, n: int, slot_at: Any, kept: Any, radius: float, period: _Period,
    slots: Any, grown: Any, at: int, /,
) -> tuple[int, list[int], bool]: ...
