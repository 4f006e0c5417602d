"""The read loop of ``_members.py``, compiled (see ``_cmembers.c``)."""

from collections.abc import Callable
from typing import Any

def configure(
    position_type: type, aabb_type: type, bad_box: Callable[..., Exception],
    rearm: Callable[..., None], /,
) -> None: ...
def read_boxes(
    todo: list[int], members: dict[int, list[Any]], dirty: list[int], changed: list[list[Any]],
    ids: bytearray | None = None, boxes: bytearray | None = None, /,
) -> bool: ...
