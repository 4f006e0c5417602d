"""``Box(...)`` with the compiled core is ``Box(...)`` of the reference, in every case.

With the compiled core, ``index.py`` installs the core's ``_box_new`` as ``Box.__new__`` and
the core's call of the class (``_cquadtree._box_vectorcall``): a call of ``Box`` itself with
four floats that form a valid box is answered without going through ``__new__``. These tests
drive the installed constructor and the reference's (``geometry._reference_box_new`` with the
type's own call) side by side over good and bad arguments (types, NaN, infinities, ints, big
ints, bools, float subclasses, keywords, wrong arities, a subclass of Box) and require the
same Box (type, fields to the bit, the very float objects given) or the same error (type and
text); then pickles, copies, ``_replace`` and a ``__new__`` or ``__init__`` put on Box, and
the references held (none kept, none lost).
"""

from __future__ import annotations

import copy
import gc
import math
import pickle
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_spatial import geometry, index
from ecs_spatial.geometry import Box

try:
    from ecs_spatial import _cquadtree
except ImportError:  # a pure-Python build
    _cquadtree = None  # type: ignore[assignment]

compiled = pytest.mark.skipif(not index.NATIVE, reason="the compiled core is not in use")
FIELDS = ("min_x", "min_y", "max_x", "max_y")


class _Real(float):
    """A float subclass (numpy.float64 is one): not a plain float."""


class SubBox(Box):
    """A subclass of Box, as users write them."""

    __slots__ = ()


class NewBox(Box):
    """A subclass with a ``__new__`` of its own."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> NewBox:
        return super().__new__(cls, *args, **kwargs)  # type: ignore[return-value]


@contextmanager
def reference_box() -> Iterator[None]:
    """Box as the reference defines it, for the duration: its own ``__new__`` and the type's
    own call."""
    installed = Box.__dict__["__new__"]
    was = _cquadtree._box_vectorcall(False) if _cquadtree is not None else False
    try:
        Box.__new__ = geometry._reference_box_new  # type: ignore[method-assign]
        yield
    finally:
        Box.__new__ = installed  # type: ignore[method-assign]
        if _cquadtree is not None:
            _cquadtree._box_vectorcall(was)


def outcome(make: Callable[[], object]) -> object:
    """What a construction gives: the Box's type, its fields' bits and types, or the error."""
    try:
        box = make()
    except Exception as error:  # the error is the answer here
        return ("raised", type(error).__name__, str(error))
    assert isinstance(box, tuple)
    return (type(box).__name__, [(type(c).__name__, float(c).hex()) for c in box])


def both(make: Callable[[], object]) -> tuple[object, object]:
    """``make()`` with Box as installed, then with the reference's Box."""
    got = outcome(make)
    with reference_box():
        expected = outcome(make)
    return got, expected


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-1e6, 1e6),
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, 2**53 + 1, 10**400, -(10**400), True, False, Fraction(1, 3),
                     _Real(2.5), _Real(math.nan), "1", None, b"1", 1j, -0.0]),
)


@settings(max_examples=400, deadline=None)
@given(args=st.lists(values, min_size=0, max_size=6),
       keywords=st.integers(0, 4), cls=st.sampled_from([Box, SubBox, NewBox]))
def test_any_construction_is_the_references(args: list[object], keywords: int,
                                            cls: type[Box]) -> None:
    """Any arguments, the last ``keywords`` of them by name, to Box or a subclass: the same
    Box or the same error as the reference's."""
    keywords = min(keywords, len(args), 4)
    positional = args[: len(args) - keywords]
    named = dict(zip(FIELDS[len(args) - keywords:], args[len(args) - keywords:], strict=False))
    got, expected = both(lambda: cls(*positional, **named))  # type: ignore[arg-type]
    assert got == expected


@settings(max_examples=400, deadline=None)
@given(coords=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=4,
                       max_size=4), order=st.booleans())
def test_four_floats_are_the_references(coords: list[float], order: bool) -> None:
    """Four floats (the fast path's case: sorted into a valid box half the time, NaN and the
    infinities among them): the same Box holding the very float objects given, or the same
    error."""
    if order and not any(math.isnan(c) for c in coords):
        x0, y0, x1, y1 = coords
        coords = [min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)]
    got, expected = both(lambda: Box(*coords))
    assert got == expected
    if isinstance(got, tuple) and got[0] == "Box":
        box = Box(*coords)
        assert all(a is b for a, b in zip(box, coords, strict=True))


def test_the_box_is_the_references_box() -> None:
    """A Box made by the fast path is a Box like any other: its class, isinstance, repr,
    equality and hash as a tuple, ``_replace`` (validated), ``_make``, pickles and copies
    (through ``Box.__new__``), and a float subclass or an int converted."""
    box = Box(1.0, 2.0, 3.0, 4.0)
    assert type(box) is Box and isinstance(box, tuple)
    assert repr(box) == "Box(min_x=1.0, min_y=2.0, max_x=3.0, max_y=4.0)"
    assert box == (1.0, 2.0, 3.0, 4.0) and hash(box) == hash((1.0, 2.0, 3.0, 4.0))
    assert box._replace(min_x=0.5) == Box(0.5, 2.0, 3.0, 4.0)
    with pytest.raises(ValueError):
        box._replace(min_x=5.0)
    assert Box._make([1.0, 2.0, 3.0, 4.0]) == box
    for again in (pickle.loads(pickle.dumps(box)), copy.copy(box), copy.deepcopy(box)):
        assert type(again) is Box and again == box
    assert type(Box(_Real(1.0), 2.0, 3.0, 4.0)[0]) is float
    assert Box(1, 2, 3, 4) == box


@compiled
def test_a_new_or_init_put_on_box_is_called() -> None:
    """A ``__new__`` or an ``__init__`` put on Box after installation is called by
    ``Box(...)``, as the reference calls it; taken away, the fast path comes back."""
    calls: list[str] = []
    installed = Box.__dict__["__new__"]

    def counting_new(cls: type[Box], *args: float) -> Box:
        calls.append("new")
        return installed(cls, *args)  # type: ignore[no-any-return]

    def counting_init(self: Box, *args: float) -> None:
        calls.append("init")

    try:
        Box.__new__ = counting_new  # type: ignore[assignment]
        assert Box(1.0, 2.0, 3.0, 4.0) == (1.0, 2.0, 3.0, 4.0)
        Box.__new__ = installed  # type: ignore[method-assign]
        Box.__init__ = counting_init  # type: ignore[assignment, method-assign]
        assert Box(1.0, 2.0, 3.0, 4.0) == (1.0, 2.0, 3.0, 4.0)
    finally:
        Box.__new__ = installed  # type: ignore[method-assign]
        if "__init__" in Box.__dict__:
            del Box.__init__
    assert calls == ["new", "init"]
    assert Box(1.0, 2.0, 3.0, 4.0) == (1.0, 2.0, 3.0, 4.0)
    assert calls == ["new", "init"]


def test_installed_with_the_compiled_core_alone() -> None:
    """One switch: the core's call of Box is installed with the compiled index, and not
    under ``ECS_SPATIAL_PURE=1`` or without the core."""
    if _cquadtree is None:
        assert not index.NATIVE
        return
    was = _cquadtree._box_vectorcall(True)
    _cquadtree._box_vectorcall(was)
    assert was is index.NATIVE


def test_no_reference_kept_or_lost() -> None:
    """A long loop of constructions, good and bad, keeps the refcounts of its inputs and of
    the class flat, frees every Box (a weak reference cannot be taken to a tuple, so the
    class's count and tracemalloc stand witness) and leaves the traced memory flat."""
    import tracemalloc

    coords = [1.5, 2.5, 3.5, 4.5]
    bad: list[list[object]] = [[math.nan, 0.0, 1.0, 1.0], [2.0, 0.0, 1.0, 1.0], [1, 2, 3, 4],
                               ["x", 0.0, 1.0, 1.0], [1.0, 2.0, 3.0], [10**400, 0, 1, 1]]
    watched = [*coords, Box, SubBox]
    before = [sys.getrefcount(v) for v in watched]

    def loop(n: int) -> None:
        for i in range(n):
            Box(*coords)
            SubBox(*coords)
            Box(min_x=coords[0], min_y=coords[1], max_x=coords[2], max_y=coords[3])
            with suppress(ValueError, TypeError, OverflowError):
                Box(*bad[i % len(bad)])  # type: ignore[arg-type]

    loop(2_000)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        loop(20_000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 16 * 1024, grown
    assert [sys.getrefcount(v) for v in watched] == before
    ref = weakref.ref(SubBox)
    assert ref() is SubBox
