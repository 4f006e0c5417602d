"""BoxArrays of positions (``BoxArray.of_positions``, issue 28): float64 rows of ``(x, y)``
read in place, each the min corner of a box of the array's one size ``(w, h)``. Everything
a BoxArray of boxes does, with the same answers: the compiled row read against the
reference and against the box layout, the processor's events against a box array holding
the same boxes (hypothesis), swap_remove, rebind, pickling and saved worlds, worlds mixing
both layouts and components, NeighbourArrays.in_rows, the torus, errors by name.

The side-by-side model of ``tests/test_arrays.py`` drives a position array under the
fault models too (``test_position_arrays_give_the_events_of_box_arrays_and_components``).
"""

from __future__ import annotations

import gc
import pickle
import random
import sys
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import esper
import pytest
from _budget import budget
from _leaks import assert_loop_keeps_nothing
from _worlds import Recorder, fresh_world
from hypothesis import given
from hypothesis import strategies as st

import ecs_spatial as es
from ecs_spatial import AABB, ArrayRow, BoxArray, Position, arrays
from ecs_spatial.arrays import entity_rows

_ENTER, _EXIT = es.COLLISION_ENTER, es.COLLISION_EXIT


def _twins() -> tuple[list[Any], list[Any]]:
    """The row reads and the row writes: the reference, and the compiled one if built."""
    from ecs_spatial import _members

    if _members._read_rows is arrays.read_rows:
        return [arrays.read_rows], [arrays.write_rows]
    return [arrays.read_rows, _members._read_rows], [arrays.write_rows, _members._write_rows]


def _compiled() -> tuple[Any, Any]:
    """``_cmembers.read_rows`` and ``write_rows``, or the test skipped."""
    from ecs_spatial import _members

    if _members._read_rows is arrays.read_rows:
        pytest.skip("no compiled core")
    return _members._read_rows, _members._write_rows


def _boxes_of(positions: list[float], size: tuple[float, float]) -> list[float]:
    """The box rows of ``positions`` (a flat list of x, y) of ``size``."""
    w, h = size
    out: list[float] = []
    for i in range(0, len(positions), 2):
        x, y = positions[i], positions[i + 1]
        out.extend((x, y, x + w, y + h))
    return out


def _read_all(
    read: Any, now: bytes, last: bytes, state: list[Any], skip: set[int], period: Any,
    size: tuple[float, float] | None, check: Any, room: int,
) -> tuple[str, object]:
    """One read's answer: the moves written (after a first, made up, kept), or the error."""
    before = array("q", [7]).tobytes(), array("d", [1, 2, 3, 4]).tobytes()
    ids, boxes = bytearray(before[0] * room), bytearray(before[1] * room)
    rows = bytearray(before[0] * room)
    try:
        count, refused = read(
            now, last, state[1], state[2], skip, ids, boxes, rows, 1, check, period, size
        )
    except (ValueError, IndexError) as error:
        return (type(error).__name__, str(error))
    return ("ok", (
        count, refused, bytes(ids[:8 * count]), bytes(boxes[:32 * count]),
        bytes(rows[:8 * count]),
    ))


@pytest.mark.parametrize("seed", range(80))
def test_the_compiled_position_read_equals_the_reference(seed: int) -> None:
    """``_cmembers.read_rows`` with a size against ``arrays.read_rows`` with it: the same
    moves in the same order, the same place of the first move a torus refuses, or the same
    error, on random snapshots of positions (changed, changed to -0.0 only, NaN, infinite,
    so large that ``x + w`` overflows, past the end; shared rows; members skipped); and
    where no error, the moves of the box rows of the same boxes read without a size. The
    rows applied written back (``write_rows``, stride 16) alike by both twins. (The
    reference alone, against the box layout, in a pure-Python build.)"""
    reads, writes = _twins()
    rng = random.Random(seed)
    size = rng.choice([(0.0, 0.0), (1.0, 2.0), (2.5, 0.5), (1e308, 1.0)])
    n = rng.randrange(1, 30)
    values = [float(rng.randrange(0, 8)) for _ in range(2 * n)]
    last = array("d", values).tobytes()
    for _ in range(rng.randrange(0, 8)):
        at = rng.randrange(2 * n)
        values[at] = rng.choice([
            0.0, -0.0, 1.0, 3.5, 9.0, -values[at], float("nan"), float("inf"),
            float("-inf"), 1e308,
        ])
    cut = rng.choice([n, n, n, rng.randrange(0, n + 1)])
    tail = [2.0] * rng.choice([0, 0, 2])
    now = array("d", values[:2 * cut] + tail).tobytes()
    state: list[Any] = [last, array("q"), {}, 0]
    entities = list(range(1, rng.randrange(2, 40)))
    for entity in entities:
        arrays.link(state, rng.randrange(n), entity)
    skip = {e for e in entities if rng.random() < 0.1}
    period = rng.choice([None, (0.0, 0.0, 8.0, 8.0, 8.0, 8.0), (1.0, 0.5, 12.0, 6.0, 13.0, 6.5)])
    room = rng.choice([1, 2, 50])
    check = BoxArray.of_positions(array("d"), size)._check
    answers = [
        _read_all(read, now, last, state, skip, period, size, check, room)
        for read in reads
    ]
    assert answers[0] == answers[-1]
    if answers[0][0] != "ok":
        assert str(answers[0][1]).startswith("entity ")
        return
    box_now = array("d", _boxes_of(values[:2 * cut] + tail, size)).tobytes()
    box_last = array("d", _boxes_of(list(array("d", last)), size)).tobytes()
    as_boxes = _read_all(
        arrays.read_rows, box_now, box_last, [box_last, *state[1:]], skip, period, None,
        arrays.checked_row, room,
    )
    assert as_boxes == answers[0]
    result: Any = answers[0][1]
    made: int = result[0]
    written = []
    for write in writes:
        into = bytearray(last)
        write(into, result[4], result[3], 1, made, 16)
        with pytest.raises(ValueError, match="out of range"):
            write(into, array("q", [n]).tobytes(), result[3], 0, 1, 16)
        with pytest.raises(ValueError, match="out of range"):
            write(into, result[4], result[3], 1, made, 24)
        written.append(bytes(into))
    assert written[0] == written[-1]
    boxes_made = array("d")
    boxes_made.frombytes(result[3])
    rows_made = array("q")
    rows_made.frombytes(result[4])
    expect = array("d", last)
    for i in range(1, made):
        expect[2 * rows_made[i]:2 * rows_made[i] + 2] = boxes_made[4 * i:4 * i + 2]
    assert written[0] == expect.tobytes()


@pytest.mark.parametrize("seed", range(40))
def test_the_position_read_skips_only_blocks_that_are_the_same(seed: int) -> None:
    """The compiled read skips blocks of 8 rows (128 bytes of positions) equal in both
    snapshots: changes placed where a block starts, ends or is cut by either snapshot's end,
    some of bytes only (``-0.0``), give the reference's moves in the same order."""
    read_c, _ = _compiled()
    rng = random.Random(seed)
    n = rng.randrange(1, 400)
    values = [float(rng.randrange(0, 50)) for _ in range(2 * n)]
    last = array("d", values)
    now = array("d", values)
    edges = [r for b in range(0, n + 8, 8) for r in (b - 1, b, b + 1) if 0 <= r < n]
    for _ in range(rng.randrange(0, 6)):
        row = rng.choice(edges) if rng.random() < 0.7 else rng.randrange(n)
        at = 2 * row + rng.randrange(2)
        now[at] = -0.0 if now[at] == 0.0 and rng.random() < 0.5 else now[at] - 1.0
    cut = rng.choice([0, 0, 0, -1, 1])
    if cut < 0:
        now = now[:-2]
    elif cut > 0:
        now.extend([1.0, 1.0])
    state: list[Any] = [last.tobytes(), array("q"), {}, 0]
    for entity in range(1, n + 1):
        arrays.link(state, entity - 1, entity)
    if n > 3:
        arrays.link(state, rng.randrange(n), n + 1)
    size = (1.5, 0.5)
    check = BoxArray.of_positions(array("d"), size)._check
    answers = [
        _read_all(read, now.tobytes(), state[0], state, set(), None, size, check, 1)
        for read in (arrays.read_rows, read_c)
    ]
    assert answers[0] == answers[1]


def _frame_answer(spatial: es.SpatialProcessor, log: Recorder) -> tuple[Any, ...]:
    """One ``esper.process()`` as the side-by-side tests compare it: its events, pairs and
    index, or the refusal's type, entity and row with the index left as it was."""
    before = spatial.index.state_hash()
    try:
        esper.process()
    except (ValueError, IndexError) as error:
        assert spatial.index.state_hash() == before
        return (type(error).__name__, str(error).split(" ArrayRow")[0],
                str(error).split("row ")[1].split()[0])
    return (log.take(), set(spatial.pairs), spatial.index.state_hash())


@contextmanager
def restored_alike(spatial: es.SpatialProcessor) -> Iterator[es.SpatialProcessor]:
    """Save the world with its rows pending, run its next frame, then restore the save in
    a fresh world and run the same frame there: the same events, pairs and index, the
    restored processor yielded inside the fresh world."""
    saved = pickle.loads(pickle.dumps(es.save_world()))
    recorder = Recorder()
    esper.process()
    expected = recorder.take()
    assert expected
    with fresh_world("restored"):
        es.restore_world(saved)
        restored = Recorder()
        esper.process()
        assert restored.take() == expected
        twin = esper.get_processor(es.SpatialProcessor)
        assert isinstance(twin, es.SpatialProcessor)
        assert twin.pairs == spatial.pairs
        assert twin.index.state_hash() == spatial.index.state_hash()
        yield twin


def test_the_compiled_read_refuses_a_size_that_is_not_a_pair() -> None:
    read_c, _ = _compiled()
    for size in [(1.0,), [1.0, 2.0], (1.0, "a")]:
        with pytest.raises(TypeError):
            read_c(b"", b"", array("q"), {}, set(), bytearray(), bytearray(), bytearray(), 0,
                   arrays.checked_row, None, size)


def test_a_position_array_reads_its_buffer_in_place() -> None:
    positions = array("d", [0, 1, 2, 3, 4, 5])
    flock = BoxArray.of_positions(positions, (2.0, 0.5))
    assert len(flock) == 3 and flock.size == (2.0, 0.5) and flock.buffer is positions
    assert flock[1] == (2.0, 3.0, 4.0, 3.5)
    positions[2] = 10.0
    assert flock[1] == (10.0, 3.0, 12.0, 3.5)  # read in place: no copy
    assert flock.snapshot() == positions.tobytes()
    assert flock.read_into(bytearray(b"x")) == positions.tobytes()
    with pytest.raises(IndexError, match="row 3"):
        flock[3]
    with pytest.raises(IndexError, match="row -1"):
        flock[-1]
    assert BoxArray(array("d", [0, 1, 2, 3])).size is None
    assert (flock.row(2).array, flock.row(2).row) == (flock, 2)
    flock.rebind(array("d", [0.0] * 8))
    assert len(flock) == 4 and flock[3] == (0.0, 0.0, 2.0, 0.5)
    assert "of_positions(4 rows of array, size=(2.0, 0.5))" in repr(flock)


def test_a_position_array_refuses_by_name() -> None:
    np = pytest.importorskip("numpy")
    good = np.zeros((3, 2))
    assert BoxArray.of_positions(good, (1, 2))[2] == (0.0, 0.0, 1.0, 2.0)
    with pytest.raises(ValueError, match=r"has 2 columns, got shape \(3, 3\)"):
        BoxArray.of_positions(np.zeros((3, 3)), (1.0, 1.0))
    with pytest.raises(ValueError, match=r"4 columns, got shape \(3, 2\).*of_positions"):
        BoxArray(good)
    with pytest.raises(TypeError, match="format 'f'"):
        BoxArray.of_positions(np.zeros((3, 2), dtype=np.float32), (1.0, 1.0))
    with pytest.raises(ValueError, match=r"whole rows of 2 float64 \(16 bytes\), got 24"):
        BoxArray.of_positions(array("d", [0.0] * 3), (1.0, 1.0))
    with pytest.raises(TypeError, match=r"numpy float64 \(n, 2\) array"):
        BoxArray.of_positions([0.0, 0.0], (1.0, 1.0))
    with pytest.raises(ValueError, match="C-contiguous"):
        BoxArray.of_positions(np.zeros((3, 4))[:, :2], (1.0, 1.0))
    for size, kind, message in [
        ((-1.0, 1.0), ValueError, "size w is finite and not negative, got -1.0"),
        ((1.0, float("nan")), ValueError, "size h is finite and not negative, got nan"),
        ((float("inf"), 1.0), ValueError, "size w is finite and not negative, got inf"),
        ((1.0,), TypeError, r"size is a pair of floats \(w, h\), got \(1.0,\)"),
        ("ab", TypeError, "size is a pair of floats"),
        (None, TypeError, "got None"),
    ]:
        with pytest.raises(kind, match=message):
            BoxArray.of_positions(good, size)  # type: ignore[arg-type]
    flock = BoxArray.of_positions(good, (1.0, 1.0))
    with pytest.raises(ValueError, match=r"has 2 columns, got shape \(3, 4\)"):
        flock.rebind(np.zeros((3, 4)))
    assert flock.buffer is good


@pytest.mark.parametrize(
    ("position", "size", "message"),
    [
        ((float("nan"), 0.0), (1.0, 1.0), r"entity \d+: ArrayRow row 1 x nan is not finite"),
        ((0.0, float("-inf")), (1.0, 1.0), r"row 1 y -inf is not finite"),
        ((1e308, 0.0), (1e308, 1.0), r"row 1 x \+ w inf is not finite"),
        ((0.0, float("inf")), (1.0, 1.0), r"row 1 y inf is not finite"),
    ],
)
def test_a_bad_position_is_refused_by_name_and_nothing_changes(
    world: str, position: tuple[float, float], size: tuple[float, float], message: str
) -> None:
    spatial = es.SpatialProcessor(es.Box(0, 0, 100, 100))
    esper.add_processor(spatial)
    buffer = array("d", [0, 0, 1, 1, 50, 50])
    flock = BoxArray.of_positions(buffer, size)
    a, b, c = (esper.create_entity(flock.row(i)) for i in range(3))
    esper.process()
    assert spatial.pairs == {(a, b)}
    before = spatial.index.state_hash()
    buffer[4:6] = array("d", [1, 1])  # c would join a and b
    buffer[2:4] = array("d", position)
    with pytest.raises(ValueError, match=message):
        esper.process()
    assert spatial.index.state_hash() == before and spatial.pairs == {(a, b)}
    buffer[2:4] = array("d", [0.5, 0.5])
    esper.process()
    assert spatial.pairs == {(a, b), (a, c), (b, c)}
    flock.rebind(array("d", [0, 0]))
    with pytest.raises(IndexError, match=rf"entity {b}: its ArrayRow row 1 is past the end"):
        esper.process()


def test_swap_remove_moves_the_last_position_in_with_no_events(world: str) -> None:
    np = pytest.importorskip("numpy")
    spatial = es.SpatialProcessor(es.Box(0, 0, 100, 100))
    esper.add_processor(spatial)
    pos = np.array([[0, 0], [1, 1], [50, 50], [51, 51]], float)
    vel = np.arange(8.0).reshape(4, 2)
    flock = BoxArray.of_positions(pos, (2.0, 2.0))
    a, b, c, d = (esper.create_entity(flock.row(i)) for i in range(4))
    log = Recorder(_ENTER, _EXIT, None)
    esper.process()
    assert spatial.pairs == {(a, b), (c, d)}
    log.take()
    assert flock.swap_remove(1, vel) == d
    assert len(flock) == 3 and flock[1] == (51.0, 51.0, 53.0, 53.0)
    assert pos[1].tolist() == [51, 51] and pos[2].tolist() == [50, 50]
    assert vel[1].tolist() == [6.0, 7.0]
    assert esper.component_for_entity(d, ArrayRow).row == 1
    esper.delete_entity(b)
    esper.process()
    assert log.take() == [("exit", a, b)]
    assert spatial.pairs == {(c, d)} and spatial.moved == set()
    pos[1] = (0.5, 0.5)
    esper.process()
    assert sorted(log.take()) == [("enter", a, d), ("exit", c, d)]
    assert spatial.index.get(d) == (0.5, 0.5, 2.5, 2.5)
    frozen = np.zeros((3, 2))
    frozen.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        BoxArray.of_positions(frozen, (1.0, 1.0)).swap_remove(0)


def _mixed_world(size: tuple[float, float]) -> tuple[Any, ...]:
    """A world of a box array, a position array and component entities, one of each
    overlapping another of the others, and a NeighbourArrays over them."""
    spatial = es.SpatialProcessor(wrap=es.Box(0, 0, 32, 32), events=(_ENTER, _EXIT))
    nb = es.NeighbourArrays(spatial, 3.0)
    esper.add_processor(spatial, priority=2)
    esper.add_processor(nb, priority=1)
    boxes = array("d", [0, 0, 1, 1, 10, 10, 11, 11, 30.5, 30.5, 31.5, 31.5])
    positions = array("d", [0.5, 0.5, 20, 20, 31.25, 31.25])
    by_box = BoxArray(boxes)
    by_pos = BoxArray.of_positions(positions, size)
    made = [esper.create_entity(by_box.row(i)) for i in range(3)]
    made += [esper.create_entity(by_pos.row(i)) for i in range(3)]
    made.append(esper.create_entity(Position(20.5, 20.5), AABB(*size)))
    return spatial, nb, boxes, positions, by_box, by_pos, made


def test_a_world_mixes_box_arrays_position_arrays_and_components(world: str) -> None:
    """Pairs across the three kinds of member, on a torus (a position across the seam),
    entities moving from one kind to another, and ``in_rows`` of each array."""
    spatial, nb, _, positions, by_box, by_pos, made = _mixed_world((1.0, 1.0))
    b0, b1, b2, p0, p1, p2, c = made
    log = Recorder(_ENTER, _EXIT, None)
    esper.process()
    assert spatial.pairs == {(b0, p0), (b0, p2), (p1, c), (b2, p2)}  # p2 across the seams
    log.take()
    rows = nb.in_rows(by_pos)
    answer = nb.answer
    want = {b0: -1, b1: -1, b2: -1, p0: 0, p1: 1, p2: 2, c: -1}
    assert list(rows.ids) == [want[e] for e in answer.ids]
    assert list(rows.watchers) == [want[e] for e in answer.watchers]
    in_boxes = {b0: 0, b1: 1, b2: 2, p0: -1, p1: -1, p2: -1, c: -1}
    assert list(nb.in_rows(by_box).ids) == [in_boxes[e] for e in answer.ids]
    assert list(entity_rows(by_pos)[p0:p2 + 1]) == [0, 1, 2]
    positions[2:4] = array("d", [10.5, 10.5])  # p1 onto b1, away from c
    esper.process()
    assert sorted(log.take()) == sorted([("enter", b1, p1), ("exit", p1, c)])
    esper.add_component(c, by_pos.row(1))  # c by p1's row: a component entity no more
    esper.remove_component(c, Position)
    esper.remove_component(c, AABB)
    esper.add_component(b0, by_pos.row(2))  # b0 from the box array to the position one
    esper.process()
    assert spatial.index.get(c) == (10.5, 10.5, 11.5, 11.5)
    assert spatial.index.get(b0) == (31.25, 31.25, 32.25, 32.25)
    assert spatial.pairs == {(b1, p1), (b1, c), (p1, c), (b0, p2), (b0, b2), (b2, p2)}


def test_a_position_array_pickles_and_a_saved_world_gives_the_unsaved_events(
    world: str,
) -> None:
    np = pytest.importorskip("numpy")
    flock = BoxArray.of_positions(np.array([[1.0, 2.0], [3.0, 4.0]]), (0.5, 0.25))
    copy = pickle.loads(pickle.dumps(flock.row(1))).array
    assert copy.size == (0.5, 0.25) and isinstance(copy.buffer, array)
    assert copy[1] == (3.0, 4.0, 3.5, 4.25) and len(copy) == 2
    again = pickle.loads(pickle.dumps(copy))
    assert again.size == copy.size and again.snapshot() == flock.snapshot()

    spatial, _, boxes, positions, _, _, _ = _mixed_world((1.5, 1.5))
    esper.process()
    positions[0:2] = array("d", [10.0, 10.0])  # pending: not processed yet
    boxes[0:4] = array("d", [20.0, 20.0, 21.0, 21.0])
    with restored_alike(spatial):
        layouts = {type(r.array.buffer).__name__ + str(r.array.size)
                   for _, r in esper.get_component(ArrayRow)}
        assert layouts == {"arrayNone", "array(1.5, 1.5)"}


def test_a_position_the_torus_refuses_is_refused_by_name(world: str) -> None:
    spatial = es.SpatialProcessor(wrap=es.Box(0, 0, 10, 10))
    esper.add_processor(spatial)
    flock = BoxArray.of_positions(array("d", [0, 0, 0, 0]), (8.0, 1.0))
    bad = esper.create_entity(flock.row(1))
    with pytest.raises(ValueError, match=rf"entity {bad}.*ArrayRow row 1"):
        esper.process()
    assert len(spatial.index) == 0


_COORD = st.one_of(
    st.integers(0, 40).map(lambda i: i * 0.5),
    st.sampled_from([-0.0, 1e308, float("nan"), float("inf"), float("-inf")]),
)


@budget(40)
@given(
    size=st.sampled_from([(0.0, 0.0), (1.0, 1.0), (2.5, 0.5)]),
    wrap=st.booleans(),
    start=st.lists(st.tuples(_COORD, _COORD), min_size=1, max_size=8),
    frames=st.lists(
        st.lists(st.tuples(st.integers(0, 7), _COORD, _COORD), max_size=4), max_size=6
    ),
)
def test_a_position_array_gives_the_events_of_a_box_array(
    size: tuple[float, float],
    wrap: bool,
    start: list[tuple[float, float]],
    frames: list[list[tuple[int, float, float]]],
) -> None:
    """Two worlds, one placing agents by a BoxArray of positions and one by a BoxArray of
    the same boxes, written alike frame by frame with any floats (NaN, infinities, values
    whose box overflows): the same events, pairs and index, or a refusal of the same kind
    naming the same entity and row, with nothing changed in either."""
    n = len(start)
    sides = []
    with fresh_world("pos") as pos_name, fresh_world("box") as box_name:
        for name, layout in ((pos_name, "pos"), (box_name, "box")):
            esper.switch_world(name)
            log = Recorder(_ENTER, _EXIT, None)
            spatial = es.SpatialProcessor(wrap=es.Box(0, 0, 64, 64) if wrap else None)
            esper.add_processor(spatial)
            if layout == "pos":
                buffer = array("d", [v for p in start for v in p])
                flock = BoxArray.of_positions(buffer, size)
            else:
                buffer = array("d", _boxes_of([v for p in start for v in p], size))
                flock = BoxArray(buffer)
            for i in range(n):
                esper.create_entity(flock.row(i))
            sides.append((name, layout, log, spatial, buffer))
        for writes in [[], *frames]:
            answers: list[tuple[object, ...]] = []
            for name, layout, log, spatial, buffer in sides:
                esper.switch_world(name)
                for row, x, y in writes:
                    row %= n
                    if layout == "pos":
                        buffer[2 * row:2 * row + 2] = array("d", [x, y])
                    else:
                        buffer[4 * row:4 * row + 4] = array("d", _boxes_of([x, y], size))
                answers.append(_frame_answer(spatial, log))
            assert answers[0] == answers[1]


def test_the_position_read_keeps_no_reference_and_no_memory() -> None:
    """``_cmembers.read_rows`` with a size and ``write_rows`` with stride 16, each path
    (one member, a shared row, members skipped, a bad position raising through ``check``, a
    torus refusing, the buffers grown) run thousands of times: every object they touch
    keeps its reference count and no memory is kept."""
    read, write = _compiled()

    big = [10**6 + i for i in range(6)]
    last = array("d", [v for i in range(6) for v in (i, 1.0)]).tobytes()
    now = array("d", [v for i in range(6) for v in (i + 6.5, 1.0)]).tobytes()
    bad = array("d", [float("nan")] * 12).tobytes()
    state: list[Any] = [last, array("q"), {}, 0]
    for row, entity in [(0, big[0]), (1, big[1]), (1, big[2]), (3, big[3]), (5, big[4])]:
        arrays.link(state, row, entity)
    skip = {big[3]}
    period = (0.0, 0.0, 8.0, 8.0, 8.0, 8.0)
    size = (2.0, 2.0)
    check = BoxArray.of_positions(array("d"), size)._check
    buffers = [bytearray(), bytearray(), bytearray()]

    def loop(k: int) -> None:
        for i in range(k):
            ids, boxes, rows = buffers if i % 2 else [bytearray(), bytearray(), bytearray()]
            n, _ = read(now, last, state[1], state[2], skip, ids, boxes, rows, 0, check,
                        period, size)
            into = bytearray(last)
            write(into, rows, boxes, 0, n, 16)
            n, _ = read(now, last, state[1], state[2], set(), ids, boxes, rows, n, check,
                        None, size)
            with pytest.raises(ValueError, match="not finite"):
                read(bad, last, state[1], state[2], skip, ids, boxes, rows, 0, check, None,
                     size)
            with pytest.raises(IndexError, match="past the end"):
                read(now[:32], last, state[1], state[2], skip, ids, boxes, rows, 0, check,
                     None, size)

    assert_loop_keeps_nothing(
        loop, [*big, now, last, bad, state[1], state[2], *state[2].values(), skip, period,
               size, check, *buffers], slack=16 * 1024,
    )


def test_frames_of_position_entities_keep_their_reference_counts(world: str) -> None:
    spatial = es.SpatialProcessor(wrap=es.Box(0, 0, 64, 64))
    esper.add_processor(spatial)
    recorder = Recorder()
    buffer = array("d", [v for i in range(20) for v in (3.0 * i, 1.0)])
    flock = BoxArray.of_positions(buffer, (4.0, 4.0))
    rows = [flock.row(i) for i in range(20)]
    for row in [*rows, rows[3]]:
        esper.create_entity(row)

    def loop(k: int) -> None:
        for i in range(k):
            at = 2 * (i % 20)
            buffer[at + 1] = 0.0 if buffer[at + 1] else 1.0
            esper.process()
            recorder.take()

    loop(50)
    gc.collect()
    counts = [sys.getrefcount(x) for x in (flock, buffer, *rows)]
    loop(2000)
    gc.collect()
    assert [sys.getrefcount(x) for x in (flock, buffer, *rows)] == counts


def soak(seeds: int) -> None:
    """What ``tests/test_native_soak.py --asan`` runs of this file: the compiled position
    read against the reference and the box layout, its block skipping, the side-by-side
    model with a position array, and the reference-count loops."""
    import test_arrays as ta

    for seed in range(seeds):
        test_the_compiled_position_read_equals_the_reference(seed)
        test_the_position_read_skips_only_blocks_that_are_the_same(seed)
        ta._run_model(300 + seed, es.Box(0, 0, 64, 64) if seed % 2 else None,
                      reloads=0.2, size=[(2.0, 1.5), (0.0, 0.0)][seed % 2])
    test_the_compiled_read_refuses_a_size_that_is_not_a_pair()
    test_the_position_read_keeps_no_reference_and_no_memory()
    with fresh_world("soak") as name:
        test_frames_of_position_entities_keep_their_reference_counts(name)


# --- per-row sizes: BoxArray.of_positions(positions, sizes=...) --------------------------


def _sized_rows(positions: list[float], sizes: list[float]) -> list[float]:
    """The snapshot rows ``(x, y, w, h)`` of flat positions and sizes (as many as both hold)."""
    out: list[float] = []
    for i in range(0, min(len(positions), len(sizes)) - 1, 2):
        out.extend((positions[i], positions[i + 1], sizes[i], sizes[i + 1]))
    return out


def _boxes_of_sized(rows: list[float]) -> list[float]:
    """The box rows of snapshot rows ``(x, y, w, h)``; a row whose ``w`` or ``h`` is not
    >= 0 a box that is not one (its max NaN: refused as the sized row is, even where ``x +
    w`` rounds to ``x``)."""
    out: list[float] = []
    nan = float("nan")
    for i in range(0, len(rows), 4):
        x, y, w, h = rows[i:i + 4]
        out.extend((x, y, x + w if w >= 0.0 else nan, y + h if h >= 0.0 else nan))
    return out


def _read_sized(
    read: Any, now: bytes, last: bytes, state: list[Any], skip: set[int], period: Any,
    check: Any, room: int,
) -> tuple[str, object]:
    """``_read_all`` for rows of positions and sizes (``sized``)."""
    before = array("q", [7]).tobytes(), array("d", [1, 2, 3, 4]).tobytes()
    ids, boxes = bytearray(before[0] * room), bytearray(before[1] * room)
    rows = bytearray(before[0] * room)
    try:
        count, refused = read(
            now, last, state[1], state[2], skip, ids, boxes, rows, 1, check, period, None, True
        )
    except (ValueError, IndexError) as error:
        return (type(error).__name__, str(error))
    return ("ok", (
        count, refused, bytes(ids[:8 * count]), bytes(boxes[:32 * count]),
        bytes(rows[:8 * count]),
    ))


@pytest.mark.parametrize("seed", range(80))
def test_the_compiled_sized_read_equals_the_reference(seed: int) -> None:
    """``_cmembers.read_rows`` with ``sized`` against ``arrays.read_rows`` with it, on
    random snapshots of rows ``(x, y, w, h)`` (a position or a size changed, to -0.0 only,
    negative, NaN, infinite, so large that ``x + w`` overflows, past the end; shared rows;
    members skipped; blocks of 8 rows; a torus): the same moves in the same order, the same
    place of the first the torus refuses, or the same error; and where no error, the moves
    of the box rows of the same boxes. (The reference alone, against the box layout, in a
    pure-Python build.)"""
    reads, _ = _twins()
    rng = random.Random(seed)
    n = rng.randrange(1, 40)
    values = [float(rng.randrange(0, 8)) for _ in range(4 * n)]
    last = array("d", values).tobytes()
    for _ in range(rng.randrange(0, 8)):
        at = rng.randrange(4 * n)
        values[at] = rng.choice([
            0.0, -0.0, 1.0, 3.5, 9.0, -values[at], -0.5, float("nan"), float("inf"),
            float("-inf"), 1e308, 1e-300, -1e-300,
        ])
    cut = rng.choice([n, n, n, rng.randrange(0, n + 1)])
    tail = [2.0] * rng.choice([0, 0, 4])
    now = array("d", values[:4 * cut] + tail).tobytes()
    state: list[Any] = [last, array("q"), {}, 0]
    entities = list(range(1, rng.randrange(2, 50)))
    for entity in entities:
        arrays.link(state, rng.randrange(n), entity)
    skip = {e for e in entities if rng.random() < 0.1}
    period = rng.choice([None, (0.0, 0.0, 8.0, 8.0, 8.0, 8.0), (1.0, 0.5, 12.0, 6.0, 13.0, 6.5)])
    room = rng.choice([1, 2, 50])
    check = BoxArray.of_positions(array("d"), sizes=array("d"))._check
    answers = [_read_sized(read, now, last, state, skip, period, check, room) for read in reads]
    assert answers[0] == answers[-1]
    if answers[0][0] != "ok":
        assert str(answers[0][1]).startswith("entity ")
        return
    box_now = array("d", _boxes_of_sized(values[:4 * cut] + tail)).tobytes()
    box_last = array("d", _boxes_of_sized(list(array("d", last)))).tobytes()
    as_boxes = _read_all(
        arrays.read_rows, box_now, box_last, [box_last, *state[1:]], skip, period, None,
        arrays.checked_row, room,
    )
    assert as_boxes == answers[0]


def test_the_compiled_read_refuses_a_size_and_sized() -> None:
    read_c, _ = _compiled()
    with pytest.raises(TypeError, match="one of size and sized"):
        read_c(b"", b"", array("q"), {}, set(), bytearray(), bytearray(), bytearray(), 0,
               arrays.checked_row, None, (1.0, 1.0), True)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ((float("nan"), 0.0, 1.0, 1.0), r"row 1 x nan is not finite"),
        ((0.0, float("inf"), 1.0, 1.0), r"row 1 y inf is not finite"),
        ((0.0, 0.0, -1.0, 1.0), r"row 1 w -1.0 is negative"),
        ((1e10, 0.0, -1e-300, 1.0), r"row 1 w -1e-300 is negative"),  # x + w == x
        ((0.0, 0.0, 1.0, float("nan")), r"row 1 h nan is not finite"),
        ((0.0, 0.0, float("inf"), 1.0), r"row 1 w inf is not finite"),
        ((0.0, 0.0, 1.0, -float("inf")), r"row 1 h -inf is not finite"),
        ((1e308, 0.0, 1e308, 1.0), r"row 1 x \+ w inf is not finite"),
        ((float("nan"), 0.0, -1.0, 1.0), r"row 1 x nan is not finite"),  # the first field
    ],
)
def test_a_bad_size_is_refused_by_name_and_nothing_changes(
    world: str, row: tuple[float, float, float, float], message: str
) -> None:
    spatial = es.SpatialProcessor(es.Box(0, 0, 100, 100), wrap=None)
    esper.add_processor(spatial)
    positions = array("d", [0, 0, 1, 1, 50, 50])
    sizes = array("d", [1, 1, 1, 1, 1, 1])
    flock = BoxArray.of_positions(positions, sizes=sizes)
    a, b, c = (esper.create_entity(flock.row(i)) for i in range(3))
    esper.process()
    assert spatial.pairs == {(a, b)}
    before = spatial.index.state_hash()
    sizes[4:6] = array("d", [60, 60])  # c would join a and b
    positions[2:4] = array("d", row[:2])
    sizes[2:4] = array("d", row[2:])
    with pytest.raises(ValueError, match=rf"entity {b}: ArrayRow {message}"):
        esper.process()
    assert spatial.index.state_hash() == before and spatial.pairs == {(a, b)}
    positions[2:4] = array("d", [0.5, 0.5])
    sizes[2:4] = array("d", [0.0, 0.0])
    esper.process()
    assert spatial.pairs == {(a, b)}
    sizes[4:6] = array("d", [0.5, 0.5])
    positions[4:6] = array("d", [0.25, 0.25])  # c by its position and size at once
    esper.process()
    assert spatial.pairs == {(a, b), (a, c), (b, c)}
    assert spatial.index.get(c) == (0.25, 0.25, 0.75, 0.75)
    flock.rebind(array("d", [0, 0]), sizes=array("d", [1, 1]))
    with pytest.raises(IndexError, match=rf"entity {b}: its ArrayRow row 1 is past the end"):
        esper.process()


def test_a_sized_array_reads_both_buffers_in_place_and_refuses_by_name() -> None:
    np = pytest.importorskip("numpy")
    pos: Any = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    wh: Any = np.array([[1.0, 2.0], [0.5, 0.0], [3.0, 3.0], [9.0, 9.0]])  # a row more: fine
    flock = BoxArray.of_positions(pos, sizes=wh)
    read_in_place = flock.sizes is wh and flock.buffer is pos  # not narrowed: numpy's
    assert len(flock) == 3 and flock.size is None and read_in_place
    assert [flock[i] for i in range(3)] == [
        (0.0, 1.0, 1.0, 3.0), (2.0, 3.0, 2.5, 3.0), (4.0, 5.0, 7.0, 8.0)
    ]
    wh[1] = (4.0, 4.0)
    assert flock[1] == (2.0, 3.0, 6.0, 7.0)
    with pytest.raises(IndexError):
        flock[3]
    assert flock.row(2).row == 2
    assert flock.snapshot() == np.hstack([pos, wh[:3]]).tobytes()
    assert repr(flock) == "BoxArray.of_positions(3 rows of ndarray, sizes=ndarray)"
    flat = BoxArray.of_positions(array("d", [1, 2]), sizes=array("d", [3, 4]))
    assert flat[0] == (1.0, 2.0, 4.0, 6.0)
    with pytest.raises(TypeError, match=r"one of size=.*got both"):
        BoxArray.of_positions(pos, (1.0, 1.0), sizes=wh)
    with pytest.raises(TypeError, match="got None"):
        BoxArray.of_positions(pos)
    with pytest.raises(ValueError, match=r"sizes hold 2 rows \(w, h\), fewer than its 3"):
        BoxArray.of_positions(pos, sizes=wh[:2])
    with pytest.raises(ValueError, match=r"has 2 columns, got shape \(3, 4\)"):
        BoxArray.of_positions(pos, sizes=np.zeros((3, 4)))
    with pytest.raises(TypeError, match="format 'f'"):
        BoxArray.of_positions(pos, sizes=np.zeros((3, 2), dtype=np.float32))
    # rebind: the sizes kept unless given; both hold the rows, else nothing changes
    more = np.zeros((4, 2))
    flock.rebind(more)
    assert len(flock) == 4 and id(flock.sizes) == id(wh) and flock[3] == (0.0, 0.0, 9.0, 9.0)
    with pytest.raises(ValueError, match="sizes hold 4 rows"):
        flock.rebind(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="sizes hold 3 rows"):
        flock.rebind(more, sizes=wh[:3])
    assert len(flock) == 4 and flock.buffer is more and flock.sizes is wh
    other = np.ones((4, 2))
    flock.rebind(pos, sizes=other)
    assert len(flock) == 3 and flock.sizes is other and flock[0] == (0.0, 1.0, 1.0, 2.0)
    for plain in (BoxArray(array("d")), BoxArray.of_positions(pos, (1.0, 1.0))):
        with pytest.raises(TypeError, match="sizes= is for an array of per-row sizes"):
            plain.rebind(array("d"), sizes=wh)


def test_swap_remove_moves_the_last_position_and_size_in(world: str) -> None:
    np = pytest.importorskip("numpy")
    spatial = es.SpatialProcessor(es.Box(0, 0, 100, 100))
    esper.add_processor(spatial)
    pos = np.array([[0, 0], [1, 1], [50, 50], [51, 51]], float)
    wh = np.array([[2, 2], [1, 1], [2, 2], [3, 4]], float)
    vel = np.arange(8.0).reshape(4, 2)
    flock = BoxArray.of_positions(pos, sizes=wh)
    a, b, c, d = (esper.create_entity(flock.row(i)) for i in range(4))
    log = Recorder(_ENTER, _EXIT, None)
    esper.process()
    assert spatial.pairs == {(a, b), (c, d)}
    log.take()
    assert flock.swap_remove(1, vel) == d
    assert len(flock) == 3 and flock[1] == (51.0, 51.0, 54.0, 55.0)
    assert pos[1].tolist() == [51, 51] and wh[1].tolist() == [3, 4]
    assert wh[3].tolist() == [3, 4] and vel[1].tolist() == [6.0, 7.0]
    esper.delete_entity(b)
    esper.process()
    assert log.take() == [("exit", a, b)]
    assert spatial.pairs == {(c, d)} and spatial.moved == set()
    wh[2] = (0.5, 0.5)  # c by its size alone: away from d
    esper.process()
    assert log.take() == [("exit", c, d)] and spatial.moved == {c}
    assert spatial.index.get(c) == (50.0, 50.0, 50.5, 50.5)
    frozen = wh.copy()
    frozen.flags.writeable = False
    before = pos.copy()
    by_frozen = BoxArray.of_positions(pos, sizes=frozen)
    with pytest.raises(TypeError, match="writes the BoxArray's sizes, and this ndarray"):
        by_frozen.swap_remove(0, vel)
    assert (pos == before).all() and len(by_frozen) == 4
    with pytest.raises(IndexError, match="sizes holds 2 rows, fewer than its 4: rebind"):
        _shrunk(pos).swap_remove(0)
    assert (pos == before).all()


def _shrunk(pos: Any) -> BoxArray:
    """An array of 4 rows whose sizes buffer shrank to 2 rows since (rebind not called)."""
    sizes = array("d", [1.0] * 8)
    flock = BoxArray.of_positions(pos, sizes=sizes)
    del sizes[4:]
    return flock


def test_a_sized_array_pickles_and_a_saved_world_gives_the_unsaved_events(world: str) -> None:
    np = pytest.importorskip("numpy")
    flock = BoxArray.of_positions(
        np.array([[1.0, 2.0], [3.0, 4.0], [7.0, 7.0]]), sizes=np.array([[0.5, 0.25]] * 3)
    )
    flock.swap_remove(2)
    copy = pickle.loads(pickle.dumps(flock.row(1))).array
    assert copy.size is None and isinstance(copy.sizes, array) and isinstance(copy.buffer, array)
    assert copy[1] == (3.0, 4.0, 3.5, 4.25) and len(copy) == 2 and len(copy.sizes) == 4
    again = pickle.loads(pickle.dumps(copy))
    assert again.snapshot() == flock.snapshot()

    spatial = es.SpatialProcessor(wrap=es.Box(0, 0, 32, 32), events=(_ENTER, _EXIT))
    esper.add_processor(spatial)
    positions = array("d", [0.5, 0.5, 20, 20, 31.25, 31.25])
    sizes = array("d", [1, 1, 2, 2, 1.5, 1.5])
    by_sizes = BoxArray.of_positions(positions, sizes=sizes)
    made = [esper.create_entity(by_sizes.row(i)) for i in range(3)]
    made.append(esper.create_entity(Position(20.5, 20.5), AABB(1.0, 1.0)))
    esper.process()
    assert spatial.pairs == {(made[0], made[2]), (made[1], made[3])}
    sizes[0:2] = array("d", [12.0, 11.0])  # pending: not processed yet
    positions[4:6] = array("d", [14.0, 14.0])
    with restored_alike(spatial) as twin:
        assert twin.index.get(made[0]) == (0.5, 0.5, 12.5, 11.5)  # its size, pending


_SIZE = st.one_of(
    st.integers(0, 12).map(lambda i: i * 0.5),
    st.sampled_from([-0.0, -0.5, 1e308, float("nan"), float("inf"), float("-inf")]),
)


@budget(40)
@given(
    wrap=st.booleans(),
    start=st.lists(st.tuples(_COORD, _COORD, _SIZE, _SIZE), min_size=1, max_size=8),
    frames=st.lists(
        st.lists(st.tuples(st.integers(0, 7), st.booleans(), _COORD, _SIZE), max_size=4),
        max_size=6,
    ),
)
def test_a_sized_array_gives_the_events_of_a_box_array(
    wrap: bool,
    start: list[tuple[float, float, float, float]],
    frames: list[list[tuple[int, bool, float, float]]],
) -> None:
    """Two worlds, one placing agents by a BoxArray of positions with per-row sizes and one
    by a BoxArray of the same boxes, a position or a size written alike frame by frame
    with any floats (NaN, infinities, negative sizes, boxes that overflow): the same
    events, pairs and index, or a refusal of the same kind naming the same entity and row,
    with nothing changed in either."""
    n = len(start)
    flat = [v for row in start for v in row]
    sides = []
    with fresh_world("sized") as sized_name, fresh_world("box") as box_name:
        for name, layout in ((sized_name, "sized"), (box_name, "box")):
            esper.switch_world(name)
            log = Recorder(_ENTER, _EXIT, None)
            spatial = es.SpatialProcessor(wrap=es.Box(0, 0, 64, 64) if wrap else None)
            esper.add_processor(spatial)
            rows = array("d", flat)
            if layout == "sized":
                buffers = [array("d", [v for r in start for v in r[:2]]),
                           array("d", [v for r in start for v in r[2:]])]
                flock = BoxArray.of_positions(buffers[0], sizes=buffers[1])
            else:
                buffers = [array("d", _boxes_of_sized(list(rows)))]
                flock = BoxArray(buffers[0])
            for i in range(n):
                esper.create_entity(flock.row(i))
            sides.append((name, layout, log, spatial, buffers))
        for writes in [[], *frames]:
            for row, of_size, a, b in writes:
                row %= n
                at = 4 * row + (2 if of_size else 0)
                rows[at:at + 2] = array("d", [a, b])
            answers: list[tuple[object, ...]] = []
            for name, layout, log, spatial, buffers in sides:
                esper.switch_world(name)
                if layout == "sized":
                    buffers[0][:] = array("d", [rows[4 * i + k] for i in range(n) for k in (0, 1)])
                    buffers[1][:] = array("d", [rows[4 * i + k] for i in range(n) for k in (2, 3)])
                else:
                    buffers[0][:] = array("d", _boxes_of_sized(list(rows)))
                answers.append(_frame_answer(spatial, log))
            assert answers[0] == answers[1]


def test_the_sized_read_keeps_no_reference_and_no_memory() -> None:
    """``_cmembers.read_rows`` with ``sized`` (one member, a shared row, members skipped, a
    negative size raising through ``check``, a row past the end, a torus refusing, the
    buffers grown) run thousands of times: every object it touches keeps its reference
    count and no memory is kept."""
    read, _ = _compiled()

    big = [10**6 + i for i in range(6)]
    last = array("d", [v for i in range(6) for v in (i, 1.0, 1.0, 1.0)]).tobytes()
    now = array("d", [v for i in range(6) for v in (i + 6.5, 1.0, 1.0, 2.0)]).tobytes()
    bad = array("d", [v for i in range(6) for v in (i, 1.0, -1.0, 1.0)]).tobytes()
    state: list[Any] = [last, array("q"), {}, 0]
    for row, entity in [(0, big[0]), (1, big[1]), (1, big[2]), (3, big[3]), (5, big[4])]:
        arrays.link(state, row, entity)
    skip = {big[3]}
    period = (0.0, 0.0, 8.0, 8.0, 8.0, 8.0)
    check = BoxArray.of_positions(array("d"), sizes=array("d"))._check
    buffers = [bytearray(), bytearray(), bytearray()]

    def loop(k: int) -> None:
        for i in range(k):
            ids, boxes, rows = buffers if i % 2 else [bytearray(), bytearray(), bytearray()]
            n, _ = read(now, last, state[1], state[2], skip, ids, boxes, rows, 0, check,
                        period, None, True)
            n, _ = read(now, last, state[1], state[2], set(), ids, boxes, rows, n, check,
                        None, None, True)
            with pytest.raises(ValueError, match="is negative"):
                read(bad, last, state[1], state[2], skip, ids, boxes, rows, 0, check, None,
                     None, True)
            with pytest.raises(IndexError, match="past the end"):
                read(now[:64], last, state[1], state[2], skip, ids, boxes, rows, 0, check,
                     None, None, True)

    assert_loop_keeps_nothing(
        loop, [*big, now, last, bad, state[1], state[2], *state[2].values(), skip, period,
               check, *buffers], slack=16 * 1024,
    )


def soak_sizes(seeds: int) -> None:
    """What ``tests/test_native_soak.py --asan`` runs of the per-row sizes: the compiled
    sized read against the reference and the box layout, the side-by-side model (whose
    fourth side places its agents by a BoxArray of per-row sizes), the reference-count
    loop."""
    import test_arrays as ta

    for seed in range(seeds):
        test_the_compiled_sized_read_equals_the_reference(seed)
        ta._run_model(400 + seed, es.Box(0, 0, 64, 64) if seed % 2 else None, reloads=0.2)
    test_the_compiled_read_refuses_a_size_and_sized()
    test_the_sized_read_keeps_no_reference_and_no_memory()
