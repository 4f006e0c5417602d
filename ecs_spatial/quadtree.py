"""A quadtree of closed axis-aligned boxes keyed by int entity ids, written for CPython.

Each entry lives in the *smallest node that contains it*, so a large box never degrades the
tree (the design of "Quadtree and Collision Detection"); a moving entry is updated in place
while it still belongs to its node and otherwise climbs only as far as it must and sinks back
down ("Yet Another Quad Tree Tutorial"). The index stands alone: it imports nothing outside
the standard library.

Modules
    Each of the index's modules imports only those listed before it: ``geometry`` (the
    ``Box`` and the boundary rule); ``_records`` (an entry's record, and how ids, boxes and
    points are read); ``_growth`` (how the root grows); ``_snapshots`` (the straddler
    snapshots); ``_wrap`` (the period of a wrapped tree and its arithmetic); then the units
    the ``QuadTree`` class is composed of, one mixin each, which reach one another only
    through ``self``: ``_tree_storage`` (the fields and their layout, the making of a
    tree, the container protocol), ``_tree_check`` (``check()``: the
    invariants below), ``_tree_state`` (copies, and the pickle state both classes share),
    ``_tree_nodes`` (placement, split, merge, relocation, the root's growth),
    ``_tree_updates`` (inserts, moves, removals), ``_tree_queries`` (the window queries and
    ``nodes()``), ``_tree_nearest``, ``_tree_casts`` and ``_tree_pairs`` (the two pair
    searches); and this one, which composes the class. The compiled twin of each unit is
    ``_cquadtree_src/<its name without the leading underscore>.c``.

Layout
    Nodes are int ids into flat parallel lists (bounds and split point, fit bounds,
    children, parent, level, subtree count, entries); the entries of a node are a ``dict``
    from entity id to a record ``(min_x, min_y, max_x, max_y, id)``; and a ``dict`` from
    entity id to its node's *home record* sits beside the tree, so that ``move`` and
    ``remove`` need only the id. The home record is one mutable list per node (fit bounds,
    split point, entries, node id, children): a move that stays in its node costs one
    lookup and one unpack. Records are plain tuples: they unpack in one step, sort on
    their ``min_x`` alone (``itemgetter(0)``, compared in C), and spare callers the cost
    of a ``Box`` (any 4-tuple is accepted and checked inline; ``tree[id]`` hands back a
    ``Box``). A record holds four floats and an int, whatever the caller passed: an int
    coordinate is rounded to the nearest float on the way in, as ``Box`` rounds it, so that
    ``2**53 + 1`` is ``2.0**53`` for the index as for the boxes it is checked against.

    The entries of an internal node all touch its split lines, and near the root there are
    many of them (their number grows with the world's side). Such a node keeps a sorted
    *snapshot* of them, built when first needed and dropped when they change, with the
    bounding box of each half: queries and the per-entity pair search bisect a window or,
    for a box away from the lines, skip the node in four comparisons. A node with fewer
    entries caches those four comparisons' bounds alone, once a per-entity search needs
    them.

The fit rule
    A box goes down into a child only if it lies *strictly* on one side of the node's split
    lines (``max_x < cx`` or ``min_x > cx``, the same on y). A box that touches a split line
    stays in the node. Boxes are closed, so two boxes in different child subtrees are then
    always strictly apart, and the all-pairs search never needs to look across siblings.
    The rule holds for entries that stay put as much as for entries that sink: each node
    keeps *fit bounds*, strict on every edge that is an ancestor's split line and closed on
    the root's outer edges, and an entry belongs in a node only while it lies strictly
    inside them (one uniform test, ``fx0 < min_x and max_x < fx1 ...``).

Invariants (``check()`` asserts every one; the tests call it after every step)
    1. Every entity is in exactly one node, and the entity-to-node map agrees with the tree;
       its id is an int from ``-2**63`` to ``2**63 - 1`` and its record holds four floats.
    2. The entity's box lies strictly inside its node's fit bounds (so inside its closed
       bounds); only the root may hold a box outside them, and only once the root can grow
       no further (see *Bounds*).
    3. An entry of an internal node does not fit strictly into any of its children.
    4. Each node's count is the number of entries in its subtree.
    5. An internal node holds more than ``threshold`` entries in its subtree, and lies above
       ``max_depth``; a leaf holds at most ``threshold`` entries unless it is at ``max_depth``.
       (So a subtree that drops to ``threshold`` or fewer has been merged back, and the shape
       of the tree is a function of the set of boxes alone, whatever the order of updates.)
    6. A child's bounds are exactly its quadrant of its parent's bounds, split at the
       ``geometry.midpoint`` of each axis; every bound and split point is a finite float.
    7. A node's cached snapshot, if it has one, is exactly what its entries give now.

Calls back into Python
    ``nearest``, ``raycast_first`` and ``cast_box_first`` call their ``where=`` predicate in
    the middle of a search. The tree is *busy* meanwhile (until the outermost such search
    ends, if a predicate runs one of its own): it may be read in every way, but every change
    (``insert``, ``insert_many``, ``insert_records``, ``move``, ``move_many``,
    ``move_records``, ``remove``, ``discard``, ``clear``, ``__init__`` and ``__setstate__``
    called again) raises ``RuntimeError`` before it touches anything, so the search never
    walks a half-changed tree. These are the calls the compiled core refuses while busy,
    with the same message (its ``guard``). Every change is busy, too, while it runs Python
    of its own (an id's ``__index__``, a coordinate's ``__float__``, an iterator of ids,
    boxes or records), and so is ``find_intersections_for`` while it reads its ids: a
    change made from there is refused in the same way, in both classes, and the call that
    was running raises it with the tree as it was. The flag is never pickled or copied.

    But ``discard`` of an int id while busy is *deferred*, not refused: it is recorded and
    applied when the outermost busy call ends (its answer still includes the entity, as if
    the discard came just after it). So a finaliser that discards its own entity
    (``def __del__(self): tree.discard(self.entity)``), which the garbage collector may run
    in the middle of any call, is never lost. Both classes follow this rule.

Bounds
    ``bounds`` is a hint. A box outside the root makes the root double toward it (the tree is
    rebuilt once around the larger root; this happens at most once per doubling), so nothing
    is ever refused or lost for its position. A doubling that would leave the finite floats
    stops at the largest float instead (a root wider than the range has no finite split
    point), so a root reaches, and then holds, any box at all. ``max_depth`` counts from the
    root the tree was made with: cells never get smaller than ``bounds`` / 2**max_depth,
    however far the root grows (except along an axis where growth was clamped at the
    range's edge, whose cells a clamped doubling leaves narrower). Past ``_growth.MAX_GROWTH``
    doublings the root stops growing and keeps such a box in its own entries, where every
    query still finds it. A tree made without ``bounds`` starts around its first box,
    clamped to the range likewise.
"""

from __future__ import annotations

import sys
from types import FunctionType

from ._tree_casts import _Casts
from ._tree_check import _Check
from ._tree_nearest import _Nearest
from ._tree_nodes import _Nodes
from ._tree_pairs import _Pairs
from ._tree_queries import NodeInfo, _Queries
from ._tree_state import _State
from ._tree_storage import DEFAULT_MAX_DEPTH as DEFAULT_MAX_DEPTH
from ._tree_storage import DEFAULT_THRESHOLD as DEFAULT_THRESHOLD
from ._tree_storage import _Storage
from ._tree_updates import _Updates

__all__ = ["NodeInfo", "QuadTree"]


class QuadTree(_Storage, _Updates, _Queries, _Nearest, _Casts, _Pairs, _State, _Nodes, _Check):
    """A spatial index of closed boxes keyed by int entity ids (from ``-2**63`` to
    ``2**63 - 1``: see ``insert``).

    >>> tree = QuadTree(Box(0, 0, 100, 100))
    >>> tree.insert(1, Box(10, 10, 20, 20)); tree.insert(2, Box(20, 20, 30, 30))
    >>> tree.find_all_intersections()
    [(1, 2)]

    ``bounds`` is a hint for the extent of the world (anything outside it is still indexed);
    a leaf splits when it would hold more than ``threshold`` entries unless it is
    ``max_depth`` levels below the root, and a subtree merges back into its root when it
    holds ``threshold`` or fewer.

    The default of 16 suits worlds where few entries move each frame. Where most of them
    move every frame, ``threshold=64`` measured 0.72 to 0.74 times the default's time per
    frame (moves plus ``find_all_intersections``, N = 10,000 and 50,000), at the price of
    1.04 to 1.2 times the cost of ``find_intersections_for``, which scans whole leaves
    (the decisions section of ``docs/design.md``; ``python -m bench peers --set
    thresholds`` measures it again).

    Threads: use a tree from one thread at a time, or hold a lock around every call (as for
    an esper world). The tree is *busy* while one of its calls runs Python (a ``where=``
    predicate, a conversion or an iterator it called; see "Calls back into Python" in the
    module docstring), and a change from another thread that arrives meanwhile is refused
    with the busy ``RuntimeError``: the compiled class's structure is never corrupted, but
    the change is not made, and the pure-Python class gives no such guarantee between two
    threads that both run Python. A search with ``where=`` (``nearest``, ``raycast_first``,
    ``cast_box_first``) that starts while another thread's change is inside its Python
    waits, the GIL released, for that change to end: it never walks a tree changing under
    it.

    Wrap-around worlds: ``QuadTree(bounds=None, *, threshold=16, max_depth=8, wrap=None)``.
    ``wrap``, a ``Box`` or ``(x0, y0, x1, y1)``, makes the tree a torus of period ``W = x1 -
    x0`` by ``H = y1 - y0`` (as floats compute them; both finite and > 0, else
    ``ValueError`` naming the value); ``bounds`` then defaults to the wrap box, and ``wrap``
    gives it back (``None`` for a plain tree). The rules (both classes, to the bit):

    - *Canonical boxes.* Every box given (``insert``, ``insert_many``, ``insert_records``,
      ``move``, ``move_many``, ``move_records``, a state) is kept shifted by whole periods
      so that its min corner lies in ``[x0, x0 + W) x [y0, y0 + H)``; its max corner may pass
      ``x0 + W`` (the box then lies across the right seam; likewise the top). The rule, per
      axis (``_wrap.wrap_coord``): a canonical min is kept to the bit; else ``r = fmod(min -
      x0, W)`` (exact), plus ``W`` if negative, and the min becomes ``x0 + r``, or ``x0`` if
      that rounds to ``x0 + W`` or past it (a min exactly at the seam goes to ``x0``); the
      width is kept, ``max = min' + (max - min)`` (a box of zero size stays one). Exact
      when ``x0 == 0`` but for the one rounding of ``r + W``; elsewhere the nearest floats.
      ``tree[id]``, ``get``, iteration and the state give the canonical box.
    - *Size limit.* A box whose kept width exceeds ``W / 2`` (or height ``H / 2``) is
      refused with ``ValueError`` naming the entity, the box and the limit; so is a box
      whose distance from the period is past the float range (no finite image). Nothing
      changes then (``move_many``'s undo rules as for any refusal).
    - *Overlap on the torus*: A and B overlap when A (closed) meets B shifted by ``(k W, l
      H)`` for some integers ``k``, ``l``. ``find_all_intersections`` (and ``_array``),
      ``find_intersections_for`` and ``query_entity`` answer by it, each pair once, in the
      same order and shape as a plain tree: the plain pairs, plus those of each box that
      reaches a seam (``max >= x0 + W`` or ``y0 + H``; only such a box meets another through
      an image), found by a query of its box on the torus. (Of a box across the right seam
      the images ``(-W, 0)``, ``(0, -H)`` and ``(-W, -H)`` do not suffice: one across the
      right seam at the bottom meets one across the top seam at the left through ``(-W,
      +H)``.)
    - ``query(box)``: the query box is taken modulo the period too, any size: every entity
      whose box overlaps it on the torus, each once, ascending. A query box as wide as the
      period or wider (or as high) covers every x (every y). ``query_point``: the point
      wrapped.
    - ``query_radius`` and ``query_radius_many``: the *minimum-image distance*, the least
      distance from an image of the wrapped point to the box (the plain distance from each
      of the nine images ``(x + i W, y + j H)``, ``i, j`` in -1, 0, 1, of the canonical
      point, which holds the least one), ``<= r``. A radius over half the smaller period is
      refused with ``ValueError``: an entity could then be within it through two images.
      ``nearest``: by the minimum-image distance, ties by id, ``where=`` and
      ``max_distance`` as on a plain tree (``where`` may be asked about an id more than
      once).
    - The casts (``raycast``, ``raycast_first``, ``cast_box``, ``cast_box_first``) follow
      the segment (or the moving box) across the seams: an entity's ``t`` is the least at
      which the cast, as given, meets any image of its box, so ``t`` runs on over the whole
      segment, one hit per entity, sorted as on a plain tree. The cast is shifted by whole
      periods for each period cell it crosses (and their neighbours) and cast as a plain
      one (``_wrap.cast_shifts``); a cast across more than ``_wrap.MAX_CAST_CELLS`` cells
      is refused with ``ValueError``. ``where`` may be asked about ids past the answer.
    - The period is part of the state (the key ``"wrap"``, written only for a wrapped tree:
      a state without it loads as a plain tree), of copies, and of ``state_hash`` (a
      plain tree's hash is unchanged); ``check()`` asserts every box canonical and within
      the size limit. ``clear()`` keeps the period.

    Finalisers: ``discard(entity)`` with an int id made while the tree is busy (by a
    ``__del__`` that the garbage collector runs in the middle of a call, or by a ``where=``
    predicate) is deferred to the end of the outermost busy call instead of refused; every
    other change is refused meanwhile.
    """

    # Each unit declares empty __slots__ and _Storage the fields (INDEX_FIELDS): an instance
    # has those alone and no __dict__; a subclass's own slots or __dict__ are its own.
    __slots__ = ()


def _adopt(cls: type) -> None:
    """Make the units' methods ``cls``'s own in name: ``QuadTree.query``, not
    ``_Queries.query``, as when they were written in one class. CPython words an argument
    error with the function's qualified name (its code's, since 3.11): the compiled class
    words it ``QuadTree.query()`` too, and the two must raise the same text. Pickle finds a
    method by its module and qualified name, ``help()`` and ``repr`` show them."""
    for unit in cls.__mro__[1:-1]:
        for name, member in vars(unit).items():
            if isinstance(member, property):
                functions = [member.fget, member.fset, member.fdel]
            else:
                functions = [getattr(member, "__func__", member)]  # a staticmethod's too
            for function in functions:
                if not isinstance(function, FunctionType):
                    continue
                function.__module__ = cls.__module__
                function.__qualname__ = f"{cls.__qualname__}.{name}"
                if sys.version_info >= (3, 11):
                    function.__code__ = function.__code__.replace(
                        co_qualname=function.__qualname__
                    )


_adopt(QuadTree)
