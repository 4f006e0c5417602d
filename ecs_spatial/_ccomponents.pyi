"""The read loop of ``components.py``, compiled (see ``_ccomponents.c``)."""

from collections.abc import Callable
from typing import Any

def configure(
    position_type: type, aabb_type: type, bad_box: Callable[..., Exception],
    rearm: Callable[..., None], /,
) -> None: ...
def read_boxes(
    todo: list[int], members: dict[int, list[Any]], dirty: list[int], changed: list[list[Any]], /
) -> None: ...
