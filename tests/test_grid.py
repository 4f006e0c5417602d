"""CellGrid: a stateful model test against brute force over the whole float range, the order
of cells its superset promise rests on, and the cases that used to overflow."""

from __future__ import annotations

import math
import sys

import pytest
from _budget import budget
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from ecs_spatial._grid import FAR, MAX_CELLS, CellGrid
from ecs_spatial.geometry import Box

MAX = sys.float_info.max

# ---------------------------------------------------------------------------- strategies

# Coordinates of every kind a Box holds: ordinary, anywhere in the float range, near its
# ends, subnormal, signed zeros.
coordinates = st.one_of(
    st.floats(-100, 100),
    st.floats(-MAX, MAX),
    st.floats(0.9 * MAX, MAX),
    st.floats(-MAX, -0.9 * MAX),
    st.floats(-1e-300, 1e-300),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, MAX, -MAX, 2.0**1023]),
)
# And what a plain tuple may hold besides: ints, even past every float.
raw_coordinates = coordinates | st.integers(-(2**1100), 2**1100)

# Cell sizes: positive ones from the smallest subnormal to the largest float, and the ones
# the grid replaces (not positive, NaN) or makes one cell of (infinite).
cells = st.one_of(
    st.sampled_from([5e-324, 1e-310, 1e-300, 1e-5, 1.0, 10.0, 1e300, MAX]),
    st.floats(min_value=5e-324, max_value=MAX),
    st.sampled_from([0.0, -1.0, math.nan, math.inf]),
)


@st.composite
def boxes(draw: st.DrawFn) -> Box:
    """A box from two coordinates per axis, often zero-size, sometimes of ordinary size
    next to a far coordinate."""
    xs = sorted([draw(coordinates), draw(coordinates)])
    ys = sorted([draw(coordinates), draw(coordinates)])
    shape = draw(st.sampled_from(["any", "point", "small"]))
    if shape == "point":
        xs[1], ys[1] = xs[0], ys[0]
    elif shape == "small":
        size = draw(st.floats(0, 10))
        xs[1] = min(xs[0] + size, MAX)
        ys[1] = min(ys[0] + size, MAX)
    return Box(xs[0], ys[0], xs[1], ys[1])


# ---------------------------------------------------------------------------- the model


class GridMachine(RuleBasedStateMachine):
    """Random put / discard / reset and queries, against a dict of boxes.

    After every step ``check()`` holds and ``boxes`` equals the model; every query returns
    every key whose box intersects the query box (a superset is the promise), and only
    keys that are in the grid."""

    def __init__(self) -> None:
        super().__init__()
        self.grid = CellGrid()
        self.model: dict[int, Box] = {}

    @initialize(cell=cells)
    def start(self, cell: float) -> None:
        self.grid = CellGrid(cell)

    @rule(key=st.integers(0, 12), box=boxes())
    def put(self, key: int, box: Box) -> None:
        self.grid.put(key, box)
        self.model[key] = box

    @rule(key=st.integers(0, 12))
    def discard(self, key: int) -> None:
        self.grid.discard(key)
        self.model.pop(key, None)

    @rule(cell=cells)
    def reset(self, cell: float) -> None:
        self.grid.reset(cell)
        self.model.clear()

    @rule(box=boxes())
    def query(self, box: Box) -> None:
        self._answers(box)

    @rule(data=st.data())
    def query_at_stored_edges(self, data: st.DataObject) -> None:
        """A query box whose corners are taken from the stored boxes' own coordinates: the
        touching cases, where an off-by-one cell would miss."""
        if not self.model:
            return
        xs = st.sampled_from(sorted({c for b in self.model.values() for c in (b[0], b[2])}))
        ys = st.sampled_from(sorted({c for b in self.model.values() for c in (b[1], b[3])}))
        x0, x1 = sorted([data.draw(xs), data.draw(xs)])
        y0, y1 = sorted([data.draw(ys), data.draw(ys)])
        self._answers(Box(x0, y0, x1, y1))

    def _answers(self, box: Box) -> None:
        got = self.grid.query(box)
        want = {key for key, stored in self.model.items() if stored.intersects(box)}
        assert want <= got, f"missed {sorted(want - got)} for {box}"
        assert got <= self.model.keys(), f"returned keys not in the grid: {got - self.model.keys()}"

    @invariant()
    def consistent(self) -> None:
        self.grid.check()
        assert self.grid.boxes == self.model
        assert len(self.grid) == len(self.model)


GridMachine.TestCase.settings = budget(150, stateful_step_count=30)
TestGridModel = GridMachine.TestCase


# ---------------------------------------------------------------------------- properties


@budget(300)
@given(st.lists(raw_coordinates, min_size=2, max_size=2), cells)
def test_cells_never_decrease_as_coordinates_grow(pair: list[float], cell: float) -> None:
    """The order the superset promise rests on: x <= y gives cell(x) <= cell(y), for every
    kind of coordinate and cell size, overflow included (and ints past every float, which
    a plain tuple may hold); every cell is within +-FAR."""
    x, y = sorted(pair)
    grid = CellGrid(cell)
    cx = grid._span((x, x, x, x))[0]
    cy = grid._span((y, y, y, y))[0]
    assert -FAR <= cx <= cy <= FAR


# ---------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize(
    ("cell", "stored", "query"),
    [
        (1e-300, Box(0, 0, 1e10, 1), Box(0, 0, 1, 1)),  # x / cell overflows
        (1.0, Box(-1.7e308, 0, 1.7e308, 1), Box(0, 0, 1, 1)),  # the whole range
        (5e-324, Box(0, 0, 0, 0), Box(0, 0, 1, 1)),  # 1 / cell overflows: 0 * inf was NaN
        (5e-324, Box(-MAX, -MAX, -MAX, -MAX), Box(-MAX, -MAX, -1.0, -1.0)),
        (1e-300, Box(1e10, 1e10, 1e10, 1e10), Box(1e10, 1e10, 2e10, 2e10)),  # both far
    ],
)
def test_far_boxes_and_tiny_cells_are_found(cell: float, stored: Box, query: Box) -> None:
    """The cases that raised OverflowError or ValueError from floor(): put, query, discard
    and check all work, and the stored box is found."""
    grid = CellGrid(cell)
    grid.put(1, stored)
    grid.check()
    assert 1 in grid.query(query)
    grid.discard(1)
    grid.check()
    assert grid.query(query) == set()


def test_a_box_spanning_1e300_cells_is_kept_apart() -> None:
    """A box spanning more than MAX_CELLS cells goes to the set every query returns, and a
    query spanning 1e300 cells scans the occupied cells: neither walks its cells."""
    grid = CellGrid(1.0)
    grid.put(1, Box(-1e300, -1e300, 1e300, 1e300))
    grid.put(2, Box(5, 5, 6, 6))
    assert grid._big == {1}
    assert grid.query(Box(100, 100, 100, 100)) == {1}
    assert grid.query(Box(-1e300, -1e300, 1e300, 1e300)) == {1, 2}
    grid.put(1, Box(0, 0, MAX_CELLS - 1, 0))  # back to MAX_CELLS cells: bucketed
    assert grid._big == set()
    grid.check()


@pytest.mark.parametrize("cell", [0.0, -3.0, math.nan])
def test_a_cell_size_that_is_not_positive_means_one(cell: float) -> None:
    """reset (and the constructor) fall back to cells of side 1."""
    grid = CellGrid(cell)
    grid.put(1, Box(0.5, 0.5, 0.5, 0.5))
    grid.put(2, Box(1.5, 0.5, 1.5, 0.5))
    assert grid.query(Box(0.0, 0.0, 0.9, 0.9)) == {1}


def test_an_infinite_cell_puts_everything_in_one_cell() -> None:
    """A cell beyond every float: one cell for every finite box, which stays correct."""
    grid = CellGrid(math.inf)
    grid.put(1, Box(-MAX, -MAX, -MAX, -MAX))
    grid.put(2, Box(MAX, MAX, MAX, MAX))
    grid.check()
    assert grid._cells.keys() == {(0, 0)}
    assert grid.query(Box(0, 0, 0, 0)) == {1, 2}
