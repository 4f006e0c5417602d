"""The pair diff of ``pair_set.py``, compiled (see ``_cpair_set.c``)."""

from collections.abc import Callable, Sequence
from typing import Any

def configure(reference: Callable[..., tuple[list[Any], list[Any]]], /) -> None: ...
def diff_sorted(old: Sequence[Any], new: Sequence[Any]) -> tuple[list[Any], list[Any]]: ...
