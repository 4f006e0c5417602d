"""The pair diff of ``pair_set.py``, compiled (see ``_cpair_set.c``)."""

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

def configure(
    reference: Callable[..., tuple[list[Any], list[Any]]],
    flat_reference: Callable[..., tuple[list[tuple[int, int]], list[tuple[int, int]]]]
    | None = None,
    touched_reference: Callable[..., tuple[list[tuple[int, int]], list[tuple[int, int]]]]
    | None = None,
    apply_reference: Callable[..., None] | None = None,
    /,
) -> None: ...
def diff_sorted(old: Sequence[Any], new: Sequence[Any]) -> tuple[list[Any], list[Any]]: ...
def diff_sorted_flat(
    old: Any, new: Any
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]: ...
def diff_touched(
    partners: Mapping[int, AbstractSet[int]], groups: tuple[Iterable[int], ...],
    found: Iterable[tuple[int, int]],
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]: ...
def apply_diff(
    pairs: dict[tuple[int, int], None], partners: dict[int, set[int]] | None,
    exits: list[tuple[int, int]], enters: list[tuple[int, int]],
) -> None: ...
def deliver_pairs(
    cursor: Iterator[int], keys: list[tuple[int, int]], registry: dict[str, Any], name: str,
    handlers: Any, only: Callable[[], Any], entities: dict[int, Any], dead: AbstractSet[int],
    silent: set[Any], space: dict[str, Any], slot: str, database: object, role: int,
    fresh: tuple[object, type] | None, /,
) -> int: ...
