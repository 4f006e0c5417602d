/* tree.h: the layout of the compiled index (Node, Tree and the structs they hold, with their
 * invariants), and QT_API. C-only: the reference keeps its tree in Python objects.
 *
 * The pure-Python module is the reference (heapq's pattern: Lib/heapq.py is judged by
 * nobody, _heapq is judged by it). The core gives the same answers, errors included, with a
 * layout made for C. Everything in it is checked against the reference by
 * tests/test_native_quadtree.py, side by side, step by step.
 *
 * Floats: every expression that decides an answer is the reference's, in the reference's
 * order of operations, and the core is compiled with -ffp-contract=off -fno-fast-math
 * (setup.py), so each one rounds exactly as CPython rounds it.
 *
 * Python inside the core: a call of a Python object (the reference's helpers, a where=
 * predicate, an id's __index__, an iterator), a decref that may free an object with a
 * finaliser, and on 3.10 and 3.11 any allocation of a tracked object (a list, a tuple, a Box,
 * a dict: the cyclic collector may run there, and with it __del__, weakref callbacks and
 * gc.callbacks) may run arbitrary Python, which may change this tree, or release the GIL to
 * a thread that does. So no pointer into the tree, slot, node index or count is held across
 * such a call: it is read again afterwards, or the tree is held busy across the call. A read
 * (the queries, __iter__, __getstate__, nodes, repr, the copies) finishes reading the tree
 * before its first such call after its arguments, copying what its answer needs into C
 * memory: a change made while the answer is built goes through and is not in the answer, as
 * if made just after the call. A change (insert, insert_many, insert_records, move,
 * move_many, move_records, remove, discard, clear, __init__, __setstate__) holds the tree
 * busy (guard()) while it runs Python, and so do nearest, raycast_first and cast_box_first
 * while where= may run and find_intersections_for while it reads its iterable and finds the
 * pairs: another change meanwhile raises guard()'s RuntimeError, the reference's text
 * (_tree_storage.BUSY; a finaliser or a gc.callbacks hook gets it, and Python reports it as
 * unraisable); a read meanwhile sees the tree between two steps, whole. But discard() of an
 * exact int while busy is deferred, not refused: its id is recorded (t->pending) and removed
 * when the outermost busy section ends (busy_end(), which runs no Python), so that a
 * finaliser's `tree.discard(self.entity)` is never lost; the reference follows the same rule.
 *
 * Threads. Busy refuses a change that starts, not one already in flight: another thread's
 * change that is inside its Python (a box's iterator, a collection) when a where= search
 * starts would take the GIL back while where runs, and change the tree under the walk. So
 * the searches that run where= (nearest, raycast_first, cast_box_first) start through
 * walk_begin(), which holds the tree busy and then lets such a change finish first (the GIL
 * released meanwhile). A change in flight in the search's own thread is suspended under it
 * and cannot resume before it ends: no wait. The other reads run no Python while they walk.
 */
#ifndef ECS_SPATIAL_CQUADTREE_TREE_H
#define ECS_SPATIAL_CQUADTREE_TREE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* A function or datum one unit defines and others use: static in the unity build
 * (ecs_spatial/_cquadtree.c, one translation unit, so that every hot call can be inlined),
 * external when a unit is compiled alone (tests/test_house.py compiles each so, to prove
 * that it includes what it uses). QT_DATA declares such a datum in a header. */
#ifdef QT_UNITY
#define QT_API static
#define QT_DATA static
#else
#define QT_API
#define QT_DATA extern
#endif

/* A slow path kept out of line, so that the fast path that calls it (a static inline helper of
 * a header) stays small enough to be inlined into every loop that calls it. */
#if defined(__GNUC__) || defined(__clang__)
#define QT_NOINLINE __attribute__((noinline))
#else
#define QT_NOINLINE
#endif

/* Entities live in dense *slots* 0 .. n-1: parallel arrays of the id, the four coordinates
 * (contiguous doubles, box[4*s] .. box[4*s+3]), the node that holds the entry, and its
 * neighbours in that node's list of entries (a doubly linked list threaded through the slots,
 * so that a node owns no memory of its own and a move, a split or a merge never allocates).
 * Removing an entity moves the last slot into its place. An open-addressing hash (linear
 * probing, backward-shift deletion) maps an id to its slot.
 *
 * Nodes are structs in one array, reused through a free list; a node is named by its index. */
#define NO_NODE (-1)

#define NO_SLOT (-1)

/* Slots and nodes are int32 indices: a tree holds fewer than 2**31 - 1 of each. */
#define MAX_COUNT (INT32_MAX / 2)

/* One node of the tree.
 *
 * Invariants (QuadTree.check() asserts each one; quadtree.py's module docstring states them):
 * - x0 <= x1 and y0 <= y1, all finite; (cx, cy) == (midpoint(x0, x1), midpoint(y0, y1));
 * - a child's bounds are exactly its quadrant of its parent's, its level one more; its fit
 *   bounds are its parent's fit bounds on the outer edges and the split lines inside; the
 *   root's fit bounds are its bounds one float step outward;
 * - kids[0] == NO_NODE for a leaf; an internal node has four live children whose parent it is;
 * - count is the number of entries in the subtree, n the number held by the node itself, head
 *   the first of them (NO_SLOT when n == 0);
 * - every entry lies strictly inside the fit bounds (only the root may hold a box outside
 *   them, one it can grow toward no further), and an internal node's own entries fit
 *   strictly into none of its children;
 * - an internal node has count > threshold and level < max_depth; a leaf has n <= threshold
 *   or level >= max_depth. With the root, this makes the tree's shape a function of the set
 *   of boxes, as in the reference, and hence the same shape as the reference's.
 * A node on the free list has n == 0, head == NO_SLOT and kids[0] == NO_NODE. */
/* One entry of the call-order hints (Tree.call_hint). */
typedef struct {
    int32_t next;    /* a slot, or anything (checked < n before use) */
    uint32_t bucket; /* the id table bucket of next's id (masked before use) */
} CallHint;

typedef struct {
    double x0, y0, x1, y1;     /* closed bounds */
    double cx, cy;             /* split point */
    double fx0, fy0, fx1, fy1; /* fit bounds: an entry belongs here while strictly inside */
    int32_t parent;            /* NO_NODE for the root */
    int32_t kids[4];           /* low-left, low-right, high-left, high-right, or NO_NODE */
    int32_t level;             /* the root made with the tree is level 0; growth goes negative */
    int32_t count;
    int32_t n;
    int32_t head;
} Node;

/* A stack frame of descend(): a batch of slots chained through next[], not yet counted at
 * or below node. */
typedef struct {
    int32_t node, head, len;
} Frame;

/* The mutations' work stack: frames for descend(), node indices for merge() and compact()
 * (never both at once). */
typedef union {
    Frame frame;
    int32_t node;
} Work;

/* An entry in the pair search: its box and id, copied where the sweep reads them. */
typedef struct {
    double x0, y0, x1, y1;
    int64_t id;
} Rec;

/* A node's own entry in the pair search: a record and the slot it came from. */
typedef struct {
    double x0, y0, x1, y1;
    int64_t id;
    int32_t slot;
} OwnRec;

/* A node of the pair search and the records of its ancestors that overlap it: arena[off ..
 * off + len), sorted by min_x. */
typedef struct {
    int32_t node;
    Py_ssize_t off, len;
} SweepFrame;

/* The pair search's working memory, kept between calls so that a frame's search does not
 * map fresh pages, which the kernel zeroes at a cost the search notices (see docs/design.md#decisions). A
 * call takes it from the tree and gives it back when done; a search started meanwhile (from
 * a finaliser the garbage collector runs) finds none and makes its own. */
typedef struct {
    Rec *arena;
    OwnRec *own;
    SweepFrame *frames;
    Py_ssize_t arena_cap, own_cap, frames_cap;
} Scratch;

/* A straddler snapshot (quadtree.py's _Snap, laid out for C): the own entries of an internal
 * node, whose number grows with the world's side near the root (hundreds at the root of a
 * large world), sorted so that the per-entity pair search skips the node in a few
 * comparisons or reads a bisected window of it, instead of every entry.
 *
 * Those across the vertical split line (min_x <= cx <= max_x) come first, by (min_y, slot);
 * the others (across the horizontal line, or the root's beyond its bounds) after them, by
 * (min_x, slot). reach[i] is the largest max_y (max_x for the others) of the group's entries
 * up to i: it never decreases, so one bisection finds the first entry that can reach a box,
 * with no arithmetic to round. across and along are each group's bounding box (min_x, min_y,
 * max_x, max_y; +inf, +inf, -inf, -inf when empty, which every box misses).
 * One allocation: the header, then reach[cap], then slot[cap] (snap_slots()). */
typedef struct {
    int32_t n, n_across, cap;
    double across[4], along[4];
    double reach[];
} Snap;

/* A snapshot's sort key and slot while it is built. */
typedef struct {
    double key;
    int32_t slot;
} KeySlot;

/* The tree's snapshots: an open-addressing table (linear probing) from node to snapshot,
 * for the nodes of SNAP_MIN or more own entries that a per-entity search has read (few,
 * near the root: a table beside the nodes, not a field in each, so the nodes keep their
 * size, and memory per entity its figure).
 *
 * Invariant (quadtree.py's 7; QuadTree.check() asserts it): a snapshot marked fresh of an
 * internal node is exactly what its own entries give now, and no freed node has one. Every
 * change to an internal node's own entries (one added or removed, a box moved in place, a
 * slot renumbered) marks its snapshot stale (snap_changed(): a flag store), and so does a
 * merge for the nodes it frees; a stale one is rebuilt when next read. Only snapshots are
 * read, never a leaf's, so a box moved in place in a leaf (most moves) marks nothing: a leaf
 * (an internal node merged with no entries below it) is marked when it turns internal
 * again. A snapshot is built only while its node holds SNAP_MIN entries or more, and marked
 * stale at the first change after that, so a change to a node of fewer entries needs no
 * look-up. Buckets are never removed one by one: the table is rebuilt without the stale
 * ones when it fills, and dropped with the nodes (clear_nodes) or the slots (compaction).
 * Probed by containers.h's probe(). */
typedef struct {
    int32_t node; /* NO_NODE: an empty bucket */
    int32_t fresh;
    Snap *snap;   /* owned; NULL until first built */
} SnapRef;

/* The QuadTree object.
 *
 * Invariants:
 * - slots [0, n) are the entities; the table maps each one's id to its slot, and nothing
 *   else (table_size a power of two, more than n; EMPTY buckets are NO_SLOT);
 * - for every slot s, s is in the list of node_of[s], linked through next[s] and prev[s];
 * - root == NO_NODE exactly when the tree has no root yet (no bounds given, nothing added);
 * - nodes [0, n_nodes) are either live (reachable from the root) or on the free list;
 *   free_nodes and work have room for cap_nodes entries (and work one more), so the
 *   routines that use them never allocate;
 * - busy > 0 while a method runs that may call back into Python (an id's __index__, a
 *   box's iterator, a where= predicate): another change then raises instead of pulling the
 *   structure from under it;
 * - broken is set if memory ran out in the middle of a change: every method then raises.
 * Slots are renumbered in tree order (compact()) after a bulk build and once many entries
 * have changed node, so that a node's entries lie together in memory for the pair search.
 * The object holds no Python references but the two configuration ints, so it needs no
 * garbage-collector support. */
typedef struct {
    PyObject_HEAD
    PyObject *threshold_obj;  /* owned: the threshold as an exact int, which .threshold and repr show */
    PyObject *max_depth_obj;  /* owned */
    int32_t threshold;        /* the same, clamped to int32 (no count ever reaches it) */
    int32_t max_depth;
    int has_hint;
    double hint[4];           /* the bounds the tree was made with */

    int32_t n, cap;
    int64_t *ids;
    double *box;
    int32_t *node_of, *next, *prev;

    int32_t *table;
    size_t table_size;

    Node *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *free_nodes;
    int32_t n_free;
    Work *work;
    int32_t root;
    int32_t scattered; /* entries placed or re-placed since the slots were last in tree order */

    Scratch scratch;

    /* The slots the last move_many of buffers found, by position in its buffer (a game sends
     * its ids in the same order every frame): tried before the hash, and trusted only when
     * s < n and ids[s] is the id, so a hint made stale by a removal or an insertion costs a
     * look-up, never a wrong answer; compaction renumbers them with the slots. Every entry in
     * [0, slot_hint_cap) is a slot or NO_SLOT. NULL until first needed, and again after a
     * move_many that failed or a reset; never more than the entities a call found room for. */
    int32_t *slot_hint;
    Py_ssize_t slot_hint_cap;

    /* The order of single move()s (a game moves its entities in the same order every frame):
     * call_hint[s] names the slot whose move followed s's last time and its id's bucket, so
     * that move() asks for the memory of the next move one call ahead (prefetch_call() in
     * tree_storage.h), as move_many asks for that of the moves ahead of it. Hints only: a
     * slot is used when < n and a bucket masked, so a stale one costs a cache miss, never an
     * answer. NULL until the first move(), then call_cap entries (the slots' capacity then),
     * and NULL again after a reset; call_last is the last move()'s slot, or any value. */
    CallHint *call_hint;
    int32_t call_cap, call_last;

    SnapRef *snaps;       /* the snapshot table (see SnapRef), NULL until first needed */
    int32_t snaps_size;   /* buckets: a power of two, or 0 */
    int32_t snaps_used;   /* buckets in use, fresh or stale */
    size_t snaps_bytes;   /* memory held by the table and its snapshots, for __sizeof__ */

    /* A wrapped tree's period (_wrap.Period: x0, y0, w, h, ex, ey; see wrap.h), wrapped 0
     * for a plain tree. Every box stored in a wrapped tree is canonical (wrap.h). */
    int wrapped;
    double period[6];

    int busy;
    /* A change (insert ... __setstate__) is in flight, in the thread `changer`: it holds busy
     * and may be waiting for the GIL in the middle of its Python (see walk_begin()) */
    int changing;
    unsigned long changer;
    int broken;
    /* discard()s made while busy (a finaliser's), applied when the outermost busy call ends */
    int64_t *pending;
    Py_ssize_t n_pending, cap_pending;
} Tree;

#endif
