"""geometry.Box's ``__new__``, call and dealloc, compiled (see ``_cgeometry.c``)."""

from collections.abc import Callable
from typing import Any

def install(box: type[tuple[Any, ...]], reference_new: Callable[..., Any], /) -> None: ...
