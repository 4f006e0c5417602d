/* ecs_spatial._cneighbours: the array work of neighbours.py's NeighbourArrays, compiled.
 *
 * Each function here is the C of one pure-Python function of ecs_spatial/neighbours.py (its
 * reference, which ECS_SPATIAL_PURE=1 runs; tests/test_neighbour_arrays.py drives both side
 * by side): near_csr (the exact "within reach" filter of candidate pairs, both directions,
 * and the CSR of the neighbours), grid_csr (the same for every pair of members, the
 * candidates from a grid of their centres made afresh), without_self, diff_csr (enter and exit as flat sorted
 * pairs), translate (entity ids to rows) and gather (the moved boxes read, and grown for
 * the tree). The float rules are the index's own (_cquadtree_src/floats.h: geometry.py's
 * midpoint, _wrap.wrap_coord, CPython 3.11's math.hypot) and so is its query_radius test,
 * statement for statement, so that a pair is within reach here exactly when
 * QuadTree.query_radius answers it.
 *
 * Buffers are read with PyBUF_SIMPLE as flat 8-byte items (int64 or double, as each
 * argument says) and released before returning; no Python code runs while they are held.
 * Results are new array('q') objects made from C memory.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_cquadtree_src/floats.h" /* the index's float rules */

/* neighbours._ROOM: a grown box must be this much narrower than half the period. */
#define ROOM (1.0 + 1e-9)

/* array.array, owned, imported at module init. */
static PyObject *array_type = NULL;

/* ------------------------------------------------------------------------------ floats */

/* The index's query_radius test: box b within r of (x, y). math.hypot's answer is within an
 * ulp of the distance and dx * dx + dy * dy within a few of its square, so where the square
 * is further than 1e-12 of r * r from it (r in a range where neither overflows nor loses the
 * margin to underflow) the side of r is known without the exact hypot. */
static inline int
near_point(const double *b, double x, double y, double r)
{
    double dx = gap(x, b[0], b[2]), dy = gap(y, b[1], b[3]);
    if (!(dx <= r && dy <= r)) {
        return 0;
    }
    if (r >= 1e-100 && r <= 1e100) {
        double sq = dx * dx + dy * dy, rr = r * r;
        if (sq < rr * (1.0 - 1e-12)) {
            return 1;
        }
        if (sq > rr * (1.0 + 1e-12)) {
            return 0;
        }
    }
    return py_hypot(dx, dy) <= r;
}

/* neighbours.within_reference: whether box b is within r of the centre of box a, by the
 * minimum-image distance when period (x0, y0, w, h, ex, ey) is not NULL. */
static int
within(const double *a, const double *b, double r, const double *period)
{
    double cx = midpoint(a[0], a[2]), cy = midpoint(a[1], a[3]);
    if (period == NULL) {
        return near_point(b, cx, cy, r);
    }
    cx = wrap_coord(cx, period[0], period[2], period[4]);
    cy = wrap_coord(cy, period[1], period[3], period[5]);
    const double sx[3] = {0.0, period[2], -period[2]};
    const double sy[3] = {0.0, period[3], -period[3]};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            if (near_point(b, cx + sx[i], cy + sy[j], r)) {
                return 1;
            }
        }
    }
    return 0;
}

/* within() from a's centre as within() works it out (midpoint, wrapped on a torus), each
 * axis's three gaps computed once: the same floats and the same answer, a third of the
 * work where no image is near. */
static inline int
near_gaps(double dx, double dy, double r)
{
    if (!(dx <= r && dy <= r)) {
        return 0;
    }
    if (r >= 1e-100 && r <= 1e100) {
        double sq = dx * dx + dy * dy, rr = r * r;
        if (sq < rr * (1.0 - 1e-12)) {
            return 1;
        }
        if (sq > rr * (1.0 + 1e-12)) {
            return 0;
        }
    }
    return py_hypot(dx, dy) <= r;
}

static inline int
within_centre(double cx, double cy, const double *b, double r, const double *period)
{
    double dx0 = gap(cx, b[0], b[2]), dy0 = gap(cy, b[1], b[3]);
    if (period == NULL) {
        return near_gaps(dx0, dy0, r);
    }
    /* The answer is whether any of the nine images is near: the direct one first, the
     * others' gaps only where it is not. */
    if (near_gaps(dx0, dy0, r)) {
        return 1;
    }
    double dx[3], dy[3];
    dx[0] = dx0;
    dx[1] = gap(cx + period[2], b[0], b[2]);
    dx[2] = gap(cx + -period[2], b[0], b[2]);
    dy[0] = dy0;
    dy[1] = gap(cy + period[3], b[1], b[3]);
    dy[2] = gap(cy + -period[3], b[1], b[3]);
    for (int i = 0; i < 3; i++) {
        if (!(dx[i] <= r)) {
            continue;
        }
        for (int j = i == 0; j < 3; j++) {
            if (near_gaps(dx[i], dy[j], r)) {
                return 1;
            }
        }
    }
    return 0;
}

/* ----------------------------------------------------------------------------- buffers */

/* A flat buffer of 8-byte items. */
typedef struct {
    Py_buffer view;
    Py_ssize_t n; /* items */
    int held;
} Flat;

static int
flat_get(PyObject *obj, const char *name, Flat *f)
{
    f->held = 0;
    if (PyObject_GetBuffer(obj, &f->view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a buffer of 8-byte items, got %.200s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    f->held = 1;
    if (f->view.len % 8 != 0) {
        PyErr_Format(PyExc_ValueError, "%s must hold whole 8-byte items, got %zd bytes", name,
                     f->view.len);
        PyBuffer_Release(&f->view);
        f->held = 0;
        return -1;
    }
    f->n = f->view.len / 8;
    return 0;
}

static void
flat_release(Flat *f)
{
    if (f->held) {
        PyBuffer_Release(&f->view);
        f->held = 0;
    }
}

/* A new array('q') holding n int64 from p: an empty one extended from a memoryview of p
 * (one copy, where a bytes argument would make two). */
static PyObject *
new_q(const int64_t *p, Py_ssize_t n)
{
    PyObject *a = PyObject_CallFunction(array_type, "s", "q"); /* new */
    if (a == NULL || n == 0) {
        return a;
    }
    PyObject *view = PyMemoryView_FromMemory((char *)p, n * (Py_ssize_t)sizeof(int64_t),
                                             PyBUF_READ); /* new */
    PyObject *done = view == NULL ? NULL : PyObject_CallMethod(a, "frombytes", "O", view);
    /* new */
    Py_XDECREF(view);
    if (done == NULL) {
        Py_DECREF(a);
        return NULL;
    }
    Py_DECREF(done);
    return a;
}

/* ---------------------------------------------------------------------------- near_csr */

PyDoc_STRVAR(near_csr_doc,
"near_csr(candidates, boxes, rank, entities, n, radius, period, /)\n--\n\n"
"The neighbours of n watchers as CSR (offsets, ids): for each candidate pair of slots\n"
"(s, t) (candidates: int64, two a pair), t's entity is a neighbour of s's when the box of\n"
"t (boxes: doubles, four a slot) is within radius of the centre of s's box (and the same\n"
"the other way); rank (int64 a slot) is the slot's watcher position, entities (int64 a\n"
"slot) its entity id; each watcher's ids ascending. period: None or (x0, y0, w, h, ex,\n"
"ey). neighbours.near_csr_reference is the reference.");

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void
sort_i64(int64_t *p, Py_ssize_t n)
{
    if (n <= 16) { /* a watcher has a few neighbours: insertion sort */
        for (Py_ssize_t i = 1; i < n; i++) {
            int64_t v = p[i];
            Py_ssize_t j = i;
            while (j > 0 && p[j - 1] > v) {
                p[j] = p[j - 1];
                j--;
            }
            p[j] = v;
        }
        return;
    }
    qsort(p, (size_t)n, sizeof(int64_t), cmp_i64);
}

/* A kernel's period argument: None, a plain world (*per = NULL), or _wrap.Period's six floats
 * (into period, *per = period). 0, or -1 with the error, which names the kernel fn. */
static int
read_period(PyObject *arg, const char *fn, double period[6], const double **per)
{
    *per = NULL;
    if (arg == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != 6) {
        PyErr_Format(PyExc_TypeError, "%s(): period must be None or a 6-tuple", fn);
        return -1;
    }
    for (int i = 0; i < 6; i++) {
        period[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(arg, i)); /* borrowed */
        if (period[i] == -1.0 && PyErr_Occurred()) {
            return -1;
        }
    }
    *per = period;
    return 0;
}

/* The CSR kernels' arguments at args[0 .. 3): the watchers' count n (>= 0), the radius r and
 * the period (read_period()), with their errors in that order. 0, or -1 with the error. */
static int
read_n_r_period(PyObject *const *args, const char *fn, Py_ssize_t *n, double *r,
                double period[6], const double **per)
{
    *n = PyLong_AsSsize_t(args[0]);
    if (*n == -1 && PyErr_Occurred()) {
        return -1;
    }
    *r = PyFloat_AsDouble(args[1]);
    if ((*r == -1.0 && PyErr_Occurred()) || read_period(args[2], fn, period, per) < 0) {
        return -1;
    }
    if (*n < 0) {
        PyErr_Format(PyExc_ValueError, "%s(): n must be >= 0", fn);
        return -1;
    }
    return 0;
}

static PyObject *
near_csr(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "near_csr() takes 7 arguments, got %zd", nargs);
        return NULL;
    }
    Py_ssize_t n;
    double r, period[6];
    const double *per;
    if (read_n_r_period(args + 4, "near_csr", &n, &r, period, &per) < 0) {
        return NULL;
    }
    Flat cand, boxes, rank, ents;
    cand.held = boxes.held = rank.held = ents.held = 0;
    PyObject *result = NULL;
    int64_t *off = NULL, *ids = NULL, *fill = NULL;
    unsigned char *hit = NULL;
    if (flat_get(args[0], "candidates", &cand) < 0 || flat_get(args[1], "boxes", &boxes) < 0
        || flat_get(args[2], "rank", &rank) < 0 || flat_get(args[3], "entities", &ents) < 0) {
        goto done;
    }
    Py_ssize_t slots = rank.n;
    if (cand.n % 2 || ents.n != slots || boxes.n != 4 * slots) {
        PyErr_SetString(PyExc_ValueError,
                        "near_csr(): candidates must be pairs, and boxes, rank and entities "
                        "of one length in slots");
        goto done;
    }
    const int64_t *c = (const int64_t *)cand.view.buf;
    const double *b = (const double *)boxes.view.buf;
    const int64_t *rk = (const int64_t *)rank.view.buf;
    const int64_t *en = (const int64_t *)ents.view.buf;
    Py_ssize_t k = cand.n / 2;
    for (Py_ssize_t i = 0; i < 2 * k; i++) {
        if (c[i] < 0 || c[i] >= slots || rk[c[i]] < -1 || rk[c[i]] >= n) {
            PyErr_Format(PyExc_ValueError, "near_csr(): candidate slot %lld is out of range",
                         (long long)c[i]);
            goto done;
        }
    }
    off = PyMem_Calloc((size_t)n + 1, sizeof(int64_t));
    hit = PyMem_Malloc(k ? (size_t)k : 1);
    if (off == NULL || hit == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* Pass 1: the tests, each pair's two outcomes kept, and the count per watcher. A slot
     * whose rank is -1 is no watcher (it is only seen). */
    for (Py_ssize_t i = 0; i < k; i++) {
        int64_t s = c[2 * i], t = c[2 * i + 1];
        unsigned char h = 0;
        if (s != t) {
            if (rk[s] >= 0 && within(b + 4 * s, b + 4 * t, r, per)) {
                h |= 1;
                off[rk[s] + 1]++;
            }
            if (rk[t] >= 0 && within(b + 4 * t, b + 4 * s, r, per)) {
                h |= 2;
                off[rk[t] + 1]++;
            }
        }
        hit[i] = h;
    }
    for (Py_ssize_t w = 0; w < n; w++) {
        off[w + 1] += off[w];
    }
    Py_ssize_t total = (Py_ssize_t)off[n];
    ids = PyMem_Malloc(total ? (size_t)total * sizeof(int64_t) : 1);
    fill = PyMem_Malloc(n ? (size_t)n * sizeof(int64_t) : 1);
    if (ids == NULL || fill == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (n) {
        memcpy(fill, off, (size_t)n * sizeof(int64_t));
    }
    /* Pass 2: scatter, then sort each watcher's ids. */
    for (Py_ssize_t i = 0; i < k; i++) {
        int64_t s = c[2 * i], t = c[2 * i + 1];
        if (hit[i] & 1) {
            ids[fill[rk[s]]++] = en[t];
        }
        if (hit[i] & 2) {
            ids[fill[rk[t]]++] = en[s];
        }
    }
    for (Py_ssize_t w = 0; w < n; w++) {
        sort_i64(ids + off[w], (Py_ssize_t)(off[w + 1] - off[w]));
    }
    flat_release(&cand);
    flat_release(&boxes);
    flat_release(&rank);
    flat_release(&ents);
    PyObject *o = new_q(off, n + 1); /* new */
    if (o != NULL) {
        PyObject *d = new_q(ids, total); /* new */
        if (d != NULL) {
            result = PyTuple_Pack(2, o, d); /* new, or NULL */
            Py_DECREF(d);
        }
        Py_DECREF(o);
    }
done:
    flat_release(&cand);
    flat_release(&boxes);
    flat_release(&rank);
    flat_release(&ents);
    PyMem_Free(off);
    PyMem_Free(ids);
    PyMem_Free(fill);
    PyMem_Free(hit);
    return result;
}

/* ---------------------------------------------------------------------------- grid_csr */

PyDoc_STRVAR(grid_csr_doc,
"grid_csr(boxes, rank, entities, n, radius, period, /)\n--\n\n"
"The CSR (offsets, ids) of near_csr for every pair of members, from a uniform grid of the\n"
"members' centres made afresh (no candidates, no tree): a slot is a member when its rank\n"
"is >= 0, and every member is a watcher. None where the grid is refused (a radius, a\n"
"period value or a member's coordinate past 1e100 in size; a member's half width or half\n"
"height over radius; on a torus a period under three cells). neighbours.grid_csr_reference\n"
"is the reference and says why the grid's candidates are a superset.");

/* The cell side below which no pair within reach is apart (grid_csr_reference's D). */
static inline double
grid_reach(double radius, double half, double big)
{
    return (radius + half) * (1.0 + 1e-6) + big * 1e-9 + 1e-300;
}

/* Working memory kept from call to call, grown and never shrunk: fresh pages for the working
 * arrays of each frame cost more in faults than the work done in them. Only grid_csr uses
 * it, with the GIL held and no Python code run while it does. */
enum { S_REC, S_BYCOL, S_XY, S_COLS, S_SLOTS, S_BUCKET, S_ROWS, S_ENT, S_OFF, S_IDS, S_HITS,
       S_COUNT };
static void *scratch[S_COUNT];
static size_t scratch_size[S_COUNT];

/* At least bytes of scratch buffer which, its content kept when keep is set; NULL with
 * MemoryError. */
static void *
scratch_get(int which, size_t bytes, int keep)
{
    if (bytes == 0) {
        bytes = 1;
    }
    if (scratch_size[which] < bytes) {
        size_t want = bytes + bytes / 4;
        void *p;
        if (keep) {
            p = PyMem_Realloc(scratch[which], want);
        }
        else {
            PyMem_Free(scratch[which]);
            scratch[which] = NULL;
            scratch_size[which] = 0;
            p = PyMem_Malloc(want);
        }
        if (p == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        scratch[which] = p;
        scratch_size[which] = want;
    }
    return scratch[which];
}

/* A member as grid_csr reads it: its centre (as within() takes it), its slot and its cell;
 * half a cache line, read at once where the members are put in cell order. */
typedef struct {
    double cx, cy;
    int64_t slot;
    int32_t col, row;
} Rec;

/* grid_csr's hits, and what testing a pair needs: the centres in cell order (two doubles a
 * member), the slots in that order, the boxes (four doubles a slot). */
typedef struct {
    int64_t *hit;
    Py_ssize_t n, cap;
    const double *xy;
    const int64_t *slot;
    const double *b;
    double reach, r;
    const double *per;
    double w, h;
} Pairs;

/* The pair of sorted positions (j0, j), near enough on both axes, kept as j0 and 4 * j for
 * the exact tests (test_pairs). 0, or -1 with MemoryError. Out of line: few pairs come
 * here, and the sweep that calls it stays small. */
#if defined(__GNUC__)
__attribute__((noinline))
#elif defined(_MSC_VER)
__declspec(noinline)
#endif
static int
pair_keep(Pairs *o, int64_t j0, int64_t j)
{
    if (o->n == o->cap) {
        Py_ssize_t cap = o->cap ? 2 * o->cap : 4096;
        int64_t *p = scratch_get(S_HITS, (size_t)cap * 2 * sizeof(int64_t), 1);
        if (p == NULL) {
            return -1;
        }
        o->hit = p;
        o->cap = cap;
    }
    o->hit[2 * o->n] = j0;
    o->hit[2 * o->n++ + 1] = 4 * j;
    return 0;
}

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* Each kept pair tested both ways, the hits kept in place (their slots: s, then 4 * t plus
 * the directions) and the others dropped. A pair's boxes are read by slot, out of order: those
 * of the pair eight on are fetched ahead. */
static void
test_pairs(Pairs *o)
{
    int64_t *hit = o->hit;
    Py_ssize_t n = o->n, kept = 0;
    for (Py_ssize_t x = 0; x < n; x++) {
        if (x + 8 < n) {
            const double *f = o->b + 4 * o->slot[hit[2 * x + 16]];
            const double *g = o->b + 4 * o->slot[hit[2 * x + 17] >> 2];
            PREFETCH(f);
            PREFETCH(f + 3);
            PREFETCH(g);
            PREFETCH(g + 3);
        }
        int64_t j0 = hit[2 * x], j = hit[2 * x + 1] >> 2;
        int64_t s = o->slot[j0], t = o->slot[j];
        const double *pk = o->xy + 2 * j0, *q = o->xy + 2 * j;
        const double *bk = o->b + 4 * s, *bq = o->b + 4 * t;
        int how = within_centre(pk[0], pk[1], bq, o->r, o->per)
                  | within_centre(q[0], q[1], bk, o->r, o->per) << 1;
        if (how) {
            hit[2 * kept] = s;
            hit[2 * kept++ + 1] = 4 * t + how;
        }
    }
    o->n = kept;
}

/* The member at sorted position j0 against those at [a, e): each pair near enough on both
 * axes (by the minimum image on a torus) kept for the exact tests (pair_keep). */
static inline int
pairs_of(Pairs *o, int64_t j0, int64_t a, int64_t e)
{
    const double *pk = o->xy + 2 * j0;
    double px = pk[0], py = pk[1], reach = o->reach;
    for (int64_t j = a; j < e; j++) {
        const double *q = o->xy + 2 * j;
        double ex = fabs(px - q[0]), ey = fabs(py - q[1]);
        if (o->per != NULL) {
            ex = ex < o->w - ex ? ex : o->w - ex;
            ey = ey < o->h - ey ? ey : o->h - ey;
        }
        if (ex > reach || ey > reach) {
            continue;
        }
        if (pair_keep(o, j0, j) < 0) {
            return -1;
        }
    }
    return 0;
}

static PyObject *
grid_csr(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "grid_csr() takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    Py_ssize_t n;
    double r, period[6];
    const double *per;
    if (read_n_r_period(args + 3, "grid_csr", &n, &r, period, &per) < 0) {
        return NULL;
    }
    Flat boxes, rank, ents;
    boxes.held = rank.held = ents.held = 0;
    PyObject *result = NULL;
    if (flat_get(args[0], "boxes", &boxes) < 0 || flat_get(args[1], "rank", &rank) < 0
        || flat_get(args[2], "entities", &ents) < 0) {
        goto done;
    }
    Py_ssize_t slots = rank.n;
    if (ents.n != slots || boxes.n != 4 * slots) {
        PyErr_SetString(PyExc_ValueError,
                        "grid_csr(): boxes, rank and entities must be of one length in slots");
        goto done;
    }
    const double *b = (const double *)boxes.view.buf;
    const int64_t *rk = (const int64_t *)rank.view.buf;
    const int64_t *en = (const int64_t *)ents.view.buf;
    /* The members (rank >= 0) in slot order, each one's centre (as within() takes it) and
     * slot; and the refusals: a coordinate past 1e100 (or NaN), a half width or height over
     * r (the largest of them, half, is over r: none of them is NaN where every coordinate
     * is finite). The boxes are read once, in order. */
    Rec *rec = scratch_get(S_REC, (size_t)slots * sizeof(Rec), 0);
    if (rec == NULL) {
        goto done;
    }
    int refused = !(r <= 1e100);
    double half = 0.0, big = 0.0;
    if (per != NULL) {
        for (int i = 0; i < 6; i++) {
            double a = fabs(per[i]);
            refused |= !(a <= 1e100);
            big = a > big ? a : big;
        }
    }
    double x0 = 0.0, y0 = 0.0, x1 = 0.0, y1 = 0.0;
    Py_ssize_t m = 0;
    for (Py_ssize_t s = 0; s < slots; s++) {
        int64_t v = rk[s];
        if ((uint64_t)v >= (uint64_t)n) {
            if (v == -1) {
                continue;
            }
            PyErr_Format(PyExc_ValueError, "grid_csr(): slot %zd's rank %lld is out of range",
                         s, (long long)v);
            goto done;
        }
        const double *q = b + 4 * s;
        double a = fabs(q[0]), c = fabs(q[1]), d = fabs(q[2]), e = fabs(q[3]);
        a = a > c ? a : c;
        d = d > e ? d : e;
        a = a > d ? a : d;
        refused |= !(a <= 1e100);
        big = a > big ? a : big;
        double hw = (q[2] - q[0]) * 0.5, hh = (q[3] - q[1]) * 0.5;
        hw = hw > hh ? hw : hh;
        half = hw > half ? hw : half;
        /* midpoint()'s sum is finite where the grid is not refused (every coordinate within
         * 1e100), and the centres of a refused grid are never read. */
        double cx = (q[0] + q[2]) * 0.5, cy = (q[1] + q[3]) * 0.5;
        if (per != NULL) {
            cx = wrap_coord(cx, per[0], per[2], per[4]);
            cy = wrap_coord(cy, per[1], per[3], per[5]);
        }
        else {
            if (m == 0) {
                x0 = x1 = cx;
                y0 = y1 = cy;
            }
            x0 = cx < x0 ? cx : x0;
            x1 = cx > x1 ? cx : x1;
            y0 = cy < y0 ? cy : y0;
            y1 = cy > y1 ? cy : y1;
        }
        rec[m].cx = cx;
        rec[m].cy = cy;
        rec[m++].slot = s;
    }
    refused |= half > r;
    double reach = grid_reach(r, half, big);
    if (refused || (per != NULL && (per[2] / reach < 3.0 || per[3] / reach < 3.0))) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* The cells: columns and rows at least reach across, at most cap of each (wider ones
     * where the members spread far). */
    double cap = 4.0 * (double)m + 16.0, fx, fy, sx, sy;
    cap = cap < 1e9 ? cap : 1e9;
    if (per == NULL) {
        sx = sy = reach;
        while ((fx = floor((x1 - x0) / sx) + 1.0) > cap) {
            sx *= 2.0;
        }
        while ((fy = floor((y1 - y0) / sy) + 1.0) > cap) {
            sy *= 2.0;
        }
    }
    else {
        x0 = per[0];
        y0 = per[1];
        fx = floor(per[2] / reach);
        fy = floor(per[3] / reach);
        while (fx > cap) {
            fx = fx > 6.0 ? floor(fx * 0.5) : 3.0;
        }
        while (fy > cap) {
            fy = fy > 6.0 ? floor(fy * 0.5) : 3.0;
        }
        sx = per[2] / fx;
        sy = per[3] / fy;
    }
    /* Under 1e9 columns and rows: a cell number fits in an int32_t. */
    int32_t ncx = (int32_t)fx, ncy = (int32_t)fy;
    Py_ssize_t *by_col = scratch_get(S_BYCOL, (size_t)m * sizeof(Py_ssize_t), 0);
    double *xy = scratch_get(S_XY, (size_t)m * 2 * sizeof(double), 0);
    int32_t *col = scratch_get(S_COLS, ((size_t)m + 1) * sizeof(int32_t), 0);
    int64_t *slot_of = scratch_get(S_SLOTS, (size_t)m * sizeof(int64_t), 0);
    size_t nb = (size_t)(ncx > ncy ? ncx : ncy) + 1;
    Py_ssize_t *bucket = scratch_get(S_BUCKET, nb * sizeof(Py_ssize_t), 0);
    Py_ssize_t *rows = scratch_get(S_ROWS, ((size_t)ncy + 2) * sizeof(Py_ssize_t), 0);
    if (by_col == NULL || xy == NULL || col == NULL
        || slot_of == NULL || bucket == NULL || rows == NULL) {
        goto done;
    }
    memset(bucket, 0, nb * sizeof(Py_ssize_t));
    memset(rows, 0, ((size_t)ncy + 2) * sizeof(Py_ssize_t));
    /* Each member's cell (a floor of its place over the side, clamped: in order as the
     * centres are, which is all the superset needs). u and v are >= 0: every centre is at
     * or past x0, y0 (the smallest on a plane; on a torus wrap_coord's images are). */
    double ix = 1.0 / sx, iy = 1.0 / sy;
    for (Py_ssize_t i = 0; i < m; i++) {
        double u = (rec[i].cx - x0) * ix, v = (rec[i].cy - y0) * iy;
        int32_t a = u < (double)ncx ? (int32_t)u : ncx - 1;
        int32_t c = v < (double)ncy ? (int32_t)v : ncy - 1;
        rec[i].col = a;
        rec[i].row = c;
        bucket[a + 1]++;
        rows[c + 1]++;
    }
    /* Two counting sorts: by column, then (stable) by row; rows[c] is where row c starts. */
    for (int32_t c = 0; c < ncx; c++) {
        bucket[c + 1] += bucket[c];
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        by_col[bucket[rec[i].col]++] = i;
    }
    for (int32_t c = 0; c < ncy; c++) {
        rows[c + 1] += rows[c];
    }
    /* The second sort puts each member in place at once: its centre in xy, its column in
     * col, its slot in slot_of (its box is read from there by the few pairs near enough to
     * be tested). */
    memcpy(bucket, rows, (size_t)ncy * sizeof(Py_ssize_t));
    for (Py_ssize_t j = 0; j < m; j++) {
        const Rec *e = rec + by_col[j];
        Py_ssize_t d = bucket[e->row]++;
        xy[2 * d] = e->cx;
        xy[2 * d + 1] = e->cy;
        col[d] = e->col;
        slot_of[d] = e->slot;
    }
    col[m] = 0;
    /* Each member against the members after it in its cell and in the next column of its
     * row, and the three columns about its own in the next row (on a torus columns and rows
     * wrap): each pair of next-door cells is looked at from one side only. A pair near
     * enough on both axes is kept (pair_keep), then tested (test_pairs). */
    Pairs out = {scratch[S_HITS], 0,
                 (Py_ssize_t)(scratch_size[S_HITS] / (2 * sizeof(int64_t))), xy, slot_of, b,
                 reach, r, per, per != NULL ? per[2] : 0.0, per != NULL ? per[3] : 0.0};
    const int torus = per != NULL;
    const int32_t last = ncx - 1;
    for (int32_t y = 0; y < ncy; y++) {
        Py_ssize_t r0 = rows[y], r1 = rows[y + 1];
        if (r0 == r1) {
            continue;
        }
        int has_next = y + 1 < ncy || torus;
        int32_t ny = y + 1 < ncy ? y + 1 : 0;
        Py_ssize_t n0 = rows[ny], n1 = has_next ? rows[ny + 1] : n0, p = n0;
        for (Py_ssize_t j0 = r0; j0 < r1; j0++) {
            int32_t c = col[j0];
            Py_ssize_t e;
            for (e = j0 + 1; e < r1 && col[e] <= c + 1; e++) { /* this row, after it */
            }
            if (e > j0 + 1 && pairs_of(&out, j0, j0 + 1, e) < 0) {
                goto done;
            }
            /* The next row, the three columns about c. p moves on about once a member, a
             * step as often as not: three steps without a branch (col[n1] is read, never
             * used: col has a place past the last member), the loop for the rest. */
            p += (p < n1) & (col[p] < c - 1);
            p += (p < n1) & (col[p] < c - 1);
            p += (p < n1) & (col[p] < c - 1);
            while (p < n1 && col[p] < c - 1) {
                p++;
            }
            for (e = p; e < n1 && col[e] <= c + 1; e++) {
            }
            if (e > p && pairs_of(&out, j0, p, e) < 0) {
                goto done;
            }
            if (torus && (c == 0 || c == last)) { /* the columns across the seam */
                if (c == last) { /* this row's first column, and the next row's */
                    for (e = r0; e < r1 && col[e] == 0; e++) {
                    }
                    if (e > r0 && pairs_of(&out, j0, r0, e) < 0) {
                        goto done;
                    }
                    for (e = n0; e < n1 && col[e] == 0; e++) {
                    }
                    if (e > n0 && pairs_of(&out, j0, n0, e) < 0) {
                        goto done;
                    }
                }
                else { /* the next row's last column */
                    for (e = n1; e > n0 && col[e - 1] == last; e--) {
                    }
                    if (n1 > e && pairs_of(&out, j0, e, n1) < 0) {
                        goto done;
                    }
                }
            }
        }
    }
    test_pairs(&out);
    int64_t *hit = out.hit;
    Py_ssize_t nh = out.n;
    /* The CSR by watcher. Each hit's one or two entries (the watcher's rank, the other's
     * entity), their slots' ranks and entities fetched eight hits ahead; watcher w's count
     * goes to off[w + 2]; summed, off[w + 1] is where w's ids start, and each placed id
     * moves it on, to where they end: off[0 .. n] is then the CSR's. */
    int64_t *ent = scratch_get(S_ENT, (size_t)nh * 4 * sizeof(int64_t), 0);
    int64_t *off = scratch_get(S_OFF, ((size_t)n + 2) * sizeof(int64_t), 0);
    if (ent == NULL || off == NULL) {
        goto done;
    }
    Py_ssize_t ne = 0;
    for (Py_ssize_t x = 0; x < nh; x++) {
        if (x + 8 < nh) {
            PREFETCH(rk + hit[2 * x + 16]);
            PREFETCH(en + hit[2 * x + 16]);
            PREFETCH(rk + (hit[2 * x + 17] >> 2));
            PREFETCH(en + (hit[2 * x + 17] >> 2));
        }
        int64_t s = hit[2 * x], t = hit[2 * x + 1] >> 2, how = hit[2 * x + 1] & 3;
        if (how & 1) {
            ent[2 * ne] = rk[s];
            ent[2 * ne++ + 1] = en[t];
        }
        if (how & 2) {
            ent[2 * ne] = rk[t];
            ent[2 * ne++ + 1] = en[s];
        }
    }
    memset(off, 0, ((size_t)n + 2) * sizeof(int64_t));
    for (Py_ssize_t x = 0; x < ne; x++) {
        if (x + 8 < ne) {
            PREFETCH(off + ent[2 * x + 16] + 2);
        }
        off[ent[2 * x] + 2]++;
    }
    for (Py_ssize_t v = 1; v <= n; v++) {
        off[v + 1] += off[v];
    }
    Py_ssize_t total = (Py_ssize_t)off[n + 1];
    int64_t *ids = scratch_get(S_IDS, (size_t)total * sizeof(int64_t), 0);
    if (ids == NULL) {
        goto done;
    }
    for (Py_ssize_t x = 0; x < ne; x++) {
        if (x + 8 < ne) {
            PREFETCH(off + ent[2 * x + 16] + 1);
        }
        ids[off[ent[2 * x] + 1]++] = ent[2 * x + 1];
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        if (off[v + 1] - off[v] > 1) {
            sort_i64(ids + off[v], (Py_ssize_t)(off[v + 1] - off[v]));
        }
    }
    flat_release(&boxes);
    flat_release(&rank);
    flat_release(&ents);
    PyObject *o = new_q(off, n + 1); /* new */
    if (o != NULL) {
        PyObject *d = new_q(ids, total); /* new */
        if (d != NULL) {
            result = PyTuple_Pack(2, o, d); /* new, or NULL */
            Py_DECREF(d);
        }
        Py_DECREF(o);
    }
done:
    flat_release(&boxes);
    flat_release(&rank);
    flat_release(&ents);
    return result;
}

/* ------------------------------------------------------------------------ without_self */

PyDoc_STRVAR(without_self_doc,
"without_self(watchers, offsets, ids, /)\n--\n\n"
"The CSR (offsets, ids) with each watcher's own id dropped from its list (what\n"
"QuadTree.query_radius_many answers for the watchers' centres includes the watcher).\n"
"neighbours.without_self_reference is the reference.");

static PyObject *
without_self(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "without_self() takes 3 arguments, got %zd", nargs);
        return NULL;
    }
    Flat w, o, d;
    w.held = o.held = d.held = 0;
    PyObject *result = NULL;
    int64_t *off = NULL, *ids = NULL;
    if (flat_get(args[0], "watchers", &w) < 0 || flat_get(args[1], "offsets", &o) < 0
        || flat_get(args[2], "ids", &d) < 0) {
        goto done;
    }
    const int64_t *wv = (const int64_t *)w.view.buf, *ov = (const int64_t *)o.view.buf;
    const int64_t *dv = (const int64_t *)d.view.buf;
    Py_ssize_t n = w.n;
    if (o.n != n + 1 || ov[0] != 0 || ov[n] != d.n) {
        PyErr_SetString(PyExc_ValueError, "without_self(): offsets must be CSR offsets of "
                                          "the watchers over ids");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (ov[i + 1] < ov[i]) {
            PyErr_SetString(PyExc_ValueError, "without_self(): offsets must be CSR offsets "
                                              "of the watchers over ids");
            goto done;
        }
    }
    off = PyMem_Malloc(((size_t)n + 1) * sizeof(int64_t));
    ids = PyMem_Malloc(d.n ? (size_t)d.n * sizeof(int64_t) : 1);
    if (off == NULL || ids == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    off[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        for (int64_t j = ov[i]; j < ov[i + 1]; j++) {
            if (dv[j] != wv[i]) {
                ids[m++] = dv[j];
            }
        }
        off[i + 1] = m;
    }
    flat_release(&w);
    flat_release(&o);
    flat_release(&d);
    PyObject *a = new_q(off, n + 1); /* new */
    if (a != NULL) {
        PyObject *b = new_q(ids, m); /* new */
        if (b != NULL) {
            result = PyTuple_Pack(2, a, b);
            Py_DECREF(b);
        }
        Py_DECREF(a);
    }
done:
    flat_release(&w);
    flat_release(&o);
    flat_release(&d);
    PyMem_Free(off);
    PyMem_Free(ids);
    return result;
}

/* ---------------------------------------------------------------------------- diff_csr */

PyDoc_STRVAR(diff_csr_doc,
"diff_csr(old_watchers, old_offsets, old_ids, watchers, offsets, ids, /)\n--\n\n"
"(entered, exited): the (watcher, other) pairs of the new CSR not in the old one, and of\n"
"the old not in the new, each flat in an array('q'), sorted ascending. Both CSRs have\n"
"their watchers ascending and each watcher's ids ascending.\n"
"neighbours.diff_csr_reference is the reference.");

typedef struct {
    int64_t *p;
    Py_ssize_t n, cap;
} Out;

static int
out_pair(Out *o, int64_t a, int64_t b)
{
    if (o->n + 2 > o->cap) {
        Py_ssize_t cap = o->cap ? 2 * o->cap : 64;
        int64_t *p = PyMem_Realloc(o->p, (size_t)cap * sizeof(int64_t));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        o->p = p;
        o->cap = cap;
    }
    o->p[o->n++] = a;
    o->p[o->n++] = b;
    return 0;
}

/* Each pair of watcher a's old ids [i, ie) and new ids [j, je), merged. */
static int
merge_ids(int64_t a, const int64_t *old, int64_t i, int64_t ie, const int64_t *now, int64_t j,
          int64_t je, Out *in, Out *out)
{
    while (i < ie || j < je) {
        if (j >= je || (i < ie && old[i] < now[j])) {
            if (out_pair(out, a, old[i++]) < 0) {
                return -1;
            }
        }
        else if (i >= ie || now[j] < old[i]) {
            if (out_pair(in, a, now[j++]) < 0) {
                return -1;
            }
        }
        else {
            i++;
            j++;
        }
    }
    return 0;
}

/* Whether o is CSR offsets of the watchers w over ids d: its length and ends, and when whole
 * is set its order too (else the caller checks that as it goes). */
static int
csr_ok(const Flat *w, const Flat *o, const Flat *d, int whole)
{
    const int64_t *ov = (const int64_t *)o->view.buf;
    if (o->n != w->n + 1 || ov[0] != 0 || ov[w->n] != d->n) {
        return 0;
    }
    for (Py_ssize_t i = 0; whole && i < w->n; i++) {
        if (ov[i + 1] < ov[i]) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
diff_csr(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "diff_csr() takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    Flat f[6];
    static const char *names[6] = {"old_watchers", "old_offsets", "old_ids",
                                   "watchers", "offsets", "ids"};
    for (int i = 0; i < 6; i++) {
        f[i].held = 0;
    }
    Out in = {NULL, 0, 0}, out = {NULL, 0, 0};
    PyObject *result = NULL;
    for (int i = 0; i < 6; i++) {
        if (flat_get(args[i], names[i], &f[i]) < 0) {
            goto done;
        }
    }
    const int64_t *ow = f[0].view.buf, *oo = f[1].view.buf, *od = f[2].view.buf;
    const int64_t *nw = f[3].view.buf, *no = f[4].view.buf, *nd = f[5].view.buf;
    Py_ssize_t i = 0, j = 0, on = f[0].n, nn = f[3].n;
    /* The same watchers as before (the frame to frame case): one pass, the offsets' order
     * checked in it, each list compared whole before any merge. */
    int same = on == nn
               && (ow == nw || on == 0 || memcmp(ow, nw, (size_t)on * sizeof(int64_t)) == 0);
    if (!csr_ok(&f[0], &f[1], &f[2], !same) || !csr_ok(&f[3], &f[4], &f[5], !same)) {
        goto bad_csr;
    }
    int err = 0;
    if (same) {
        i = 0;
        while (i < on) {
            /* A run of watchers [i, k) whose lists kept their lengths (their offsets
             * shifted by one delta, in order): one memcmp for all their ids. */
            int64_t delta = oo[i] - no[i];
            Py_ssize_t k = i;
            while (k < on && oo[k + 1] - no[k + 1] == delta && oo[k + 1] >= oo[k]) {
                k++;
            }
            Py_ssize_t end = k > i ? k : i + 1;
            int64_t a0 = oo[i], a1 = oo[end], b0 = no[i], b1 = no[end];
            if (a1 < a0 || b1 < b0 || a1 > f[2].n || b1 > f[5].n) {
                goto bad_csr; /* out of order, or past the ids */
            }
            if (k > i
                && (a1 == a0 || !memcmp(od + a0, nd + b0, (size_t)(a1 - a0) * sizeof(int64_t)))) {
                i = k;
                continue;
            }
            for (; i < end; i++) { /* each list of the run, or the one that changed length */
                a0 = oo[i];
                a1 = oo[i + 1];
                b0 = no[i];
                b1 = no[i + 1];
                if (a1 - a0 == b1 - b0
                    && (a1 == a0
                        || !memcmp(od + a0, nd + b0, (size_t)(a1 - a0) * sizeof(int64_t)))) {
                    continue;
                }
                if (merge_ids(ow[i], od, a0, a1, nd, b0, b1, &in, &out) < 0) {
                    goto done;
                }
            }
        }
        j = nn;
    }
    while (err == 0 && (i < on || j < nn)) {
        if (j >= nn || (i < on && ow[i] < nw[j])) {
            err = merge_ids(ow[i], od, oo[i], oo[i + 1], nd, 0, 0, &in, &out);
            i++;
        }
        else if (i >= on || nw[j] < ow[i]) {
            err = merge_ids(nw[j], od, 0, 0, nd, no[j], no[j + 1], &in, &out);
            j++;
        }
        else {
            /* A watcher in both: most lists are as they were (mostly empty), compared
             * whole before any merge. */
            int64_t a0 = oo[i], a1 = oo[i + 1], b0 = no[j], b1 = no[j + 1];
            if (a1 - a0 != b1 - b0
                || (a1 > a0 && memcmp(od + a0, nd + b0, (size_t)(a1 - a0) * sizeof(int64_t)))) {
                err = merge_ids(ow[i], od, a0, a1, nd, b0, b1, &in, &out);
            }
            i++;
            j++;
        }
    }
    if (err < 0) {
        goto done;
    }
    for (int k = 0; k < 6; k++) {
        flat_release(&f[k]);
    }
    PyObject *a = new_q(in.p, in.n); /* new */
    if (a != NULL) {
        PyObject *b = new_q(out.p, out.n); /* new */
        if (b != NULL) {
            result = PyTuple_Pack(2, a, b);
            Py_DECREF(b);
        }
        Py_DECREF(a);
    }
    goto done;
bad_csr:
    PyErr_SetString(PyExc_ValueError, "diff_csr(): offsets must be CSR offsets of the "
                                      "watchers over ids");
done:
    for (int k = 0; k < 6; k++) {
        flat_release(&f[k]);
    }
    PyMem_Free(in.p);
    PyMem_Free(out.p);
    return result;
}

/* --------------------------------------------------------------------------- translate */

PyDoc_STRVAR(translate_doc,
"translate(table, values, /)\n--\n\n"
"array('q') of table[v] for each v of values (int64 both), -1 where v is not an index of\n"
"table. neighbours.translate_reference is the reference.");

static PyObject *
translate(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "translate() takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    Flat t, v;
    t.held = v.held = 0;
    PyObject *result = NULL, *a = NULL;
    if (flat_get(args[0], "table", &t) < 0 || flat_get(args[1], "values", &v) < 0) {
        goto done;
    }
    /* The answer made as a copy of the values (the array module's own C: no Python code
     * runs), then each value replaced in place: no buffer of our own to fault in and copy
     * from each call. */
    a = new_q((const int64_t *)v.view.buf, v.n); /* new */
    if (a == NULL) {
        goto done;
    }
    Py_buffer out;
    if (PyObject_GetBuffer(a, &out, PyBUF_WRITABLE) < 0) {
        goto done;
    }
    int64_t *o = out.buf;
    const int64_t *tv = t.view.buf;
    Py_ssize_t size = t.n;
    for (Py_ssize_t i = 0; i < v.n; i++) {
        int64_t x = o[i];
        o[i] = (x >= 0 && x < size) ? tv[x] : -1;
    }
    PyBuffer_Release(&out);
    result = a;
    a = NULL;
done:
    flat_release(&t);
    flat_release(&v);
    Py_XDECREF(a);
    return result;
}

/* ------------------------------------------------------------------------------ gather */

PyDoc_STRVAR(gather_doc,
"gather(get, entities, slot_of, boxes, radius, period, /)\n--\n\n"
"For each entity of the iterable entities with a box (get(entity), a tuple of four floats)\n"
"and a slot (slot_of[entity]): the box written into boxes (a writable buffer of doubles,\n"
"four a slot) at its slot, and the slot and the box grown for the tree (neighbours.grown)\n"
"appended to the answer. (slots, grown, odd, fits): slots an array('q'), grown an\n"
"array('d') four a slot, odd the entities without a box or a slot (a list, in the\n"
"iteration's order), fits False as soon as a grown box is too wide for the period (the\n"
"answer is then cut short there). neighbours.gather_reference is the reference.");

/* neighbours.grown: 1 with g[4] filled, or 0 where it is too wide for the period. */
static inline int
grown(const double b[4], double radius, const double *per, double g[4])
{
    double sl = radius * 1e-12 + (per != NULL ? (per[2] + per[3]) * 1e-12 : 0.0);
    double slack = (fabs(b[0]) + fabs(b[1]) + fabs(b[2]) + fabs(b[3])) * 1e-12 + sl + 1e-300;
    double h = radius * 0.5 + slack;
    double v;
    v = b[0] - h;
    g[0] = v > -DBL_MAX ? v : -DBL_MAX;
    v = b[1] - h;
    g[1] = v > -DBL_MAX ? v : -DBL_MAX;
    v = b[2] + h;
    g[2] = v < DBL_MAX ? v : DBL_MAX;
    v = b[3] + h;
    g[3] = v < DBL_MAX ? v : DBL_MAX;
    if (per != NULL
        && !((g[2] - g[0]) * ROOM <= per[2] * 0.5 && (g[3] - g[1]) * ROOM <= per[3] * 0.5)) {
        return 0;
    }
    return 1;
}

typedef struct {
    double *p;
    Py_ssize_t n, cap;
} DOut;

static int
d_push4(DOut *o, const double g[4])
{
    if (o->n + 4 > o->cap) {
        Py_ssize_t cap = o->cap ? 2 * o->cap : 256;
        double *p = PyMem_Realloc(o->p, (size_t)cap * sizeof(double));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->n, g, 4 * sizeof(double));
    o->n += 4;
    return 0;
}

static int
q_push(Out *o, int64_t v)
{
    if (o->n + 1 > o->cap) {
        Py_ssize_t cap = o->cap ? 2 * o->cap : 64;
        int64_t *p = PyMem_Realloc(o->p, (size_t)cap * sizeof(int64_t));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        o->p = p;
        o->cap = cap;
    }
    o->p[o->n++] = v;
    return 0;
}

/* The four floats of a box (a tuple of four floats), or -1 with TypeError. */
static int
box_of(PyObject *box, double b[4])
{
    if (!PyTuple_Check(box) || PyTuple_GET_SIZE(box) != 4) {
        PyErr_Format(PyExc_TypeError, "gather(): a box is a tuple of four floats, got %.200s",
                     Py_TYPE(box)->tp_name);
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        PyObject *v = PyTuple_GET_ITEM(box, i); /* borrowed */
        if (!PyFloat_CheckExact(v)) {
            PyErr_Format(PyExc_TypeError, "gather(): a box is a tuple of four floats, got "
                                          "a %.200s in it", Py_TYPE(v)->tp_name);
            return -1;
        }
        b[i] = PyFloat_AS_DOUBLE(v);
    }
    return 0;
}

static PyObject *
gather(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "gather() takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *get = args[0], *slot_of = args[2];
    if (!PyDict_Check(slot_of)) {
        PyErr_SetString(PyExc_TypeError, "gather(): slot_of must be a dict");
        return NULL;
    }
    double radius = PyFloat_AsDouble(args[4]);
    if (radius == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    double period[6];
    const double *per;
    if (read_period(args[5], "gather", period, &per) < 0) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(args[1]); /* new */
    if (it == NULL) {
        return NULL;
    }
    PyObject *odd = PyList_New(0); /* new */
    if (odd == NULL) {
        Py_DECREF(it);
        return NULL;
    }
    Out slots = {NULL, 0, 0};
    DOut out = {NULL, 0, 0};
    PyObject *result = NULL, *item;
    int fits = 1;
    /* The boxes buffer is not held across the loop (get() is Python code that may resize
     * it): each write takes it for that write only. */
    while (fits && (item = PyIter_Next(it)) != NULL) { /* new */
        PyObject *box = PyObject_CallOneArg(get, item); /* new */
        if (box == NULL) {
            Py_DECREF(item);
            goto done;
        }
        PyObject *slot = box == Py_None ? NULL : PyDict_GetItemWithError(slot_of, item);
        /* borrowed */
        if (slot == NULL) {
            Py_DECREF(box);
            int bad = PyErr_Occurred() != NULL || PyList_Append(odd, item) < 0;
            Py_DECREF(item);
            if (bad) {
                goto done;
            }
            continue;
        }
        Py_DECREF(item);
        double b[4], g[4];
        int err = box_of(box, b);
        Py_DECREF(box);
        long long s = err < 0 ? -1 : PyLong_AsLongLong(slot);
        if (err < 0 || (s == -1 && PyErr_Occurred())) {
            goto done;
        }
        if (!grown(b, radius, per, g)) {
            fits = 0;
            break;
        }
        Py_buffer view;
        if (PyObject_GetBuffer(args[3], &view, PyBUF_WRITABLE) < 0) {
            goto done;
        }
        if (s < 0 || (Py_ssize_t)(4 * s + 4) * (Py_ssize_t)sizeof(double) > view.len) {
            PyBuffer_Release(&view);
            PyErr_Format(PyExc_ValueError, "gather(): slot %lld is past the boxes", s);
            goto done;
        }
        memcpy((double *)view.buf + 4 * s, b, sizeof b);
        PyBuffer_Release(&view);
        if (q_push(&slots, (int64_t)s) < 0 || d_push4(&out, g) < 0) {
            goto done;
        }
    }
    if (PyErr_Occurred()) {
        goto done;
    }
    PyObject *a = new_q(slots.p, slots.n); /* new */
    if (a != NULL) {
        static const double none = 0.0;
        PyObject *d = PyObject_CallFunction(
            array_type, "sy#", "d", out.n ? (const char *)out.p : (const char *)&none,
            out.n * (Py_ssize_t)sizeof(double)); /* new */
        if (d != NULL) {
            result = Py_BuildValue("(OOOO)", a, d, odd, fits ? Py_True : Py_False);
            Py_DECREF(d);
        }
        Py_DECREF(a);
    }
done:
    Py_DECREF(it);
    Py_DECREF(odd);
    PyMem_Free(slots.p);
    PyMem_Free(out.p);
    return result;
}

/* ------------------------------------------------------------------------ gather_moves */

PyDoc_STRVAR(gather_moves_doc,
"gather_moves(ids, boxes, n, slot_at, kept, radius, period, slots, grown, at, /)\n--\n\n"
"gather() for n moves in two buffers (the index's move_many layout): ids int64, boxes four\n"
"float64 a move, each box as the index keeps it (_wrap.canonical on a torus). An entity's\n"
"slot is slot_at[entity] (a buffer of int64, -1 for none); an entity outside it, without a\n"
"slot, or whose box has no canonical image, is odd. The box is written into kept (a\n"
"writable buffer of doubles, four a slot) at its slot; the slots and the grown boxes into\n"
"the writable buffers slots (int64) and grown (four float64 a slot) from place at on, which\n"
"must have room for n more; slots and grown both None: no box grown and nothing written\n"
"there (the grid needs no tree). (k, odd, fits): k moves kept, odd a list of the odd\n"
"entities in order, fits False as soon as a grown box is too wide for the period (cut\n"
"short there; always True without grown). neighbours.gather_moves_reference is the\n"
"reference.");

static PyObject *
gather_moves(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10) {
        PyErr_Format(PyExc_TypeError, "gather_moves() takes 10 arguments, got %zd", nargs);
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[2]);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[9]);
    if (at == -1 && PyErr_Occurred()) {
        return NULL;
    }
    double radius = PyFloat_AsDouble(args[5]);
    if (radius == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    double period[6];
    const double *per;
    if (read_period(args[6], "gather_moves", period, &per) < 0) {
        return NULL;
    }
    Flat ids = {0}, boxes = {0}, table = {0};
    Py_buffer kept_view, slots_view, grown_view;
    kept_view.obj = slots_view.obj = grown_view.obj = NULL;
    PyObject *odd = NULL, *result = NULL;
    int fits = 1;
    Py_ssize_t k = 0;
    if (flat_get(args[0], "ids", &ids) < 0 || flat_get(args[1], "boxes", &boxes) < 0
        || flat_get(args[3], "slot_at", &table) < 0) {
        goto done;
    }
    if (n < 0 || n > ids.n || n > boxes.n / 4) {
        PyErr_Format(PyExc_ValueError, "gather_moves(): %zd moves, the buffers hold %zd ids "
                     "and %zd boxes", n, ids.n, boxes.n / 4);
        goto done;
    }
    if (PyObject_GetBuffer(args[4], &kept_view, PyBUF_WRITABLE) < 0) {
        kept_view.obj = NULL;
        goto done;
    }
    int grow = args[7] != Py_None;
    if (grow != (args[8] != Py_None)) {
        PyErr_SetString(PyExc_ValueError,
                        "gather_moves(): slots and grown must be both None or both buffers");
        goto done;
    }
    if (grow && PyObject_GetBuffer(args[7], &slots_view, PyBUF_WRITABLE) < 0) {
        slots_view.obj = NULL;
        goto done;
    }
    if (grow && PyObject_GetBuffer(args[8], &grown_view, PyBUF_WRITABLE) < 0) {
        grown_view.obj = NULL;
        goto done;
    }
    if (grow && (at < 0 || (at + n) * (Py_ssize_t)sizeof(int64_t) > slots_view.len
                 || (at + n) * (Py_ssize_t)(4 * sizeof(double)) > grown_view.len)) {
        PyErr_Format(PyExc_ValueError, "gather_moves(): no room for %zd moves from %zd in "
                     "slots and grown", n, at);
        goto done;
    }
    odd = PyList_New(0); /* new */
    if (odd == NULL) {
        goto done;
    }
    /* Nothing below runs Python code: every buffer is held across the loop. */
    const int64_t *id = (const int64_t *)ids.view.buf;
    const double *box = (const double *)boxes.view.buf;
    const int64_t *slot_at = (const int64_t *)table.view.buf;
    double *kept = (double *)kept_view.buf;
    int64_t *slot_out = grow ? (int64_t *)slots_view.buf + at : NULL;
    double *grown_out = grow ? (double *)grown_view.buf + 4 * at : NULL;
    Py_ssize_t room = kept_view.len / (Py_ssize_t)(4 * sizeof(double));
    double hw = per != NULL ? per[2] * 0.5 : 0.0, hh = per != NULL ? per[3] * 0.5 : 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t e = id[i];
        int64_t s = e >= 0 && e < table.n ? slot_at[e] : -1;
        double b[4];
        memcpy(b, box + 4 * i, sizeof b);
        int image = s >= 0;
        /* _wrap.canonical, its refusals as no image. A box whose min corner is canonical
         * and which is within half the period across is its own image (canonical_box's
         * answer, without its work). */
        if (image && per != NULL
            && !(per[0] <= b[0] && b[0] < per[4] && per[1] <= b[1] && b[1] < per[5]
                 && b[2] - b[0] <= hw && b[3] - b[1] <= hh)) {
            image = canonical_box(per, b, b) == 0;
        }
        if (!image) {
            PyObject *v = PyLong_FromLongLong((long long)e); /* new */
            int bad = v == NULL || PyList_Append(odd, v) < 0;
            Py_XDECREF(v);
            if (bad) {
                goto done;
            }
            continue;
        }
        if (s >= room) {
            PyErr_Format(PyExc_ValueError, "gather_moves(): slot %lld is past the boxes",
                         (long long)s);
            goto done;
        }
        if (!grow) {
            memcpy(kept + 4 * s, b, sizeof b);
            k++;
            continue;
        }
        double g[4];
        if (!grown(b, radius, per, g)) {
            fits = 0;
            break;
        }
        memcpy(kept + 4 * s, b, sizeof b);
        memcpy(grown_out + 4 * k, g, sizeof g);
        slot_out[k++] = s;
    }
    result = Py_BuildValue("(nOO)", k, odd, fits ? Py_True : Py_False);
done:
    if (kept_view.obj != NULL) {
        PyBuffer_Release(&kept_view);
    }
    if (slots_view.obj != NULL) {
        PyBuffer_Release(&slots_view);
    }
    if (grown_view.obj != NULL) {
        PyBuffer_Release(&grown_view);
    }
    flat_release(&ids);
    flat_release(&boxes);
    flat_release(&table);
    Py_XDECREF(odd);
    return result;
}

static PyMethodDef methods[] = {
    {"near_csr", (PyCFunction)(void (*)(void))near_csr, METH_FASTCALL, near_csr_doc},
    {"grid_csr", (PyCFunction)(void (*)(void))grid_csr, METH_FASTCALL, grid_csr_doc},
    {"without_self", (PyCFunction)(void (*)(void))without_self, METH_FASTCALL,
     without_self_doc},
    {"diff_csr", (PyCFunction)(void (*)(void))diff_csr, METH_FASTCALL, diff_csr_doc},
    {"translate", (PyCFunction)(void (*)(void))translate, METH_FASTCALL, translate_doc},
    {"gather", (PyCFunction)(void (*)(void))gather, METH_FASTCALL, gather_doc},
    {"gather_moves", (PyCFunction)(void (*)(void))gather_moves, METH_FASTCALL,
     gather_moves_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *Py_UNUSED(module))
{
    if (array_type == NULL) {
        PyObject *mod = PyImport_ImportModule("array"); /* new */
        if (mod == NULL) {
            return -1;
        }
        array_type = PyObject_GetAttrString(mod, "array"); /* new, kept for good */
        Py_DECREF(mod);
        if (array_type == NULL) {
            return -1;
        }
    }
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ecs_spatial._cneighbours",
    .m_doc = "The array work of neighbours.NeighbourArrays, compiled (see neighbours.py).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__cneighbours(void)
{
    return PyModuleDef_Init(&module);
}
