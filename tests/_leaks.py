"""The house's check that a loop keeps nothing: no reference gained or lost, no memory kept.

Compiled code that leaks a reference or a block a call does not fail any answer; it fails
a long run. The check runs the loop once to warm every cache (CPython's type attribute
cache, free lists, interned strings), notes the reference counts of what the loop touches,
then compares the traced memory after a first batch of rounds and after many more: a leak
of one object a round grows with the rounds, a cache filled once does not.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any


def assert_loop_keeps_nothing(
    loop: Callable[[int], None],
    watched: list[Any],
    *,
    warm: int = 50,
    first: int = 200,
    more: int = 2000,
    slack: int = 4096,
) -> None:
    """After ``loop(warm)``, ``loop(first)`` and then ``loop(more)`` leave the reference
    counts of ``watched`` as they were and the traced memory within ``slack`` bytes of
    where it stood after the first batch."""
    loop(warm)
    gc.collect()
    counts = [sys.getrefcount(x) for x in watched]
    tracemalloc.start()
    try:
        loop(first)
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        loop(more)
        gc.collect()
        end = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(x) for x in watched] == counts
    assert end - start < slack, (start, end)
