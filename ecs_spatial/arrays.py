"""Entities whose boxes live in an array the user owns (issue 28).

A :class:`BoxArray` wraps any buffer of float64, four to a row (``min_x, min_y, max_x,
max_y``): a numpy ``(n, 4)`` float64 array, an ``array('d')``, a ``bytearray`` read as
doubles. :meth:`BoxArray.of_positions` wraps one of positions instead, two to a row
(``x, y``: a numpy ``(n, 2)``), with one size ``(w, h)`` for every row: the box of a row is
``(x, y, x + w, y + h)``, as a ``Position`` and an ``AABB`` place it. ``flock.row(i)`` is an
:class:`ArrayRow`, a component like any other::

    flock = BoxArray(boxes)
    agent = esper.create_entity(flock.row(i), Velocity(...))

and the :class:`~ecs_spatial.SpatialProcessor` treats an entity with an ``ArrayRow`` as a
member whose box is that row: vectorised code writes the rows, and the processor reads each
array it uses once a frame, compares it with its own copy of the last frame's rows and moves
only the entities whose rows changed. The buffer is read through a ``memoryview`` (no numpy
import). Rows are added by :meth:`BoxArray.rebind` to a larger buffer (rows keep their
index); a row is dropped by :meth:`BoxArray.swap_remove`, numpy's swap-remove (the last
row moved into it), or left unused by deleting its entity.

:func:`read_rows` is the per-frame read, the reference of the processor's array members.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import struct
import sys
from array import array
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from typing import Any, cast

import esper

from ._esper_tables import tables, world_stamp
from ._wrap import Period, canonical

__all__ = [
    "NOBODY", "SHARED", "ArrayRow", "BoxArray", "RowState", "entity_rows", "link", "read_rows",
    "row_error", "unlink", "users", "write_rows",
]

_ROW = struct.Struct("=4d")
_ROW_BYTES = _ROW.size
_POS = struct.Struct("=2d")
_DOUBLE = {"d", "@d", "=d", "<d" if sys.byteorder == "little" else ">d"}
_INF = math.inf
_FIELDS = ("min_x", "min_y", "max_x", "max_y")
_POS_FIELDS = ("x", "y", "x + w", "y + h")  # a position array's box, by what made it
_SIZED_FIELDS = ("x", "y", "w", "h")  # a row of an array of per-row sizes, as read
_NONE: dict[type[Any], Any] = {}  # the components of an entity that is not in the world
_NOBODY: set[int] = set()
_GET = cast(Callable[[dict[type[Any], Any], type[Any]], Any], dict.get)  # C, for map


def _view(buffer: object, columns: int = 4) -> memoryview:
    """``buffer`` as a flat memoryview of bytes, or the error saying why it is not a buffer
    of float64 rows of ``columns`` (4: boxes; 2: positions)."""
    try:
        view = memoryview(buffer)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"a BoxArray's buffer supports the buffer protocol (a numpy float64 (n, "
            f"{columns}) array, an array('d')), got {type(buffer).__name__}"
        ) from None
    if view.format in ("B", "b", "c") and view.ndim == 1:
        flat = view
    elif view.format not in _DOUBLE:
        raise TypeError(
            f"a BoxArray's buffer holds float64 (format 'd'), got format {view.format!r}"
        )
    elif not view.c_contiguous:
        raise ValueError("a BoxArray's buffer is C-contiguous")
    elif view.ndim == 2 and view.shape is not None and view.shape[1] != columns:
        hint = " (positions: BoxArray.of_positions)" if view.shape[1] == 2 else ""
        raise ValueError(
            f"a BoxArray's buffer has {columns} columns, got shape {view.shape!r}{hint}"
        )
    elif view.ndim > 2:
        raise ValueError(f"a BoxArray's buffer has 1 or 2 dimensions, got {view.ndim}")
    elif not view.nbytes:  # no rows: memoryview.cast refuses a shape with a zero, (0, 4)
        view.release()
        flat = memoryview(b"")
    else:
        flat = view.cast("B")
    if flat.nbytes % (8 * columns):
        raise ValueError(
            f"a BoxArray's buffer holds whole rows of {columns} float64 ({8 * columns} "
            f"bytes), got {flat.nbytes} bytes"
        )
    return flat


def _size(size: object) -> tuple[float, float]:
    """``size`` as the pair of floats ``(w, h)`` of a position array, or the error naming
    it: two real numbers, finite and not negative."""
    try:
        w, h = cast(Any, size)
        pair = (float(w), float(h))
    except (TypeError, ValueError):
        raise TypeError(
            f"a BoxArray's size is a pair of floats (w, h), got {size!r}"
        ) from None
    for name, value in zip(("w", "h"), pair, strict=True):
        if not 0.0 <= value < _INF:
            raise ValueError(
                f"a BoxArray's size {name} is finite and not negative, got {value!r}"
            )
    return pair


class BoxArray:
    """Rows of boxes in a buffer the user owns, in one of two layouts:

    - ``BoxArray(boxes)``: a row is a box, ``(min_x, min_y, max_x, max_y)`` float64 (a
      numpy ``(n, 4)``, an ``array('d')`` of 4n);
    - ``BoxArray.of_positions(positions, size=(w, h))``: a row is a position, ``(x, y)``
      float64 (a numpy ``(n, 2)``, an ``array('d')`` of 2n), and every row's box is
      ``(x, y, x + w, y + h)``: the min corner at the position, as ``Position`` and
      ``AABB`` place an entity. The positions are read in place: a flock that moves its
      positions writes no boxes. (The constructor takes no size: a buffer of positions
      handed to it is refused by its shape, or read as boxes if it is flat; and
      :meth:`of_points` makes a copy, of boxes.)

    The buffer is read by this package, and written only by :meth:`swap_remove`; it is
    the user's to write (vectorised), and the processor reads its first ``len(array)``
    rows at each ``process()``. Everything else works alike in both layouts: ``flock[i]``
    is row ``i``'s box."""

    __slots__ = (
        "__weakref__", "_buffer", "_check", "_columns", "_holders", "_placed", "_row_of",
        "_rows", "_size", "_sized", "_sizes", "_spare", "_stamp", "_stride",
    )

    def __init__(self, buffer: object) -> None:
        self._setup(buffer, None)

    def _setup(
        self, buffer: object, size: tuple[float, float] | None, sizes: object = None
    ) -> None:
        """A new array's fields: rows of boxes (``size`` and ``sizes`` None), of positions
        of one size, or of positions with a buffer of per-row ``sizes``. ``_stride`` is the
        bytes a row of the processor's snapshot: 32 (a box; a position and its size,
        ``(x, y, w, h)``) or 16 (a position); ``_columns`` the float64 a row of
        ``buffer``."""
        self._size = size
        self._sized = sizes is not None
        self._sizes = sizes
        # a processor's last rows of an array of per-row sizes it no longer needs, for the
        # next frame's copy (no allocation and no page faults a frame): handed out once
        self._spare: bytearray | None = None
        self._columns = 4 if size is None and sizes is None else 2
        self._stride = _POS.size if size is not None else _ROW_BYTES
        self._check: Callable[[int, int, bytes | bytearray], object] = (
            functools.partial(checked_row, size=size) if size is not None
            else functools.partial(checked_row, sized=True) if sizes is not None
            else checked_row
        )
        self._rows = _view(buffer, self._columns).nbytes // (8 * self._columns)
        if sizes is not None:
            _sizes_hold(sizes, self._rows)
        self._buffer = buffer
        # who this array's rows place, as of the world stamp _stamp (see _placed_rows):
        # every entity holding an ArrayRow (of any array) -> that component; row -> the
        # entities placed by it, ascending (swap_remove's); entity -> its row, -1 for
        # none (in_rows')
        self._stamp: object = None
        self._holders: dict[int, ArrayRow] = {}
        self._placed: dict[int, list[int]] = {}
        self._row_of: array[int] = array("q")

    @classmethod
    def of_points(
        cls, points: Iterable[tuple[float, float]], size: tuple[float, float]
    ) -> BoxArray:
        """A new array('d') of boxes of ``size = (w, h)`` whose min corners are ``points``:
        a copy, made once (:meth:`of_positions` reads a buffer of positions in place)."""
        w, h = size
        rows = array("d")
        for x, y in points:
            rows.extend((x, y, x + w, y + h))
        return cls(rows)

    @classmethod
    def of_positions(
        cls,
        positions: object,
        size: tuple[float, float] | None = None,
        *,
        sizes: object = None,
    ) -> BoxArray:
        """An array reading ``positions`` in place (not a copy): float64 rows of two,
        ``(x, y)`` (a numpy ``(n, 2)``, an ``array('d')`` of 2n), each the min corner of a
        box of ``size = (w, h)`` (finite, not negative): row ``i``'s box is ``(x, y, x +
        w, y + h)``. The processor keeps a copy of the positions (16 bytes a row), not of
        boxes, and reads the rows that changed with no Python object a row.

        Or, with ``sizes`` instead of ``size``: a float64 buffer of rows ``(w, h)`` (a
        numpy ``(n, 2)``, an ``array('d')`` of 2n), read in place too, holding a row for
        each position at least: row ``i``'s box is ``(x_i, y_i, x_i + w_i, y_i + h_i)``,
        and a changed position or a changed size is a move. The processor keeps a copy of
        both (32 bytes a row, ``(x, y, w, h)``); a ``w`` or ``h`` that is negative or not
        finite is refused at ``process()`` naming the entity, its row and the field."""
        if size is not None and sizes is not None:
            raise TypeError(
                "BoxArray.of_positions takes one of size=(w, h) (every row's) and sizes= "
                "(a buffer of a (w, h) a row), got both"
            )
        flock = cls.__new__(cls)
        if sizes is None:
            flock._setup(positions, _size(size))
        else:
            flock._setup(positions, None, sizes)
        return flock

    @property
    def buffer(self) -> object:
        """The buffer the rows are read from (after unpickling: an ``array('d')`` copy)."""
        return self._buffer

    @property
    def size(self) -> tuple[float, float] | None:
        """The ``(w, h)`` of every row's box in an array of positions of one size; None in
        one of boxes or of per-row sizes."""
        return self._size

    @property
    def sizes(self) -> object:
        """The buffer of per-row sizes ``(w, h)`` of an array of positions made with
        ``sizes=`` (after unpickling: an ``array('d')`` copy); None otherwise."""
        return self._sizes

    def rebind(self, buffer: object, sizes: object = None) -> None:
        """Read the rows from ``buffer`` from now on (a larger one to add rows: each row
        keeps its index), in this array's layout (boxes, or positions of its size), and
        in an array of per-row sizes its sizes from ``sizes`` (kept if None; both must
        hold the rows of ``buffer``, else nothing changes). The processor picks it up at
        its next ``process()``; an entity whose row is past its end is refused there by
        name."""
        if sizes is not None and not self._sized:
            raise TypeError(
                "rebind: sizes= is for an array of per-row sizes "
                "(BoxArray.of_positions(positions, sizes=...)), and this one has none"
            )
        rows = _view(buffer, self._columns).nbytes // (8 * self._columns)
        if self._sized:
            _sizes_hold(self._sizes if sizes is None else sizes, rows)
            if sizes is not None:
                self._sizes = sizes
        self._buffer = buffer
        self._rows = rows

    def __len__(self) -> int:
        """The rows in use: the first ``len(array)`` of the buffer (all of them, but for
        those :meth:`swap_remove` dropped since the last :meth:`rebind`)."""
        return self._rows

    def _used(self) -> memoryview:
        """The rows in use, as a flat memoryview of bytes in the snapshot's layout (fewer
        if the buffer shrank): of an array of per-row sizes, a copy (``_interleave``)."""
        if self._sized:
            return memoryview(self._interleave(bytearray()))
        return _view(self._buffer, self._columns)[:self._rows * self._stride]

    def _interleave(self, out: bytearray) -> bytearray:
        """Write into ``out`` (resized to fit) the rows in use of an array of per-row
        sizes as rows ``(x, y, w, h)``, as many as both buffers hold, and return it: four
        strided copies in C, no Python object a row."""
        with _view(self._buffer, 2) as pos, _view(self._sizes, 2) as wh:
            k = min(self._rows, pos.nbytes // 16, wh.nbytes // 16)
            if len(out) != 32 * k:
                out[:] = bytes(32 * k)
            if k:
                with (
                    memoryview(out) as raw, raw.cast("d") as dst,
                    pos[:16 * k].cast("d") as src, wh[:16 * k].cast("d") as sz,
                ):
                    dst[0::4] = src[0::2]
                    dst[1::4] = src[1::2]
                    dst[2::4] = sz[0::2]
                    dst[3::4] = sz[1::2]
        return out

    def _box_in(
        self, rows: bytes | bytearray | memoryview, row: int
    ) -> tuple[float, float, float, float] | None:
        """The box of row ``row`` of ``rows`` (bytes in this array's layout: a snapshot),
        or None where ``rows`` ends before it."""
        return _box_at(rows, row * self._stride, self._size, self._sized)

    def _put_in(
        self, rows: bytearray, row: int, box: tuple[float, ...],
        source: bytes | bytearray | None = None,
    ) -> None:
        """Write ``box`` (its min corner, in an array of positions) as row ``row`` of
        ``rows`` (a snapshot in this array's layout), grown to hold it if need be. In an
        array of per-row sizes a box cannot be written back as a row exactly: the row of
        ``source`` (the snapshot ``box`` was read from) is copied, and without one the
        row written is ``(x, y, nan, nan)``, a row whose box is no box's (its next read
        is a move)."""
        at = row * self._stride
        if at + self._stride > len(rows):
            rows.extend(bytes(at + self._stride - len(rows)))
        if self._sized:
            if source is not None and at + 32 <= len(source):
                rows[at:at + 32] = source[at:at + 32]
            else:
                _ROW.pack_into(rows, at, box[0], box[1], math.nan, math.nan)
        elif self._size is None:
            _ROW.pack_into(rows, at, *box[:4])
        else:
            _POS.pack_into(rows, at, *box[:2])

    def __getitem__(self, row: int) -> tuple[float, float, float, float]:
        """Row ``row``'s box as it is now."""
        if self._sized:
            box = None
            if 0 <= row < self._rows:
                with _view(self._buffer, 2) as pos, _view(self._sizes, 2) as wh:
                    if 16 * row + 16 <= min(pos.nbytes, wh.nbytes):
                        x, y = _POS.unpack_from(pos, 16 * row)
                        w, h = _POS.unpack_from(wh, 16 * row)
                        box = (x, y, x + w, y + h)
        else:
            with self._used() as view:
                box = self._box_in(view, row) if row >= 0 else None
        if box is None:
            raise IndexError(f"row {row!r} is not in the BoxArray (rows 0 to {len(self) - 1})")
        return box

    def swap_remove(self, row: int, *columns: Any) -> int | None:
        """Drop row ``row`` as numpy code does, keeping the rows dense: the last row's
        values are copied into ``row`` and the array is one row shorter. Returns the entity
        that moved into ``row`` (the one the last row placed; the lowest id where several
        shared it), or None (``row`` was the last, or no entity used the last row).

        What it changes, in this order, once ``row`` is checked (an int, a row in use),
        the buffer found writable and each column able to take its last row into ``row``
        (otherwise an error naming them, and nothing changed):

        - **the user's buffer**: this is the one call of the package that writes it (row
          ``row`` gets the last row's bytes); each of ``columns``, the user's own
          per-agent arrays indexed by row (numpy arrays: velocities, ages), gets
          ``column[row] = column[last]`` too. None is shortened: ``len(array)`` is; the
          live part of a numpy column is ``column[:len(array)]``.
        - **the entities**, in the current esper world: each entity placed by the last
          row gets ``ArrayRow(array, row)`` (``esper.add_component``); its box is
          unchanged, so it has no exit and no enter for it, and the processor moves nothing
          (a row written since the last ``process()`` is a move, as it would have been).
          Each entity placed by ``row`` loses its ``ArrayRow`` (``esper.remove_component``):
          it leaves the processor at the next ``process()``, its pairs exiting once, as a
          deleted member's do. The entity itself is the caller's: delete it with esper
          (``esper.delete_entity(dead)``), before or after this call.

        Safe inside an event handler: the processor sees the changes at its next
        ``process()``. Complexity: O(1) in Python where no component was added or removed
        in the world since the last call but by this one; otherwise, once, a check in C of
        every ArrayRow holder against the table this keeps (O(entities with an ArrayRow)
        in C), plus O(1) in Python for each ArrayRow that came, went or was replaced
        since."""
        try:
            row = operator.index(row)
        except TypeError:
            raise TypeError(f"a BoxArray row is an int, got {type(row).__name__}") from None
        last = self._rows - 1
        if not 0 <= row <= last:
            raise IndexError(f"row {row!r} is not in the BoxArray (rows 0 to {last})")
        stride = 8 * self._columns
        with (
            _view(self._buffer, self._columns) as view,
            _view(self._sizes if self._sized else b"", 2) as wh,
        ):
            for what, seen, buffer in (("buffer", view, self._buffer), ("sizes", wh, self._sizes)):
                if what == "sizes" and not self._sized:
                    break
                if seen.readonly:
                    raise TypeError(
                        f"swap_remove writes the BoxArray's {what}, and this "
                        f"{type(buffer).__name__} is read-only"
                    )
                if seen.nbytes < self._rows * stride:
                    raise IndexError(
                        f"the BoxArray's {what} holds {seen.nbytes // stride} rows, fewer "
                        f"than its {self._rows}: rebind it"
                    )
            if row != last:
                _check_columns(columns, row, last)
            placed = self._placed_rows()
            if row != last:
                at, end = row * stride, last * stride
                view[at:at + stride] = view[end:end + stride]
                if self._sized:
                    wh[at:at + 16] = wh[end:end + 16]
                for column in columns:
                    column[row] = column[last]
        gone = placed.pop(row, [])
        moved = placed.pop(last, []) if row != last else []
        holders = self._holders
        try:
            for entity in gone:
                esper.remove_component(entity, ArrayRow)
                del holders[entity]
            for entity in moved:
                holders[entity] = comp = ArrayRow(self, row)
                esper.add_component(entity, comp)
        except BaseException:  # pragma: no cover (esper refused, or an interrupt)
            self._forget()
            raise
        row_of = self._row_of
        for entity in gone:
            row_of[entity] = -1
        for entity in moved:
            row_of[entity] = row
        if moved:
            placed[row] = moved
        self._rows = last
        self._stamp = world_stamp()
        return moved[0] if moved else None

    def _placed_rows(self) -> dict[int, list[int]]:
        """Row -> the entities of the current esper world whose ArrayRow places them by
        that row of this array, ascending.

        Kept from call to call, with every ArrayRow holder's component as last seen
        (``_holders``): while the world's stamp is the one this array noted after its own
        changes, nothing else changed. Otherwise the holders are compared with esper's
        tables in C (each known holder's ArrayRow, by identity: a deleted entity, a
        removed or replaced component; then the number of holders, and where it differs
        the newcomers by a set difference), and only what differs is applied. Right in
        any world (a switch of worlds or a cleared database is a difference like any)."""
        stamp = world_stamp()
        if stamp is self._stamp:
            return self._placed
        by_type, by_entity = tables(ArrayRow)
        holders = self._holders
        held = map(_GET, map(by_entity.get, holders, repeat(_NONE)), repeat(ArrayRow))
        changed = list(compress(holders, map(operator.is_not, held, holders.values())))
        current = by_type.get(ArrayRow, _NOBODY)
        if changed or len(current) != len(holders):
            try:
                self._apply(sorted(current.difference(holders).union(changed)), by_entity)
            except BaseException:  # pragma: no cover (an interrupt)
                self._forget()
                raise
        self._stamp = stamp
        return self._placed

    def _apply(self, entities: list[int], by_entity: dict[int, dict[type[Any], Any]]) -> None:
        """Bring the look-up of ``entities`` in line with ``by_entity`` (esper's)."""
        holders = self._holders
        placed = self._placed
        row_of = self._row_of
        if entities and entities[-1] >= len(row_of):  # ascending: room for the last, once
            row_of.extend(array("q", [-1]) * (entities[-1] + 1 - len(row_of)))
        for entity in entities:
            old = holders.pop(entity, None)
            if old is not None and old.array is self:
                at = placed[old.row]
                at.remove(entity)
                if not at:
                    del placed[old.row]
                row_of[entity] = -1
            comp = by_entity.get(entity, _NONE).get(ArrayRow)
            if comp is not None:
                holders[entity] = comp
                if comp.array is self:
                    row = comp.row
                    sharing = placed.get(row)
                    if sharing is None:  # most rows place one entity
                        placed[row] = [entity]
                    else:
                        bisect.insort(sharing, entity)
                    row_of[entity] = row

    def _forget(self) -> None:
        """Drop who the rows place: found afresh at the next look-up."""
        self._stamp, self._holders, self._placed = None, {}, {}
        self._row_of = array("q")

    def row(self, row: int) -> ArrayRow:
        """The component that places an entity by row ``row`` of this array."""
        try:
            row = operator.index(row)  # an int, or a numpy integer
        except TypeError:
            raise TypeError(f"a BoxArray row is an int, got {type(row).__name__}") from None
        if not 0 <= row < len(self):
            raise IndexError(f"row {row!r} is not in the BoxArray (rows 0 to {len(self) - 1})")
        return ArrayRow(self, row)

    def snapshot(self) -> bytes:
        """The rows as they are now, as bytes in the array's layout (32 a row of boxes,
        16 a row of positions, 32 a row of a position and its size, ``(x, y, w, h)``)."""
        return self._used().tobytes()

    def read_into(self, rows: bytearray) -> bytearray:
        """Copy the rows as they are now into ``rows`` (resized only if their size
        changed) and return it: the processor's per-frame snapshot, made without a new
        allocation (a new buffer of this size each frame costs its pages' faults)."""
        if self._sized:
            return self._interleave(rows)
        rows[:] = self._used()
        return rows

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its rows, copied into an ``array('d')``, in its layout (positions
        with their size, or their sizes, copied into another)."""
        if self._sized:
            with _view(self._buffer, 2) as pos, _view(self._sizes, 2) as wh:
                k = 16 * self._rows
                positions, sizes = array("d", pos[:k].tobytes()), array("d", wh[:k].tobytes())
            return (_of_positions, (positions, None, sizes))
        rows = array("d")
        rows.frombytes(self.snapshot())
        if self._size is None:
            return (BoxArray, (rows,))
        return (_of_positions, (rows, self._size))

    def __repr__(self) -> str:
        if self._sized:
            return (
                f"BoxArray.of_positions({len(self)} rows of {type(self._buffer).__name__}, "
                f"sizes={type(self._sizes).__name__})"
            )
        if self._size is None:
            return f"BoxArray({len(self)} rows of {type(self._buffer).__name__})"
        return (
            f"BoxArray.of_positions({len(self)} rows of {type(self._buffer).__name__}, "
            f"size={self._size!r})"
        )


def _sizes_hold(sizes: object, rows: int) -> None:
    """Refuse a buffer of per-row sizes that is not one, or holds fewer than ``rows``."""
    held = _view(sizes, 2).nbytes // 16
    if held < rows:
        raise ValueError(
            f"a BoxArray's sizes hold {held} rows (w, h), fewer than its {rows} positions"
        )


def _of_positions(
    positions: object, size: tuple[float, float] | None, sizes: object = None
) -> BoxArray:
    """``BoxArray.of_positions``, by a name pickle finds (unpickling)."""
    return BoxArray.of_positions(positions, size, sizes=sizes)


def _box_at(
    rows: bytes | bytearray | memoryview, at: int, size: tuple[float, float] | None,
    sized: bool = False,
) -> tuple[float, float, float, float] | None:
    """The box of the row at byte ``at`` of ``rows``: rows of boxes (``size`` None), of
    positions of ``size``, or (``sized``) of positions and sizes ``(x, y, w, h)``; None
    where ``rows`` ends before the row does."""
    if size is None:
        if at + _ROW_BYTES > len(rows):
            return None
        if sized:
            x, y, w, h = _ROW.unpack_from(rows, at)
            return (x, y, x + w, y + h)
        box: tuple[float, float, float, float] = _ROW.unpack_from(rows, at)
        return box
    if at + 16 > len(rows):
        return None
    x, y = _POS.unpack_from(rows, at)
    return (x, y, x + size[0], y + size[1])


def _check_columns(columns: tuple[Any, ...], row: int, last: int) -> None:
    """Refuse, before anything is written, a column that cannot take ``column[row] =
    column[last]``: its last row read, its row written with the value it holds."""
    for i, column in enumerate(columns):
        try:
            column[last]
            column[row] = column[row]
        except (TypeError, IndexError, KeyError, ValueError) as error:
            raise type(error)(
                f"swap_remove: column {i} ({type(column).__name__}) cannot take row {last} "
                f"into row {row}: {error}"
            ) from None


def entity_rows(flock: BoxArray) -> array[int]:
    """Entity id -> the row of ``flock`` that places it in the current esper world, -1 for
    none: an ``array('q')`` as long as the largest such id + 1, or longer, for
    ``NeighbourArrays.in_rows``. The array's own, kept up to date from call to call by
    ``swap_remove``'s look-up (its complexity): read it now, never change it."""
    flock._placed_rows()
    return flock._row_of


class ArrayRow:
    """The component placing its entity by row :attr:`row` of :attr:`array` (made by
    :meth:`BoxArray.row`). Read-only: to place an entity by another row, add a new one
    (esper replaces the component, and the processor moves the entity)."""

    __slots__ = ("_array", "_row")

    def __init__(self, array: BoxArray, row: int) -> None:
        if not isinstance(array, BoxArray):
            raise TypeError(f"an ArrayRow's array is a BoxArray, got {type(array).__name__}")
        self._array = array
        self._row = int(row)

    @property
    def array(self) -> BoxArray:
        """The array holding the box."""
        return self._array

    @property
    def row(self) -> int:
        """The row of :attr:`array` holding the box."""
        return self._row

    def __reduce__(self) -> tuple[Any, ...]:
        return (ArrayRow, (self._array, self._row))

    def __repr__(self) -> str:
        return f"ArrayRow({self._array!r}, {self._row})"


#: A processor's state of one array it reads: [its rows as the processor last applied them
#: (a bytearray, 32 bytes a row: each frame writes in the rows it moved), the member entity
#: placed by each row (an ``array('q')``: ``NOBODY``, the one entity, or ``SHARED``), row
#: -> the entities of a ``SHARED`` row (a dict of lists), how many members use the array].
#: Invariant: each member's box in the index is, as floats compare, its row there (a row
#: no member uses may hold anything).
RowState = list[Any]
#: ``owners`` entries: a row no member uses, and one whose members are in ``shared`` (two or
#: more, or an entity that is not a positive int64).
NOBODY = 0
SHARED = -1
_INT64_MAX = 2**63 - 1


def link(state: RowState, row: int, entity: int) -> None:
    """Note in ``state`` that ``entity`` is placed by ``row`` (after the others there)."""
    owners: array[int] = state[1]
    if row >= len(owners):
        owners.frombytes(bytes(8 * (row + 1 - len(owners))))
    shared: dict[int, list[int]] = state[2]
    held = owners[row]
    if held == NOBODY and type(entity) is int and 0 < entity <= _INT64_MAX:
        owners[row] = entity
    else:
        entities = shared.setdefault(row, [] if held in (NOBODY, SHARED) else [held])
        entities.append(entity)
        owners[row] = SHARED
    state[3] += 1


def unlink(state: RowState, row: int, entity: int) -> None:
    """Forget that ``entity`` is placed by ``row`` (it is)."""
    owners: array[int] = state[1]
    if owners[row] == SHARED:
        entities = state[2][row]
        entities.remove(entity)
        if not entities:
            del state[2][row]
            owners[row] = NOBODY
    else:
        owners[row] = NOBODY
    state[3] -= 1


def users(state: RowState) -> dict[int, list[int]]:
    """Row -> the entities ``state`` says it places, for the rows in use (tests, pickling)."""
    owners: array[int] = state[1]
    found = {row: [e] for row, e in enumerate(owners) if e > NOBODY}
    found.update((row, list(es)) for row, es in state[2].items())
    return dict(sorted(found.items()))


def row_error(
    entity: int, row: int, box: tuple[float, ...] | None, rows: int, positions: bool = False
) -> Exception:
    """The error naming ``entity``, its ``row``, the field at fault and its value: a row
    past the array's end (``box`` None), a value that is not finite, or a max below its
    min. In an array of ``positions`` the box's fields are named by what made them (``x``,
    ``x + w``)."""
    fields = _POS_FIELDS if positions else _FIELDS
    if box is None:
        return IndexError(
            f"entity {entity}: its ArrayRow row {row} is past the end of its BoxArray "
            f"({rows} rows)"
        )
    for name, value in zip(fields, box, strict=True):
        if not -_INF < value < _INF:
            return ValueError(
                f"entity {entity}: ArrayRow row {row} {name} {value!r} is not finite"
            )
    for lo, hi in ((0, 2), (1, 3)):
        if box[hi] < box[lo]:
            return ValueError(
                f"entity {entity}: ArrayRow row {row} {fields[hi]} {box[hi]!r} is below "
                f"its {fields[lo]} {box[lo]!r}"
            )
    return ValueError(f"entity {entity}: ArrayRow row {row} {box!r} is not a box")


def checked_row(
    entity: int, row: int, rows: bytes | bytearray, size: tuple[float, float] | None = None,
    sized: bool = False,
) -> tuple[float, float, float, float]:
    """Row ``row``'s box of the snapshot ``rows``, checked (finite, min <= max), or the
    error naming ``entity``: rows of boxes, (``size``) of positions of that size, or
    (``sized``) of positions and sizes ``(x, y, w, h)``, whose ``x``, ``y`` are finite
    and ``w``, ``h`` finite and not negative, checked in that order before the box."""
    stride = _ROW_BYTES if size is None else _POS.size
    box = _box_at(rows, row * stride, size, sized)
    if box is None:
        raise row_error(entity, row, None, len(rows) // stride)
    if sized:
        for name, value in zip(_SIZED_FIELDS, _ROW.unpack_from(rows, row * stride), strict=True):
            if not -_INF < value < _INF:
                raise ValueError(
                    f"entity {entity}: ArrayRow row {row} {name} {value!r} is not finite"
                )
            if name in ("w", "h") and not value >= 0.0:
                raise ValueError(
                    f"entity {entity}: ArrayRow row {row} {name} {value!r} is negative"
                )
    x0, y0, x1, y1 = box
    if not (x0 > -_INF and y0 > -_INF and x1 < _INF and y1 < _INF and x0 <= x1 and y0 <= y1):
        raise row_error(entity, row, box, len(rows) // stride, size is not None or sized)
    return box


def read_rows(
    now: bytes | bytearray,
    last: bytes | bytearray,
    owners: array[int],
    shared: dict[int, list[int]],
    skip: set[int] | frozenset[int],
    ids: bytearray,
    boxes: bytearray,
    at_rows: bytearray,
    n: int,
    check: Callable[[int, int, bytes | bytearray], object] = checked_row,
    period: Period | None = None,
    size: tuple[float, float] | None = None,
    sized: bool = False,
) -> tuple[int, int]:
    """Write into ``ids`` and ``boxes`` (an int64 and four float64 a move, native order:
    the index's ``move_many`` buffers) and ``at_rows`` (each move's row, an int64: for
    :func:`write_rows`), after the first ``n`` moves they hold, the moves of the members
    placed by a row (``owners`` and ``shared``: see :data:`RowState`) that is not as
    floats compare the same in ``last`` (the rows applied) and ``now`` (the array's bytes
    as they are), but not of those in ``skip``, in the rows' order (a
    row's members in the order they came). A row past ``now``'s end, or one ``check``
    (:func:`checked_row`) refuses, raises the error naming its first member: nothing
    else is read. Returns the number of moves the buffers hold now (they are grown as need
    be, never shrunk: kept from frame to frame, they cost no allocation) and, with
    ``period`` (a torus), the place among the moves written of the first whose box the
    period refuses (``_wrap.canonical``), else -1: the caller raises its error once every
    other check passed. With ``size``, ``now`` and ``last`` are rows of positions (16
    bytes, ``(x, y)``) whose boxes are ``(x, y, x + w, y + h)`` (``check`` reads them so),
    compared as positions and written into ``boxes`` as boxes. With ``sized``, they are
    rows of 32 bytes ``(x, y, w, h)`` whose boxes are ``(x, y, x + w, y + h)``: a changed
    position or size is compared, and ``check`` refuses a negative ``w`` or ``h``.

    The box compared with is the row applied, not the index's: they are equal as floats
    by :data:`RowState`'s invariant. The compiled twin, ``_cmembers.read_rows``, calls
    ``check`` for its errors; ``tests/test_arrays.py`` drives both side by side.

    Complexity: O(bytes) compared for the whole array in one comparison; where they
    differ, O(rows) (the compiled twin: a scan of the bytes, and O(1) for each changed
    row).
    """
    refused = -1
    if now == last:
        return n, refused
    stride = _ROW_BYTES if size is None else _POS.size
    made = n
    for row, held in enumerate(owners):
        if held == NOBODY:
            continue
        at = row * stride
        if now[at:at + stride] == last[at:at + stride]:
            continue
        entities = shared[row] if held == SHARED else [held]
        for entity in entities:
            if entity in skip:
                continue
            box = check(entity, row, now)
            assert isinstance(box, tuple)
            x0, y0, x1, y1 = box
            if box == _box_at(last, at, size, sized):
                continue
            if period is not None and refused < 0:
                try:
                    canonical(x0, y0, x1, y1, entity, period)
                except ValueError:
                    refused = n - made
            ids[8 * n:8 * n + 8] = entity.to_bytes(8, sys.byteorder, signed=True)
            boxes[32 * n:32 * n + 32] = _ROW.pack(*box)
            at_rows[8 * n:8 * n + 8] = row.to_bytes(8, sys.byteorder, signed=True)
            n += 1
    return n, refused


def write_rows(
    last: bytearray,
    at_rows: bytes | bytearray,
    boxes: bytes | bytearray,
    start: int,
    end: int,
    stride: int = _ROW_BYTES,
) -> None:
    """Write the boxes of moves ``start`` to ``end`` (of :func:`read_rows`' buffers) into
    ``last`` at their rows: the rows the processor applied, ``stride`` bytes each (32: the
    boxes; 16: their min corners, the positions of an array of positions). ``ValueError``
    (nothing written) if a row is past ``last``'s end, or the stride is neither. The
    compiled twin: ``_cmembers.write_rows``."""
    rows = memoryview(at_rows).cast("q")
    if stride not in (_ROW_BYTES, _POS.size) or not (
        0 <= start <= end and 8 * end <= len(at_rows) and 32 * end <= len(boxes)
    ) or any(not 0 <= rows[i] < len(last) // stride for i in range(start, end)):
        raise ValueError("write_rows: a move or its row is out of range")
    for i in range(start, end):
        at = rows[i] * stride
        last[at:at + stride] = boxes[32 * i:32 * i + stride]
