"""``Box(...)`` with the compiled constructor is ``Box(...)`` of the reference, in every case.

When ``_cgeometry`` is built (and ``ECS_SPATIAL_PURE`` is not ``"1"``), ``geometry.py`` installs its
``box_new`` as ``Box.__new__``, its call of the class (a call of ``Box`` itself with four floats
that form a valid box is answered without going through ``__new__``) and its dealloc (with a short
free list). These tests drive the installed constructor and the reference's
(``geometry._reference_box_new`` through the type's own call) side by side over good and bad
arguments (floats to the edges of the range, ints huge and small, bools, Fractions, Decimals, NumPy
scalars when NumPy is there, float subclasses, strings, keywords, wrong arities, the subclasses of
Box) and require the same Box (type, fields to the bit, the very float objects given) or the same
error (type and text); then pickles (across the compiled and the pure build, each loading the
other's), copies, ``_replace``, a ``__new__``, ``__init__`` or ``__del__`` put on Box, the
subclasses' instances released through the compiled dealloc, and the references held (none kept,
none lost).
"""

from __future__ import annotations

import copy
import gc
import math
import os
import pickle
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from _leaks import assert_loop_keeps_nothing
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_spatial import geometry
from ecs_spatial.geometry import Box

try:
    from ecs_spatial import _cgeometry
except ImportError:  # a pure-Python build
    _cgeometry = None  # type: ignore[assignment]

compiled = pytest.mark.skipif(not geometry.COMPILED, reason="the compiled Box is not in use")
ROOT = Path(__file__).resolve().parent.parent
FIELDS = ("min_x", "min_y", "max_x", "max_y")


class _Real(float):
    """A float subclass (numpy.float64 is one): not a plain float."""


class SubBox(Box):
    """A subclass of Box, as users write them."""

    __slots__ = ()


class DictBox(Box):
    """A subclass without ``__slots__``: its instances have a ``__dict__``, which Python's own
    dealloc releases before the compiled one runs."""


class NewBox(Box):
    """A subclass with a ``__new__`` of its own."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> NewBox:
        return super().__new__(cls, *args, **kwargs)  # type: ignore[return-value]


@contextmanager
def reference_box() -> Iterator[None]:
    """Box as the reference defines it, for the duration: its own ``__new__``, through the
    type's own call (the compiled call of Box takes its fast path only while the installed
    ``__new__`` is in place)."""
    installed = Box.__dict__["__new__"]
    try:
        Box.__new__ = geometry._reference_box_new  # type: ignore[method-assign]
        yield
    finally:
        Box.__new__ = installed  # type: ignore[method-assign]


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


_MAX = sys.float_info.max
_TINY = 5e-324  # the least subnormal


def _numpy_scalars() -> list[object]:
    """NumPy's scalars, where NumPy is installed (an extra): real numbers that are not
    floats, a NaN, an infinity, a bool, and a long double too large for a float."""
    try:
        import numpy
    except ImportError:
        return []
    return [numpy.float64(1.5), numpy.float32(-2.25), numpy.int64(-7), numpy.uint8(200),
            numpy.float64(math.nan), numpy.float64(math.inf), numpy.bool_(True),
            numpy.longdouble(1e300) * numpy.longdouble(1e300)]


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(allow_subnormal=True, min_value=-1e-300, max_value=1e-300),
    st.floats(-1e6, 1e6),
    st.floats(min_value=_MAX / 2) | st.floats(max_value=-_MAX / 2),
    st.integers(-(2**64), 2**64),
    st.integers(-(2**1100), 2**1100),
    st.fractions(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 2**53 + 1, 10**400, -(10**400), True, False, Fraction(1, 3),
                     _Real(2.5), _Real(math.nan), "1", None, b"1", 1j, -0.0, _TINY, -_TINY,
                     _MAX, -_MAX, math.inf, -math.inf, Decimal("1e400"), *_numpy_scalars()]),
)


@settings(max_examples=400, deadline=None)
@given(args=st.lists(values, min_size=0, max_size=6),
       keywords=st.integers(0, 4), cls=st.sampled_from([Box, SubBox, DictBox, NewBox]))
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
    assert Box._fields == FIELDS and box._asdict() == dict(zip(FIELDS, box, strict=True))
    assert (box.min_x, box.min_y, box.max_x, box.max_y) == tuple(box)
    assert Box.min_x is geometry._BoxFields.min_x  # the NamedTuple's own getters
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


@compiled
def test_a_change_of_the_class_is_seen_after_many_calls() -> None:
    """The fast call remembers the state of Box it checked (its type's version tag), not
    Box's ``__new__`` once for all: after a run of calls, a ``__new__`` put on Box, an
    ``__init__`` put on its base (the NamedTuple class), or another attribute set and
    deleted are each seen by the next call, and the calls after them are the reference's."""
    calls: list[str] = []
    installed = Box.__dict__["__new__"]

    def counting_new(cls: type[Box], *args: float) -> Box:
        calls.append("new")
        return installed(cls, *args)  # type: ignore[no-any-return]

    def counting_init(self: Box, *args: float) -> None:
        calls.append("init")

    def run() -> None:
        for _ in range(50):
            assert Box(1.0, 2.0, 3.0, 4.0) == (1.0, 2.0, 3.0, 4.0)

    try:
        run()
        Box.__new__ = counting_new  # type: ignore[assignment]
        run()
        Box.__new__ = installed  # type: ignore[method-assign]
        run()
        geometry._BoxFields.__init__ = counting_init  # type: ignore[assignment, method-assign]
        run()
        del geometry._BoxFields.__init__
        run()
        Box.extra = 1  # type: ignore[attr-defined]
        run()
        del Box.extra  # type: ignore[attr-defined]
        run()
    finally:
        Box.__new__ = installed  # type: ignore[method-assign]
        if "__init__" in geometry._BoxFields.__dict__:
            del geometry._BoxFields.__init__
        if "extra" in Box.__dict__:
            del Box.extra  # type: ignore[attr-defined]
    assert calls == ["new"] * 50 + ["init"] * 50
    with pytest.raises(ValueError, match="min_x"):
        Box(2.0, 0.0, 1.0, 1.0)


def test_installed_with_the_compiled_box_alone() -> None:
    """One switch: the compiled Box is installed when ``_cgeometry`` is built and not under
    ``ECS_SPATIAL_PURE=1``, the index's switch too; without it Box is the reference, its
    ``__new__`` the one geometry.py writes."""
    expected = _cgeometry is not None and os.environ.get("ECS_SPATIAL_PURE") != "1"
    assert geometry.COMPILED is expected
    if expected:
        assert Box.__new__.__module__ == "ecs_spatial._cgeometry"
        assert Box.__dict__["__new__"].__func__ is Box.__new__
    else:
        assert Box.__dict__["__new__"] is geometry._reference_box_new
    assert Box.__mro__[1:] == (geometry._BoxFields, tuple, object)


@compiled
def test_installed_once() -> None:
    """A second installation is refused, and leaves Box as it was."""
    installed = Box.__dict__["__new__"]
    with pytest.raises(RuntimeError, match="has run already"):
        _cgeometry.install(Box, geometry._reference_box_new.__func__)
    assert Box.__dict__["__new__"] is installed


class _Tag:
    """An object a weak reference can watch."""


def test_subclass_instances_are_released() -> None:
    """The instances of Box's subclasses go through the compiled dealloc after Python's own:
    a subclass's ``__dict__`` is released, its ``__del__`` called once,
    and an instance in a reference cycle through its ``__dict__`` is collected."""
    box = DictBox(1.0, 2.0, 3.0, 4.0)
    box.tag = _Tag()  # type: ignore[attr-defined]
    tag = weakref.ref(box.tag)  # type: ignore[attr-defined]
    del box
    assert tag() is None

    calls: list[tuple[float, ...]] = []

    class Finalized(Box):
        __slots__ = ()

        def __del__(self) -> None:
            calls.append(tuple(self))

    Finalized(1.0, 2.0, 3.0, 4.0)
    assert calls == [(1.0, 2.0, 3.0, 4.0)]

    cycle = DictBox(0.0, 0.0, 1.0, 1.0)
    cycle.me = cycle  # type: ignore[attr-defined]
    cycle.tag = _Tag()  # type: ignore[attr-defined]
    tag = weakref.ref(cycle.tag)  # type: ignore[attr-defined]
    del cycle
    gc.collect()
    assert tag() is None


def test_a_box_of_anything_is_released() -> None:
    """A Box that ``tuple.__new__`` filled with other things than floats (the index's own
    careful paths never do; a user may) releases them, and a chain of a million such Boxes
    nested in one another is released without exhausting the C stack."""
    tag = _Tag()
    ref = weakref.ref(tag)
    box = tuple.__new__(Box, (tag, "x", None, 2))
    del tag, box
    assert ref() is None
    chain = tuple.__new__(Box, (0.0, 0.0, 1.0, 1.0))
    for _ in range(1_000_000):
        chain = tuple.__new__(Box, (chain, 0.0, 1.0, 1.0))
    del chain


def test_a_del_put_on_box_is_called() -> None:
    """A ``__del__`` put on Box itself is called for each Box released (the compiled dealloc
    runs the finalizer as Python's would), a Box it resurrects stays whole; taken away, Boxes
    are released as before."""
    calls: list[Box] = []
    kept: list[Box] = []

    def finalizer(self: Box) -> None:
        calls.append(Box(*self))
        if self.min_x == 9.0:
            kept.append(self)

    Box.__del__ = finalizer  # type: ignore[attr-defined]
    try:
        Box(1.0, 2.0, 3.0, 4.0)
        Box(9.0, 2.0, 30.0, 4.0)
    finally:
        del Box.__del__  # type: ignore[attr-defined]
    assert calls == [(1.0, 2.0, 3.0, 4.0), (9.0, 2.0, 30.0, 4.0)]
    assert kept == [(9.0, 2.0, 30.0, 4.0)] and type(kept[0]) is Box
    kept.clear()
    Box(1.0, 2.0, 3.0, 4.0)
    assert len(calls) == 2


def test_many_alive_at_once() -> None:
    """Boxes made and released in bulk (past the free list's length, in either order) are
    each whole and distinct while alive, and stay equal to what was given."""
    for _ in range(3):
        boxes = [Box(float(i), 0.0, float(i) + 1.0, 1.0) for i in range(100)]
        assert len({id(b) for b in boxes}) == 100
        assert [b.min_x for b in boxes] == [float(i) for i in range(100)]
        boxes.reverse()
        del boxes[::2]
        again = [Box(-1.0, -1.0, 0.0, 0.0) for _ in range(60)]
        assert all(b == (-1.0, -1.0, 0.0, 0.0) for b in again)
        assert [b.min_x for b in boxes] == [float(i) for i in range(98, -1, -2)]


def churn(steps: int, seed: int = 0) -> None:
    """``steps`` random constructions kept in a pool of at most 64 and dropped at random:
    Boxes of floats (the fast path, the free list's pushes and pops interleaved with live
    Boxes), of ints, of subclasses with and without a ``__dict__``, refused ones; every Box
    in the pool keeps what it was given. (The AddressSanitizer soak runs it long.)"""
    import random

    rng = random.Random(seed)
    pool: list[tuple[Box, tuple[float, ...]]] = []
    kinds: list[type[Box]] = [Box, Box, Box, SubBox, DictBox, NewBox]
    for _ in range(steps):
        x, y = rng.uniform(-1e3, 1e3), rng.uniform(-1e3, 1e3)
        args: list[Any] = [x, y, x + rng.random(), y + rng.random()]
        roll = rng.random()
        if roll < 0.1:
            args = [round(a) for a in args]
        elif roll < 0.15:
            args[rng.randrange(4)] = rng.choice([math.nan, math.inf, "x", True, 10**400])
        elif roll < 0.2:
            args[0], args[2] = args[2] + 1.0, args[0]
        try:
            box = rng.choice(kinds)(*args)
        except (TypeError, ValueError):
            continue
        pool.append((box, tuple(float(a) for a in args)))
        while len(pool) > 64 or (pool and rng.random() < 0.4):
            pool.pop(rng.randrange(len(pool)))
        for kept, coords in pool[-3:]:
            assert tuple(kept) == coords and all(type(c) is float for c in kept), (kept, coords)


def test_churn() -> None:
    """A short churn (see ``churn``): every Box keeps what it was given."""
    churn(5_000)


_CROSS = """
import os, pickle, sys
from ecs_spatial import geometry
from ecs_spatial.geometry import Box
sys.stdout.write(repr(geometry.COMPILED) + "\\n")
box = pickle.loads(bytes.fromhex(sys.stdin.read()))
assert type(box) is Box and all(type(c) is float for c in box), box
sys.stdout.write(repr(tuple(c.hex() for c in box)) + "\\n")
sys.stdout.write(pickle.dumps(Box(-0.0, 0.5, 5e-324, 1e308), protocol=int(sys.argv[1])).hex())
"""


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_pickles_cross_the_builds(protocol: int) -> None:
    """A pickle of a Box made by this build loads in a process of the pure build
    (``ECS_SPATIAL_PURE=1``) and the other way round: the same class, the same floats."""
    box = Box(1.25, -0.0, 2.0**53 + 2, sys.float_info.max)
    env = dict(os.environ, ECS_SPATIAL_PURE="1", PYTHONPATH=str(ROOT))
    child = subprocess.run(
        [sys.executable, "-c", _CROSS, str(protocol)], input=pickle.dumps(box, protocol).hex(),
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert child.returncode == 0, child.stderr
    pure, fields, theirs = child.stdout.splitlines()
    assert pure == "False"
    assert fields == repr(tuple(c.hex() for c in box))
    loaded = pickle.loads(bytes.fromhex(theirs))
    assert type(loaded) is Box and loaded == (-0.0, 0.5, 5e-324, 1e308)
    assert math.copysign(1.0, loaded.min_x) == -1.0


def test_no_reference_kept_or_lost() -> None:
    """A long loop of constructions, good and bad, keeps the refcounts of its inputs and of
    the class flat, frees every Box (a weak reference cannot be taken to a tuple, so the
    class's count and tracemalloc stand witness) and leaves the traced memory flat."""
    coords = [1.5, 2.5, 3.5, 4.5]
    bad: list[list[object]] = [[math.nan, 0.0, 1.0, 1.0], [2.0, 0.0, 1.0, 1.0], [1, 2, 3, 4],
                               ["x", 0.0, 1.0, 1.0], [1.0, 2.0, 3.0], [10**400, 0, 1, 1]]
    watched = [*coords, Box, SubBox, DictBox]

    def loop(n: int) -> None:
        for i in range(n):
            Box(*coords)
            SubBox(*coords)
            DictBox(*coords).tag = i  # type: ignore[attr-defined]
            Box(min_x=coords[0], min_y=coords[1], max_x=coords[2], max_y=coords[3])
            with suppress(ValueError, TypeError, OverflowError):
                Box(*bad[i % len(bad)])  # type: ignore[arg-type]

    assert_loop_keeps_nothing(loop, watched, warm=2_000, first=0, more=20_000,
                              slack=16 * 1024)
    ref = weakref.ref(SubBox)
    assert ref() is SubBox
