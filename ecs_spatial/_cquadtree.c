/* _cquadtree.c: the compiled twin of ecs_spatial.quadtree.QuadTree.
 *
 * The pure-Python module is the reference (heapq's pattern: Lib/heapq.py is judged by
 * nobody, _heapq is judged by it). This file gives the same answers, errors included, with a
 * layout made for C. Everything here is checked against the reference by
 * tests/test_native_quadtree.py, side by side, step by step.
 *
 * Floats: every expression that decides an answer is the reference's, in the reference's
 * order of operations, and the file is compiled with -ffp-contract=off -fno-fast-math
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
 * (quadtree._BUSY; a finaliser or a gc.callbacks hook gets it, and Python reports it as
 * unraisable); a read meanwhile sees the tree between two steps, whole. But discard() of an
 * exact int while busy is deferred, not refused: its id is recorded (t->pending) and removed
 * when the outermost busy section ends (busy_end(), which runs no Python), so that a
 * finaliser's `tree.discard(self.entity)` is never lost; the reference follows the same rule.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_cquadtree_constants.h" /* MAX_GROWTH, SNAP_MIN, the defaults: the reference's */
#include "_cquadtree_docs.h"      /* QT_DOC_*: the reference's signatures and docstrings */

/* ------------------------------------------------------------------------------------------
 * Float kernels, each the C of one Python expression of the reference
 * ---------------------------------------------------------------------------------------- */

/* Python's max(a, b) and min(a, b) for floats: the first argument unless the second is
 * strictly greater (smaller). fmax/fmin may pick either zero of -0.0 and 0.0. */
static inline double
py_max(double a, double b)
{
    return b > a ? b : a;
}

static inline double
py_min(double a, double b)
{
    return b < a ? b : a;
}

/* geometry.midpoint(a, b): (a + b) * 0.5 unless the sum overflows. */
static inline double
midpoint(double a, double b)
{
    double s = a + b;
    if (-INFINITY < s && s < INFINITY) {
        return s * 0.5;
    }
    return a * 0.5 + b * 0.5;
}

/* math.ulp(x), as Modules/mathmodule.c computes it. */
static double
py_ulp(double x)
{
    if (isnan(x)) {
        return x;
    }
    x = fabs(x);
    if (isinf(x)) {
        return x;
    }
    double x2 = nextafter(x, INFINITY);
    if (isinf(x2)) {
        /* x is the largest finite float */
        x2 = nextafter(x, -INFINITY);
        return x - x2;
    }
    return x2 - x;
}

/* math.hypot(dx, dy): CPython 3.11's vector_norm() for two coordinates
 * (Modules/mathmodule.c), not libm's hypot, whose last bit can differ: lossless scaling by a
 * power of two, squares split exactly (Veltkamp-Dekker, no fma), compensated summation in
 * three accumulators and one differential correction of the square root. The statements are
 * CPython's, in its order; tests/test_native_quadtree.py compares millions of results. */
static double
vector_norm2(double vec[2], double max)
{
    const double T27 = 134217729.0; /* ldexp(1.0, 27) + 1.0 */
    double x, scale, oldcsum, csum = 1.0, frac1 = 0.0, frac2 = 0.0, frac3 = 0.0;
    double t, hi, lo, h;
    int max_e;

    /* vec holds |dx| and |dy|, max the larger; neither is NaN (the caller's floats are
     * finite, and a gap between two finite floats is finite or inf). */
    if (isinf(max) || max == 0.0) {
        return max;
    }
    frexp(max, &max_e);
    if (max_e < -1023) {
        /* ldexp(1.0, -max_e) would overflow: 3.11 divides by max instead of scaling. */
        for (int i = 0; i < 2; i++) {
            x = vec[i];
            x /= max;
            x = x * x;
            oldcsum = csum;
            csum += x;
            frac1 += (oldcsum - csum) + x;
        }
        return max * sqrt(csum - 1.0 + frac1);
    }
    scale = ldexp(1.0, -max_e);
    for (int i = 0; i < 2; i++) {
        x = vec[i];
        x *= scale;
        t = x * T27;
        hi = t - (t - x);
        lo = x - hi;

        x = hi * hi;
        oldcsum = csum;
        csum += x;
        frac1 += (oldcsum - csum) + x;

        x = 2.0 * hi * lo;
        oldcsum = csum;
        csum += x;
        frac2 += (oldcsum - csum) + x;

        frac3 += lo * lo;
    }
    h = sqrt(csum - 1.0 + (frac1 + frac2 + frac3));

    x = h;
    t = x * T27;
    hi = t - (t - x);
    lo = x - hi;

    x = -hi * hi;
    oldcsum = csum;
    csum += x;
    frac1 += (oldcsum - csum) + x;

    x = -2.0 * hi * lo;
    oldcsum = csum;
    csum += x;
    frac2 += (oldcsum - csum) + x;

    x = -lo * lo;
    oldcsum = csum;
    csum += x;
    frac3 += (oldcsum - csum) + x;

    x = csum - 1.0 + (frac1 + frac2 + frac3);
    return (h + x / (2.0 * h)) / scale;
}

static inline double
py_hypot(double dx, double dy)
{
    double vec[2] = {fabs(dx), fabs(dy)};
    double max = 0.0;
    if (vec[0] > max) {
        max = vec[0];
    }
    if (vec[1] > max) {
        max = vec[1];
    }
    return vector_norm2(vec, max);
}

/* Box.distance_to_point's gap on one axis: lo - v left of the box, v - hi right of it. */
static inline double
gap(double v, double lo, double hi)
{
    return v < lo ? lo - v : (v > hi ? v - hi : 0.0);
}

/* geometry.segment_entry(box, x0, y0, x1, y1): 1 and *t the entry fraction if the segment
 * touches the closed box, else 0. The same slab test, the same halving where a segment spans
 * more than the float range, the same order of every operation. */
static int
segment_entry(double min_x, double min_y, double max_x, double max_y,
              double x0, double y0, double x1, double y1, double *t)
{
    double t_enter = 0.0, t_exit = 1.0, ta, tb, swap;
    double dx = x1 - x0;
    if (dx == 0.0) {
        if (x0 < min_x || x0 > max_x) {
            return 0;
        }
    }
    else {
        if (dx == INFINITY || dx == -INFINITY) {
            dx = x1 * 0.5 - x0 * 0.5;
            ta = (min_x * 0.5 - x0 * 0.5) / dx;
            tb = (max_x * 0.5 - x0 * 0.5) / dx;
        }
        else {
            ta = (min_x - x0) / dx;
            tb = (max_x - x0) / dx;
        }
        if (ta > tb) {
            swap = ta;
            ta = tb;
            tb = swap;
        }
        if (ta > t_enter) {
            t_enter = ta;
        }
        if (tb < t_exit) {
            t_exit = tb;
        }
        if (t_enter > t_exit) {
            return 0;
        }
    }
    double dy = y1 - y0;
    if (dy == 0.0) {
        if (y0 < min_y || y0 > max_y) {
            return 0;
        }
    }
    else {
        if (dy == INFINITY || dy == -INFINITY) {
            dy = y1 * 0.5 - y0 * 0.5;
            ta = (min_y * 0.5 - y0 * 0.5) / dy;
            tb = (max_y * 0.5 - y0 * 0.5) / dy;
        }
        else {
            ta = (min_y - y0) / dy;
            tb = (max_y - y0) / dy;
        }
        if (ta > tb) {
            swap = ta;
            ta = tb;
            tb = swap;
        }
        if (ta > t_enter) {
            t_enter = ta;
        }
        if (tb < t_exit) {
            t_exit = tb;
        }
        if (t_enter > t_exit) {
            return 0;
        }
    }
    *t = t_enter;
    return 1;
}

/* One axis of sweep_time: narrow [*t_enter, *t_exit] to the fractions at which the moving
 * interval [a_lo, a_hi] (by d) touches [lo, hi]. 0 when they never do in that span. */
static inline int
sweep_axis(double lo, double hi, double a_lo, double a_hi, double d, double *t_enter,
           double *t_exit)
{
    if (d == 0.0) {
        return lo <= a_hi && a_lo <= hi;
    }
    double ta = (lo - a_hi) / d, tb = (hi - a_lo) / d;
    if (ta > tb) {
        double swap = ta;
        ta = tb;
        tb = swap;
    }
    if (ta > *t_enter) {
        *t_enter = ta;
    }
    if (tb < *t_exit) {
        *t_exit = tb;
    }
    return *t_enter <= *t_exit;
}

/* geometry.floats_sweep_time(a, dx, dy, b): 1 and *t the first fraction of the motion (dx, dy)
 * at which the box a, moving, touches the closed box b, else 0. The same slab test, the same
 * order of every operation (the motion is finite: no halving, no NaN). */
static int
sweep_time(const double a[4], double dx, double dy, const double b[4], double *t)
{
    double t_enter = 0.0, t_exit = 1.0;
    if (!sweep_axis(b[0], b[2], a[0], a[2], dx, &t_enter, &t_exit)
        || !sweep_axis(b[1], b[3], a[1], a[3], dy, &t_enter, &t_exit)) {
        return 0;
    }
    *t = t_enter;
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * The reference's helpers, taken from its modules when this one is imported, so that every
 * error message has one text, the reference's. Each is a strong reference owned by the module
 * for the interpreter's lifetime (single-phase init, m_size = -1).
 * ---------------------------------------------------------------------------------------- */

static PyObject *BoxType;       /* geometry.Box, a tuple subclass */
static PyObject *NodeInfoType;  /* quadtree.NodeInfo */
static PyObject *ref_coords;    /* quadtree._coords(box, entity=None) -> 4 floats, or its error */
static PyObject *ref_entity_id; /* quadtree._entity_id(entity) -> int, or its TypeError */
static PyObject *ref_lookup_id; /* quadtree._lookup_id(entity) -> int or None */
static PyObject *ref_missing;   /* quadtree._missing(entity) -> the KeyError of a failed lookup */
static PyObject *ref_out_of_range; /* quadtree._out_of_range(int) -> the OverflowError of an id */
static PyObject *ref_tree;      /* quadtree.QuadTree: its methods' signatures are this class's */
static PyObject *ref_point;     /* quadtree._point(x, y) -> 2 floats, or its error */
static PyObject *ref_to_float;  /* geometry.to_float(value, what) */
static PyObject *ref_motion;    /* geometry.motion_floats(dx, dy) -> 2 finite floats, or its error */
static PyObject *ref_box_new;   /* geometry.Box.__new__ as the reference defines it */
static PyObject *builtin_zip;   /* builtins.zip */
static PyObject *array_array;   /* array.array */
static PyObject *copyreg_newobj; /* copyreg.__newobj__(cls) -> cls.__new__(cls) */
static PyObject *ref_busy;       /* quadtree._BUSY: what guard() raises while busy */
/* Pickles: quadtree._STATE_FORMAT, and the functions that read a state and carry a subclass's
 * own attributes (see "Copies and pickles") */
static PyObject *ref_state_format;
static PyObject *ref_read_state;
static PyObject *ref_own_state;
static PyObject *ref_restore_own_state;
static PyObject *ref_copy_own_state;

#define NO_NODE (-1)
#define NO_SLOT (-1)
/* Slots and nodes are int32 indices: a tree holds fewer than 2**31 - 1 of each. */
#define MAX_COUNT (INT32_MAX / 2)

/* ------------------------------------------------------------------------------------------
 * Layout
 *
 * Entities live in dense *slots* 0 .. n-1: parallel arrays of the id, the four coordinates
 * (contiguous doubles, box[4*s] .. box[4*s+3]), the node that holds the entry, and its
 * neighbours in that node's list of entries (a doubly linked list threaded through the slots,
 * so that a node owns no memory of its own and a move, a split or a merge never allocates).
 * Removing an entity moves the last slot into its place. An open-addressing hash (linear
 * probing, backward-shift deletion) maps an id to its slot.
 *
 * Nodes are structs in one array, reused through a free list; a node is named by its index.
 * ---------------------------------------------------------------------------------------- */

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
 * map fresh pages (the kernel zeroing them took a tenth of the search at N = 100,000). A
 * call takes it from the tree and gives it back when done; a search started meanwhile (from
 * a finaliser the garbage collector runs) finds none and makes its own. */
typedef struct {
    Rec *arena;
    OwnRec *own;
    SweepFrame *frames;
    Py_ssize_t arena_cap, own_cap, frames_cap;
} Scratch;

/* A straddler snapshot (quadtree.py's _Snap, laid out for C): the own entries of an internal
 * node, whose number grows with the world's side near the root (224 at the root of a world
 * of 200,000 boxes), sorted so that the per-entity pair search skips the node in a few
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

static int sort_keys(KeySlot *a, Py_ssize_t n);

/* The tree's snapshots: an open-addressing table (linear probing) from node to snapshot,
 * for the nodes of SNAP_MIN or more own entries that a per-entity search has read (155 of
 * 20,000 nodes at N = 100,000: a table beside the nodes, not a field in each, so the nodes
 * keep their size, and memory per entity its figure).
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
 * look-up. Buckets are never
 * removed one by one: the table is rebuilt without the stale ones when it fills, and
 * dropped with the nodes (clear_nodes) or the slots (compaction). */
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

    SnapRef *snaps;       /* the snapshot table (see SnapRef), NULL until first needed */
    int32_t snaps_size;   /* buckets: a power of two, or 0 */
    int32_t snaps_used;   /* buckets in use, fresh or stale */
    size_t snaps_bytes;   /* memory held by the table and its snapshots, for __sizeof__ */

    int busy;
    int broken;
    /* discard()s made while busy (a finaliser's), applied when the outermost busy call ends */
    int64_t *pending;
    Py_ssize_t n_pending, cap_pending;
} Tree;

static PyTypeObject TreeType;
static const Snap *snap_get(Tree *t, int32_t node);
static inline int32_t *snap_slots(const Snap *sn);

/* ------------------------------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------------------------- */

/* Grow *p (an array of `size`-byte items) to hold `cap` of them; the old block stays valid
 * if this fails. */
static int
grow_array(void **p, int32_t cap, size_t size)
{
    void *q = PyMem_Realloc(*p, (size_t)cap * size);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    return 0;
}

/* Room for `need` entities, or -1 and MemoryError with the tree unchanged. Grows by an
 * eighth (below): memory per entity is a target (`python -m bench native` measures it), and
 * realloc moves big blocks by remapping pages, not by copying them. */
static int
reserve_slots(Tree *t, int64_t need)
{
    if (need <= t->cap) {
        return 0;
    }
    if (need > MAX_COUNT) {
        PyErr_SetString(PyExc_OverflowError, "a QuadTree holds fewer than 2**30 entities");
        return -1;
    }
    /* Growth by an eighth, as CPython's lists: at N = 100,000 inserted one by one, 96 bytes
     * an entity against 105 with a quarter, for 3% more instructions in the insert loop. */
    int64_t cap = (int64_t)t->cap + t->cap / 8;
    if (cap < need) {
        cap = need;
    }
    if (cap < 8) {
        cap = 8;
    }
    if (cap > MAX_COUNT) {
        cap = MAX_COUNT;
    }
    if (grow_array((void **)&t->ids, (int32_t)cap, sizeof(int64_t)) < 0
        || grow_array((void **)&t->box, (int32_t)cap, 4 * sizeof(double)) < 0
        || grow_array((void **)&t->node_of, (int32_t)cap, sizeof(int32_t)) < 0
        || grow_array((void **)&t->next, (int32_t)cap, sizeof(int32_t)) < 0
        || grow_array((void **)&t->prev, (int32_t)cap, sizeof(int32_t)) < 0) {
        return -1;
    }
    t->cap = (int32_t)cap;
    return 0;
}

/* splitmix64's finaliser: the id table's hash (keyed: hash_id) and the state hash's mixer. */
static inline uint64_t
mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The id table's key: the process's own hash secret, read once at the first import
 * (set_hash_key), so that PYTHONHASHSEED keeps its meaning here. Ids may come from outside
 * (a network game, a loaded save): unkeyed, the finaliser is a bijection anyone can invert,
 * choosing ids that all land in one bucket, and n of them cost O(n^2) to insert, move and
 * remove (bench/results/, flood.md). Nothing the tree answers depends on the key. */
static uint64_t hash_key;

static inline size_t
hash_id(int64_t id)
{
    /* splitmix64's finaliser: consecutive ids (esper's) land far apart. */
    return (size_t)mix64((uint64_t)id ^ hash_key);
}

/* The slot of `id`, or NO_SLOT. */
static inline int32_t
find_slot(const Tree *t, int64_t id)
{
    if (t->table == NULL) {
        return NO_SLOT;
    }
    size_t mask = t->table_size - 1;
    size_t i = hash_id(id) & mask;
    for (;;) {
        int32_t s = t->table[i];
        if (s == NO_SLOT || t->ids[s] == id) {
            return s;
        }
        i = (i + 1) & mask;
    }
}

/* The bucket that holds `id` (which must be in the table). */
static inline size_t
bucket_of(const Tree *t, int64_t id)
{
    size_t mask = t->table_size - 1;
    size_t i = hash_id(id) & mask;
    while (t->ids[t->table[i]] != id) {
        i = (i + 1) & mask;
    }
    return i;
}

static inline void
table_put(Tree *t, int32_t s)
{
    size_t mask = t->table_size - 1;
    size_t i = hash_id(t->ids[s]) & mask;
    while (t->table[i] != NO_SLOT) {
        i = (i + 1) & mask;
    }
    t->table[i] = s;
}

/* Remove `id` from the table, shifting back the entries that probed past it. */
static void
table_delete(Tree *t, int64_t id)
{
    size_t mask = t->table_size - 1;
    size_t i = bucket_of(t, id);
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        int32_t s = t->table[j];
        if (s == NO_SLOT) {
            break;
        }
        size_t home = hash_id(t->ids[s]) & mask;
        /* s may move back to i unless its home lies cyclically in (i, j]. */
        int stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            t->table[i] = s;
            i = j;
        }
    }
    t->table[i] = NO_SLOT;
}

/* Room in the table for `need` ids at a load of at most 0.7, or -1 and MemoryError with the
 * tree unchanged. */
static int
reserve_table(Tree *t, int64_t need)
{
    if (t->table != NULL && need * 10 <= (int64_t)t->table_size * 7) {
        return 0;
    }
    size_t size = 16;
    while ((int64_t)size < need * 2) {
        size *= 2;
    }
    int32_t *table = PyMem_Malloc(size * sizeof(int32_t));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < size; i++) {
        table[i] = NO_SLOT;
    }
    PyMem_Free(t->table);
    t->table = table;
    t->table_size = size;
    for (int32_t s = 0; s < t->n; s++) {
        table_put(t, s);
    }
    return 0;
}

/* Room for `more` new nodes without allocating, or -1 and MemoryError, nothing changed. */
static int
reserve_nodes(Tree *t, int32_t more)
{
    if (t->n_free + (t->cap_nodes - t->n_nodes) >= more) {
        return 0;
    }
    /* A quarter more each time: each node costs sizeof(Node) + 16 bytes of capacity, which
     * doubling would leave idle by up to half (memory per entity is a figure of the issue). */
    int64_t cap = t->cap_nodes < 16 ? 16 : (int64_t)t->cap_nodes + t->cap_nodes / 4;
    while (cap - t->n_nodes + t->n_free < more) {
        cap += cap / 4;
    }
    if (cap > MAX_COUNT) {
        PyErr_SetString(PyExc_OverflowError, "a QuadTree has fewer than 2**30 nodes");
        return -1;
    }
    if (grow_array((void **)&t->nodes, (int32_t)cap, sizeof(Node)) < 0
        || grow_array((void **)&t->free_nodes, (int32_t)cap, sizeof(int32_t)) < 0
        || grow_array((void **)&t->work, (int32_t)cap + 1, sizeof(Work)) < 0) {
        return -1;
    }
    t->cap_nodes = (int32_t)cap;
    return 0;
}

/* The bucket of node's snapshot, or NULL. */
static SnapRef *
snap_find(const Tree *t, int32_t node)
{
    uint32_t mask = (uint32_t)t->snaps_size - 1;
    uint32_t i = ((uint32_t)node * 2654435761u) & mask;
    for (;;) {
        SnapRef *r = &t->snaps[i];
        if (r->node == node) {
            return r;
        }
        if (r->node == NO_NODE) {
            return NULL;
        }
        i = (i + 1) & mask;
    }
}

/* Node's own entries are about to change: its snapshot, if fresh, is no longer. Only a node
 * of SNAP_MIN entries or more can have a fresh one (see SnapRef), so the look-up is for the
 * few nodes near the root; any other change costs a comparison. */
static void
snap_mark(Tree *t, int32_t node)
{
    SnapRef *r = snap_find(t, node);
    if (r != NULL) {
        r->fresh = 0;
    }
}

static inline void
snap_changed(Tree *t, int32_t node)
{
    if (t->snaps_used > 0 && t->nodes[node].n >= SNAP_MIN) {
        snap_mark(t, node);
    }
}

/* Every snapshot gone, with its memory: the nodes or the slots they name are renumbered. */
static void
snaps_drop(Tree *t)
{
    for (int32_t i = 0; i < t->snaps_size; i++) {
        PyMem_Free(t->snaps[i].snap);
    }
    PyMem_Free(t->snaps);
    t->snaps = NULL;
    t->snaps_size = t->snaps_used = 0;
    t->snaps_bytes = 0;
}

/* A node with these bounds (room reserved by the caller). The split point is the midpoint,
 * which never overflows (geometry.midpoint). */
static int32_t
node_new(Tree *t, double x0, double y0, double x1, double y1,
         double fx0, double fy0, double fx1, double fy1, int32_t parent, int32_t level)
{
    int32_t i = t->n_free > 0 ? t->free_nodes[--t->n_free] : t->n_nodes++;
    Node *nd = &t->nodes[i];
    nd->x0 = x0;
    nd->y0 = y0;
    nd->x1 = x1;
    nd->y1 = y1;
    nd->cx = midpoint(x0, x1);
    nd->cy = midpoint(y0, y1);
    nd->fx0 = fx0;
    nd->fy0 = fy0;
    nd->fx1 = fx1;
    nd->fy1 = fy1;
    nd->parent = parent;
    nd->kids[0] = nd->kids[1] = nd->kids[2] = nd->kids[3] = NO_NODE;
    nd->level = level;
    nd->count = 0;
    nd->n = 0;
    nd->head = NO_SLOT;
    return i;
}

/* quadtree._new_root: a root whose fit bounds are its bounds, closed (one ulp outward). */
static int
new_root(Tree *t, const double b[4], int32_t level)
{
    if (reserve_nodes(t, 1) < 0) {
        return -1;
    }
    t->root = node_new(t, b[0], b[1], b[2], b[3], nextafter(b[0], -INFINITY),
                       nextafter(b[1], -INFINITY), nextafter(b[2], INFINITY),
                       nextafter(b[3], INFINITY), NO_NODE, level);
    return 0;
}

/* Forget every node (their memory stays for the next ones). */
static void
clear_nodes(Tree *t)
{
    snaps_drop(t);
    t->n_nodes = 0;
    t->n_free = 0;
    t->root = NO_NODE;
}

/* ------------------------------------------------------------------------------------------
 * The tree's mechanics: each function is the C of the reference's method of the same name
 * ---------------------------------------------------------------------------------------- */

static inline int
valid_box(const double c[4])
{
    /* Box's rule in one chain: NaN fails every comparison, and so do the infinities. */
    return -INFINITY < c[0] && c[0] <= c[2] && c[2] < INFINITY
           && -INFINITY < c[1] && c[1] <= c[3] && c[3] < INFINITY;
}

/* quadtree._contains: strictly inside the node's fit bounds. */
static inline int
fits(const Node *nd, const double b[4])
{
    return nd->fx0 < b[0] && b[2] < nd->fx1 && nd->fy0 < b[1] && b[3] < nd->fy1;
}

/* quadtree._within: the closed bounds contain the box. */
static inline int
within(const double bounds[4], const double b[4])
{
    return bounds[0] <= b[0] && b[2] <= bounds[2] && bounds[1] <= b[1] && b[3] <= bounds[3];
}

static inline void
link_entry(Tree *t, int32_t node, int32_t s)
{
    snap_changed(t, node);
    Node *nd = &t->nodes[node];
    int32_t h = nd->head;
    t->prev[s] = NO_SLOT;
    t->next[s] = h;
    if (h != NO_SLOT) {
        t->prev[h] = s;
    }
    nd->head = s;
    nd->n++;
    t->node_of[s] = node;
}

static inline void
unlink_entry(Tree *t, int32_t s)
{
    snap_changed(t, t->node_of[s]);
    Node *nd = &t->nodes[t->node_of[s]];
    int32_t p = t->prev[s], q = t->next[s];
    if (p != NO_SLOT) {
        t->next[p] = q;
    }
    else {
        nd->head = q;
    }
    if (q != NO_SLOT) {
        t->prev[q] = p;
    }
    nd->n--;
}

/* quadtree._first_root: a square of side four times the box's larger side about its centre
 * (a few float steps about a point), clamped to the finite range. */
static void
first_root(const double b[4], double out[4])
{
    double cx = midpoint(b[0], b[2]);
    double cy = midpoint(b[1], b[3]);
    double half = py_max(b[2] - b[0], b[3] - b[1]) * 2.0;
    if (half == 0.0) {
        half = py_max(py_max(1.0, py_ulp(cx)), py_ulp(cy));
    }
    out[0] = py_min(b[0], py_max(cx - half, -DBL_MAX));
    out[1] = py_min(b[1], py_max(cy - half, -DBL_MAX));
    out[2] = py_max(b[2], py_min(cx + half, DBL_MAX));
    out[3] = py_max(b[3], py_min(cy + half, DBL_MAX));
}

/* quadtree._doubled_toward: 1 with `bounds` doubled toward the box, 0 if that changes
 * nothing (bounds untouched). */
static int
doubled_toward(double bounds[4], const double b[4])
{
    double x0 = bounds[0], y0 = bounds[1], x1 = bounds[2], y1 = bounds[3];
    double w = x1 - x0;
    if (w == 0.0) {
        w = py_max(1.0, py_ulp(x0));
    }
    double h = y1 - y0;
    if (h == 0.0) {
        h = py_max(1.0, py_ulp(y0));
    }
    if (b[0] < x0) {
        x0 = py_max(x0 - w, -DBL_MAX);
    }
    else {
        x1 = py_min(x1 + w, DBL_MAX);
    }
    if (b[1] < y0) {
        y0 = py_max(y0 - h, -DBL_MAX);
    }
    else {
        y1 = py_min(y1 + h, DBL_MAX);
    }
    if (x0 == bounds[0] && y0 == bounds[1] && x1 == bounds[2] && y1 == bounds[3]) {
        return 0;
    }
    bounds[0] = x0;
    bounds[1] = y0;
    bounds[2] = x1;
    bounds[3] = y1;
    return 1;
}

/* quadtree._grown: double toward the box as often as it takes, or as often as allowed. */
static void
grown(double bounds[4], int32_t *level, const double b[4])
{
    while (*level > -MAX_GROWTH && !within(bounds, b)) {
        if (!doubled_toward(bounds, b)) {
            break;
        }
        *level -= 1;
    }
}

/* quadtree._can_grow_toward */
static int
can_grow_toward(const Tree *t, const double b[4])
{
    const Node *r = &t->nodes[t->root];
    double bounds[4] = {r->x0, r->y0, r->x1, r->y1};
    return r->level > -MAX_GROWTH && doubled_toward(bounds, b);
}

/* quadtree._make_kids: four empty children (room reserved here, so all or nothing). */
static int
make_kids(Tree *t, int32_t node)
{
    if (reserve_nodes(t, 4) < 0) {
        return -1;
    }
    Node p = t->nodes[node]; /* a copy: node_new writes into the same array */
    int32_t level = p.level + 1;
    int32_t k0 = node_new(t, p.x0, p.y0, p.cx, p.cy, p.fx0, p.fy0, p.cx, p.cy, node, level);
    int32_t k1 = node_new(t, p.cx, p.y0, p.x1, p.cy, p.cx, p.fy0, p.fx1, p.cy, node, level);
    int32_t k2 = node_new(t, p.x0, p.cy, p.cx, p.y1, p.fx0, p.cy, p.cx, p.fy1, node, level);
    int32_t k3 = node_new(t, p.cx, p.cy, p.x1, p.y1, p.cx, p.cy, p.fx1, p.fy1, node, level);
    Node *nd = &t->nodes[node];
    nd->kids[0] = k0;
    nd->kids[1] = k1;
    nd->kids[2] = k2;
    nd->kids[3] = k3;
    return 0;
}

/* The child of an internal node that the box lies strictly inside, or -1 if it touches a
 * split line (quadtree._sink's and _descend's rule). */
static inline int
quadrant(const Node *nd, const double b[4])
{
    int q;
    if (b[2] < nd->cx) {
        q = 0;
    }
    else if (b[0] > nd->cx) {
        q = 1;
    }
    else {
        return -1;
    }
    if (b[3] < nd->cy) {
        return q;
    }
    if (b[1] > nd->cy) {
        return q + 2;
    }
    return -1;
}

/* quadtree._descend: place a batch (slots chained through next[], counted nowhere yet, each
 * inside the node's closed bounds unless the node is the root) at or below `node`. A leaf
 * takes its batch unless that overflows it below max_depth; then it becomes internal and its
 * own entries join the batch. Only the root keeps boxes beyond its fit bounds.
 * -1 only if memory runs out for new nodes: the tree is then broken (the batch half placed). */
static int
descend(Tree *t, int32_t node, int32_t head, int32_t len)
{
    int32_t sp = 0;
    t->work[sp++].frame = (Frame){node, head, len};
    while (sp > 0) {
        Frame f = t->work[--sp].frame;
        Node *nd = &t->nodes[f.node];
        int32_t s, nxt;
        nd->count += f.len;
        if (nd->kids[0] == NO_NODE) {
            if ((int64_t)nd->n + f.len <= t->threshold || nd->level >= t->max_depth) {
                for (s = f.head; s != NO_SLOT; s = nxt) {
                    nxt = t->next[s];
                    link_entry(t, f.node, s);
                }
                continue;
            }
            if (make_kids(t, f.node) < 0) {
                t->broken = 1;
                return -1;
            }
            snap_changed(t, f.node); /* a leaf turns internal (see SnapRef) */
            nd = &t->nodes[f.node];
            for (s = nd->head; s != NO_SLOT; s = nxt) {
                nxt = t->next[s];
                t->next[s] = f.head;
                f.head = s;
                f.len++;
            }
            nd->head = NO_SLOT;
            nd->n = 0;
        }
        int is_root = f.node == t->root;
        int32_t part[4] = {NO_SLOT, NO_SLOT, NO_SLOT, NO_SLOT};
        int32_t part_len[4] = {0, 0, 0, 0};
        for (s = f.head; s != NO_SLOT; s = nxt) {
            nxt = t->next[s];
            const double *b = &t->box[4 * (size_t)s];
            int q = (is_root && !fits(nd, b)) ? -1 : quadrant(nd, b);
            if (q < 0) {
                link_entry(t, f.node, s);
            }
            else {
                t->next[s] = part[q];
                part[q] = s;
                part_len[q]++;
            }
        }
        for (int q = 0; q < 4; q++) {
            if (part_len[q] > 0) {
                t->work[sp++].frame = (Frame){nd->kids[q], part[q], part_len[q]};
            }
        }
    }
    return 0;
}

/* quadtree._split: an overflowing leaf's entries go down as one batch. */
static int
split(Tree *t, int32_t node)
{
    /* (a leaf turns internal: the link that overflowed it marked its snapshot, see SnapRef) */
    Node *nd = &t->nodes[node];
    int32_t head = NO_SLOT, len = 0, s, nxt;
    for (s = nd->head; s != NO_SLOT; s = nxt) {
        nxt = t->next[s];
        t->next[s] = head;
        head = s;
        len++;
    }
    nd->head = NO_SLOT;
    nd->n = 0;
    nd->count -= len;
    return descend(t, node, head, len);
}

/* quadtree._sink: place slot s at or below `node` (whose count already includes it). */
static int
sink(Tree *t, int32_t s, int32_t node)
{
    const double *b = &t->box[4 * (size_t)s];
    Node *nd = &t->nodes[node];
    while (nd->kids[0] != NO_NODE) {
        int q = quadrant(nd, b);
        if (q < 0) {
            break;
        }
        node = nd->kids[q];
        nd = &t->nodes[node];
        nd->count++;
    }
    link_entry(t, node, s);
    if (nd->kids[0] == NO_NODE && nd->n > t->threshold && nd->level < t->max_depth) {
        return split(t, node);
    }
    return 0;
}

/* quadtree._place: add slot s under the root. */
static int
place(Tree *t, int32_t s)
{
    Node *r = &t->nodes[t->root];
    r->count++;
    if (fits(r, &t->box[4 * (size_t)s])) {
        return sink(t, s, t->root);
    }
    link_entry(t, t->root, s);
    if (r->kids[0] == NO_NODE && r->n > t->threshold && r->level < t->max_depth) {
        return split(t, t->root);
    }
    return 0;
}

/* quadtree._merge: collapse the subtree under `node` into `node`, freeing its nodes. */
static void
merge(Tree *t, int32_t node)
{
    Node *nd = &t->nodes[node];
    int32_t sp = 0;
    for (int q = 0; q < 4; q++) {
        t->work[sp++].node = nd->kids[q];
        nd->kids[q] = NO_NODE;
    }
    while (sp > 0) {
        int32_t c = t->work[--sp].node;
        Node *cn = &t->nodes[c];
        int32_t s, nxt;
        for (s = cn->head; s != NO_SLOT; s = nxt) {
            nxt = t->next[s];
            link_entry(t, node, s);
        }
        if (cn->kids[0] != NO_NODE) {
            for (int q = 0; q < 4; q++) {
                t->work[sp++].node = cn->kids[q];
            }
        }
        snap_changed(t, c); /* freed: its index will name another node */
        cn->head = NO_SLOT;
        cn->n = 0;
        cn->count = 0;
        cn->kids[0] = cn->kids[1] = cn->kids[2] = cn->kids[3] = NO_NODE;
        t->free_nodes[t->n_free++] = c;
    }
}

/* Give slot s's place to the last slot (s is in no list and no longer in the table). */
static void
free_slot(Tree *t, int32_t s)
{
    int32_t last = --t->n;
    if (s == last) {
        return;
    }
    snap_changed(t, t->node_of[last]); /* its snapshot names the slot `last` */
    t->ids[s] = t->ids[last];
    memcpy(&t->box[4 * (size_t)s], &t->box[4 * (size_t)last], 4 * sizeof(double));
    t->node_of[s] = t->node_of[last];
    t->next[s] = t->next[last];
    t->prev[s] = t->prev[last];
    if (t->prev[s] != NO_SLOT) {
        t->next[t->prev[s]] = s;
    }
    else {
        t->nodes[t->node_of[s]].head = s;
    }
    if (t->next[s] != NO_SLOT) {
        t->prev[t->next[s]] = s;
    }
    t->table[bucket_of(t, t->ids[s])] = s;
}

/* quadtree.remove, from the slot: uncount up to the root, merge the highest node left at or
 * under threshold, then free the slot. */
static void
remove_slot(Tree *t, int32_t s)
{
    int32_t node = t->node_of[s], highest = NO_NODE;
    unlink_entry(t, s);
    for (int32_t m = node; m != NO_NODE; m = t->nodes[m].parent) {
        Node *mn = &t->nodes[m];
        mn->count--;
        if (mn->count <= t->threshold && mn->kids[0] != NO_NODE) {
            highest = m;
        }
    }
    if (highest != NO_NODE) {
        merge(t, highest);
    }
    table_delete(t, t->ids[s]);
    free_slot(t, s);
}

/* Renumber the slots in tree order (depth first, each node's entries together), once the
 * entries placed since the last time outnumber half the tree. The pair search reads every
 * node's entries in turn: in slot order they come from one stretch of memory instead of
 * one cache miss each (all pairs at N = 100,000: `python -m bench native`). Costs O(n) and
 * memory for a second copy of the slots; without that memory it does nothing. Call only
 * between operations: it moves every slot. */
static void
maybe_compact(Tree *t)
{
    if (t->scattered <= t->n / 2 + 64 || t->root == NO_NODE || t->broken) {
        return;
    }
    size_t cap = (size_t)t->cap;
    int64_t *ids = PyMem_Malloc(cap * sizeof(int64_t));
    double *box = PyMem_Malloc(cap * 4 * sizeof(double));
    int32_t *node_of = PyMem_Malloc(cap * sizeof(int32_t));
    if (ids == NULL || box == NULL || node_of == NULL) {
        PyMem_Free(ids);
        PyMem_Free(box);
        PyMem_Free(node_of);
        return; /* an optimisation, not a promise */
    }
    int32_t k = 0, sp = 0;
    t->work[sp++].node = t->root;
    while (sp > 0) {
        int32_t node = t->work[--sp].node;
        Node *nd = &t->nodes[node];
        int32_t first = k;
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            ids[k] = t->ids[s];
            memcpy(&box[4 * (size_t)k], &t->box[4 * (size_t)s], 4 * sizeof(double));
            node_of[k] = node;
            t->prev[s] = k; /* old slot -> new, for the hints; prev is rewritten below */
            k++;
        }
        nd->head = k > first ? first : NO_SLOT;
        if (nd->kids[0] != NO_NODE) {
            for (int q = 3; q >= 0; q--) {
                t->work[sp++].node = nd->kids[q];
            }
        }
    }
    /* every slot was reached: k == n */
    for (Py_ssize_t i = 0; i < t->slot_hint_cap; i++) {
        uint32_t old = (uint32_t)t->slot_hint[i];
        t->slot_hint[i] = old < (uint32_t)k ? t->prev[old] : NO_SLOT;
    }
    for (int32_t s = 0; s < k; s++) {
        t->prev[s] = s > 0 && node_of[s - 1] == node_of[s] ? s - 1 : NO_SLOT;
        t->next[s] = s + 1 < k && node_of[s + 1] == node_of[s] ? s + 1 : NO_SLOT;
    }
    PyMem_Free(t->ids);
    PyMem_Free(t->box);
    PyMem_Free(t->node_of);
    t->ids = ids;
    t->box = box;
    t->node_of = node_of;
    for (size_t i = 0; i < t->table_size; i++) {
        t->table[i] = NO_SLOT;
    }
    for (int32_t s = 0; s < k; s++) {
        table_put(t, s);
    }
    snaps_drop(t); /* they name the old slots */
    t->scattered = 0;
}

/* quadtree._rebuild: every entry again, under a new root. */
static int
rebuild(Tree *t, const double bounds[4], int32_t level)
{
    clear_nodes(t);
    if (new_root(t, bounds, level) < 0) { /* cannot fail: the pool kept its room */
        t->broken = 1;
        return -1;
    }
    if (t->n == 0) {
        return 0;
    }
    for (int32_t s = 0; s < t->n; s++) {
        t->next[s] = s + 1 < t->n ? s + 1 : NO_SLOT;
    }
    return descend(t, t->root, 0, t->n);
}

/* quadtree._grow_to: a root that contains the box if one can be had. */
static int
grow_to(Tree *t, const double b[4])
{
    if (t->root == NO_NODE) {
        double bounds[4];
        first_root(b, bounds);
        return new_root(t, bounds, 0);
    }
    const Node *r = &t->nodes[t->root];
    double bounds[4] = {r->x0, r->y0, r->x1, r->y1};
    int32_t level = r->level;
    grown(bounds, &level, b);
    if (level != r->level) {
        return rebuild(t, bounds, level);
    }
    return 0;
}

/* quadtree.insert for a valid box and a new id. -1 with MemoryError: the tree is unchanged
 * unless memory ran out for new nodes in the middle (then broken). */
static int
insert_record(Tree *t, int64_t id, const double b[4])
{
    if (reserve_slots(t, (int64_t)t->n + 1) < 0 || reserve_table(t, (int64_t)t->n + 1) < 0) {
        return -1;
    }
    if (t->root == NO_NODE || !fits(&t->nodes[t->root], b)) {
        if (grow_to(t, b) < 0) {
            return -1;
        }
    }
    int32_t s = t->n++;
    t->ids[s] = id;
    memcpy(&t->box[4 * (size_t)s], b, 4 * sizeof(double));
    table_put(t, s);
    t->scattered++;
    return place(t, s);
}

/* quadtree._relocate: climb to the first ancestor whose fit bounds hold the new box, sink
 * from there, merge the highest node the climb left at or under threshold. A box beyond the
 * root is removed and inserted afresh (which grows the root, or keeps it in the root). */
static int
relocate(Tree *t, int32_t s, const double b[4])
{
    int32_t node = t->node_of[s], n = node;
    while (!fits(&t->nodes[n], b)) {
        if (n == t->root) {
            int64_t id = t->ids[s];
            remove_slot(t, s);
            return insert_record(t, id, b);
        }
        n = t->nodes[n].parent;
    }
    unlink_entry(t, s);
    memcpy(&t->box[4 * (size_t)s], b, 4 * sizeof(double));
    t->scattered++;
    int32_t highest = NO_NODE;
    for (int32_t m = node; m != n; m = t->nodes[m].parent) {
        Node *mn = &t->nodes[m];
        mn->count--;
        if (mn->count <= t->threshold && mn->kids[0] != NO_NODE) {
            highest = m;
        }
    }
    if (sink(t, s, n) < 0) {
        return -1;
    }
    if (highest != NO_NODE) {
        merge(t, highest);
    }
    return 0;
}

/* quadtree.move for a valid box: in place while the box still belongs to its node (strictly
 * inside its fit bounds and, for an internal node, touching a split line), else relocate. */
static inline int
move_slot(Tree *t, int32_t s, const double b[4])
{
    const Node *nd = &t->nodes[t->node_of[s]];
    if (fits(nd, b)
        && (nd->kids[0] == NO_NODE
            || !((b[2] < nd->cx || b[0] > nd->cx) && (b[3] < nd->cy || b[1] > nd->cy)))) {
        if (nd->kids[0] != NO_NODE) {
            snap_changed(t, t->node_of[s]); /* a leaf's needs no mark: see SnapRef */
        }
        memcpy(&t->box[4 * (size_t)s], b, 4 * sizeof(double));
        return 0;
    }
    return relocate(t, s, b);
}

/* quadtree._insert_records for k new, distinct ids with valid boxes: the root grows once
 * toward all of them, then they go down together. */
static int
insert_batch(Tree *t, const int64_t *ids, const double *boxes, int32_t k)
{
    if (k == 0) {
        return 0;
    }
    if (reserve_slots(t, (int64_t)t->n + k) < 0 || reserve_table(t, (int64_t)t->n + k) < 0) {
        return -1;
    }
    if (t->root == NO_NODE) {
        double bounds[4];
        first_root(boxes, bounds);
        if (new_root(t, bounds, 0) < 0) {
            return -1;
        }
    }
    /* quadtree._bbox: min() and max() keep the first of equal values. */
    double bbox[4] = {boxes[0], boxes[1], boxes[2], boxes[3]};
    for (int32_t i = 1; i < k; i++) {
        const double *b = &boxes[4 * (size_t)i];
        bbox[0] = py_min(bbox[0], b[0]);
        bbox[1] = py_min(bbox[1], b[1]);
        bbox[2] = py_max(bbox[2], b[2]);
        bbox[3] = py_max(bbox[3], b[3]);
    }
    if (grow_to(t, bbox) < 0) {
        return -1;
    }
    int32_t first = t->n;
    for (int32_t i = 0; i < k; i++) {
        int32_t s = t->n++;
        t->ids[s] = ids[i];
        memcpy(&t->box[4 * (size_t)s], &boxes[4 * (size_t)i], 4 * sizeof(double));
        t->next[s] = i + 1 < k ? s + 1 : NO_SLOT;
        table_put(t, s);
    }
    t->scattered += k;
    return descend(t, t->root, first, k);
}

/* Let go of move_many's slot hints (see Tree.slot_hint). */
static void
drop_hints(Tree *t)
{
    PyMem_Free(t->slot_hint);
    t->slot_hint = NULL;
    t->slot_hint_cap = 0;
}

/* Every entity gone, their memory released; the tree back to the bounds it was made with. */
static int
reset(Tree *t)
{
    PyMem_Free(t->ids);
    PyMem_Free(t->box);
    PyMem_Free(t->node_of);
    PyMem_Free(t->next);
    PyMem_Free(t->prev);
    PyMem_Free(t->table);
    t->ids = NULL;
    t->box = NULL;
    t->node_of = t->next = t->prev = t->table = NULL;
    t->n = t->cap = 0;
    t->table_size = 0;
    t->scattered = 0;
    drop_hints(t);
    clear_nodes(t);
    t->broken = 0; /* emptied: whatever a change cut off in the middle is gone */
    if (t->has_hint && new_root(t, t->hint, 0) < 0) {
        t->broken = 1;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * Small buffers
 * ---------------------------------------------------------------------------------------- */

/* A growable array of int64 (ids, or pairs of them), in PyMem memory. */
typedef struct {
    int64_t *p;
    Py_ssize_t n, cap;
} I64Buf;

static int
i64_reserve(I64Buf *b, Py_ssize_t more)
{
    if (b->n + more <= b->cap) {
        return 0;
    }
    Py_ssize_t cap = b->cap < 16 ? 16 : b->cap * 2;
    while (cap < b->n + more) {
        cap *= 2;
    }
    int64_t *p = PyMem_Realloc(b->p, (size_t)cap * sizeof(int64_t));
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int
i64_push(I64Buf *b, int64_t v)
{
    if (b->n == b->cap && i64_reserve(b, 1) < 0) {
        return -1;
    }
    b->p[b->n++] = v;
    return 0;
}

/* A stack of node indices for one traversal: its own memory, so that a traversal never
 * shares a buffer with another one that Python code (a finaliser run by the garbage
 * collector, a where= predicate) might start in the middle of it. */
typedef struct {
    int32_t *p;
    Py_ssize_t n, cap;
    int32_t small[64];
} NodeStack;

static inline void
ns_init(NodeStack *s)
{
    s->p = s->small;
    s->n = 0;
    s->cap = 64;
}

static int
ns_push(NodeStack *s, int32_t v)
{
    if (s->n == s->cap) {
        Py_ssize_t cap = s->cap * 2;
        int32_t *p = PyMem_Malloc((size_t)cap * sizeof(int32_t));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(p, s->p, (size_t)s->n * sizeof(int32_t));
        if (s->p != s->small) {
            PyMem_Free(s->p);
        }
        s->p = p;
        s->cap = cap;
    }
    s->p[s->n++] = v;
    return 0;
}

static inline void
ns_free(NodeStack *s)
{
    if (s->p != s->small) {
        PyMem_Free(s->p);
    }
}

/* A set of int64 ids (open addressing), for "listed twice" in a batch. */
typedef struct {
    int64_t *keys;
    unsigned char *used;
    size_t size, n;
} IdSet;

static int
idset_grow(IdSet *set)
{
    size_t size = set->size ? set->size * 2 : 64;
    int64_t *keys = PyMem_Malloc(size * sizeof(int64_t));
    unsigned char *used = PyMem_Calloc(size, 1);
    if (keys == NULL || used == NULL) {
        PyMem_Free(keys);
        PyMem_Free(used);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < set->size; i++) {
        if (set->used[i]) {
            size_t j = hash_id(set->keys[i]) & (size - 1);
            while (used[j]) {
                j = (j + 1) & (size - 1);
            }
            used[j] = 1;
            keys[j] = set->keys[i];
        }
    }
    PyMem_Free(set->keys);
    PyMem_Free(set->used);
    set->keys = keys;
    set->used = used;
    set->size = size;
    return 0;
}

/* 1 if id was in the set, 0 if it was added, -1 on MemoryError. */
static int
idset_add(IdSet *set, int64_t id)
{
    if ((set->n + 1) * 2 > set->size && idset_grow(set) < 0) {
        return -1;
    }
    size_t mask = set->size - 1, i = hash_id(id) & mask;
    while (set->used[i]) {
        if (set->keys[i] == id) {
            return 1;
        }
        i = (i + 1) & mask;
    }
    set->used[i] = 1;
    set->keys[i] = id;
    set->n++;
    return 0;
}

static void
idset_free(IdSet *set)
{
    PyMem_Free(set->keys);
    PyMem_Free(set->used);
}

/* ------------------------------------------------------------------------------------------
 * Values in and out, by the reference's rules
 * ---------------------------------------------------------------------------------------- */

/* A Box of these (valid) coordinates, built as tuple.__new__(Box, ...) builds one
 * (quadtree._to_box): no second validation. New reference. */
static PyObject *
make_box(double x0, double y0, double x1, double y1)
{
    PyObject *items[4] = {PyFloat_FromDouble(x0), PyFloat_FromDouble(y0),
                          PyFloat_FromDouble(x1), PyFloat_FromDouble(y1)};
    PyObject *box = NULL;
    if (items[0] != NULL && items[1] != NULL && items[2] != NULL && items[3] != NULL) {
        PyTypeObject *type = (PyTypeObject *)BoxType;
        box = type->tp_alloc(type, 4);
    }
    if (box == NULL) {
        for (int i = 0; i < 4; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        PyTuple_SET_ITEM(box, i, items[i]); /* steals the new reference */
    }
    return box;
}

/* A list of these ids. New reference. */
static PyObject *
id_list(const int64_t *ids, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    if (list == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = PyLong_FromLongLong(ids[i]);
        if (id == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, id); /* steals */
    }
    return list;
}

/* quadtree._entity_id: the int an entity value is stored as (an int as itself, an
 * integer-like value such as a numpy integer as its int), or NULL and the reference's
 * TypeError. New reference. */
static PyObject *
stored_id(PyObject *entity)
{
    if (PyLong_CheckExact(entity)) {
        Py_INCREF(entity);
        return entity;
    }
    return PyObject_CallOneArg(ref_entity_id, entity);
}

/* 1 and *out if the int fits in 64 bits, 0 if it does not (no error set), -1 on error. */
static int
int64_of(PyObject *integer, int64_t *out)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(integer, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

/* The slot of a value looked up (quadtree._lookup_id's rule: a value that is no id is in no
 * index): a slot, NO_SLOT if absent, or -2 with an error. */
static int32_t
lookup_slot(const Tree *t, PyObject *entity)
{
    int64_t id;
    int fit;
    if (PyLong_CheckExact(entity)) {
        fit = int64_of(entity, &id);
    }
    else {
        PyObject *key = PyObject_CallOneArg(ref_lookup_id, entity); /* new: an int or None */
        if (key == NULL) {
            return -2;
        }
        fit = key == Py_None ? 0 : int64_of(key, &id);
        Py_DECREF(key);
    }
    if (fit < 0) {
        return -2;
    }
    return fit ? find_slot(t, id) : NO_SLOT;
}

/* Raise quadtree._missing(entity), the KeyError of a lookup that found nothing. NULL. */
static PyObject *
raise_missing(PyObject *entity)
{
    PyObject *error = PyObject_CallOneArg(ref_missing, entity); /* new */
    if (error != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        Py_DECREF(error);
    }
    return NULL;
}

/* Raise quadtree._out_of_range(integer), the OverflowError of an id to store outside the
 * 64-bit range of ids (both classes' rule; a lookup of one finds nothing). NULL. */
static PyObject *
raise_id_range(PyObject *integer)
{
    PyObject *error = PyObject_CallOneArg(ref_out_of_range, integer); /* new */
    if (error != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        Py_DECREF(error);
    }
    return NULL;
}

/* A plain tuple or a Box of four floats that form a valid box: 1 and c filled. 0 for any
 * other value, which box_any() decides (no error set). */
static inline int
box_fast(PyObject *box, double c[4])
{
    if (!(PyTuple_CheckExact(box) || Py_IS_TYPE(box, (PyTypeObject *)BoxType))
        || PyTuple_GET_SIZE(box) != 4) {
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        PyObject *item = PyTuple_GET_ITEM(box, i); /* borrowed */
        if (!PyFloat_CheckExact(item)) {
            return 0;
        }
        c[i] = PyFloat_AS_DOUBLE(item);
    }
    return valid_box(c);
}

/* Four floats read from a tuple of them, checked to be a valid box. 0, or -1 and an error. */
static int
read_box(PyObject *tuple, double c[4])
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 4) {
        PyErr_SetString(PyExc_SystemError, "quadtree._coords returned no 4-tuple");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        c[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(tuple, i));
        if (c[i] == -1.0 && PyErr_Occurred()) {
            return -1;
        }
    }
    if (!valid_box(c)) {
        PyErr_SetString(PyExc_SystemError, "quadtree._coords returned an invalid box");
        return -1;
    }
    return 0;
}

/* quadtree._coords: four valid floats from any box value (an int or another real number as
 * the nearest float), or -1 and the reference's error, naming `entity` if it is not NULL. */
static int
box_any(PyObject *box, PyObject *entity, double c[4])
{
    if (box_fast(box, c)) {
        return 0;
    }
    PyObject *coords = entity == NULL ? PyObject_CallOneArg(ref_coords, box)
                                      : PyObject_CallFunctionObjArgs(ref_coords, box, entity, NULL);
    if (coords == NULL) {
        return -1;
    }
    int r = read_box(coords, c);
    Py_DECREF(coords);
    return r;
}

/* The reference's error for a box of four floats that is not valid. -1. */
static int
raise_box_error(const double c[4], int64_t id)
{
    PyObject *box = Py_BuildValue("(dddd)", c[0], c[1], c[2], c[3]);
    PyObject *entity = PyLong_FromLongLong(id);
    double ignored[4];
    if (box != NULL && entity != NULL && box_any(box, entity, ignored) == 0) {
        PyErr_SetString(PyExc_SystemError, "quadtree._coords accepted an invalid box");
    }
    Py_XDECREF(box);
    Py_XDECREF(entity);
    return -1;
}

/* Two finite floats from `x` and `y`: at once where both are finite floats, else through
 * the reference's checker `check` (named `what` if it misbehaves), which returns the pair or
 * raises its error. 0, or -1 and that error. */
static int
two_finite(PyObject *x, PyObject *y, PyObject *check, const char *what, double *fx, double *fy)
{
    if (PyFloat_CheckExact(x) && PyFloat_CheckExact(y)) {
        *fx = PyFloat_AS_DOUBLE(x);
        *fy = PyFloat_AS_DOUBLE(y);
        if (-INFINITY < *fx && *fx < INFINITY && -INFINITY < *fy && *fy < INFINITY) {
            return 0;
        }
    }
    PyObject *pair = PyObject_CallFunctionObjArgs(check, x, y, NULL); /* new */
    if (pair == NULL) {
        return -1;
    }
    int r = -1;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_Format(PyExc_SystemError, "%s returned no pair", what);
    }
    else {
        *fx = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 0));
        *fy = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 1));
        r = PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(pair);
    return r;
}

/* quadtree._point: a query point as two finite floats, or -1 and the reference's error. */
static int
point_any(PyObject *x, PyObject *y, double *fx, double *fy)
{
    return two_finite(x, y, ref_point, "quadtree._point", fx, fy);
}

/* geometry.motion_floats: a cast's motion as two finite floats, or -1 and the reference's
 * error. */
static int
motion_any(PyObject *dx, PyObject *dy, double *fdx, double *fdy)
{
    return two_finite(dx, dy, ref_motion, "geometry.motion_floats", fdx, fdy);
}

/* `value` if it is a float, else geometry.to_float(value, what). 0, or -1 and its error. */
static int
float_arg(PyObject *value, const char *what, double *out)
{
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return 0;
    }
    PyObject *number = PyObject_CallFunction(ref_to_float, "Os", value, what); /* new */
    if (number == NULL) {
        return -1;
    }
    *out = PyFloat_AsDouble(number);
    Py_DECREF(number);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* A C-contiguous buffer of 8-byte signed ints (want_double 0: array('q'), a numpy int64
 * array) or of doubles (want_double 1): 1 with the view held (release it), 0 if `obj` is no
 * such buffer (nothing held, no error). */
static int
typed_buffer(PyObject *obj, Py_buffer *view, int want_double)
{
    if (!PyObject_CheckBuffer(obj)) {
        return 0;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return 0;
    }
    const char *f = view->format != NULL ? view->format : "B";
    if (*f == '@' || *f == '=' || (*f == '<' && PY_LITTLE_ENDIAN) || (*f == '>' && !PY_LITTLE_ENDIAN)
        || (*f == '!' && !PY_LITTLE_ENDIAN)) {
        f++;
    }
    int ok = view->itemsize == 8 && f[0] != '\0' && f[1] == '\0'
             && (want_double ? f[0] == 'd' : (f[0] == 'q' || f[0] == 'l' || f[0] == 'n'));
    if (!ok) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* How many boxes a buffer of doubles holds (4 floats each, flat or as rows of 4), or -1 and
 * ValueError. */
static Py_ssize_t
boxes_in(const Py_buffer *view, const char *method)
{
    Py_ssize_t floats = view->len / 8;
    if ((view->ndim <= 1 && floats % 4 == 0) || (view->ndim == 2 && view->shape[1] == 4)) {
        return floats / 4;
    }
    PyErr_Format(PyExc_ValueError,
                 "%s: a buffer of boxes holds 4 floats per box (flat, or rows of 4), got %zd "
                 "floats in %d dimension(s)", method, floats, view->ndim);
    return -1;
}

/* ------------------------------------------------------------------------------------------
 * Arguments, by the reference's signatures
 *
 * Every method takes its arguments as the reference's method of the same name declares them
 * (positional or by keyword, then keyword-only ones), through bind(). A call that binds
 * gives the values at once, and a call of every parameter by position (the per-frame calls)
 * costs one comparison more than no parsing at all. A call that does not bind is refused
 * with the reference's own TypeError: the reference's method is called with the same
 * arguments, and the interpreter refuses them before its body runs, with the text of the
 * running version (3.13 adds "Did you mean ...?").
 * ---------------------------------------------------------------------------------------- */

#define MAX_PARAMS 5

/* A method's parameters after self, as the reference declares them: names[0 .. positional)
 * positional-or-keyword, the first `required` of them without a default, then keyword-only
 * ones (with defaults) up to names[n). */
typedef struct {
    const char *method;
    int positional, required, n;
    const char *names[MAX_PARAMS];
} Params;

/* Raise the TypeError that the reference's method raises for these arguments. -1. */
static int
signature_error(const char *method, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t n_kw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *func = PyObject_GetAttrString(ref_tree, method); /* new */
    PyObject **stack = func == NULL ? NULL : PyMem_Malloc((size_t)(1 + nargs + n_kw) * sizeof(PyObject *));
    if (stack == NULL) {
        if (func != NULL) {
            PyErr_NoMemory();
        }
        Py_XDECREF(func);
        return -1;
    }
    stack[0] = Py_None; /* self: the interpreter refuses the arguments before any use of it */
    if (nargs + n_kw > 0) {
        memcpy(stack + 1, args, (size_t)(nargs + n_kw) * sizeof(PyObject *));
    }
    PyObject *result = PyObject_Vectorcall(func, stack, (size_t)(1 + nargs), kwnames); /* new */
    PyMem_Free(stack);
    Py_DECREF(func);
    if (result != NULL || !PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* the reference took them: this parser and the reference's signature disagree */
        Py_XDECREF(result);
        PyErr_Clear();
        PyErr_Format(PyExc_SystemError, "QuadTree.%s: the arguments bind here differently "
                     "from the reference's signature", method);
    }
    return -1;
}

/* Bind a call's arguments to p: out[i] the value given for names[i] (borrowed), NULL where
 * its default stands. 0, or -1 and the reference's TypeError (signature_error). */
static int
bind(const Params *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    for (int i = 0; i < p->n; i++) {
        out[i] = i < nargs ? args[i] : NULL;
    }
    if (nargs > p->positional) {
        return signature_error(p->method, args, nargs, kwnames);
    }
    Py_ssize_t n_kw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < n_kw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j); /* a str: the interpreter checks */
        int i = 0;
        while (i < p->n && PyUnicode_CompareWithASCIIString(key, p->names[i]) != 0) {
            i++;
        }
        if (i == p->n || out[i] != NULL) { /* unknown, or given twice */
            return signature_error(p->method, args, nargs, kwnames);
        }
        out[i] = args[nargs + j];
    }
    for (int i = 0; i < p->required; i++) {
        if (out[i] == NULL) {
            return signature_error(p->method, args, nargs, kwnames);
        }
    }
    return 0;
}

/* The arguments of a call by p: `args` itself when every parameter is given by position
 * (nothing to do), else `buf` filled by bind(), NULL where a default stands; or NULL and the
 * reference's TypeError. */
static inline PyObject *const *
arguments(const Params *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
          PyObject **buf)
{
    if (kwnames == NULL && nargs == p->n && p->n == p->positional) {
        return args;
    }
    return bind(p, args, nargs, kwnames, buf) < 0 ? NULL : buf;
}

/* bind() for a call given as a tuple and a dict (tp_init's): out[i] borrowed from them. */
static int
bind_tuple(const Params *p, PyObject *args, PyObject *kwds, PyObject **out)
{
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), n_kw = kwds == NULL ? 0 : PyDict_Size(kwds);
    if (n_kw == 0) {
        return bind(p, PySequence_Fast_ITEMS(args), nargs, NULL, out);
    }
    PyObject **stack = PyMem_Malloc((size_t)(nargs + n_kw) * sizeof(PyObject *));
    PyObject *kwnames = PyTuple_New(n_kw); /* new */
    int r = -1;
    if (stack == NULL || kwnames == NULL) {
        if (stack == NULL) {
            PyErr_NoMemory();
        }
    }
    else {
        PyObject *key, *value; /* borrowed */
        Py_ssize_t pos = 0, j = 0;
        for (Py_ssize_t i = 0; i < nargs; i++) {
            stack[i] = PyTuple_GET_ITEM(args, i);
        }
        while (j < n_kw && PyDict_Next(kwds, &pos, &key, &value)) {
            Py_INCREF(key);
            PyTuple_SET_ITEM(kwnames, j, key); /* steals the reference just taken */
            stack[nargs + j++] = value;
        }
        r = bind(p, stack, nargs, kwnames, out);
    }
    PyMem_Free(stack);
    Py_XDECREF(kwnames);
    return r;
}

/* The arguments of a method that takes none: 0, or -1 and the reference's TypeError. */
static inline int
no_arguments(const char *method, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 0 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        return 0;
    }
    return signature_error(method, args, nargs, kwnames);
}

/* ------------------------------------------------------------------------------------------
 * The object
 * ---------------------------------------------------------------------------------------- */

/* The end of a busy section: the outermost one applies the discard()s deferred meanwhile
 * (see "Python inside the core"). Runs no Python and allocates nothing. */
static void
busy_end(Tree *t)
{
    if (--t->busy > 0 || t->n_pending == 0) {
        return;
    }
    Py_ssize_t k = t->n_pending;
    t->n_pending = 0;
    for (Py_ssize_t i = 0; i < k && !t->broken; i++) {
        int32_t s = find_slot(t, t->pending[i]);
        if (s != NO_SLOT) {
            remove_slot(t, s);
        }
    }
}

static int
guard(Tree *t, int mutating)
{
    if (t->broken) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this QuadTree ran out of memory in the middle of a change and can no "
                        "longer be used");
        return -1;
    }
    if (mutating && t->busy) {
        PyErr_SetObject(PyExc_RuntimeError, ref_busy); /* the reference's text */
        return -1;
    }
    return 0;
}

static PyObject *
Tree_new(PyTypeObject *type, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwds))
{
    Tree *t = (Tree *)type->tp_alloc(type, 0); /* zero-filled */
    if (t == NULL) {
        return NULL;
    }
    t->threshold_obj = PyLong_FromLong(DEFAULT_THRESHOLD);
    t->max_depth_obj = PyLong_FromLong(DEFAULT_MAX_DEPTH);
    if (t->threshold_obj == NULL || t->max_depth_obj == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    t->threshold = DEFAULT_THRESHOLD;
    t->max_depth = DEFAULT_MAX_DEPTH;
    t->root = NO_NODE;
    return (PyObject *)t;
}

static void
Tree_dealloc(Tree *t)
{
    PyMem_Free(t->ids);
    PyMem_Free(t->box);
    PyMem_Free(t->node_of);
    PyMem_Free(t->next);
    PyMem_Free(t->prev);
    PyMem_Free(t->table);
    PyMem_Free(t->nodes);
    PyMem_Free(t->free_nodes);
    PyMem_Free(t->work);
    PyMem_Free(t->scratch.arena);
    PyMem_Free(t->scratch.own);
    PyMem_Free(t->scratch.frames);
    PyMem_Free(t->slot_hint);
    PyMem_Free(t->pending);
    snaps_drop(t);
    Py_XDECREF(t->threshold_obj);
    Py_XDECREF(t->max_depth_obj);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* QuadTree.__init__'s rule for threshold and max_depth: an int (not a bool) >= minimum. */
static int
config_int(PyObject *value, const char *name, long minimum, int32_t *out)
{
    int ok = PyLong_Check(value) && !PyBool_Check(value);
    if (ok) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (overflow < 0 || (overflow == 0 && v < minimum)) {
            ok = 0;
        }
        else {
            *out = (overflow > 0 || v > INT32_MAX) ? INT32_MAX : (int32_t)v;
        }
    }
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "%s must be an int >= %ld, got %R", name, minimum, value);
        return -1;
    }
    return 0;
}

/* Set the configuration and empty the tree (__init__ and __setstate__). */
static int
configure(Tree *t, PyObject *bounds, PyObject *threshold, PyObject *max_depth)
{
    int32_t thr, depth;
    double hint[4];
    if (config_int(threshold, "threshold", 1, &thr) < 0
        || config_int(max_depth, "max_depth", 0, &depth) < 0) {
        return -1;
    }
    if (bounds != Py_None && box_any(bounds, NULL, hint) < 0) {
        return -1;
    }
    /* Kept as exact ints (an int subclass's copy, no Python run): the tree has no collector
     * support, so a subclass instance referring back to it would never be freed. */
    PyObject *exact_threshold = PyNumber_Index(threshold); /* owned */
    if (exact_threshold == NULL) {
        return -1;
    }
    PyObject *exact_depth = PyNumber_Index(max_depth); /* owned */
    if (exact_depth == NULL) {
        Py_DECREF(exact_threshold);
        return -1;
    }
    PyObject *old_threshold = t->threshold_obj, *old_depth = t->max_depth_obj; /* owned */
    t->threshold_obj = exact_threshold;
    t->max_depth_obj = exact_depth;
    t->threshold = thr;
    t->max_depth = depth;
    t->has_hint = bounds != Py_None;
    if (t->has_hint) {
        memcpy(t->hint, hint, sizeof(hint));
    }
    int r = reset(t);
    /* Let go of the old ints last: freeing one may run a finaliser, which finds the tree whole. */
    Py_DECREF(old_threshold);
    Py_DECREF(old_depth);
    return r;
}

static const Params init_params = {"__init__", 1, 0, 3, {"bounds", "threshold", "max_depth"}};

static int
Tree_init(Tree *t, PyObject *args, PyObject *kwds)
{
    PyObject *a[MAX_PARAMS];
    if (bind_tuple(&init_params, args, kwds, a) < 0) {
        return -1;
    }
    if (t->busy) {
        return guard(t, 1);
    }
    PyObject *bounds = a[0] == NULL ? Py_None : a[0], *threshold = a[1], *max_depth = a[2];
    PyObject *default_threshold = NULL, *default_depth = NULL;
    if (threshold == NULL) {
        threshold = default_threshold = PyLong_FromLong(DEFAULT_THRESHOLD);
    }
    if (max_depth == NULL) {
        max_depth = default_depth = PyLong_FromLong(DEFAULT_MAX_DEPTH);
    }
    int r = -1;
    if (threshold != NULL && max_depth != NULL) {
        t->busy++;
        r = configure(t, bounds, threshold, max_depth);
        busy_end(t);
    }
    Py_XDECREF(default_threshold);
    Py_XDECREF(default_depth);
    return r;
}

/* ------------------------------------------------------------------------------------------
 * Container protocol
 * ---------------------------------------------------------------------------------------- */

static Py_ssize_t
Tree_len(Tree *t)
{
    return t->n;
}

static int
Tree_contains(Tree *t, PyObject *entity)
{
    if (guard(t, 0) < 0) {
        return -1;
    }
    int32_t s = lookup_slot(t, entity);
    return s == -2 ? -1 : s != NO_SLOT;
}

static PyObject *
Tree_getitem(Tree *t, PyObject *entity)
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    int32_t s = lookup_slot(t, entity);
    if (s == -2) {
        return NULL;
    }
    if (s == NO_SLOT) {
        return raise_missing(entity);
    }
    const double *b = &t->box[4 * (size_t)s];
    return make_box(b[0], b[1], b[2], b[3]);
}

static const Params get_params = {"get", 2, 1, 2, {"entity", "default"}};

static PyObject *
Tree_get(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&get_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0) {
        return NULL;
    }
    int32_t s = lookup_slot(t, a[0]);
    if (s == -2) {
        return NULL;
    }
    if (s == NO_SLOT) {
        PyObject *fallback = a[1] != NULL ? a[1] : Py_None;
        Py_INCREF(fallback);
        return fallback;
    }
    const double *b = &t->box[4 * (size_t)s];
    return make_box(b[0], b[1], b[2], b[3]);
}

static PyObject *ids_result(I64Buf *buf, int r);

static PyObject *
Tree_iter(Tree *t)
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    I64Buf copy = {0}; /* the ids in ascending order (quadtree.__iter__) */
    int r = i64_reserve(&copy, t->n);
    if (r == 0 && t->n > 0) {
        memcpy(copy.p, t->ids, (size_t)t->n * sizeof(int64_t));
        copy.n = t->n;
    }
    PyObject *ids = ids_result(&copy, r);
    if (ids == NULL) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(ids);
    Py_DECREF(ids);
    return it;
}

/* ------------------------------------------------------------------------------------------
 * Updates
 * ---------------------------------------------------------------------------------------- */

static PyObject *
insert_impl(Tree *t, PyObject *entity_arg, PyObject *box_arg)
{
    PyObject *entity = stored_id(entity_arg); /* new */
    if (entity == NULL) {
        return NULL;
    }
    int64_t id;
    double c[4];
    int fit = int64_of(entity, &id);
    if (fit <= 0) {
        if (fit == 0) {
            raise_id_range(entity);
        }
        goto fail;
    }
    if (find_slot(t, id) != NO_SLOT) {
        PyErr_Format(PyExc_ValueError, "entity %R is already in the index", entity);
        goto fail;
    }
    if (box_any(box_arg, entity, c) < 0) {
        goto fail;
    }
    if (insert_record(t, id, c) < 0) {
        goto fail;
    }
    Py_DECREF(entity);
    Py_RETURN_NONE;
fail:
    Py_DECREF(entity);
    return NULL;
}

static const Params insert_params = {"insert", 2, 2, 2, {"entity", "box"}};

static PyObject *
Tree_insert(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&insert_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 1) < 0) {
        return NULL;
    }
    t->busy++;
    PyObject *r = insert_impl(t, a[0], a[1]);
    busy_end(t);
    maybe_compact(t);
    return r;
}

/* quadtree.move's careful path (_move_target): the id's type, then its absence, then the
 * box, each with the reference's error. The slot, or -1 with the error. */
static int32_t
move_target(Tree *t, PyObject *entity_arg, PyObject *box_arg, double c[4])
{
    PyObject *entity = stored_id(entity_arg); /* new */
    if (entity == NULL) {
        return -1;
    }
    int64_t id;
    int32_t s = NO_SLOT;
    int fit = int64_of(entity, &id);
    if (fit > 0) {
        s = find_slot(t, id);
    }
    if (fit >= 0 && s == NO_SLOT) {
        raise_missing(entity);
    }
    else if (fit >= 0 && box_any(box_arg, entity, c) == 0) {
        Py_DECREF(entity);
        return find_slot(t, id); /* the same slot: nothing can change the tree while busy */
    }
    Py_DECREF(entity);
    return -1;
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

/* Ask for the memory the moves of ids[i + 16], [i + 32] and [i + 64] will read, one step of
 * the chain each: the node, the slot's box and node index, the hash bucket. With a large
 * tree each is a cache miss, and a move is otherwise a chain of them waiting on one another:
 * move_many of 100,000 buffered moves, fastest of 60 frames, 7.7-9.5 ms without, 6.6 with
 * distances 4/8/16, 4.5-5.0 with these (medians are noise on the shared VM). */
static inline void
prefetch_move(const Tree *t, const int64_t *ids, const int32_t *hint, Py_ssize_t i, Py_ssize_t k)
{
    size_t mask = t->table_size - 1;
    uint32_t n = (uint32_t)t->n;
    if (t->table == NULL) {
        return;
    }
    /* A slot hint in range stands for the hash (right or not, it names memory we own). */
    if (i + 64 < k && (hint == NULL || (uint32_t)hint[i + 64] >= n)) {
        PREFETCH(&t->table[hash_id(ids[i + 64]) & mask]);
    }
    if (i + 32 < k) {
        int32_t s = hint != NULL && (uint32_t)hint[i + 32] < n
                        ? hint[i + 32]
                        : t->table[hash_id(ids[i + 32]) & mask]; /* its bucket, or a neighbour's */
        if (s != NO_SLOT) {
            PREFETCH(&t->ids[s]);
            PREFETCH(&t->box[4 * (size_t)s]);
            PREFETCH(&t->node_of[s]);
        }
    }
    if (i + 16 < k) {
        int32_t s = hint != NULL && (uint32_t)hint[i + 16] < n ? hint[i + 16]
                                                                : t->table[hash_id(ids[i + 16]) & mask];
        if (s != NO_SLOT) {
            PREFETCH(&t->nodes[t->node_of[s]]);
        }
    }
}

/* The slot hints for a buffered move_many of k ids (see Tree.slot_hint), or NULL if memory
 * is short or k is more than the tree holds (no error: they are an optimisation, and their
 * memory stays within the tree's own). */
static int32_t *
slot_hints(Tree *t, Py_ssize_t k)
{
    if (k > t->n) {
        return NULL;
    }
    if (k > t->slot_hint_cap) {
        if ((size_t)k > PY_SSIZE_T_MAX / sizeof(int32_t)) {
            return NULL;
        }
        int32_t *p = PyMem_Realloc(t->slot_hint, (size_t)k * sizeof(int32_t));
        if (p == NULL) {
            return NULL;
        }
        for (Py_ssize_t i = t->slot_hint_cap; i < k; i++) {
            p[i] = NO_SLOT;
        }
        t->slot_hint = p;
        t->slot_hint_cap = k;
    }
    return t->slot_hint;
}

/* One move of move() and move_many(): the fast path inline, the careful one through
 * move_target. The entity's id and old box go to the undo log if one is given. */
static int
move_one(Tree *t, PyObject *entity, PyObject *box, I64Buf *undo)
{
    double c[4];
    int32_t s = NO_SLOT;
    if (PyLong_CheckExact(entity)) {
        int64_t id;
        if (int64_of(entity, &id) > 0) {
            s = find_slot(t, id);
        }
        if (s != NO_SLOT && !box_fast(box, c)) {
            s = NO_SLOT;
        }
    }
    if (s == NO_SLOT) {
        s = move_target(t, entity, box, c);
        if (s < 0) {
            return -1;
        }
    }
    if (undo != NULL) {
        const double *old = &t->box[4 * (size_t)s];
        if (i64_reserve(undo, 5) < 0) {
            return -1;
        }
        undo->p[undo->n++] = t->ids[s];
        memcpy(&undo->p[undo->n], old, 4 * sizeof(double));
        undo->n += 4;
    }
    return move_slot(t, s, c);
}

static const Params move_params = {"move", 2, 2, 2, {"entity", "box"}};

static PyObject *
Tree_move(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&move_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 1) < 0) {
        return NULL;
    }
    t->busy++;
    int r = move_one(t, a[0], a[1], NULL);
    busy_end(t);
    maybe_compact(t);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Tree_remove(Tree *t, PyObject *entity)
{
    if (guard(t, 1) < 0) {
        return NULL;
    }
    t->busy++;
    int32_t s = lookup_slot(t, entity);
    if (s >= 0) {
        remove_slot(t, s);
    }
    busy_end(t);
    if (s == -2) {
        return NULL;
    }
    if (s == NO_SLOT) {
        return raise_missing(entity);
    }
    Py_RETURN_NONE;
}

static PyObject *
Tree_discard(Tree *t, PyObject *entity)
{
    if (t->busy && !t->broken && PyLong_CheckExact(entity)) {
        /* A finaliser's discard while busy: deferred to the end of the busy call. */
        int64_t id;
        int fit = int64_of(entity, &id);
        if (fit <= 0) { /* an id past 64 bits is absent: nothing to do */
            return fit < 0 ? NULL : (Py_INCREF(Py_None), Py_None);
        }
        if (t->n_pending == t->cap_pending) {
            Py_ssize_t cap = t->cap_pending ? 2 * t->cap_pending : 8;
            int64_t *p = PyMem_Realloc(t->pending, (size_t)cap * sizeof(int64_t));
            if (p == NULL) {
                return PyErr_NoMemory();
            }
            t->pending = p;
            t->cap_pending = cap;
        }
        t->pending[t->n_pending++] = id;
        Py_RETURN_NONE;
    }
    if (guard(t, 1) < 0) {
        return NULL;
    }
    t->busy++;
    int32_t s = lookup_slot(t, entity);
    if (s >= 0) {
        remove_slot(t, s);
    }
    busy_end(t);
    if (s == -2) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Tree_clear(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 1) < 0 || reset(t) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* zip(entities, boxes, strict=True): the reference's pairing, with its errors. New. */
static PyObject *
zip_strict(PyObject *entities, PyObject *boxes)
{
    PyObject *args = PyTuple_Pack(2, entities, boxes);
    PyObject *kwargs = Py_BuildValue("{s:O}", "strict", Py_True);
    PyObject *zipped = NULL;
    if (args != NULL && kwargs != NULL) {
        zipped = PyObject_Call(builtin_zip, args, kwargs);
    }
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return zipped;
}

/* Whether the current exception is zip()'s "... is shorter/longer than ..." ValueError. */
static int
is_zip_length_error(void)
{
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) {
        return 0;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    int yes = 0;
    PyObject *text = value != NULL ? PyObject_Str(value) : NULL;
    if (text != NULL) {
        /* str(error).startswith("zip()") */
        yes = PyUnicode_Check(text) && PyUnicode_GET_LENGTH(text) >= 5
              && PyUnicode_READ_CHAR(text, 0) == 'z' && PyUnicode_READ_CHAR(text, 1) == 'i'
              && PyUnicode_READ_CHAR(text, 2) == 'p' && PyUnicode_READ_CHAR(text, 3) == '('
              && PyUnicode_READ_CHAR(text, 4) == ')';
        Py_DECREF(text);
    }
    else {
        PyErr_Clear();
    }
    PyErr_Restore(type, value, tb);
    return yes;
}

/* Validate a batch for insert_many: each id new (to the tree and to the batch), each box
 * valid, with the reference's errors in the reference's order (the id's type and range, the
 * box, then the duplicate: the caller has checked the first three). Appends to the batch (5
 * int64 per entry: id, then the 4 doubles). */
static int
check_new(Tree *t, IdSet *fresh, PyObject *entity, int64_t id, const double c[4], I64Buf *batch)
{
    int in_tree = find_slot(t, id) != NO_SLOT;
    int seen = in_tree ? 1 : idset_add(fresh, id);
    if (seen < 0) {
        return -1;
    }
    if (seen) {
        PyErr_Format(PyExc_ValueError, in_tree ? "entity %R is already in the index"
                                               : "entity %R is listed twice", entity);
        return -1;
    }
    if (i64_reserve(batch, 5) < 0) {
        return -1;
    }
    batch->p[batch->n++] = id;
    memcpy(&batch->p[batch->n], c, 4 * sizeof(double));
    batch->n += 4;
    return 0;
}

/* Add a validated batch (5 int64 per entry, as check_new appends them). */
static int
insert_checked(Tree *t, const I64Buf *batch)
{
    Py_ssize_t k = batch->n / 5;
    if (k == 0) {
        return 0;
    }
    if (k > MAX_COUNT) {
        PyErr_SetString(PyExc_OverflowError, "a QuadTree holds fewer than 2**30 entities");
        return -1;
    }
    int64_t *ids = PyMem_Malloc((size_t)k * sizeof(int64_t));
    double *boxes = PyMem_Malloc((size_t)k * 4 * sizeof(double));
    int r = -1;
    if (ids == NULL || boxes == NULL) {
        PyErr_NoMemory();
    }
    else {
        for (Py_ssize_t i = 0; i < k; i++) {
            ids[i] = batch->p[5 * i];
            memcpy(&boxes[4 * i], &batch->p[5 * i + 1], 4 * sizeof(double));
        }
        r = insert_batch(t, ids, boxes, (int32_t)k);
    }
    PyMem_Free(ids);
    PyMem_Free(boxes);
    return r;
}

static int
insert_many_impl(Tree *t, PyObject *entities, PyObject *boxes)
{
    I64Buf batch = {0};
    IdSet fresh = {0};
    Py_buffer ids_view, box_view;
    int r = -1;
    if (typed_buffer(entities, &ids_view, 0) == 1) {
        if (typed_buffer(boxes, &box_view, 1) == 1) {
            /* Buffers: ids as int64, boxes as 4 doubles each; no Python object per entity. */
            Py_ssize_t n_ids = ids_view.len / 8, n_boxes = boxes_in(&box_view, "insert_many");
            const int64_t *ids = ids_view.buf;
            const double *coords = box_view.buf;
            if (n_boxes >= 0 && ids_view.ndim > 1) {
                PyErr_SetString(PyExc_ValueError, "insert_many: a buffer of ids is flat");
            }
            else if (n_boxes >= 0) {
                Py_ssize_t k = n_ids < n_boxes ? n_ids : n_boxes, i;
                for (i = 0; i < k; i++) {
                    const double *c = &coords[4 * i];
                    PyObject *entity = PyLong_FromLongLong(ids[i]);
                    int bad = entity == NULL
                              || (!valid_box(c) && raise_box_error(c, ids[i]) < 0)
                              || check_new(t, &fresh, entity, ids[i], c, &batch) < 0;
                    Py_XDECREF(entity);
                    if (bad) {
                        break;
                    }
                }
                if (i == k && n_ids != n_boxes) {
                    PyErr_SetString(PyExc_ValueError,
                                    "insert_many: entities and boxes differ in length");
                }
                else if (i == k) {
                    r = insert_checked(t, &batch);
                }
            }
            PyBuffer_Release(&box_view);
            PyBuffer_Release(&ids_view);
            goto done;
        }
        PyBuffer_Release(&ids_view);
    }
    PyObject *zipped = zip_strict(entities, boxes); /* new */
    if (zipped == NULL) {
        goto done;
    }
    PyObject *pair;
    while ((pair = PyIter_Next(zipped)) != NULL) { /* new: (entity, box) */
        PyObject *entity = stored_id(PyTuple_GET_ITEM(pair, 0));
        int64_t id = 0;
        double c[4];
        int fit = entity == NULL ? -1 : int64_of(entity, &id);
        if (fit == 0) {
            raise_id_range(entity);
        }
        int bad = fit <= 0 || box_any(PyTuple_GET_ITEM(pair, 1), entity, c) < 0
                  || check_new(t, &fresh, entity, id, c, &batch) < 0;
        Py_XDECREF(entity);
        Py_DECREF(pair);
        if (bad) {
            break;
        }
    }
    Py_DECREF(zipped);
    if (PyErr_Occurred()) {
        if (is_zip_length_error()) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "insert_many: entities and boxes differ in length");
        }
        goto done;
    }
    r = insert_checked(t, &batch);
done:
    PyMem_Free(batch.p);
    idset_free(&fresh);
    return r;
}

static const Params insert_many_params = {"insert_many", 2, 2, 2, {"entities", "boxes"}};

static PyObject *
Tree_insert_many(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&insert_many_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 1) < 0) {
        return NULL;
    }
    t->busy++;
    int r = insert_many_impl(t, a[0], a[1]);
    busy_end(t);
    maybe_compact(t);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* move_many's error, as the reference rewrites it: the length error named for the method,
 * and with atomic=False a note that the moves before it stand. */
static void
rewrite_batch_error(const char *method, int atomic)
{
    const char *kept = atomic ? "" : " (move_many stopped there: the moves before it stand)";
    if (is_zip_length_error()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: entities and boxes differ in length%s", method, kept);
        return;
    }
    if (atomic || !(PyErr_ExceptionMatches(PyExc_KeyError) || PyErr_ExceptionMatches(PyExc_TypeError)
                    || PyErr_ExceptionMatches(PyExc_ValueError))) {
        return;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    /* message = error.args[0] if len(error.args) == 1 else str(error) */
    PyObject *args = value != NULL ? PyObject_GetAttrString(value, "args") : NULL;
    PyObject *message = NULL;
    if (args != NULL && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1) {
        message = PyTuple_GET_ITEM(args, 0);
        Py_INCREF(message);
    }
    else if (value != NULL) {
        message = PyObject_Str(value);
    }
    Py_XDECREF(args);
    PyObject *text = message != NULL ? PyUnicode_FromFormat("%S%s", message, kept) : NULL;
    Py_XDECREF(message);
    if (text == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return; /* the error of building the message stands */
    }
    PyObject *error = PyObject_CallOneArg(type, text); /* type(error)(f"{message}{kept}") */
    Py_DECREF(text);
    if (error != NULL) {
        PyErr_SetObject(type, error);
        Py_DECREF(error);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

static int
move_many_impl(Tree *t, PyObject *entities, PyObject *boxes, int atomic)
{
    I64Buf undo = {0};
    I64Buf *log = atomic ? &undo : NULL;
    int had_root = t->root != NO_NODE;
    double root_bounds[4] = {0, 0, 0, 0};
    int32_t root_level = 0;
    if (had_root) {
        const Node *r = &t->nodes[t->root];
        root_bounds[0] = r->x0;
        root_bounds[1] = r->y0;
        root_bounds[2] = r->x1;
        root_bounds[3] = r->y1;
        root_level = r->level;
    }
    Py_buffer ids_view, box_view;
    int ok = 0;
    if (typed_buffer(entities, &ids_view, 0) == 1) {
        if (typed_buffer(boxes, &box_view, 1) == 1) {
            /* Buffers: ids as int64, boxes as 4 doubles each; no Python object per move. */
            Py_ssize_t n_ids = ids_view.len / 8, n_boxes = boxes_in(&box_view, "move_many");
            const int64_t *ids = ids_view.buf;
            const double *coords = box_view.buf;
            if (n_boxes < 0 || ids_view.ndim > 1) {
                /* refused as they are: nothing moved, nothing to undo or to say about it */
                if (n_boxes >= 0) {
                    PyErr_SetString(PyExc_ValueError, "move_many: a buffer of ids is flat");
                }
                PyBuffer_Release(&box_view);
                PyBuffer_Release(&ids_view);
                return -1;
            }
            else {
                Py_ssize_t k = n_ids < n_boxes ? n_ids : n_boxes, i;
                /* The hints spare the hashing, here and in the prefetch, for the ids sent in the
                 * order of the last call (a fifth of a move: decisions.md, slot hints). */
                int32_t *hint = slot_hints(t, k);
                for (i = 0; i < k; i++) {
                    const double *c = &coords[4 * i];
                    prefetch_move(t, ids, hint, i, k);
                    int32_t s = hint != NULL ? hint[i] : NO_SLOT;
                    if ((uint32_t)s >= (uint32_t)t->n || t->ids[s] != ids[i]) {
                        s = find_slot(t, ids[i]);
                        if (hint != NULL) {
                            hint[i] = s;
                        }
                    }
                    if (s == NO_SLOT) {
                        PyObject *entity = PyLong_FromLongLong(ids[i]);
                        if (entity != NULL) {
                            raise_missing(entity);
                            Py_DECREF(entity);
                        }
                        break;
                    }
                    /* Strictly inside the node's fit bounds, the box has no NaN and no
                     * infinity, so two comparisons finish valid_box's six; a box that stays
                     * in its leaf (most moves) is then stored at once (decisions.md). */
                    const Node *nd = &t->nodes[t->node_of[s]];
                    int stays = fits(nd, c) && c[0] <= c[2] && c[1] <= c[3];
                    if (!stays && !valid_box(c)) {
                        raise_box_error(c, ids[i]);
                        break;
                    }
                    if (log != NULL) {
                        if (i64_reserve(log, 5) < 0) {
                            break;
                        }
                        log->p[log->n++] = ids[i];
                        memcpy(&log->p[log->n], &t->box[4 * (size_t)s], 4 * sizeof(double));
                        log->n += 4;
                    }
                    if (stays && nd->kids[0] == NO_NODE) {
                        memcpy(&t->box[4 * (size_t)s], c, 4 * sizeof(double));
                    }
                    else if (move_slot(t, s, c) < 0) {
                        break;
                    }
                }
                if (i == k && n_ids != n_boxes) {
                    /* zip(strict=True)'s error, which rewrite_batch_error names for us */
                    PyErr_SetString(PyExc_ValueError, "zip() arguments differ in length");
                }
                else if (i == k) {
                    ok = 1;
                }
            }
            PyBuffer_Release(&box_view);
            PyBuffer_Release(&ids_view);
            goto finish;
        }
        PyBuffer_Release(&ids_view);
    }
    PyObject *zipped = zip_strict(entities, boxes); /* new */
    if (zipped != NULL) {
        PyObject *pair;
        while ((pair = PyIter_Next(zipped)) != NULL) { /* new: (entity, box) */
            int r = move_one(t, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), log);
            Py_DECREF(pair);
            if (r < 0) {
                break;
            }
        }
        Py_DECREF(zipped);
        ok = !PyErr_Occurred();
    }
finish:
    if (!ok && !t->broken) {
        /* Undo newest first: each step is a valid move, and the tree's shape is a function
         * of its boxes and its root, so this restores the tree exactly. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        for (Py_ssize_t i = undo.n - 5; i >= 0; i -= 5) {
            double c[4];
            memcpy(c, &undo.p[i + 1], 4 * sizeof(double));
            int32_t s = find_slot(t, undo.p[i]);
            if (s != NO_SLOT && move_slot(t, s, c) < 0) {
                break;
            }
        }
        if (atomic && had_root && !t->broken) {
            const Node *r = &t->nodes[t->root];
            if (!(r->x0 == root_bounds[0] && r->y0 == root_bounds[1] && r->x1 == root_bounds[2]
                  && r->y1 == root_bounds[3] && r->level == root_level)) {
                rebuild(t, root_bounds, root_level); /* a move had grown the root */
            }
        }
        if (PyErr_Occurred()) { /* memory ran out while undoing: the tree is broken */
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        else {
            PyErr_Restore(type, value, tb);
            rewrite_batch_error("move_many", atomic);
        }
    }
    PyMem_Free(undo.p);
    if (!ok) {
        drop_hints(t); /* for positions of a call that went wrong: no use to the next */
    }
    return ok ? 0 : -1;
}

static const Params move_many_params = {"move_many", 2, 2, 3, {"entities", "boxes", "atomic"}};

static PyObject *
Tree_move_many(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&move_many_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 1) < 0) {
        return NULL;
    }
    int atomic = a[2] == NULL ? 1 : PyObject_IsTrue(a[2]); /* the reference's bool(atomic) */
    if (atomic < 0) {
        return NULL;
    }
    t->busy++;
    int r = move_many_impl(t, a[0], a[1], atomic);
    busy_end(t);
    maybe_compact(t);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Read a processor's record (min_x, min_y, max_x, max_y, entity): its shape, its id's
 * type, then (if `storing`) its id's range, then its box, as the reference reads them. 1
 * with the id and box; 0 for an id past 64 bits read for a lookup (no error set: no such
 * entity is present), with *id 0 and the box; or -1 and an error. */
static int
read_record(PyObject *rec, int storing, int64_t *id, double c[4], PyObject **entity)
{
    *entity = NULL;
    if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != 5) {
        PyErr_Format(PyExc_TypeError,
                     "records are (min_x, min_y, max_x, max_y, entity) tuples, got %R", rec);
        return -1;
    }
    *entity = stored_id(PyTuple_GET_ITEM(rec, 4)); /* new */
    if (*entity == NULL) {
        return -1;
    }
    int fit = int64_of(*entity, id);
    if (fit < 0 || (fit == 0 && storing)) {
        if (fit == 0) {
            raise_id_range(*entity);
        }
        return -1;
    }
    if (fit == 0) {
        *id = 0;
    }
    /* The processor's records hold four floats: read them in place (the slice and the
     * generic reading below cost 60 ns a record, a third of the processor's move). */
    int floats = 1;
    for (int i = 0; i < 4 && floats; i++) {
        PyObject *item = PyTuple_GET_ITEM(rec, i); /* borrowed */
        floats = PyFloat_CheckExact(item);
        c[i] = floats ? PyFloat_AS_DOUBLE(item) : 0.0;
    }
    if (floats && valid_box(c)) {
        return fit;
    }
    PyObject *coords = PyTuple_GetSlice(rec, 0, 4); /* new */
    if (coords == NULL) {
        return -1;
    }
    int r = box_any(coords, *entity, c);
    Py_DECREF(coords);
    return r < 0 ? -1 : fit;
}

static PyObject *
Tree_move_records(Tree *t, PyObject *records)
{
    if (guard(t, 1) < 0) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(records); /* new */
    if (it == NULL) {
        return NULL;
    }
    t->busy++;
    PyObject *rec;
    while ((rec = PyIter_Next(it)) != NULL) { /* new */
        int64_t id;
        double c[4];
        PyObject *entity;
        int fit = read_record(rec, 0, &id, c, &entity);
        int bad = fit < 0;
        int32_t s = fit > 0 ? find_slot(t, id) : NO_SLOT;
        if (!bad && s == NO_SLOT) { /* absent, an id past 64 bits included */
            raise_missing(entity);
            bad = 1;
        }
        Py_XDECREF(entity);
        Py_DECREF(rec);
        if (bad || move_slot(t, s, c) < 0) {
            break;
        }
    }
    busy_end(t);
    Py_DECREF(it);
    maybe_compact(t);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Tree_insert_records(Tree *t, PyObject *records)
{
    if (guard(t, 1) < 0) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(records); /* new */
    if (it == NULL) {
        return NULL;
    }
    I64Buf batch = {0};
    IdSet fresh = {0};
    t->busy++;
    PyObject *rec;
    while ((rec = PyIter_Next(it)) != NULL) { /* new */
        int64_t id;
        double c[4];
        PyObject *entity;
        int bad = read_record(rec, 1, &id, c, &entity) < 0
                  || check_new(t, &fresh, entity, id, c, &batch) < 0;
        Py_XDECREF(entity);
        Py_DECREF(rec);
        if (bad) {
            break;
        }
    }
    Py_DECREF(it);
    int r = PyErr_Occurred() ? -1 : insert_checked(t, &batch);
    busy_end(t);
    maybe_compact(t);
    PyMem_Free(batch.p);
    idset_free(&fresh);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------
 * Queries
 * ---------------------------------------------------------------------------------------- */

static inline int
overlaps(const double *b, const double q[4])
{
    /* Box.intersects, the one boundary rule: closed boxes, touching counts. */
    return b[0] <= q[2] && q[0] <= b[2] && b[1] <= q[3] && q[1] <= b[3];
}

static inline int
node_overlaps(const Node *nd, const double q[4])
{
    return nd->x0 <= q[2] && q[0] <= nd->x1 && nd->y0 <= q[3] && q[1] <= nd->y1;
}

/* Every id whose box intersects q, each once (quadtree.query). */
static int
query_ids(const Tree *t, const double q[4], I64Buf *out)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    NodeStack stack, covered;
    ns_init(&stack);
    ns_init(&covered);
    int r = ns_push(&stack, t->root);
    while (r == 0 && stack.n > 0) {
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        for (int32_t s = nd->head; s != NO_SLOT && r == 0; s = t->next[s]) {
            if (overlaps(&t->box[4 * (size_t)s], q)) {
                r = i64_push(out, t->ids[s]);
            }
        }
        if (nd->kids[0] == NO_NODE) {
            continue;
        }
        for (int k = 0; k < 4 && r == 0; k++) {
            const Node *c = &t->nodes[nd->kids[k]];
            if (c->count > 0 && node_overlaps(c, q)) {
                /* a subtree wholly inside the box: every id, untested */
                int inside = q[0] <= c->x0 && c->x1 <= q[2] && q[1] <= c->y0 && c->y1 <= q[3];
                r = ns_push(inside ? &covered : &stack, nd->kids[k]);
            }
        }
    }
    while (r == 0 && covered.n > 0) {
        const Node *nd = &t->nodes[covered.p[--covered.n]];
        if (i64_reserve(out, nd->n) < 0) {
            r = -1;
            break;
        }
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            out->p[out->n++] = t->ids[s];
        }
        if (nd->kids[0] != NO_NODE) {
            for (int k = 0; k < 4 && r == 0; k++) {
                r = ns_push(&covered, nd->kids[k]);
            }
        }
    }
    ns_free(&stack);
    ns_free(&covered);
    return r;
}

static int sort_ids(int64_t *a, Py_ssize_t n);

/* The list of the ids in buf (freed), in ascending order: every answer that is a set of ids
 * (quadtree.query's docstring), or NULL if r < 0 (the error that r reports). New. */
static PyObject *
ids_result(I64Buf *buf, int r)
{
    PyObject *list = r < 0 || sort_ids(buf->p, buf->n) < 0 ? NULL : id_list(buf->p, buf->n);
    PyMem_Free(buf->p);
    return list;
}

static const Params query_point_params = {"query_point", 2, 2, 2, {"x", "y"}};
static const Params query_radius_params = {"query_radius", 3, 3, 3, {"x", "y", "r"}};

static PyObject *
Tree_query(Tree *t, PyObject *box)
{
    double q[4];
    if (guard(t, 0) < 0 || box_any(box, NULL, q) < 0) {
        return NULL;
    }
    I64Buf out = {0};
    return ids_result(&out, query_ids(t, q, &out));
}

static PyObject *
Tree_query_point(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    double q[4];
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&query_point_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0 || point_any(a[0], a[1], &q[0], &q[1]) < 0) {
        return NULL;
    }
    q[2] = q[0];
    q[3] = q[1];
    I64Buf out = {0};
    return ids_result(&out, query_ids(t, q, &out));
}

/* Every id whose box is within r of (x, y): Box.distance_to_point(x, y) <= r, the hypot of
 * the gaps, exactly. A box with a gap above r on either axis is farther than r (hypot is
 * never below its larger argument), and so is every box of a node whose own gap is above r
 * (a node's gap is never above its entries': rounding is monotonic): both tests are exact. */
static int
radius_ids(const Tree *t, double x, double y, double r, I64Buf *out)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    NodeStack stack;
    ns_init(&stack);
    int err = ns_push(&stack, t->root);
    while (err == 0 && stack.n > 0) {
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        for (int32_t s = nd->head; s != NO_SLOT && err == 0; s = t->next[s]) {
            const double *b = &t->box[4 * (size_t)s];
            double dx = gap(x, b[0], b[2]), dy = gap(y, b[1], b[3]);
            if (dx <= r && dy <= r && py_hypot(dx, dy) <= r) {
                err = i64_push(out, t->ids[s]);
            }
        }
        if (nd->kids[0] == NO_NODE) {
            continue;
        }
        for (int k = 0; k < 4 && err == 0; k++) {
            const Node *c = &t->nodes[nd->kids[k]];
            if (c->count > 0 && gap(x, c->x0, c->x1) <= r && gap(y, c->y0, c->y1) <= r) {
                err = ns_push(&stack, nd->kids[k]);
            }
        }
    }
    ns_free(&stack);
    return err;
}

static PyObject *
Tree_query_radius(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    double x, y, r;
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&query_radius_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0 || point_any(a[0], a[1], &x, &y) < 0
        || float_arg(a[2], "radius", &r) < 0) {
        return NULL;
    }
    if (!(0.0 <= r && r < INFINITY)) {
        PyErr_Format(PyExc_ValueError, "radius must be finite and >= 0, got %R", a[2]);
        return NULL;
    }
    I64Buf out = {0};
    return ids_result(&out, radius_ids(t, x, y, r, &out));
}

/* nearest(): a candidate, and the order of the answer: nearer first, ties by id. */
typedef struct {
    double d;
    int64_t id;
} Cand;

static inline int
cand_before(const Cand *a, const Cand *b)
{
    return a->d < b->d || (a->d == b->d && a->id < b->id);
}

static int
cmp_cand(const void *pa, const void *pb)
{
    const Cand *a = pa, *b = pb;
    return cand_before(a, b) ? -1 : (cand_before(b, a) ? 1 : 0);
}

/* A node waiting to be opened, with a lower bound of its entries' distances (nearest) or
 * fractions (cast_first). group is 0 for the node's subtree; cast_first also waits on the
 * two groups of a large node's own entries apart: 1 those across its vertical split line,
 * 2 the others (see Snap). */
typedef struct {
    double lb;
    int32_t node;
    int32_t group;
} Open;

/* Whether every entry of a node whose gaps give `lb` is farther than r. hypot is faithfully
 * rounded and the node's gaps never exceed its entries', so an entry's computed distance is
 * at least lb * (1 - 2**-40) here, subnormals included (their error is absolute, below
 * 2**-1060): a margin that can only open a node too many. */
static inline int
too_far(double lb, double r)
{
    return lb > r * (1.0 + 0x1p-40) + 0x1p-1060;
}

static int
open_push(Open **heap, Py_ssize_t *n, Py_ssize_t *cap, Open item)
{
    if (*n == *cap) {
        Py_ssize_t c = *cap < 64 ? 64 : *cap * 2;
        Open *p = PyMem_Realloc(*heap, (size_t)c * sizeof(Open));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *heap = p;
        *cap = c;
    }
    Open *h = *heap;
    Py_ssize_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2].lb > item.lb) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = item;
    return 0;
}

static Open
open_pop(Open *h, Py_ssize_t *n)
{
    Open top = h[0], last = h[--*n];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= *n) {
            break;
        }
        if (c + 1 < *n && h[c + 1].lb < h[c].lb) {
            c++;
        }
        if (!(h[c].lb < last.lb)) {
            break;
        }
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
    return top;
}

/* The best k as a max-heap on (d, id): best[0] is the worst of them. */
static void
best_sift_down(Cand *best, Py_ssize_t m)
{
    Py_ssize_t i = 0;
    Cand item = best[0];
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= m) {
            break;
        }
        if (c + 1 < m && cand_before(&best[c], &best[c + 1])) {
            c++;
        }
        if (!cand_before(&item, &best[c])) {
            break;
        }
        best[i] = best[c];
        i = c;
    }
    best[i] = item;
}

static void
best_push(Cand *best, Py_ssize_t *m, Cand item)
{
    Py_ssize_t i = (*m)++;
    while (i > 0 && cand_before(&best[(i - 1) / 2], &item)) {
        best[i] = best[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    best[i] = item;
}

/* quadtree.nearest: best first from the root, by the distance of each node's box; an entry
 * gets in when it beats the k-th so far (nearer, or as near with a smaller id) and where(id)
 * holds. Returns the ids, or NULL with an error (where's included). */
static PyObject *
nearest_ids(Tree *t, double x, double y, Py_ssize_t k, PyObject *where, double limit)
{
    Cand *best = PyMem_Malloc((size_t)k * sizeof(Cand));
    Open *heap = NULL;
    Py_ssize_t m = 0, n_open = 0, cap_open = 0;
    PyObject *result = NULL;
    if (best == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    double r = limit;     /* an entry must be within r ... */
    int full = 0;         /* ... and, once there are k, beat the worst of them */
    if (open_push(&heap, &n_open, &cap_open, (Open){0.0, t->root, 0}) < 0) {
        goto done;
    }
    while (n_open > 0) {
        Open o = open_pop(heap, &n_open);
        if (too_far(o.lb, r)) {
            break; /* every node still waiting is as far or farther */
        }
        const Node *nd = &t->nodes[o.node];
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            const double *b = &t->box[4 * (size_t)s];
            double dx = gap(x, b[0], b[2]), dy = gap(y, b[1], b[3]);
            if (dx > r || dy > r) {
                continue;
            }
            Cand c = {py_hypot(dx, dy), t->ids[s]};
            if (full ? !cand_before(&c, &best[0]) : !(c.d <= r)) {
                continue;
            }
            if (where != NULL) {
                PyObject *id = PyLong_FromLongLong(c.id);
                PyObject *verdict = id == NULL ? NULL : PyObject_CallOneArg(where, id);
                Py_XDECREF(id);
                int yes = verdict == NULL ? -1 : PyObject_IsTrue(verdict);
                Py_XDECREF(verdict);
                if (yes < 0) {
                    goto done;
                }
                if (!yes) {
                    continue;
                }
            }
            if (!full) {
                best_push(best, &m, c);
                full = m == k;
            }
            else {
                best[0] = c;
                best_sift_down(best, m);
            }
            if (full) {
                r = best[0].d;
            }
        }
        if (nd->kids[0] == NO_NODE) {
            continue;
        }
        for (int q = 0; q < 4; q++) {
            const Node *c = &t->nodes[nd->kids[q]];
            if (c->count == 0) {
                continue;
            }
            double dx = gap(x, c->x0, c->x1), dy = gap(y, c->y0, c->y1);
            if (dx > r || dy > r) {
                continue;
            }
            double lb = py_hypot(dx, dy);
            if (!too_far(lb, r) && open_push(&heap, &n_open, &cap_open, (Open){lb, nd->kids[q], 0}) < 0) {
                goto done;
            }
        }
    }
    qsort(best, (size_t)m, sizeof(Cand), cmp_cand);
    result = PyList_New(m);
    for (Py_ssize_t i = 0; result != NULL && i < m; i++) {
        PyObject *id = PyLong_FromLongLong(best[i].id);
        if (id == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, id);
    }
done:
    PyMem_Free(best);
    PyMem_Free(heap);
    return result;
}

static const Params nearest_params = {"nearest", 3, 2, 5, {"x", "y", "k", "where", "max_distance"}};

static PyObject *
Tree_nearest(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    double x, y, limit = INFINITY;
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&nearest_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0 || point_any(a[0], a[1], &x, &y) < 0) {
        return NULL;
    }
    PyObject *pk = a[2], *where = a[3] == NULL ? Py_None : a[3], *pmax = a[4]; /* borrowed */
    Py_ssize_t k = 1;
    if (pk != NULL) {
        int ok = PyLong_Check(pk) && !PyBool_Check(pk);
        if (ok) {
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(pk, &overflow);
            if (v == -1 && PyErr_Occurred()) {
                return NULL;
            }
            ok = overflow > 0 || (overflow == 0 && v >= 1);
            k = overflow > 0 || v > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)v;
        }
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "k must be an int >= 1, got %R", pk);
            return NULL;
        }
    }
    if (pmax != NULL && float_arg(pmax, "max_distance", &limit) < 0) {
        return NULL;
    }
    if (!(limit >= 0.0)) { /* NaN fails too */
        PyErr_Format(PyExc_ValueError, "max_distance must be >= 0, got %R", pmax);
        return NULL;
    }
    if (t->root == NO_NODE || t->n == 0) {
        return PyList_New(0);
    }
    if (k > t->n) {
        k = t->n;
    }
    int watch = where != Py_None; /* where= may read the tree, never change it under the search */
    t->busy += watch;
    PyObject *result = nearest_ids(t, x, y, k, watch ? where : NULL, limit);
    if (watch) {
        busy_end(t);
    }
    return result;
}

/* A cast (quadtree._all_hits and _first_hit): a segment (raycast) or a box moving by
 * (dx, dy) (cast_box), and the one test both searches make of an entry's box or a node's
 * bounds. The test is monotonic: an entry inside a node's bounds gives a later or equal t
 * (each bound is one rounded subtraction and one rounded division, both monotonic), so a node
 * it misses holds nothing it hits, and the t of a node's bounds is a lower bound of its
 * subtree's. */
typedef struct {
    int moving_box; /* 1: a (box) moving by (dx, dy); 0: the segment (x0, y0) -> (x1, y1) */
    double a[4];    /* the moving box, or x0, y0, x1, y1 */
    double dx, dy;
} Cast;

static inline int
cast_hit(const Cast *c, const double b[4], double *t)
{
    if (c->moving_box) {
        return sweep_time(c->a, c->dx, c->dy, b, t);
    }
    return segment_entry(b[0], b[1], b[2], b[3], c->a[0], c->a[1], c->a[2], c->a[3], t);
}

static inline int
cast_hit_node(const Cast *c, const Node *nd, double *t)
{
    const double b[4] = {nd->x0, nd->y0, nd->x1, nd->y1};
    return cast_hit(c, b, t);
}

/* A hit, ordered by its fraction, then by id. */
typedef struct {
    double t;
    int64_t id;
} Hit;

static int
cmp_hit(const void *pa, const void *pb)
{
    const Hit *a = pa, *b = pb;
    if (a->t != b->t) {
        return a->t < b->t ? -1 : 1;
    }
    return (a->id > b->id) - (a->id < b->id);
}

/* The tuple (id, t). New reference. */
static inline PyObject *
hit_tuple(Hit h)
{
    return Py_BuildValue("(Ld)", (long long)h.id, h.t);
}

/* quadtree._all_hits: [(id, t)] for every entry the cast touches, sorted by t then id; the
 * root always read (it may hold boxes beyond its bounds), a child's subtree only if the cast
 * touches its bounds. New reference, or NULL. */
static PyObject *
cast_all(const Tree *t, const Cast *c)
{
    if (t->root == NO_NODE) {
        return PyList_New(0);
    }
    double frac;
    Hit *hits = NULL;
    Py_ssize_t n_hits = 0, cap_hits = 0;
    PyObject *result = NULL;
    NodeStack stack;
    ns_init(&stack);
    int err = ns_push(&stack, t->root);
    while (err == 0 && stack.n > 0) {
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            if (!cast_hit(c, &t->box[4 * (size_t)s], &frac)) {
                continue;
            }
            if (n_hits == cap_hits) {
                Py_ssize_t cap = cap_hits < 16 ? 16 : cap_hits * 2;
                Hit *p = PyMem_Realloc(hits, (size_t)cap * sizeof(Hit));
                if (p == NULL) {
                    PyErr_NoMemory();
                    err = -1;
                    break;
                }
                hits = p;
                cap_hits = cap;
            }
            hits[n_hits++] = (Hit){frac, t->ids[s]};
        }
        if (err == 0 && nd->kids[0] != NO_NODE) {
            for (int q = 0; q < 4 && err == 0; q++) {
                const Node *child = &t->nodes[nd->kids[q]];
                if (child->count > 0 && cast_hit_node(c, child, &frac)) {
                    err = ns_push(&stack, nd->kids[q]);
                }
            }
        }
    }
    if (err == 0) {
        if (n_hits > 1) {
            qsort(hits, (size_t)n_hits, sizeof(Hit), cmp_hit);
        }
        result = PyList_New(n_hits);
        for (Py_ssize_t i = 0; result != NULL && i < n_hits; i++) {
            PyObject *pair = hit_tuple(hits[i]);
            if (pair == NULL) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(result, i, pair); /* steals */
        }
    }
    ns_free(&stack);
    PyMem_Free(hits);
    return result;
}

/* Whether where(id) holds: 1 or 0, or -1 with where's error (or a MemoryError) set. */
static int
where_holds(PyObject *where, int64_t id)
{
    PyObject *key = PyLong_FromLongLong(id);
    if (key == NULL) {
        return -1;
    }
    PyObject *verdict = PyObject_CallOneArg(where, key); /* new reference, or NULL */
    Py_DECREF(key);
    if (verdict == NULL) {
        return -1;
    }
    int yes = PyObject_IsTrue(verdict);
    Py_DECREF(verdict);
    return yes;
}

/* Fold the hits among slots[0 .. n) into best (the least (t, id)), each one that would
 * beat it first put to where(id) if where is not NULL (so where is asked only about what
 * would be the answer). 0, or -1 with where's error set (best then is what it was, or a
 * hit accepted before the error: the caller drops it). */
static inline int
first_among(const Tree *t, const Cast *c, const int32_t *slots, int32_t n, PyObject *where,
            Hit *best)
{
    double frac;
    for (int32_t i = 0; i < n; i++) {
        int32_t s = slots[i];
        if (cast_hit(c, &t->box[4 * (size_t)s], &frac)
            && (frac < best->t || (frac == best->t && t->ids[s] < best->id))) {
            if (where != NULL) {
                int yes = where_holds(where, t->ids[s]);
                if (yes <= 0) {
                    if (yes < 0) {
                        return -1;
                    }
                    continue;
                }
            }
            *best = (Hit){frac, t->ids[s]};
        }
    }
    return 0;
}

/* quadtree._first_hit: the least (t, id) the cast touches (among the ids where(id) accepts,
 * if where is not NULL), as (id, t), or None. Best first
 * by the t at which the cast enters a bounding box, a lower bound of every t inside it: the
 * subtrees by their node's bounds (the root at 0: it may hold boxes beyond them), and the own
 * entries of a node of SNAP_MIN or more as the two groups of its snapshot, by each group's
 * box (near the root they grow with the world's side and hug the split lines: read only if
 * the cast gets to them first; quadtree._first_hit has the counts). A box whose t is strictly greater than the best found is
 * never opened, and the search ends at the first the heap gives (an equal t is opened: a
 * smaller id may wait there). The order among boxes of equal t may differ from the
 * reference's heap; the answer, a minimum over every box that can hold it, does not (nor,
 * for a where that answers alike whenever asked, the accepted minimum: where is asked only
 * about an entry that beats the best accepted so far, so the bounds hold as they do without
 * it). The caller holds t->busy up while where may run: where may read the tree (which may
 * build snapshots of other nodes, never free a fresh one) but not change it, so the node
 * pointers, the entry lists and the snapshot read here stay valid across its calls. New
 * reference, or NULL (where's error included). */
static PyObject *
cast_first(Tree *t, const Cast *c, PyObject *where)
{
    if (t->root == NO_NODE) {
        Py_RETURN_NONE;
    }
    double frac;
    Hit best = {INFINITY, 0}; /* every t is in [0, 1]: the first hit beats it */
    Open *heap = NULL;
    Py_ssize_t n_heap = 0, cap_heap = 0;
    int err = open_push(&heap, &n_heap, &cap_heap, (Open){0.0, t->root, 0});
    while (err == 0 && n_heap > 0) {
        Open top = open_pop(heap, &n_heap);
        if (top.lb > best.t) {
            break; /* everything left is entered after the best hit */
        }
        const Node *nd = &t->nodes[top.node];
        if (top.group != 0) {
            /* Fresh since it was pushed (nothing changed the tree), so no allocation; were
             * it NULL, the node's own entries are read one by one, both groups alike. */
            const Snap *sn = snap_get(t, top.node);
            if (sn == NULL) {
                for (int32_t s = nd->head; s != NO_SLOT && err == 0; s = t->next[s]) {
                    err = first_among(t, c, &s, 1, where, &best);
                }
            }
            else if (top.group == 1) {
                err = first_among(t, c, snap_slots(sn), sn->n_across, where, &best);
            }
            else {
                err = first_among(t, c, snap_slots(sn) + sn->n_across, sn->n - sn->n_across,
                                  where, &best);
            }
            continue;
        }
        /* Only an internal node's snapshot is kept fresh (a leaf's moves mark nothing). */
        const Snap *sn = NULL;
        if (nd->n >= SNAP_MIN && nd->kids[0] != NO_NODE) {
            sn = snap_get(t, top.node);
        }
        if (sn == NULL) {
            for (int32_t s = nd->head; s != NO_SLOT && err == 0; s = t->next[s]) {
                err = first_among(t, c, &s, 1, where, &best);
            }
        }
        else {
            if (sn->n_across > 0 && cast_hit(c, sn->across, &frac) && frac <= best.t) {
                err = open_push(&heap, &n_heap, &cap_heap, (Open){frac, top.node, 1});
            }
            if (err == 0 && sn->n > sn->n_across && cast_hit(c, sn->along, &frac)
                && frac <= best.t) {
                err = open_push(&heap, &n_heap, &cap_heap, (Open){frac, top.node, 2});
            }
        }
        if (err == 0 && nd->kids[0] != NO_NODE) {
            for (int q = 0; q < 4 && err == 0; q++) {
                const Node *child = &t->nodes[nd->kids[q]];
                if (child->count > 0 && cast_hit_node(c, child, &frac) && frac <= best.t) {
                    err = open_push(&heap, &n_heap, &cap_heap, (Open){frac, nd->kids[q], 0});
                }
            }
        }
    }
    PyMem_Free(heap);
    if (err < 0) {
        return NULL;
    }
    if (best.t == INFINITY) {
        Py_RETURN_NONE;
    }
    return hit_tuple(best);
}

static const Params raycast_params = {"raycast", 4, 4, 4, {"x0", "y0", "x1", "y1"}};
static const Params raycast_first_params = {"raycast_first", 4, 4, 5,
                                            {"x0", "y0", "x1", "y1", "where"}};
static const Params cast_box_params = {"cast_box", 3, 3, 3, {"box", "dx", "dy"}};
static const Params cast_box_first_params = {"cast_box_first", 3, 3, 4, {"box", "dx", "dy", "where"}};

/* The arguments of raycast and raycast_first (bound by p): two points, as quadtree._point
 * reads them, and *where (borrowed; NULL for None or none given) for p's where=. 0, or -1
 * and the reference's error. */
static int
ray_args(Tree *t, const Params *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
         Cast *c, PyObject **where)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(p, args, nargs, kwnames, buf);
    c->moving_box = 0;
    c->dx = c->dy = 0.0;
    if (a == NULL || guard(t, 0) < 0 || point_any(a[0], a[1], &c->a[0], &c->a[1]) < 0
        || point_any(a[2], a[3], &c->a[2], &c->a[3]) < 0) {
        return -1;
    }
    *where = p->n > 4 && a[4] != Py_None ? a[4] : NULL;
    return 0;
}

/* The arguments of cast_box and cast_box_first (bound by p): a box, as quadtree._coords
 * reads it, then the motion, as geometry.motion_floats reads it, and *where as ray_args
 * gives it. */
static int
box_cast_args(Tree *t, const Params *p, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames, Cast *c, PyObject **where)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(p, args, nargs, kwnames, buf);
    c->moving_box = 1;
    if (a == NULL || guard(t, 0) < 0 || box_any(a[0], NULL, c->a) < 0
        || motion_any(a[1], a[2], &c->dx, &c->dy) < 0) {
        return -1;
    }
    *where = p->n > 3 && a[3] != Py_None ? a[3] : NULL;
    return 0;
}

static PyObject *
Tree_raycast(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Cast c;
    PyObject *where;
    return ray_args(t, &raycast_params, args, nargs, kwnames, &c, &where) < 0 ? NULL
                                                                              : cast_all(t, &c);
}

/* cast_first with where (if not NULL) allowed to run: busy up, so that it may read the tree
 * but not change it, as nearest's where. */
static PyObject *
cast_first_where(Tree *t, const Cast *c, PyObject *where)
{
    if (where == NULL) {
        return cast_first(t, c, NULL);
    }
    t->busy++;
    PyObject *result = cast_first(t, c, where);
    busy_end(t);
    return result;
}

static PyObject *
Tree_raycast_first(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Cast c;
    PyObject *where;
    if (ray_args(t, &raycast_first_params, args, nargs, kwnames, &c, &where) < 0) {
        return NULL;
    }
    return cast_first_where(t, &c, where);
}

static PyObject *
Tree_cast_box(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Cast c;
    PyObject *where;
    return box_cast_args(t, &cast_box_params, args, nargs, kwnames, &c, &where) < 0
               ? NULL
               : cast_all(t, &c);
}

static PyObject *
Tree_cast_box_first(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Cast c;
    PyObject *where;
    if (box_cast_args(t, &cast_box_first_params, args, nargs, kwnames, &c, &where) < 0) {
        return NULL;
    }
    return cast_first_where(t, &c, where);
}

/* ------------------------------------------------------------------------------------------
 * Straddler snapshots (see Snap and SnapRef)
 * ---------------------------------------------------------------------------------------- */


static inline int
key_less(const KeySlot *x, const KeySlot *y)
{
    return x->key < y->key || (x->key == y->key && x->slot < y->slot);
}

static inline int32_t *
snap_slots(const Snap *sn)
{
    return (int32_t *)(sn->reach + sn->cap);
}

static inline size_t
snap_size(int32_t cap)
{
    return sizeof(Snap) + (size_t)cap * (sizeof(double) + sizeof(int32_t));
}

/* Fill *psn (reallocated if too small) with what node's own entries give now. 0, or -1 if
 * memory ran out (no exception set: a snapshot is an optimisation, the caller reads the
 * entries one by one instead; *psn is then still a valid block or NULL). */
static int
snap_fill(const Tree *t, int32_t node, Snap **psn)
{
    const Node *nd = &t->nodes[node];
    int32_t n = nd->n;
    Snap *sn = *psn;
    if (sn == NULL || sn->cap < n) {
        int32_t cap = n + n / 8; /* room to grow a little before the next realloc */
        sn = PyMem_Realloc(sn, snap_size(cap));
        if (sn == NULL) {
            return -1;
        }
        sn->cap = cap;
        *psn = sn;
    }
    KeySlot *ks = PyMem_Malloc((size_t)n * sizeof(KeySlot));
    if (ks == NULL) {
        return -1;
    }
    double cx = nd->cx;
    int32_t a = 0, g = n;
    for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
        const double *b = &t->box[4 * (size_t)s];
        if (b[0] <= cx && cx <= b[2]) {
            ks[a++] = (KeySlot){b[1], s};
        }
        else {
            ks[--g] = (KeySlot){b[0], s};
        }
    }
    /* a == g: each entry in one group */
    if (sort_keys(ks, a) < 0 || sort_keys(ks + a, n - a) < 0) {
        PyErr_Clear(); /* the MemoryError of a sort's buffer: read entry by entry instead */
        PyMem_Free(ks);
        return -1;
    }
    int32_t *slot = snap_slots(sn);
    sn->n = n;
    sn->n_across = a;
    for (int grp = 0; grp < 2; grp++) {
        int32_t lo = grp == 0 ? 0 : a, hi = grp == 0 ? a : n;
        int hi_axis = grp == 0 ? 3 : 2; /* the far edge along the sort key's axis */
        double *bb = grp == 0 ? sn->across : sn->along;
        bb[0] = bb[1] = INFINITY;
        bb[2] = bb[3] = -INFINITY;
        double reach = -INFINITY;
        for (int32_t i = lo; i < hi; i++) {
            const double *b = &t->box[4 * (size_t)ks[i].slot];
            slot[i] = ks[i].slot;
            reach = py_max(reach, b[hi_axis]);
            sn->reach[i] = reach;
            bb[0] = py_min(bb[0], b[0]);
            bb[1] = py_min(bb[1], b[1]);
            bb[2] = py_max(bb[2], b[2]);
            bb[3] = py_max(bb[3], b[3]);
        }
    }
    PyMem_Free(ks);
    return 0;
}

/* Room in the snapshot table for one more bucket: when half full, rebuilt at three times the
 * fresh snapshots or more (a power of two, at least 16), the stale ones freed. 0, or -1 if
 * memory ran out. */
static int
snaps_reserve(Tree *t)
{
    if ((t->snaps_used + 1) * 2 <= t->snaps_size) {
        return 0;
    }
    int32_t fresh = 0;
    for (int32_t i = 0; i < t->snaps_size; i++) {
        fresh += t->snaps[i].node != NO_NODE && t->snaps[i].fresh;
    }
    int32_t size = 16;
    while (size < 3 * (fresh + 1)) {
        size *= 2;
    }
    SnapRef *table = PyMem_Malloc((size_t)size * sizeof(SnapRef));
    if (table == NULL) {
        return -1;
    }
    for (int32_t i = 0; i < size; i++) {
        table[i] = (SnapRef){NO_NODE, 0, NULL};
    }
    SnapRef *old = t->snaps;
    int32_t old_size = t->snaps_size;
    t->snaps = table;
    t->snaps_size = size;
    t->snaps_used = 0;
    t->snaps_bytes = (size_t)size * sizeof(SnapRef);
    for (int32_t i = 0; i < old_size; i++) {
        SnapRef r = old[i];
        if (r.node != NO_NODE && r.fresh) {
            uint32_t mask = (uint32_t)size - 1;
            uint32_t j = ((uint32_t)r.node * 2654435761u) & mask;
            while (table[j].node != NO_NODE) {
                j = (j + 1) & mask;
            }
            table[j] = r;
            t->snaps_used++;
            t->snaps_bytes += snap_size(r.snap->cap);
        }
        else {
            PyMem_Free(r.snap);
        }
    }
    PyMem_Free(old);
    return 0;
}

/* The fresh snapshot of internal node `node` (SNAP_MIN own entries or more), built if it is
 * missing or stale; NULL if memory ran out (no exception: read the entries one by one). The
 * pointer holds until the next call: a call may move the table. */
static const Snap *
snap_get(Tree *t, int32_t node)
{
    SnapRef *r = t->snaps_size > 0 ? snap_find(t, node) : NULL;
    if (r != NULL && r->fresh) {
        return r->snap;
    }
    if (r == NULL) {
        if (snaps_reserve(t) < 0) {
            return NULL;
        }
        uint32_t mask = (uint32_t)t->snaps_size - 1;
        uint32_t i = ((uint32_t)node * 2654435761u) & mask;
        while (t->snaps[i].node != NO_NODE) {
            i = (i + 1) & mask;
        }
        r = &t->snaps[i];
        *r = (SnapRef){node, 0, NULL};
        t->snaps_used++;
    }
    size_t before = r->snap == NULL ? 0 : snap_size(r->snap->cap);
    int filled = snap_fill(t, node, &r->snap);
    t->snaps_bytes += (r->snap == NULL ? 0 : snap_size(r->snap->cap)) - before;
    if (filled < 0) {
        return NULL;
    }
    r->fresh = 1;
    return r->snap;
}

/* Push the id of each of node's own entries whose box intersects q, slot `skip` aside,
 * reading them one by one. Inlined: most nodes a search reads hold a few entries. */
static inline int
own_partners(const Tree *t, const Node *nd, const double q[4], int32_t skip, I64Buf *out)
{
    for (int32_t o = nd->head; o != NO_SLOT; o = t->next[o]) {
        if (o != skip && overlaps(&t->box[4 * (size_t)o], q) && i64_push(out, t->ids[o]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* own_partners() for an internal node of SNAP_MIN entries or more, through its snapshot: a
 * far node in a few comparisons, a near one in a bisected window. */
static int
snap_partners(Tree *t, int32_t node, const double q[4], int32_t skip, I64Buf *out)
{
    const Snap *sn = snap_get(t, node);
    if (sn == NULL) {
        return own_partners(t, &t->nodes[node], q, skip, out);
    }
    const int32_t *slot = snap_slots(sn);
    for (int grp = 0; grp < 2; grp++) {
        if (!overlaps(grp == 0 ? sn->across : sn->along, q)) {
            continue; /* most ancestors of a small box: its straddlers hug their lines */
        }
        /* Sorted on axis k (min_y across the vertical line, min_x along it); reach says how
         * far each prefix extends on that axis, so the window starts at the first entry
         * whose prefix reaches q, and ends at the first that starts beyond it. */
        int k = grp == 0 ? 1 : 0;
        int32_t lo = grp == 0 ? 0 : sn->n_across, hi = grp == 0 ? sn->n_across : sn->n;
        int32_t end = hi;
        while (lo < hi) {
            int32_t mid = lo + (hi - lo) / 2;
            if (sn->reach[mid] < q[k]) {
                lo = mid + 1;
            }
            else {
                hi = mid;
            }
        }
        for (int32_t i = lo; i < end; i++) {
            int32_t o = slot[i];
            const double *b = &t->box[4 * (size_t)o];
            if (b[k] > q[k + 2]) {
                break;
            }
            if (o != skip && overlaps(b, q) && i64_push(out, t->ids[o]) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* Every other id whose box intersects the box of slot s (quadtree._intersecting): its
 * ancestors' own entries, then its node's subtree, pruned by bounds. An ancestor of many
 * entries is read through its snapshot, so the cost follows what lies near the mover, not
 * how many boxes straddle its ancestors' split lines (bench/results/, decisions.md). */
static int
partners(Tree *t, int32_t s, I64Buf *out)
{
    double q[4];
    memcpy(q, &t->box[4 * (size_t)s], sizeof(q));
    int32_t node = t->node_of[s];
    for (int32_t p = t->nodes[node].parent; p != NO_NODE; p = t->nodes[p].parent) {
        const Node *pn = &t->nodes[p];
        if ((pn->n >= SNAP_MIN ? snap_partners(t, p, q, NO_SLOT, out)
                               : own_partners(t, pn, q, NO_SLOT, out)) < 0) {
            return -1;
        }
    }
    NodeStack stack;
    ns_init(&stack);
    int err = ns_push(&stack, node);
    while (err == 0 && stack.n > 0) {
        int32_t n = stack.p[--stack.n];
        const Node *nd = &t->nodes[n];
        err = nd->n >= SNAP_MIN && nd->kids[0] != NO_NODE ? snap_partners(t, n, q, s, out)
                                                          : own_partners(t, nd, q, s, out);
        if (nd->kids[0] != NO_NODE) {
            for (int k = 0; k < 4 && err == 0; k++) {
                const Node *c = &t->nodes[nd->kids[k]];
                if (c->count > 0 && node_overlaps(c, q)) {
                    err = ns_push(&stack, nd->kids[k]);
                }
            }
        }
    }
    ns_free(&stack);
    return err;
}

static PyObject *
Tree_query_entity(Tree *t, PyObject *entity)
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    int32_t s = lookup_slot(t, entity);
    if (s == -2) {
        return NULL;
    }
    if (s == NO_SLOT) {
        return raise_missing(entity);
    }
    I64Buf out = {0};
    return ids_result(&out, partners(t, s, &out));
}

/* ------------------------------------------------------------------------------------------
 * Pairs
 * ---------------------------------------------------------------------------------------- */

/* A stable merge sort of n items of type T, ordered by LESS(const T *, const T *): runs of 16
 * by insertion, then merged bottom-up; O(n log n) whatever the input. Inlined comparisons:
 * libc's qsort through a function pointer took a sixth of the pair search at N = 10,000.
 * 0, or -1 and MemoryError. */
#define DEFINE_SORT(NAME, T, LESS)                                                           \
    static int NAME(T *a, Py_ssize_t n)                                                      \
    {                                                                                        \
        const Py_ssize_t run = 16;                                                           \
        for (Py_ssize_t lo = 0; lo < n; lo += run) {                                         \
            Py_ssize_t hi = lo + run < n ? lo + run : n;                                     \
            for (Py_ssize_t i = lo + 1; i < hi; i++) {                                       \
                T item = a[i];                                                               \
                Py_ssize_t j = i;                                                            \
                while (j > lo && LESS(&item, &a[j - 1])) {                                   \
                    a[j] = a[j - 1];                                                         \
                    j--;                                                                     \
                }                                                                            \
                a[j] = item;                                                                 \
            }                                                                                \
        }                                                                                    \
        if (n <= run) {                                                                      \
            return 0;                                                                        \
        }                                                                                    \
        T *tmp = PyMem_Malloc((size_t)n * sizeof(T));                                        \
        if (tmp == NULL) {                                                                   \
            PyErr_NoMemory();                                                                \
            return -1;                                                                       \
        }                                                                                    \
        T *src = a, *dst = tmp;                                                              \
        for (Py_ssize_t width = run; width < n; width *= 2) {                                \
            for (Py_ssize_t lo = 0; lo < n; lo += 2 * width) {                               \
                Py_ssize_t mid = lo + width < n ? lo + width : n;                            \
                Py_ssize_t hi = lo + 2 * width < n ? lo + 2 * width : n;                     \
                Py_ssize_t i = lo, j = mid, k = lo;                                          \
                while (i < mid && j < hi) {                                                  \
                    dst[k++] = LESS(&src[j], &src[i]) ? src[j++] : src[i++];                 \
                }                                                                            \
                while (i < mid) {                                                            \
                    dst[k++] = src[i++];                                                     \
                }                                                                            \
                while (j < hi) {                                                             \
                    dst[k++] = src[j++];                                                     \
                }                                                                            \
            }                                                                                \
            T *swap = src;                                                                   \
            src = dst;                                                                       \
            dst = swap;                                                                      \
        }                                                                                    \
        if (src != a) {                                                                      \
            memcpy(a, src, (size_t)n * sizeof(T));                                           \
        }                                                                                    \
        PyMem_Free(tmp);                                                                     \
        return 0;                                                                            \
    }

/* A pair of ids, a < b; pairs sort as Python sorts the tuples. */
typedef struct {
    int64_t a, b;
} IdPair;

static inline int
pair_less(const IdPair *x, const IdPair *y)
{
    return x->a < y->a || (x->a == y->a && x->b < y->b);
}

DEFINE_SORT(merge_sort_pairs, IdPair, pair_less)

/* A sort of n items of type T by LESS whose int64 KEY(item) orders them first (LESS breaks
 * its ties): dealt into about n/2 buckets by the high bits of the key (key - min key,
 * shifted), then each bucket sorted by insertion, or by the merge sort SMALL when one holds
 * more than 16 (and for n <= 64). Ids spread over the ids in use, so a bucket holds two or
 * three: O(n) where the merge sort alone is O(n log n), a third of its cost for a frame's
 * pairs (bench/results/, decisions.md). The insertion reads the bucket from tmp and writes
 * a, so no copy back (callgrind counts a memcpy byte by byte). 0, or -1 and MemoryError. */
#define DEFINE_BUCKET_SORT(NAME, T, KEY, LESS, SMALL)                                        \
    static int NAME(T *a, Py_ssize_t n)                                                      \
    {                                                                                        \
        if (n <= 64) {                                                                       \
            return SMALL(a, n);                                                              \
        }                                                                                    \
        uint64_t lo = (uint64_t)KEY(a[0]) ^ ((uint64_t)1 << 63), hi = lo; /* unsigned */     \
        for (Py_ssize_t i = 1; i < n; i++) {                                                 \
            uint64_t key = (uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63);                        \
            lo = key < lo ? key : lo;                                                        \
            hi = key > hi ? key : hi;                                                        \
        }                                                                                    \
        uint64_t want = 1;                                                                   \
        while (want < (uint64_t)n / 2 && want < ((uint64_t)1 << 24)) {                       \
            want <<= 1;                                                                      \
        }                                                                                    \
        int shift = 0;                                                                       \
        while (((hi - lo) >> shift) >= want) {                                               \
            shift++;                                                                         \
        }                                                                                    \
        Py_ssize_t nb = (Py_ssize_t)((hi - lo) >> shift) + 1, i;                             \
        T *tmp = PyMem_Malloc((size_t)n * sizeof(T));                                        \
        Py_ssize_t *at = PyMem_Calloc((size_t)nb + 1, sizeof(Py_ssize_t));                   \
        if (tmp == NULL || at == NULL) {                                                     \
            PyMem_Free(tmp);                                                                 \
            PyMem_Free(at);                                                                  \
            PyErr_NoMemory();                                                                \
            return -1;                                                                       \
        }                                                                                    \
        for (i = 0; i < n; i++) {                                                            \
            at[(Py_ssize_t)((((uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63)) - lo) >> shift) + 1]++; \
        }                                                                                    \
        for (Py_ssize_t b = 1; b <= nb; b++) {                                               \
            at[b] += at[b - 1];                                                              \
        }                                                                                    \
        for (i = 0; i < n; i++) { /* at[b] ends as bucket b's end */                         \
            tmp[at[(Py_ssize_t)((((uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63)) - lo) >> shift)]++] \
                = a[i];                                                                      \
        }                                                                                    \
        int r = 0;                                                                           \
        for (Py_ssize_t b = 0, first = 0; b < nb && r == 0; first = at[b++]) {               \
            Py_ssize_t end = at[b];                                                          \
            if (end - first > 16) {                                                          \
                memcpy(a + first, tmp + first, (size_t)(end - first) * sizeof(T));           \
                r = SMALL(a + first, end - first);                                           \
                continue;                                                                    \
            }                                                                                \
            for (i = first; i < end; i++) { /* insertion from tmp back into a */             \
                T item = tmp[i];                                                             \
                Py_ssize_t j = i;                                                            \
                while (j > first && LESS(&item, &a[j - 1])) {                                \
                    a[j] = a[j - 1];                                                         \
                    j--;                                                                     \
                }                                                                            \
                a[j] = item;                                                                 \
            }                                                                                \
        }                                                                                    \
        PyMem_Free(tmp);                                                                     \
        PyMem_Free(at);                                                                      \
        return r;                                                                            \
    }

/* The pairs sorted as Python sorts the tuples (they are distinct, so no question of
 * stability), by the first id's bucket. */
#define PAIR_KEY(pair) ((pair).a)
DEFINE_BUCKET_SORT(sort_pairs, IdPair, PAIR_KEY, pair_less, merge_sort_pairs)

static inline int
emit(I64Buf *out, int64_t a, int64_t b)
{
    if (out->n + 2 > out->cap && i64_reserve(out, 2) < 0) {
        return -1;
    }
    out->p[out->n++] = a < b ? a : b;
    out->p[out->n++] = a < b ? b : a;
    return 0;
}

static inline int
own_less(const OwnRec *x, const OwnRec *y)
{
    return x->x0 < y->x0;
}

DEFINE_SORT(sort_own, OwnRec, own_less)

DEFINE_SORT(sort_keys, KeySlot, key_less)

static inline int
id_less(const int64_t *x, const int64_t *y)
{
    return *x < *y;
}

/* Ids in ascending order (distinct: an answer's): the buckets of sort_pairs, with insertion
 * alone for up to 64 of them (most queries), which needs no memory. */
static int
insertion_sort_ids(int64_t *a, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t item = a[i];
        Py_ssize_t j = i;
        while (j > 0 && item < a[j - 1]) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = item;
    }
    return 0;
}

DEFINE_SORT(merge_sort_ids, int64_t, id_less)

static int
small_sort_ids(int64_t *a, Py_ssize_t n)
{
    return n <= 64 ? insertion_sort_ids(a, n) : merge_sort_ids(a, n);
}

#define ID_KEY(id) (id)
DEFINE_BUCKET_SORT(bucket_sort_ids, int64_t, ID_KEY, id_less, small_sort_ids)

#if defined(__GNUC__) || defined(__clang__)
#define LOWEST_BIT(word) __builtin_ctzll(word)
#else
static inline int
lowest_bit(uint64_t word)
{
    int bit = 0;
    while (!((word >> bit) & 1)) {
        bit++;
    }
    return bit;
}
#define LOWEST_BIT(word) lowest_bit(word)
#endif

/* Distinct ids in ascending order (an answer's): by insertion up to 64 of them; as bits of a
 * bitmap when they span fewer than 64 times their number (esper's ids are small and dense:
 * one pass to set, one to read back); else by bucket_sort_ids. 0, or -1 and MemoryError. */
static int
sort_ids(int64_t *a, Py_ssize_t n)
{
    if (n <= 64) {
        return insertion_sort_ids(a, n);
    }
    int64_t lo = a[0], hi = a[0];
    for (Py_ssize_t i = 1; i < n; i++) {
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
    }
    uint64_t span = (uint64_t)hi - (uint64_t)lo; /* as unsigned: no overflow */
    if (span / 64 >= (uint64_t)n) {
        return bucket_sort_ids(a, n);
    }
    size_t words = (size_t)(span / 64) + 1;
    uint64_t *bits = PyMem_Calloc(words, sizeof(uint64_t));
    if (bits == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t at = (uint64_t)a[i] - (uint64_t)lo;
        bits[at / 64] |= (uint64_t)1 << (at % 64);
    }
    Py_ssize_t k = 0;
    for (size_t w = 0; w < words; w++) {
        for (uint64_t word = bits[w]; word != 0; word &= word - 1) {
            int bit = LOWEST_BIT(word);
            a[k++] = (int64_t)((uint64_t)lo + 64 * (uint64_t)w + (uint64_t)bit);
        }
    }
    PyMem_Free(bits);
    return 0;
}

/* Every intersecting pair (a < b), each once, unsorted: quadtree.find_all_intersections's
 * walk. One top-down pass carries down the ancestors' records that overlap each node; a node
 * sweeps its own records (sorted by min_x) against each other and, in one merge-like pass,
 * against the inherited ones (which arrive sorted), so two inherited records, which met
 * higher up, are never compared. The children's inherited lists are dealt in min_x order
 * from the merge of the two, so they need no sort of their own.
 *
 * Each list (own, and every inherited one) ends in a sentinel of min_x +inf, which every
 * scan stops at, so the scans and merges test no index; and a node deals its children's
 * lists into room for the most each could hold (no + ni each), so no counting pass comes
 * first (a sixth of the search: bench/results/, decisions.md). */
static int
all_pairs(Tree *t, I64Buf *out)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    int r = -1;
    Scratch sc = t->scratch; /* taken: see Scratch */
    memset(&t->scratch, 0, sizeof(Scratch));
    Rec *arena = sc.arena;
    OwnRec *own = sc.own;
    SweepFrame *frames = sc.frames;
    Py_ssize_t arena_cap = sc.arena_cap, own_cap = sc.own_cap, nf = 0;
    if (sc.frames_cap < 64) {
        PyMem_Free(frames);
        sc.frames_cap = 64;
        frames = PyMem_Malloc((size_t)sc.frames_cap * sizeof(SweepFrame));
        if (frames == NULL) {
            sc.frames_cap = 0;
            PyErr_NoMemory();
            goto done;
        }
    }
    if (arena_cap < 256) {
        Rec *p = PyMem_Realloc(arena, 256 * sizeof(Rec));
        if (p == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        arena = p;
        arena_cap = 256;
    }
    arena[0].x0 = INFINITY; /* the root's inherited list: empty */
    frames[nf++] = (SweepFrame){t->root, 0, 0};
    while (nf > 0) {
        SweepFrame f = frames[--nf];
        Py_ssize_t top = f.off + f.len + 1; /* above: finished subtrees (and this sentinel) */
        const Node *nd = &t->nodes[f.node];
        Py_ssize_t no = nd->n, ni = f.len, i, j, k;
        if (no + 1 > own_cap) {
            Py_ssize_t cap = no < 64 ? 64 : no * 2;
            OwnRec *p = PyMem_Realloc(own, (size_t)cap * sizeof(OwnRec));
            if (p == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            own = p;
            own_cap = cap;
        }
        i = 0;
        int sorted = 1;
        double last_x0 = -INFINITY;
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            const double *b = &t->box[4 * (size_t)s];
            own[i++] = (OwnRec){b[0], b[1], b[2], b[3], t->ids[s], s};
            sorted &= last_x0 <= b[0];
            last_x0 = b[0];
        }
        if (!sorted) {
            if (sort_own(own, no) < 0) {
                goto done;
            }
            /* Keep the node's list in this order: entries move little from one frame to the
             * next, so the next search finds them sorted or nearly (the sort was 27% of the
             * search at N = 10,000; insertion sort on nearly sorted runs is linear). Not
             * while a where= predicate runs: a search it started may be walking the list. */
            if (t->busy == 0) {
                for (k = 0; k < no; k++) {
                    int32_t s = own[k].slot;
                    t->prev[s] = k > 0 ? own[k - 1].slot : NO_SLOT;
                    t->next[s] = k + 1 < no ? own[k + 1].slot : NO_SLOT;
                }
                t->nodes[f.node].head = own[0].slot;
            }
        }
        own[no].x0 = INFINITY; /* the sentinel: boxes are finite */
        const Rec *inh = arena + f.off;
        for (i = 0; i < no; i++) {
            const OwnRec *a = &own[i];
            for (k = i + 1; own[k].x0 <= a->x1; k++) {
                if (own[k].y0 <= a->y1 && a->y0 <= own[k].y1 && emit(out, a->id, own[k].id) < 0) {
                    goto done;
                }
            }
        }
        for (i = 0, j = 0; i < no && j < ni;) {
            if (own[i].x0 <= inh[j].x0) {
                const OwnRec *a = &own[i++];
                for (k = j; inh[k].x0 <= a->x1; k++) {
                    if (inh[k].y0 <= a->y1 && a->y0 <= inh[k].y1 && emit(out, a->id, inh[k].id) < 0) {
                        goto done;
                    }
                }
            }
            else {
                const Rec *b = &inh[j++];
                for (k = i; own[k].x0 <= b->x1; k++) {
                    if (own[k].y0 <= b->y1 && b->y0 <= own[k].y1 && emit(out, b->id, own[k].id) < 0) {
                        goto done;
                    }
                }
            }
        }
        if (nd->kids[0] == NO_NODE) {
            continue;
        }
        /* Every record here overlaps this node, so it overlaps a child exactly when it
         * reaches that child's side of both split lines. */
        double cx = nd->cx, cy = nd->cy;
        Py_ssize_t room = no + ni + 1; /* a child's list and its sentinel at most */
        Py_ssize_t need = top + 4 * room;
        if (need > arena_cap) {
            Py_ssize_t cap = arena_cap * 2;
            while (cap < need) {
                cap *= 2;
            }
            Rec *p = PyMem_Realloc(arena, (size_t)cap * sizeof(Rec));
            if (p == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            arena = p;
            arena_cap = cap;
            inh = arena + f.off;
        }
        Rec *at0 = arena + top, *at1 = at0 + room, *at2 = at1 + room, *at3 = at2 + room;
        Rec *const start[4] = {at0, at1, at2, at3};
        for (i = 0, j = 0, k = no + ni; k > 0; k--) {
            Rec merged;
            if (own[i].x0 <= inh[j].x0) { /* the sentinels end each side */
                const OwnRec *o = &own[i++];
                merged = (Rec){o->x0, o->y0, o->x1, o->y1, o->id};
            }
            else {
                merged = inh[j++];
            }
            int left = merged.x0 <= cx, right = merged.x1 >= cx;
            int low = merged.y0 <= cy, high = merged.y1 >= cy;
            if (left && low) {
                *at0++ = merged;
            }
            if (right && low) {
                *at1++ = merged;
            }
            if (left && high) {
                *at2++ = merged;
            }
            if (right && high) {
                *at3++ = merged;
            }
        }
        Rec *const end[4] = {at0, at1, at2, at3};
        if (nf + 4 > sc.frames_cap) {
            /* The stack holds at most three frames a level: it grows with the depth, not
             * with the nodes (room for every node was 4.8 bytes an entity at N = 100,000). */
            SweepFrame *p = PyMem_Realloc(frames, (size_t)sc.frames_cap * 2 * sizeof(SweepFrame));
            if (p == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            frames = p;
            sc.frames_cap *= 2;
        }
        for (int q = 0; q < 4; q++) {
            end[q]->x0 = INFINITY;
            if (t->nodes[nd->kids[q]].count > 0) {
                frames[nf++] = (SweepFrame){nd->kids[q], start[q] - arena, end[q] - start[q]};
            }
        }
    }
    r = 0;
done:
    sc.arena = arena;
    sc.own = own;
    sc.frames = frames;
    sc.arena_cap = arena_cap;
    sc.own_cap = own_cap;
    if (t->scratch.arena == NULL && t->scratch.own == NULL && t->scratch.frames == NULL) {
        t->scratch = sc; /* given back */
    }
    else {
        PyMem_Free(sc.arena);
        PyMem_Free(sc.own);
        PyMem_Free(sc.frames);
    }
    return r;
}

/* The tuple (a, b) of two ids: Py_BuildValue("(LL)") measured 1,300 instructions a pair
 * (it parses its format each time), this a third of that. New reference. */
static PyObject *
id_pair(int64_t a, int64_t b)
{
    PyObject *first = PyLong_FromLongLong((long long)a);
    PyObject *second = first == NULL ? NULL : PyLong_FromLongLong((long long)b);
    if (second == NULL) {
        Py_XDECREF(first);
        return NULL;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(first);
        Py_DECREF(second);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, first);
    PyTuple_SET_ITEM(pair, 1, second);
    return pair;
}

/* A sorted list of (a, b) tuples from pairs. New reference. */
static PyObject *
pair_list(const int64_t *p, Py_ssize_t n_pairs)
{
    PyObject *list = PyList_New(n_pairs);
    for (Py_ssize_t i = 0; list != NULL && i < n_pairs; i++) {
        PyObject *pair = id_pair(p[2 * i], p[2 * i + 1]);
        if (pair == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, pair);
    }
    return list;
}

static PyObject *
Tree_find_all_intersections(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    I64Buf out = {0};
    PyObject *result = NULL;
    if (all_pairs(t, &out) == 0 && sort_pairs((IdPair *)out.p, out.n / 2) == 0) {
        result = pair_list(out.p, out.n / 2);
    }
    PyMem_Free(out.p);
    return result;
}

/* quadtree._tree_state's hash: mix64 chained over the id and the IEEE bits of the four
 * coordinates (-0.0 as 0.0), the entries' hashes summed mod 2**64, the sum mixed with their
 * number. The same integers as the reference's, by construction. */
static PyObject *
Tree_state_hash(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    uint64_t total = 0;
    for (int32_t s = 0; s < t->n; s++) {
        uint64_t h = mix64((uint64_t)t->ids[s]);
        for (int i = 0; i < 4; i++) {
            double v = t->box[4 * (size_t)s + i] + 0.0; /* -0.0 + 0.0 is 0.0 */
            uint64_t bits;
            memcpy(&bits, &v, sizeof(bits));
            h = mix64(h ^ bits);
        }
        total += h;
    }
    return PyLong_FromUnsignedLongLong(mix64(total ^ (uint64_t)t->n));
}

static PyObject *
Tree_find_all_intersections_array(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    I64Buf out = {0};
    PyObject *result = NULL;
    if (all_pairs(t, &out) == 0 && sort_pairs((IdPair *)out.p, out.n / 2) == 0) {
        result = PyObject_CallFunction(array_array, "s", "q"); /* new: array('q') */
        if (result != NULL && out.n > 0) {
            PyObject *view = PyMemoryView_FromMemory((char *)out.p, out.n * (Py_ssize_t)sizeof(int64_t),
                                                     PyBUF_READ); /* new, over out.p */
            PyObject *done = view == NULL ? NULL : PyObject_CallMethod(result, "frombytes", "O", view);
            if (view != NULL) {
                PyObject *released = PyObject_CallMethod(view, "release", NULL);
                Py_XDECREF(released);
            }
            Py_XDECREF(view);
            if (done == NULL) {
                Py_CLEAR(result);
            }
            Py_XDECREF(done);
        }
    }
    PyMem_Free(out.p);
    return result;
}

static PyObject *
Tree_find_intersections_for(Tree *t, PyObject *entities)
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(entities); /* new */
    if (it == NULL) {
        return NULL;
    }
    I64Buf ids = {0}, out = {0};
    PyObject *item, *result = NULL;
    int busy = 1;
    t->busy++;
    while ((item = PyIter_Next(it)) != NULL) { /* new */
        int32_t s = lookup_slot(t, item);
        Py_DECREF(item);
        if (s == -2 || (s != NO_SLOT && i64_push(&ids, t->ids[s]) < 0)) {
            break;
        }
    }
    Py_DECREF(it); /* its finaliser, too, may run Python */
    if (PyErr_Occurred()) {
        goto done;
    }
    /* The ids, not the slots, were kept: the iterator was Python code. Busy until the pairs
     * are found, so a discard deferred meanwhile waits for them (the entity is in them). */
    for (Py_ssize_t i = 0; i < ids.n; i++) {
        int32_t s = find_slot(t, ids.p[i]);
        Py_ssize_t first = out.n;
        if (partners(t, s, &out) < 0) {
            goto done;
        }
        /* each partner b of a becomes the pair (min, max), in place */
        Py_ssize_t found = out.n - first;
        if (i64_reserve(&out, found) < 0) {
            goto done;
        }
        for (Py_ssize_t j = found - 1; j >= 0; j--) {
            int64_t a = ids.p[i], b = out.p[first + j];
            out.p[first + 2 * j] = a < b ? a : b;
            out.p[first + 2 * j + 1] = a < b ? b : a;
        }
        out.n = first + 2 * found;
    }
    if (sort_pairs((IdPair *)out.p, out.n / 2) < 0) {
        goto done;
    }
    Py_ssize_t unique = 0;
    for (Py_ssize_t i = 0; i < out.n / 2; i++) {
        if (unique == 0 || out.p[2 * i] != out.p[2 * unique - 2]
            || out.p[2 * i + 1] != out.p[2 * unique - 1]) {
            out.p[2 * unique] = out.p[2 * i];
            out.p[2 * unique + 1] = out.p[2 * i + 1];
            unique++;
        }
    }
    busy_end(t); /* the answer is in C memory: a change while it is built goes through */
    busy = 0;
    result = pair_list(out.p, unique);
done:
    if (busy) {
        busy_end(t);
    }
    PyMem_Free(ids.p);
    PyMem_Free(out.p);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * Introspection
 * ---------------------------------------------------------------------------------------- */

/* A node as nodes() lists it: its box, its depth below the root, its own entries. */
typedef struct {
    double box[4];
    int32_t depth, n;
} NodeRow;

/* Whether node nd's closed bounds meet the closed box q (geometry's one rule). */
static inline int
node_meets(const Node *nd, const double q[4])
{
    return nd->x0 <= q[2] && q[0] <= nd->x1 && nd->y0 <= q[3] && q[1] <= nd->y1;
}

static const Params nodes_params = {"nodes", 1, 0, 1, {"box"}};

static PyObject *
Tree_nodes(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&nodes_params, args, nargs, kwnames, buf);
    PyObject *box = a == NULL || a[0] == NULL ? Py_None : a[0]; /* borrowed */
    double q[4];
    if (a == NULL || guard(t, 0) < 0 || (box != Py_None && box_any(box, NULL, q) < 0)) {
        return NULL;
    }
    int all = box == Py_None, err = 0;
    /* Root first, depth-first, children in order: the reference's order. Pairs (node,
     * depth) on one stack. With a box, only the nodes that meet it are pushed: a child lies
     * inside its parent, so a subtree whose root misses the box holds no node that meets it.
     * The walk copies each node's row; the NodeInfos are made from the copy afterwards (their
     * __new__ is Python code: see "Python inside the core"). */
    NodeRow *rows = NULL;
    Py_ssize_t n_rows = 0, cap_rows = 0;
    if (t->root != NO_NODE && (all || node_meets(&t->nodes[t->root], q))) {
        NodeStack stack;
        ns_init(&stack);
        err = ns_push(&stack, t->root) < 0 || ns_push(&stack, 0) < 0;
        while (!err && stack.n > 0) {
            int32_t depth = stack.p[--stack.n];
            const Node *nd = &t->nodes[stack.p[--stack.n]];
            if (n_rows == cap_rows) {
                Py_ssize_t cap = cap_rows < 16 ? 16 : cap_rows * 2;
                NodeRow *p = PyMem_Realloc(rows, (size_t)cap * sizeof(NodeRow));
                if (p == NULL) {
                    PyErr_NoMemory();
                    err = 1;
                    break;
                }
                rows = p;
                cap_rows = cap;
            }
            rows[n_rows++] = (NodeRow){{nd->x0, nd->y0, nd->x1, nd->y1}, depth, nd->n};
            for (int k = 3; k >= 0 && !err && nd->kids[0] != NO_NODE; k--) {
                if (all || node_meets(&t->nodes[nd->kids[k]], q)) {
                    err = ns_push(&stack, nd->kids[k]) < 0 || ns_push(&stack, depth + 1) < 0;
                }
            }
        }
        ns_free(&stack);
    }
    PyObject *list = err ? NULL : PyList_New(0);
    for (Py_ssize_t i = 0; list != NULL && i < n_rows; i++) {
        const NodeRow *row = &rows[i];
        PyObject *nb = make_box(row->box[0], row->box[1], row->box[2], row->box[3]);
        PyObject *info = nb == NULL ? NULL
                         : PyObject_CallFunction(NodeInfoType, "Oii", nb, (int)row->depth,
                                                 (int)row->n);
        Py_XDECREF(nb);
        if (info == NULL || PyList_Append(list, info) < 0) {
            Py_CLEAR(list);
        }
        Py_XDECREF(info);
    }
    PyMem_Free(rows);
    if (list == NULL) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(list);
    Py_DECREF(list);
    return it;
}

static PyObject *
Tree_depth(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    int32_t deepest = 0;
    NodeStack stack;
    ns_init(&stack);
    int err = t->root == NO_NODE ? 0 : (ns_push(&stack, t->root) < 0 || ns_push(&stack, 0) < 0);
    while (!err && stack.n > 0) {
        int32_t depth = stack.p[--stack.n];
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        if (depth > deepest) {
            deepest = depth;
        }
        for (int q = 0; q < 4 && !err && nd->kids[0] != NO_NODE; q++) {
            err = ns_push(&stack, nd->kids[q]) < 0 || ns_push(&stack, depth + 1) < 0;
        }
    }
    ns_free(&stack);
    return err ? NULL : PyLong_FromLong(deepest);
}

#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            PyErr_Format(PyExc_AssertionError, __VA_ARGS__);    \
            goto fail;                                          \
        }                                                       \
    } while (0)

/* QuadTree.check(): every invariant of the reference, and those of this layout. */
static PyObject *
Tree_check(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    unsigned char *node_seen = NULL, *slot_seen = NULL;
    NodeStack stack;
    ns_init(&stack);
    if (t->root == NO_NODE) {
        CHECK(t->n == 0, "entities indexed but no root");
        goto ok;
    }
    node_seen = PyMem_Calloc((size_t)t->n_nodes + 1, 1);
    slot_seen = PyMem_Calloc((size_t)t->n + 1, 1);
    if (node_seen == NULL || slot_seen == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int32_t i = 0; i < t->n_free; i++) {
        CHECK(0 <= t->free_nodes[i] && t->free_nodes[i] < t->n_nodes, "free list names node %d",
              t->free_nodes[i]);
        CHECK(!node_seen[t->free_nodes[i]], "node %d freed twice", t->free_nodes[i]);
        node_seen[t->free_nodes[i]] = 2;
    }
    CHECK(t->nodes[t->root].parent == NO_NODE, "root has a parent");
    int32_t live = 0;
    if (ns_push(&stack, t->root) < 0) {
        goto fail;
    }
    while (stack.n > 0) {
        int32_t node = stack.p[--stack.n];
        CHECK(node_seen[node] != 2, "live node %d is on the free list", node);
        CHECK(node_seen[node] == 0, "node %d reached twice", node);
        node_seen[node] = 1;
        live++;
        const Node *nd = &t->nodes[node];
        const double bounds[4] = {nd->x0, nd->y0, nd->x1, nd->y1};
        CHECK(valid_box(bounds), "node %d bounds", node);
        CHECK(nd->cx == midpoint(nd->x0, nd->x1) && nd->cy == midpoint(nd->y0, nd->y1),
              "node %d split point", node);
        if (node == t->root) {
            CHECK(nd->fx0 == nextafter(nd->x0, -INFINITY) && nd->fy0 == nextafter(nd->y0, -INFINITY)
                  && nd->fx1 == nextafter(nd->x1, INFINITY) && nd->fy1 == nextafter(nd->y1, INFINITY),
                  "root fit bounds");
        }
        int32_t held = 0, prev = NO_SLOT;
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            CHECK(0 <= s && s < t->n, "node %d lists slot %d", node, s);
            CHECK(!slot_seen[s], "slot %d held twice", s);
            slot_seen[s] = 1;
            held++;
            CHECK(t->prev[s] == prev, "slot %d list links", s);
            CHECK(t->node_of[s] == node, "slot %d names node %d, is in node %d", s, t->node_of[s],
                  node);
            CHECK(find_slot(t, t->ids[s]) == s, "map disagrees for entity %lld",
                  (long long)t->ids[s]);
            const double *b = &t->box[4 * (size_t)s];
            CHECK(valid_box(b), "entity %lld holds an invalid box", (long long)t->ids[s]);
            int inside = fits(nd, b);
            if (inside) {
                CHECK(nd->x0 <= b[0] && b[2] <= nd->x1 && nd->y0 <= b[1] && b[3] <= nd->y1,
                      "node %d fit bounds exceed its bounds", node);
            }
            else {
                CHECK(node == t->root && !can_grow_toward(t, b),
                      "entity %lld box outside node %d bounds", (long long)t->ids[s], node);
            }
            if (nd->kids[0] != NO_NODE && inside) {
                CHECK(quadrant(nd, b) < 0, "entity %lld at internal node %d fits into a child",
                      (long long)t->ids[s], node);
            }
            prev = s;
        }
        CHECK(held == nd->n, "node %d holds %d entries, says %d", node, held, nd->n);
        int64_t subtree = held;
        if (nd->kids[0] != NO_NODE) {
            const double quads[4][8] = {
                {nd->x0, nd->y0, nd->cx, nd->cy, nd->fx0, nd->fy0, nd->cx, nd->cy},
                {nd->cx, nd->y0, nd->x1, nd->cy, nd->cx, nd->fy0, nd->fx1, nd->cy},
                {nd->x0, nd->cy, nd->cx, nd->y1, nd->fx0, nd->cy, nd->cx, nd->fy1},
                {nd->cx, nd->cy, nd->x1, nd->y1, nd->cx, nd->cy, nd->fx1, nd->fy1},
            };
            for (int q = 0; q < 4; q++) {
                int32_t c = nd->kids[q];
                CHECK(0 <= c && c < t->n_nodes, "node %d has child %d", node, c);
                const Node *cn = &t->nodes[c];
                CHECK(cn->parent == node, "node %d parent pointer", c);
                CHECK(cn->level == nd->level + 1, "node %d level", c);
                CHECK(cn->x0 == quads[q][0] && cn->y0 == quads[q][1] && cn->x1 == quads[q][2]
                      && cn->y1 == quads[q][3], "node %d bounds", c);
                CHECK(cn->fx0 == quads[q][4] && cn->fy0 == quads[q][5] && cn->fx1 == quads[q][6]
                      && cn->fy1 == quads[q][7], "node %d fit bounds", c);
                subtree += cn->count;
                if (ns_push(&stack, c) < 0) {
                    goto fail;
                }
            }
            CHECK(nd->count > t->threshold, "internal node %d holds only %d entries", node,
                  nd->count);
            CHECK(nd->level < t->max_depth, "node %d split below max_depth", node);
        }
        else {
            CHECK(nd->n <= t->threshold || nd->level >= t->max_depth,
                  "leaf %d holds %d entries above max_depth", node, nd->n);
        }
        CHECK(nd->count == subtree, "node %d count %d", node, nd->count);
    }
    for (int32_t s = 0; s < t->n; s++) {
        CHECK(slot_seen[s], "entity %lld is in no node", (long long)t->ids[s]);
    }
    CHECK(t->nodes[t->root].count == t->n, "root count differs from len()");
    /* quadtree.py's invariant 7: a fresh snapshot is exactly what its node's entries give. */
    for (int32_t i = 0; i < t->snaps_size; i++) {
        const SnapRef *r = &t->snaps[i];
        if (r->node == NO_NODE || !r->fresh) {
            continue;
        }
        CHECK(0 <= r->node && r->node < t->n_nodes && node_seen[r->node] == 1,
              "a fresh snapshot names node %d, which is not in the tree", r->node);
        CHECK(snap_find(t, r->node) == r, "snapshot of node %d listed twice", r->node);
        if (t->nodes[r->node].kids[0] == NO_NODE) {
            continue; /* a leaf's is marked when it turns internal */
        }
        Snap *now = NULL;
        if (snap_fill(t, r->node, &now) < 0) {
            PyMem_Free(now);
            PyErr_NoMemory();
            goto fail;
        }
        const Snap *sn = r->snap;
        int same = sn->n == now->n && sn->n_across == now->n_across
                   && memcmp(sn->across, now->across, sizeof(sn->across)) == 0
                   && memcmp(sn->along, now->along, sizeof(sn->along)) == 0
                   && memcmp(sn->reach, now->reach, (size_t)sn->n * sizeof(double)) == 0
                   && memcmp(snap_slots(sn), snap_slots(now),
                             (size_t)sn->n * sizeof(int32_t)) == 0;
        PyMem_Free(now);
        CHECK(same, "node %d snapshot is stale", r->node);
    }
    CHECK(live == t->n_nodes - t->n_free, "%d node(s) leaked", t->n_nodes - t->n_free - live);
    {
        int64_t in_table = 0;
        for (size_t i = 0; i < t->table_size; i++) {
            in_table += t->table[i] != NO_SLOT;
        }
        CHECK(in_table == t->n, "the id map holds %lld ids for %d entities", (long long)in_table,
              t->n);
    }
ok:
    PyMem_Free(node_seen);
    PyMem_Free(slot_seen);
    ns_free(&stack);
    Py_RETURN_NONE;
fail:
    PyMem_Free(node_seen);
    PyMem_Free(slot_seen);
    ns_free(&stack);
    return NULL;
}

static PyObject *
Tree_repr(Tree *t)
{
    /* All read before the Box is made (see "Python inside the core"). */
    int n = (int)t->n;
    PyObject *threshold = t->threshold_obj, *max_depth = t->max_depth_obj; /* owned, taken: */
    Py_INCREF(threshold);
    Py_INCREF(max_depth);
    PyObject *bounds = t->root == NO_NODE ? (Py_INCREF(Py_None), Py_None)
                       : make_box(t->nodes[t->root].x0, t->nodes[t->root].y0,
                                  t->nodes[t->root].x1, t->nodes[t->root].y1);
    PyObject *empty = PyUnicode_FromString("");
    PyObject *thr = empty == NULL ? NULL : PyObject_Format(threshold, empty);
    PyObject *depth = empty == NULL ? NULL : PyObject_Format(max_depth, empty);
    PyObject *text = NULL;
    if (bounds != NULL && thr != NULL && depth != NULL) {
        text = PyUnicode_FromFormat("QuadTree(bounds=%R, threshold=%U, max_depth=%U, entities=%d)",
                                    bounds, thr, depth, n);
    }
    Py_DECREF(threshold);
    Py_DECREF(max_depth);
    Py_XDECREF(bounds);
    Py_XDECREF(empty);
    Py_XDECREF(thr);
    Py_XDECREF(depth);
    return text;
}

static PyObject *
Tree_get_bounds(Tree *t, void *Py_UNUSED(closure))
{
    if (t->root == NO_NODE) {
        Py_RETURN_NONE;
    }
    const Node *r = &t->nodes[t->root];
    return make_box(r->x0, r->y0, r->x1, r->y1);
}

static PyObject *
Tree_get_threshold(Tree *t, void *Py_UNUSED(closure))
{
    Py_INCREF(t->threshold_obj);
    return t->threshold_obj;
}

static PyObject *
Tree_get_max_depth(Tree *t, void *Py_UNUSED(closure))
{
    Py_INCREF(t->max_depth_obj);
    return t->max_depth_obj;
}

static PyObject *
Tree_sizeof(Tree *t, PyObject *Py_UNUSED(ignored))
{
    size_t size = Py_TYPE(t)->tp_basicsize;
    size += (size_t)t->cap * (sizeof(int64_t) + 4 * sizeof(double) + 3 * sizeof(int32_t));
    size += t->table_size * sizeof(int32_t);
    size += (size_t)t->cap_nodes * (sizeof(Node) + sizeof(int32_t) + sizeof(Work));
    size += (size_t)t->scratch.arena_cap * sizeof(Rec) + (size_t)t->scratch.own_cap * sizeof(OwnRec);
    size += (size_t)t->scratch.frames_cap * sizeof(SweepFrame);
    size += (size_t)t->slot_hint_cap * sizeof(int32_t);
    size += t->snaps_bytes;
    return PyLong_FromSize_t(size);
}

/* ------------------------------------------------------------------------------------------
 * Copies and pickles
 *
 * The state is the reference's (quadtree._STATE_FORMAT): plain data, the same for both
 * classes, so that either loads the other's pickles. This class writes it here, and reads it
 * through quadtree._read_state, which checks it and gives each error its one text; the tree's
 * shape is a function of its root and its boxes, so it is rebuilt node for node. A subclass's
 * own attributes (its __dict__ and slots) travel as the reference's do (quadtree._own_state,
 * _restore_own_state, _copy_own_state).
 * ---------------------------------------------------------------------------------------- */

/* A plain tuple of these 4 floats. New reference. */
static PyObject *
float_tuple(double x0, double y0, double x1, double y1)
{
    return Py_BuildValue("(dddd)", x0, y0, x1, y1);
}

/* An entry of the state: the state lists them by id. */
typedef struct {
    int64_t id;
    int32_t slot;
} IdSlot;

static inline int
id_slot_less(const IdSlot *x, const IdSlot *y)
{
    return x->id < y->id;
}

DEFINE_SORT(sort_id_slots, IdSlot, id_slot_less)

/* Copies of the n entities' ids and boxes (4 doubles each) in ascending order of id, the
 * state's order (as quadtree._state_of writes it): *ids and *boxes in PyMem memory, freed by
 * the caller (also on error). 0, or -1 and MemoryError. */
static int
entries_by_id(const Tree *t, int64_t **ids, double **boxes)
{
    size_t n = t->n > 0 ? (size_t)t->n : 1;
    IdSlot *order = PyMem_Malloc(n * sizeof(IdSlot));
    *ids = PyMem_Malloc(n * sizeof(int64_t));
    *boxes = PyMem_Malloc(4 * n * sizeof(double));
    int r = -1;
    if (order == NULL || *ids == NULL || *boxes == NULL) {
        PyErr_NoMemory();
    }
    else {
        for (int32_t s = 0; s < t->n; s++) {
            order[s] = (IdSlot){t->ids[s], s};
        }
        r = sort_id_slots(order, t->n);
        for (int32_t i = 0; r == 0 && i < t->n; i++) {
            (*ids)[i] = order[i].id;
            memcpy(&(*boxes)[4 * (size_t)i], &t->box[4 * (size_t)order[i].slot], 4 * sizeof(double));
        }
    }
    PyMem_Free(order);
    return r;
}

static PyObject *
Tree_getstate(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    /* The whole state read before the first allocation (see "Python inside the core"): the
     * entries copied in the state's order, the root's box and level, the configuration's ints
     * held (an __init__ may replace them). */
    int64_t *by_id = NULL;
    double *box_by_id = NULL;
    Py_ssize_t n = t->n;
    int copied = entries_by_id(t, &by_id, &box_by_id);
    int has_hint = t->has_hint, has_root = t->root != NO_NODE, level = 0;
    double hint[4], root_box[4] = {0.0, 0.0, 0.0, 0.0};
    memcpy(hint, t->hint, sizeof(hint));
    if (has_root) {
        const Node *r = &t->nodes[t->root];
        root_box[0] = r->x0;
        root_box[1] = r->y0;
        root_box[2] = r->x1;
        root_box[3] = r->y1;
        level = (int)r->level;
    }
    PyObject *threshold = t->threshold_obj, *max_depth = t->max_depth_obj; /* owned, taken: */
    Py_INCREF(threshold);
    Py_INCREF(max_depth);
    PyObject *ids = copied < 0 ? NULL : id_list(by_id, n); /* new */
    PyObject *boxes = copied < 0 ? NULL : PyList_New(4 * n); /* new */
    for (Py_ssize_t i = 0; boxes != NULL && i < 4 * n; i++) {
        PyObject *v = PyFloat_FromDouble(box_by_id[i]);
        if (v == NULL) {
            Py_CLEAR(boxes);
            break;
        }
        PyList_SET_ITEM(boxes, i, v); /* steals */
    }
    PyObject *bounds = Py_None, *root = Py_None; /* each new below */
    Py_INCREF(bounds);
    Py_INCREF(root);
    if (has_hint) {
        Py_SETREF(bounds, float_tuple(hint[0], hint[1], hint[2], hint[3]));
    }
    if (has_root) {
        Py_SETREF(root, float_tuple(root_box[0], root_box[1], root_box[2], root_box[3]));
    }
    PyObject *own = ids != NULL && boxes != NULL && bounds != NULL && root != NULL
                        ? PyObject_CallOneArg(ref_own_state, (PyObject *)t) /* new: a dict */
                        : NULL; /* never call into Python with an error set */
    PyObject *state = NULL;
    if (ids != NULL && boxes != NULL && bounds != NULL && root != NULL && own != NULL) {
        state = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:i,s:O,s:O}", "format", ref_state_format,
                              "bounds", bounds, "threshold", threshold, "max_depth", max_depth,
                              "root", root, "root_level", level, "ids", ids, "boxes", boxes);
    }
    if (state != NULL && PyDict_Update(state, own) < 0) {
        Py_CLEAR(state);
    }
    Py_DECREF(threshold);
    Py_DECREF(max_depth);
    Py_XDECREF(ids);
    Py_XDECREF(boxes);
    Py_XDECREF(bounds);
    Py_XDECREF(root);
    Py_XDECREF(own);
    PyMem_Free(by_id);
    PyMem_Free(box_by_id);
    return state;
}

/* Remove `key` from the dict d if it is there. 0, or -1 and an error. */
static int
dict_discard(PyObject *d, const char *key)
{
    PyObject *k = PyUnicode_FromString(key); /* new */
    if (k == NULL) {
        return -1;
    }
    int has = PyDict_Contains(d, k);
    int r = has < 0 ? -1 : has ? PyDict_DelItem(d, k) : 0;
    Py_DECREF(k);
    return r;
}

/* (copyreg.__newobj__, (class,), state): pickle makes the tree with class.__new__ (no
 * __init__, whose signature a subclass may change) and hands it the state. */
static PyObject *
Tree_reduce(Tree *t, PyObject *Py_UNUSED(ignored))
{
    PyObject *state = Tree_getstate(t, NULL); /* new */
    if (state == NULL) {
        return NULL;
    }
    PyObject *result = Py_BuildValue("(O(O)O)", copyreg_newobj, (PyObject *)Py_TYPE(t), state);
    Py_DECREF(state);
    return result;
}

/* Become the tree a state describes: quadtree._read_state checks it all (and raises its
 * errors) before anything changes; then the configuration, the root, the entities (placed as
 * insert_many places them) and a subclass's own attributes. 0, or -1 and an error. */
static int
setstate_impl(Tree *t, PyObject *state)
{
    PyObject *hint = t->has_hint ? make_box(t->hint[0], t->hint[1], t->hint[2], t->hint[3])
                                 : (Py_INCREF(Py_None), Py_None); /* new */
    if (hint == NULL) {
        return -1;
    }
    /* new: a quadtree._State (hint, threshold, max_depth, root, level, records, attributes,
     * slots), its records a list of (x0, y0, x1, y1, id) tuples of floats and an int */
    PyObject *read = PyObject_CallFunctionObjArgs(ref_read_state, state, (PyObject *)Py_TYPE(t),
                                                  hint, NULL);
    Py_DECREF(hint);
    if (read == NULL) {
        return -1;
    }
    int64_t *ids = NULL;
    double *boxes = NULL;
    PyObject *before = NULL; /* new, or NULL */
    int r = -1;
    if (!PyTuple_Check(read) || PyTuple_GET_SIZE(read) != 8
        || !PyList_Check(PyTuple_GET_ITEM(read, 5))) {
        PyErr_SetString(PyExc_SystemError, "quadtree._read_state returned no _State");
        goto done;
    }
    PyObject *bounds = PyTuple_GET_ITEM(read, 0), *threshold = PyTuple_GET_ITEM(read, 1),
             *max_depth = PyTuple_GET_ITEM(read, 2), *root = PyTuple_GET_ITEM(read, 3),
             *records = PyTuple_GET_ITEM(read, 5), *attributes = PyTuple_GET_ITEM(read, 6),
             *slots = PyTuple_GET_ITEM(read, 7); /* all borrowed from read */
    long level = PyLong_AsLong(PyTuple_GET_ITEM(read, 4));
    if (level == -1 && PyErr_Occurred()) {
        goto done;
    }
    double root_bounds[4] = {0, 0, 0, 0};
    if (root != Py_None && read_box(root, root_bounds) < 0) {
        goto done;
    }
    /* The records as this layout keeps them, ids checked to fit in 64 bits. */
    Py_ssize_t k = PyList_GET_SIZE(records);
    if (k > MAX_COUNT) {
        PyErr_SetString(PyExc_OverflowError, "a QuadTree holds fewer than 2**30 entities");
        goto done;
    }
    ids = PyMem_Malloc((size_t)(k > 0 ? k : 1) * sizeof(int64_t));
    boxes = PyMem_Malloc((size_t)(k > 0 ? k : 1) * 4 * sizeof(double));
    if (ids == NULL || boxes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *rec = PyList_GET_ITEM(records, i); /* borrowed */
        if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != 5) {
            PyErr_SetString(PyExc_SystemError, "quadtree._read_state returned no record");
            goto done;
        }
        PyObject *entity = PyTuple_GET_ITEM(rec, 4); /* borrowed */
        int fit = int64_of(entity, &ids[i]);
        if (fit <= 0) {
            if (fit == 0) { /* _read_state refuses ids past 64 bits, as insert does */
                PyErr_SetString(PyExc_SystemError, "quadtree._read_state returned an id past 64 bits");
            }
            goto done;
        }
        for (int j = 0; j < 4; j++) {
            boxes[4 * i + j] = PyFloat_AsDouble(PyTuple_GET_ITEM(rec, j));
            if (boxes[4 * i + j] == -1.0 && PyErr_Occurred()) {
                goto done;
            }
        }
    }
    /* A subclass may refuse one of its own attributes, which come last: the index as it is
     * now (the state without them) is then put back. */
    if (attributes != Py_None || slots != Py_None) {
        before = Tree_getstate(t, NULL);
        if (before == NULL || dict_discard(before, "attributes") < 0
            || dict_discard(before, "slots") < 0) {
            goto done;
        }
    }
    /* Everything checked: the tree changes from here on. */
    if (configure(t, bounds, threshold, max_depth) < 0) {
        goto done;
    }
    if (root != Py_None) {
        clear_nodes(t);
        if (new_root(t, root_bounds, (int32_t)level) < 0
            || insert_batch(t, ids, boxes, (int32_t)k) < 0) {
            goto done;
        }
    }
    if (attributes != Py_None || slots != Py_None) {
        PyObject *done_ = PyObject_CallFunctionObjArgs(ref_restore_own_state, (PyObject *)t,
                                                       attributes, slots, NULL); /* new */
        if (done_ == NULL) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            if (setstate_impl(t, before) < 0) { /* memory ran out: the tree is broken */
                PyErr_Clear();
            }
            PyErr_Restore(type, value, tb);
            goto done;
        }
        Py_DECREF(done_);
    }
    r = 0;
done:
    PyMem_Free(ids);
    PyMem_Free(boxes);
    Py_XDECREF(before);
    Py_DECREF(read);
    return r;
}

static PyObject *
Tree_setstate(Tree *t, PyObject *state)
{
    if (guard(t, 1) < 0) {
        return NULL;
    }
    t->busy++;
    int r = setstate_impl(t, state);
    busy_end(t);
    maybe_compact(t);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* A copy of an array of cap items of `size` bytes (NULL for an empty one). 0, or -1. */
static int
copy_array(void **dst, const void *src, size_t items, size_t size)
{
    *dst = NULL;
    if (src == NULL || items == 0) {
        return 0;
    }
    *dst = PyMem_Malloc(items * size);
    if (*dst == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(*dst, src, items * size);
    return 0;
}

/* A new tree of the same class with the same configuration, entities and nodes (a subclass's
 * attributes aside). */
static Tree *
copy_data(Tree *t)
{
    Tree *c = (Tree *)Tree_new(Py_TYPE(t), NULL, NULL); /* may run Python: t is read after it */
    if (c == NULL) {
        return NULL;
    }
    if (guard(t, 0) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    Py_INCREF(t->threshold_obj);
    Py_SETREF(c->threshold_obj, t->threshold_obj);
    Py_INCREF(t->max_depth_obj);
    Py_SETREF(c->max_depth_obj, t->max_depth_obj);
    c->threshold = t->threshold;
    c->max_depth = t->max_depth;
    c->has_hint = t->has_hint;
    memcpy(c->hint, t->hint, sizeof(t->hint));
    size_t cap = (size_t)t->cap, nodes = (size_t)t->cap_nodes;
    if (copy_array((void **)&c->ids, t->ids, cap, sizeof(int64_t)) < 0
        || copy_array((void **)&c->box, t->box, cap, 4 * sizeof(double)) < 0
        || copy_array((void **)&c->node_of, t->node_of, cap, sizeof(int32_t)) < 0
        || copy_array((void **)&c->next, t->next, cap, sizeof(int32_t)) < 0
        || copy_array((void **)&c->prev, t->prev, cap, sizeof(int32_t)) < 0
        || copy_array((void **)&c->table, t->table, t->table_size, sizeof(int32_t)) < 0
        || copy_array((void **)&c->nodes, t->nodes, nodes, sizeof(Node)) < 0
        || copy_array((void **)&c->free_nodes, t->free_nodes, nodes, sizeof(int32_t)) < 0
        || copy_array((void **)&c->work, t->work, nodes + 1, sizeof(Work)) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    c->n = t->n;
    c->cap = t->cap;
    c->table_size = t->table_size;
    c->n_nodes = t->n_nodes;
    c->cap_nodes = t->cap_nodes;
    c->n_free = t->n_free;
    c->root = t->root;
    return c;
}

/* Give the copy c a subclass's own attributes: quadtree._copy_own_state, shared (memo None)
 * or deep-copied with deepcopy's memo. 0, or -1 and an error. */
static int
copy_own_state(Tree *t, PyObject *c, PyObject *memo)
{
    PyObject *r = PyObject_CallFunctionObjArgs(ref_copy_own_state, (PyObject *)t, c, memo,
                                               NULL); /* new: None */
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* copy.copy: a new tree (copies of its arrays), a subclass's attributes shared as a shallow
 * copy shares them. */
static PyObject *
Tree_copy(Tree *t, PyObject *Py_UNUSED(ignored))
{
    PyObject *c = (PyObject *)copy_data(t); /* new */
    if (c != NULL && copy_own_state(t, c, Py_None) < 0) {
        Py_CLEAR(c);
    }
    return c;
}

/* copy.deepcopy: the tree's own data is ids and floats, immutable, so a copy of it is deep;
 * a subclass's attributes are deep-copied, the new tree entered in the memo first (an
 * attribute may refer back to the tree). */
static PyObject *
Tree_deepcopy(Tree *t, PyObject *memo)
{
    PyObject *c = (PyObject *)copy_data(t); /* new */
    if (c == NULL) {
        return NULL;
    }
    /* deepcopy always passes its memo, a dict; a direct call may pass None */
    PyObject *own_memo = memo == Py_None ? PyDict_New() : (Py_INCREF(memo), memo); /* new */
    if (own_memo == NULL || copy_own_state(t, c, own_memo) < 0) {
        Py_CLEAR(c);
    }
    Py_XDECREF(own_memo);
    return c;
}

/* ------------------------------------------------------------------------------------------
 * The type
 * ---------------------------------------------------------------------------------------- */

/* The methods of one argument or none, their functions above taking it as METH_O and
 * METH_NOARGS do: bound by the reference's signature (keywords included, its errors). */
#define ONE_ARGUMENT(FUNC, NAME, PARAM)                                                      \
    static PyObject *FUNC##_bound(Tree *t, PyObject *const *args, Py_ssize_t nargs,          \
                                  PyObject *kwnames)                                         \
    {                                                                                        \
        static const Params params = {NAME, 1, 1, 1, {PARAM}};                               \
        PyObject *buf[MAX_PARAMS];                                                           \
        PyObject *const *a = arguments(&params, args, nargs, kwnames, buf);                  \
        return a == NULL ? NULL : FUNC(t, a[0]);                                             \
    }
#define NO_ARGUMENT(FUNC, NAME)                                                              \
    static PyObject *FUNC##_bound(Tree *t, PyObject *const *args, Py_ssize_t nargs,          \
                                  PyObject *kwnames)                                         \
    {                                                                                        \
        return no_arguments(NAME, args, nargs, kwnames) < 0 ? NULL : FUNC(t, NULL);          \
    }

ONE_ARGUMENT(Tree_remove, "remove", "entity")
ONE_ARGUMENT(Tree_discard, "discard", "entity")
ONE_ARGUMENT(Tree_query, "query", "box")
ONE_ARGUMENT(Tree_query_entity, "query_entity", "entity")
ONE_ARGUMENT(Tree_find_intersections_for, "find_intersections_for", "entities")
ONE_ARGUMENT(Tree_insert_records, "insert_records", "records")
ONE_ARGUMENT(Tree_move_records, "move_records", "records")
ONE_ARGUMENT(Tree_deepcopy, "__deepcopy__", "memo")
ONE_ARGUMENT(Tree_setstate, "__setstate__", "state")
NO_ARGUMENT(Tree_clear, "clear")
NO_ARGUMENT(Tree_find_all_intersections, "find_all_intersections")
NO_ARGUMENT(Tree_find_all_intersections_array, "find_all_intersections_array")
NO_ARGUMENT(Tree_state_hash, "state_hash")
NO_ARGUMENT(Tree_depth, "depth")
NO_ARGUMENT(Tree_check, "check")
NO_ARGUMENT(Tree_copy, "__copy__")
NO_ARGUMENT(Tree_reduce, "__reduce__")
NO_ARGUMENT(Tree_getstate, "__getstate__")

/* Every method takes METH_FASTCALL | METH_KEYWORDS: see "Arguments". */
#define BOUND(func) (PyCFunction)(void (*)(void))(func), METH_FASTCALL | METH_KEYWORDS

/* The docs: the reference's signatures and docstrings, from the generated _cquadtree_docs.h. */
static PyMethodDef Tree_methods[] = {
    {"insert", BOUND(Tree_insert), QT_DOC_insert},
    {"insert_many", BOUND(Tree_insert_many), QT_DOC_insert_many},
    {"move", BOUND(Tree_move), QT_DOC_move},
    {"move_many", BOUND(Tree_move_many), QT_DOC_move_many},
    {"remove", BOUND(Tree_remove_bound), QT_DOC_remove},
    {"discard", BOUND(Tree_discard_bound), QT_DOC_discard},
    {"clear", BOUND(Tree_clear_bound), QT_DOC_clear},
    {"get", BOUND(Tree_get), QT_DOC_get},
    {"query", BOUND(Tree_query_bound), QT_DOC_query},
    {"query_point", BOUND(Tree_query_point), QT_DOC_query_point},
    {"query_radius", BOUND(Tree_query_radius), QT_DOC_query_radius},
    {"nearest", BOUND(Tree_nearest), QT_DOC_nearest},
    {"raycast", BOUND(Tree_raycast), QT_DOC_raycast},
    {"raycast_first", BOUND(Tree_raycast_first), QT_DOC_raycast_first},
    {"cast_box", BOUND(Tree_cast_box), QT_DOC_cast_box},
    {"cast_box_first", BOUND(Tree_cast_box_first), QT_DOC_cast_box_first},
    {"query_entity", BOUND(Tree_query_entity_bound), QT_DOC_query_entity},
    {"find_intersections_for", BOUND(Tree_find_intersections_for_bound),
     QT_DOC_find_intersections_for},
    {"find_all_intersections", BOUND(Tree_find_all_intersections_bound),
     QT_DOC_find_all_intersections},
    {"find_all_intersections_array", BOUND(Tree_find_all_intersections_array_bound),
     QT_DOC_find_all_intersections_array},
    {"state_hash", BOUND(Tree_state_hash_bound), QT_DOC_state_hash},
    {"nodes", BOUND(Tree_nodes), QT_DOC_nodes},
    {"depth", BOUND(Tree_depth_bound), QT_DOC_depth},
    {"check", BOUND(Tree_check_bound), QT_DOC_check},
    {"insert_records", BOUND(Tree_insert_records_bound), QT_DOC_insert_records},
    {"move_records", BOUND(Tree_move_records_bound), QT_DOC_move_records},
    {"__copy__", BOUND(Tree_copy_bound), QT_DOC___copy__},
    {"__deepcopy__", BOUND(Tree_deepcopy_bound), QT_DOC___deepcopy__},
    {"__reduce__", BOUND(Tree_reduce_bound), QT_DOC___reduce__},
    {"__getstate__", BOUND(Tree_getstate_bound), QT_DOC___getstate__},
    {"__setstate__", BOUND(Tree_setstate_bound), QT_DOC___setstate__},
    {"__sizeof__", (PyCFunction)Tree_sizeof, METH_NOARGS, QT_DOC___sizeof__},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Tree_getset[] = {
    {"bounds", (getter)Tree_get_bounds, NULL, QT_DOC_bounds, NULL},
    {"threshold", (getter)Tree_get_threshold, NULL, QT_DOC_threshold, NULL},
    {"max_depth", (getter)Tree_get_max_depth, NULL, QT_DOC_max_depth, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Tree_as_sequence = {
    .sq_length = (lenfunc)Tree_len,
    .sq_contains = (objobjproc)Tree_contains,
};

static PyMappingMethods Tree_as_mapping = {
    .mp_length = (lenfunc)Tree_len,
    .mp_subscript = (binaryfunc)Tree_getitem,
};

static PyTypeObject TreeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ecs_spatial._cquadtree.QuadTree",
    .tp_basicsize = sizeof(Tree),
    .tp_itemsize = 0,
    .tp_dealloc = (destructor)Tree_dealloc,
    .tp_repr = (reprfunc)Tree_repr,
    .tp_as_sequence = &Tree_as_sequence,
    .tp_as_mapping = &Tree_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = QT_DOC_CLASS,
    .tp_iter = (getiterfunc)Tree_iter,
    .tp_methods = Tree_methods,
    .tp_getset = Tree_getset,
    .tp_init = (initproc)Tree_init,
    .tp_new = Tree_new,
};

/* ------------------------------------------------------------------------------------------
 * Module-level functions: the kernels, exposed for the tests that hold them to CPython's
 * ---------------------------------------------------------------------------------------- */

static PyObject *
mod_hypot(PyObject *Py_UNUSED(module), PyObject *args)
{
    double dx, dy;
    if (!PyArg_ParseTuple(args, "dd:_hypot", &dx, &dy)) {
        return NULL;
    }
    if (isnan(dx) || isnan(dy)) {
        PyErr_SetString(PyExc_ValueError, "_hypot: NaN is not a gap");
        return NULL;
    }
    return PyFloat_FromDouble(py_hypot(dx, dy));
}

static PyObject *
mod_segment_entry(PyObject *Py_UNUSED(module), PyObject *args)
{
    double b[4], x0, y0, x1, y1, t;
    if (!PyArg_ParseTuple(args, "(dddd)dddd:_segment_entry", &b[0], &b[1], &b[2], &b[3],
                          &x0, &y0, &x1, &y1)) {
        return NULL;
    }
    if (!segment_entry(b[0], b[1], b[2], b[3], x0, y0, x1, y1, &t)) {
        Py_RETURN_NONE;
    }
    return PyFloat_FromDouble(t);
}

static PyObject *
mod_sweep_time(PyObject *Py_UNUSED(module), PyObject *args)
{
    double a[4], b[4], dx, dy, t;
    if (!PyArg_ParseTuple(args, "(dddd)dd(dddd):_sweep_time", &a[0], &a[1], &a[2], &a[3], &dx,
                          &dy, &b[0], &b[1], &b[2], &b[3])) {
        return NULL;
    }
    if (!(isfinite(dx) && isfinite(dy))) {
        PyErr_SetString(PyExc_ValueError, "_sweep_time: the motion must be finite");
        return NULL;
    }
    if (!sweep_time(a, dx, dy, b, &t)) {
        Py_RETURN_NONE;
    }
    return PyFloat_FromDouble(t);
}

static PyObject *
mod_midpoint(PyObject *Py_UNUSED(module), PyObject *args)
{
    double a, b;
    if (!PyArg_ParseTuple(args, "dd:_midpoint", &a, &b)) {
        return NULL;
    }
    return PyFloat_FromDouble(midpoint(a, b));
}

static PyObject *
mod_ulp(PyObject *Py_UNUSED(module), PyObject *args)
{
    double x;
    if (!PyArg_ParseTuple(args, "d:_ulp", &x)) {
        return NULL;
    }
    return PyFloat_FromDouble(py_ulp(x));
}

/* Box.__new__(cls, min_x, min_y, max_x, max_y) in C, for geometry.Box to take when the core
 * is built: four floats that form a valid box (the common case) become the Box at once,
 * without a Python frame (the Box holds the very float objects given, as tuple.__new__ does);
 * every other call, keywords included, goes to the reference's own Box.__new__, which
 * converts or refuses by name: the same Box, or the same error, in every case. */
static PyObject *
mod_box_new(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    if (kwnames == NULL && nargs == 5 && PyType_Check(args[0])
        && PyType_IsSubtype((PyTypeObject *)args[0], (PyTypeObject *)BoxType)) {
        double c[4];
        int floats = 1;
        for (int i = 0; i < 4 && floats; i++) {
            floats = PyFloat_CheckExact(args[i + 1]);
            c[i] = floats ? PyFloat_AS_DOUBLE(args[i + 1]) : 0.0;
        }
        if (floats && valid_box(c)) {
            PyTypeObject *type = (PyTypeObject *)args[0];
            PyObject *box = type->tp_alloc(type, 4);
            if (box == NULL) {
                return NULL;
            }
            for (int i = 0; i < 4; i++) {
                Py_INCREF(args[i + 1]);
                PyTuple_SET_ITEM(box, i, args[i + 1]); /* steals the reference just taken */
            }
            return box;
        }
    }
    return PyObject_Vectorcall(ref_box_new, args, (size_t)nargs, kwnames);
}

static PyMethodDef module_methods[] = {
    {"_hypot", mod_hypot, METH_VARARGS, "math.hypot(dx, dy), as the index computes it."},
    {"_segment_entry", mod_segment_entry, METH_VARARGS,
     "geometry.segment_entry(box, x0, y0, x1, y1), as the index computes it."},
    {"_sweep_time", mod_sweep_time, METH_VARARGS,
     "geometry.floats_sweep_time(box, dx, dy, other), as the index computes it."},
    {"_midpoint", mod_midpoint, METH_VARARGS, "geometry.midpoint(a, b), as the index computes it."},
    {"_ulp", mod_ulp, METH_VARARGS, "math.ulp(x), as the index computes it."},
    {"_box_new", (PyCFunction)(void (*)(void))mod_box_new, METH_FASTCALL | METH_KEYWORDS,
     "Box.__new__ in C: Box.__new__ = staticmethod(_box_new) makes Box(...) of four floats "
     "several times cheaper, with the same result and the same errors in every case."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cquadtree_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ecs_spatial._cquadtree",
    .m_doc = "The compiled core of ecs_spatial: a twin of ecs_spatial.quadtree.QuadTree.",
    .m_size = -1,
    .m_methods = module_methods,
};

/* Take the reference's helpers (see the top of this file). 0, or -1 with ImportError or
 * AttributeError: then the package falls back to the reference (ecs_spatial.index). */
static int
import_helpers(void)
{
    static const struct {
        const char *module, *name;
        PyObject **slot;
    } wanted[] = {
        {"ecs_spatial.geometry", "Box", &BoxType},
        {"ecs_spatial.geometry", "to_float", &ref_to_float},
        {"ecs_spatial.geometry", "motion_floats", &ref_motion},
        {"ecs_spatial.quadtree", "NodeInfo", &NodeInfoType},
        {"ecs_spatial.quadtree", "_coords", &ref_coords},
        {"ecs_spatial.quadtree", "_entity_id", &ref_entity_id},
        {"ecs_spatial.quadtree", "_lookup_id", &ref_lookup_id},
        {"ecs_spatial.quadtree", "_missing", &ref_missing},
        {"ecs_spatial.quadtree", "_out_of_range", &ref_out_of_range},
        {"ecs_spatial.quadtree", "QuadTree", &ref_tree},
        {"ecs_spatial.quadtree", "_point", &ref_point},
        {"ecs_spatial.quadtree", "_STATE_FORMAT", &ref_state_format},
        {"ecs_spatial.quadtree", "_BUSY", &ref_busy},
        {"ecs_spatial.quadtree", "_read_state", &ref_read_state},
        {"ecs_spatial.quadtree", "_own_state", &ref_own_state},
        {"ecs_spatial.quadtree", "_restore_own_state", &ref_restore_own_state},
        {"ecs_spatial.quadtree", "_copy_own_state", &ref_copy_own_state},
        {"copyreg", "__newobj__", &copyreg_newobj},
        {"builtins", "zip", &builtin_zip},
        {"array", "array", &array_array},
    };
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
        if (*wanted[i].slot != NULL) {
            continue; /* a second import of the module (a new interpreter state) */
        }
        PyObject *module = PyImport_ImportModule(wanted[i].module); /* new */
        if (module == NULL) {
            return -1;
        }
        *wanted[i].slot = PyObject_GetAttrString(module, wanted[i].name); /* new, kept */
        Py_DECREF(module);
        if (*wanted[i].slot == NULL) {
            return -1;
        }
    }
    if (!PyType_Check(BoxType) || !PyType_IsSubtype((PyTypeObject *)BoxType, &PyTuple_Type)) {
        PyErr_SetString(PyExc_ImportError, "ecs_spatial.geometry.Box is no tuple subclass");
        return -1;
    }
    if (ref_box_new == NULL) {
        /* the reference's own __new__, read from the class's namespace before anyone may
         * have replaced it with _box_new */
        PyObject *method = PyDict_GetItemString(((PyTypeObject *)BoxType)->tp_dict, "__new__");
        ref_box_new = method == NULL ? NULL : PyObject_GetAttrString(method, "__func__");
        if (ref_box_new == NULL) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ImportError, "ecs_spatial.geometry.Box has no __new__ of its own");
            return -1;
        }
    }
    return 0;
}

/* Key the id table from the process's hash secret (hash() of two bytes objects: SipHash under
 * the secret that PYTHONHASHSEED sets or randomises), once: the tables of every tree, in
 * every interpreter of the process, are made with it. 0, or -1 with an error. */
static int
set_hash_key(void)
{
    static int keyed = 0;
    if (keyed) {
        return 0;
    }
    const char *const salts[2] = {"ecs_spatial._cquadtree: the id table, low",
                                  "ecs_spatial._cquadtree: the id table, high"};
    uint64_t key = 0;
    for (int i = 0; i < 2; i++) {
        PyObject *salt = PyBytes_FromString(salts[i]); /* new */
        Py_hash_t h = salt == NULL ? -1 : PyObject_Hash(salt);
        Py_XDECREF(salt);
        if (h == -1) {
            return -1;
        }
        key ^= (uint64_t)h << (32 * i); /* 64 bits of secret where Py_hash_t has 32 */
    }
    hash_key = key;
    keyed = 1;
    return 0;
}

PyMODINIT_FUNC
PyInit__cquadtree(void)
{
    PyObject *m = PyModule_Create(&cquadtree_module);
    if (m == NULL) {
        return NULL;
    }
    if (set_hash_key() < 0 || import_helpers() < 0 || PyType_Ready(&TreeType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&TreeType);
    if (PyModule_AddObject(m, "QuadTree", (PyObject *)&TreeType) < 0) {
        Py_DECREF(&TreeType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
