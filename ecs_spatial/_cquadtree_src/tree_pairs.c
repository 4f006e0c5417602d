/* tree_pairs.c: pairs: find_all_intersections(_array), find_intersections_for, query_entity.
 *
 * The twin of ecs_spatial/_tree_pairs.py.
 */

#include "tree_pairs.h"
#include "containers.h"
#include "geometry.h"
#include "snapshots.h"
#include "records.h"
#include "tree_storage.h"
#include "tree_queries.h"
#include "quadtree.h"
#include "constants.h"

/* Every other id whose box intersects the box of slot s (_tree_pairs._intersecting): its
 * ancestors' own entries, then its node's subtree, pruned by bounds. An ancestor of many
 * entries is read through its snapshot, so the cost follows what lies near the mover, not
 * how many boxes straddle its ancestors' split lines (see docs/design.md#decisions). */
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

/* _tree_pairs._wrapped_partners without the entity itself: every other id whose box meets
 * the box of slot s on the torus (query of its box on the wrapped tree), ascending, each
 * once, appended to out. */
static int
wrapped_partners(const Tree *t, int32_t s, I64Buf *out)
{
    Py_ssize_t start = out->n, k = start;
    if (wrapped_query(t, &t->box[4 * (size_t)s], out) < 0) {
        return -1;
    }
    for (Py_ssize_t i = start; i < out->n; i++) {
        if (out->p[i] != t->ids[s]) {
            out->p[k++] = out->p[i];
        }
    }
    out->n = k;
    return 0;
}

QT_API PyObject *
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
    return ids_result(&out, t->wrapped ? wrapped_partners(t, s, &out) : partners(t, s, &out));
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

/* The pairs sorted as Python sorts the tuples (they are distinct, so no question of
 * stability), by the first id's bucket. */
#define PAIR_KEY(pair) ((pair).a)

DEFINE_BUCKET_SORT(sort_pairs, IdPair, PAIR_KEY, pair_less, merge_sort_pairs)

/* The pair (a, b) kept in out when hit, without a branch on hit (whether two boxes that
 * meet on x meet on y is as good as random): written always, counted only when hit. 0, or
 * -1 and MemoryError. */
static inline int
emit_if(I64Buf *out, int64_t a, int64_t b, int hit)
{
    if (out->n + 2 > out->cap && i64_reserve(out, 2) < 0) {
        return -1;
    }
    out->p[out->n] = a < b ? a : b;
    out->p[out->n + 1] = a < b ? b : a;
    out->n += 2 * (Py_ssize_t)hit;
    return 0;
}

static inline int
own_less(const OwnRec *x, const OwnRec *y)
{
    return x->x0 < y->x0;
}

DEFINE_SORT(sort_own, OwnRec, own_less)

/* The pair search's working memory, taken from the tree (see Scratch), with room for the
 * root's frame and 256 records: 0, or -1 and MemoryError (what is held is in *sc, for
 * scratch_give). */
static int
scratch_take(Tree *t, Scratch *sc)
{
    *sc = t->scratch;
    memset(&t->scratch, 0, sizeof(Scratch));
    if (sc->frames_cap < 64) {
        PyMem_Free(sc->frames);
        sc->frames_cap = 64;
        sc->frames = PyMem_Malloc((size_t)sc->frames_cap * sizeof(SweepFrame));
        if (sc->frames == NULL) {
            sc->frames_cap = 0;
            PyErr_NoMemory();
            return -1;
        }
    }
    if (sc->arena_cap < 256) {
        Rec *p = PyMem_Realloc(sc->arena, 256 * sizeof(Rec));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        sc->arena = p;
        sc->arena_cap = 256;
    }
    return 0;
}

/* The working memory given back to the tree, or freed if the tree has some again. */
static void
scratch_give(Tree *t, const Scratch *sc)
{
    if (t->scratch.arena == NULL && t->scratch.own == NULL && t->scratch.frames == NULL) {
        t->scratch = *sc;
    }
    else {
        PyMem_Free(sc->arena);
        PyMem_Free(sc->own);
        PyMem_Free(sc->frames);
    }
}

/* p (a PyMem block) resized to n items of `size` bytes: the new block, or NULL and
 * MemoryError with p kept. */
static void *
resize_items(void *p, Py_ssize_t n, size_t size)
{
    void *q = PyMem_Realloc(p, (size_t)n * size);
    if (q == NULL) {
        PyErr_NoMemory();
    }
    return q;
}

/* The own entries of `node` as records in own[0 .. n), sorted by min_x, and the sentinel
 * own[n] (own has room for n + 1): 0, or -1 and MemoryError. With reorder, the node's list
 * of entries is relinked in that order: entries move little from one frame to the next, so
 * the next search finds them sorted or nearly (and insertion sort is linear on nearly sorted
 * runs: see docs/design.md#decisions). The caller says whether it may: not while another
 * walk of the tree (a search that a where= predicate started) may be reading the lists. */
static int
own_records(Tree *t, int32_t node, OwnRec *own, int reorder)
{
    const Node *nd = &t->nodes[node];
    Py_ssize_t no = nd->n, i = 0;
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
            return -1;
        }
        if (reorder) {
            for (Py_ssize_t k = 0; k < no; k++) {
                int32_t s = own[k].slot;
                t->prev[s] = k > 0 ? own[k - 1].slot : NO_SLOT;
                t->next[s] = k + 1 < no ? own[k + 1].slot : NO_SLOT;
            }
            t->nodes[node].head = own[0].slot;
        }
    }
    own[no].x0 = INFINITY; /* the sentinel: boxes are finite */
    return 0;
}

/* A node's pairs: its own records (sorted, sentinel-ended) against each other, then, in one
 * merge-like pass, against the inherited ones (sorted, sentinel-ended): 0, or -1 and
 * MemoryError. */
static int
sweep_node(const OwnRec *own, Py_ssize_t no, const Rec *inh, Py_ssize_t ni, I64Buf *out)
{
    Py_ssize_t i, j, k;
    for (i = 0; i < no; i++) {
        const OwnRec *a = &own[i];
        for (k = i + 1; own[k].x0 <= a->x1; k++) {
            if (emit_if(out, a->id, own[k].id, (own[k].y0 <= a->y1) & (a->y0 <= own[k].y1)) < 0) {
                return -1;
            }
        }
    }
    for (i = 0, j = 0; i < no && j < ni;) {
        if (own[i].x0 <= inh[j].x0) {
            const OwnRec *a = &own[i++];
            for (k = j; inh[k].x0 <= a->x1; k++) {
                if (emit_if(out, a->id, inh[k].id, (inh[k].y0 <= a->y1) & (a->y0 <= inh[k].y1)) < 0) {
                    return -1;
                }
            }
        }
        else {
            const Rec *b = &inh[j++];
            for (k = i; own[k].x0 <= b->x1; k++) {
                if (emit_if(out, b->id, own[k].id, (own[k].y0 <= b->y1) & (b->y0 <= own[k].y1)) < 0) {
                    return -1;
                }
            }
        }
    }
    return 0;
}

/* The children's inherited lists of internal node nd: the merge of its own and its inherited
 * records, in min_x order, dealt into four lists of room `room` each from `at`, each ended by
 * its sentinel; the end of each in end[]. Every record here overlaps this node, so it
 * overlaps a child exactly when it reaches that child's side of both split lines. */
static void
deal(const Node *nd, const OwnRec *own, Py_ssize_t no, const Rec *inh, Py_ssize_t ni, Rec *at,
     Py_ssize_t room, Rec *end[4])
{
    double cx = nd->cx, cy = nd->cy;
    Rec *at0 = at, *at1 = at0 + room, *at2 = at1 + room, *at3 = at2 + room;
    for (Py_ssize_t i = 0, j = 0, k = no + ni; k > 0; k--) {
        /* branch-free: which side comes next is as good as random, and so is each list's
         * share; every list has room for one more record, which the sentinel overwrites */
        const OwnRec *o = &own[i];
        const Rec *h = &inh[j];
        int take = o->x0 <= h->x0; /* the sentinels end each side */
        Rec merged = {take ? o->x0 : h->x0, take ? o->y0 : h->y0, take ? o->x1 : h->x1,
                      take ? o->y1 : h->y1, take ? o->id : h->id};
        i += take;
        j += 1 - take;
        int left = merged.x0 <= cx, right = merged.x1 >= cx;
        int low = merged.y0 <= cy, high = merged.y1 >= cy;
        *at0 = merged;
        at0 += left & low;
        *at1 = merged;
        at1 += right & low;
        *at2 = merged;
        at2 += left & high;
        *at3 = merged;
        at3 += right & high;
    }
    end[0] = at0;
    end[1] = at1;
    end[2] = at2;
    end[3] = at3;
    for (int q = 0; q < 4; q++) {
        end[q]->x0 = INFINITY;
    }
}

/* Every intersecting pair (a < b), each once, unsorted: quadtree.find_all_intersections's
 * walk. One top-down pass carries down the ancestors' records that overlap each node; a node
 * sweeps its own records (sorted by min_x) against each other and, in one merge-like pass,
 * against the inherited ones (which arrive sorted), so two inherited records, which met
 * higher up, are never compared (sweep_node). The children's inherited lists are dealt in
 * min_x order from the merge of the two, so they need no sort of their own (deal).
 *
 * Each list (own, and every inherited one) ends in a sentinel of min_x +inf, which every
 * scan stops at, so the scans and merges test no index; and a node deals its children's
 * lists into room for the most each could hold (no + ni each), so no counting pass comes
 * first (see docs/design.md#decisions). reorder: whether own_records may relink the nodes'
 * lists. 0, or -1 and MemoryError. */
static int
all_pairs(Tree *t, int reorder, I64Buf *out)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    int r = -1;
    Scratch sc;
    if (scratch_take(t, &sc) < 0) {
        goto done;
    }
    Rec *arena = sc.arena;
    OwnRec *own = sc.own;
    SweepFrame *frames = sc.frames;
    Py_ssize_t nf = 0;
    arena[0].x0 = INFINITY; /* the root's inherited list: empty */
    frames[nf++] = (SweepFrame){t->root, 0, 0};
    while (nf > 0) {
        SweepFrame f = frames[--nf];
        Py_ssize_t top = f.off + f.len + 1; /* above: finished subtrees (and this sentinel) */
        const Node *nd = &t->nodes[f.node];
        Py_ssize_t no = nd->n, ni = f.len;
        if (no + 1 > sc.own_cap) {
            Py_ssize_t cap = no < 64 ? 64 : no * 2;
            if ((own = resize_items(sc.own, cap, sizeof(OwnRec))) == NULL) {
                goto done;
            }
            sc.own = own;
            sc.own_cap = cap;
        }
        if (own_records(t, f.node, own, reorder) < 0
            || sweep_node(own, no, arena + f.off, ni, out) < 0) {
            goto done;
        }
        if (nd->kids[0] == NO_NODE) {
            continue;
        }
        Py_ssize_t room = no + ni + 1; /* a child's list and its sentinel at most */
        Py_ssize_t need = top + 4 * room;
        if (need > sc.arena_cap) {
            Py_ssize_t cap = sc.arena_cap * 2;
            while (cap < need) {
                cap *= 2;
            }
            if ((arena = resize_items(sc.arena, cap, sizeof(Rec))) == NULL) {
                goto done;
            }
            sc.arena = arena;
            sc.arena_cap = cap;
        }
        /* The stack holds at most three frames a level: it grows with the depth, not with
         * the nodes. */
        if (nf + 4 > sc.frames_cap) {
            Py_ssize_t cap = sc.frames_cap * 2;
            if ((frames = resize_items(sc.frames, cap, sizeof(SweepFrame))) == NULL) {
                goto done;
            }
            sc.frames = frames;
            sc.frames_cap = cap;
        }
        Rec *end[4];
        deal(nd, own, no, arena + f.off, ni, arena + top, room, end);
        for (int q = 0; q < 4; q++) {
            Rec *start = arena + top + q * room;
            const Node *kid = &t->nodes[nd->kids[q]];
            if (kid->count > 0) {
                frames[nf++] = (SweepFrame){nd->kids[q], start - arena, end[q] - start};
                if (kid->head != NO_SLOT) {
                    PREFETCH(&t->box[4 * (size_t)kid->head]);
                    PREFETCH(&t->next[kid->head]);
                    PREFETCH(&t->ids[kid->head]);
                }
            }
        }
    }
    r = 0;
done:
    scratch_give(t, &sc);
    return r;
}

/* The tuple (a, b) of two ids, built directly: Py_BuildValue("(LL)") parses its format for
 * every pair (see docs/design.md#decisions). New reference. */
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

/* The pairs of out (a < b each), sorted, each once. */
static int
unique_pairs(I64Buf *out)
{
    if (sort_pairs((IdPair *)out->p, out->n / 2) < 0) {
        return -1;
    }
    Py_ssize_t unique = 0;
    for (Py_ssize_t i = 0; i < out->n / 2; i++) {
        if (unique == 0 || out->p[2 * i] != out->p[2 * unique - 2]
            || out->p[2 * i + 1] != out->p[2 * unique - 1]) {
            out->p[2 * unique] = out->p[2 * i];
            out->p[2 * unique + 1] = out->p[2 * i + 1];
            unique++;
        }
    }
    out->n = 2 * unique;
    return 0;
}

/* find_all_intersections' pairs into out, sorted, each once. On a wrapped tree, the plain
 * pairs and those of each box that reaches a seam (only such a box meets another through an
 * image), found by a query of its box on the torus. */
static int
all_pairs_sorted(Tree *t, I64Buf *out)
{
    /* busy: a where= predicate runs, and a search it started may be walking the lists */
    if (all_pairs(t, t->busy == 0, out) < 0) {
        return -1;
    }
    if (!t->wrapped) {
        return sort_pairs((IdPair *)out->p, out->n / 2);
    }
    I64Buf found = {0};
    int err = 0;
    for (int32_t s = 0; s < t->n && err == 0; s++) {
        const double *b = &t->box[4 * (size_t)s];
        if (!(b[2] >= t->period[4] || b[3] >= t->period[5])) {
            continue;
        }
        found.n = 0;
        err = wrapped_partners(t, s, &found) < 0 || i64_reserve(out, 2 * found.n) < 0 ? -1 : 0;
        for (Py_ssize_t j = 0; err == 0 && j < found.n; j++) {
            int64_t a = t->ids[s], o = found.p[j];
            out->p[out->n++] = a < o ? a : o;
            out->p[out->n++] = a < o ? o : a;
        }
    }
    PyMem_Free(found.p);
    return err < 0 ? -1 : unique_pairs(out);
}

QT_API PyObject *
Tree_find_all_intersections(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    I64Buf out = {0};
    PyObject *result = NULL;
    if (all_pairs_sorted(t, &out) == 0) {
        result = pair_list(out.p, out.n / 2);
    }
    PyMem_Free(out.p);
    return result;
}

QT_API PyObject *
Tree_find_all_intersections_array(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    I64Buf out = {0};
    PyObject *result = NULL;
    if (all_pairs_sorted(t, &out) == 0) {
        result = id_array(out.p, out.n); /* new */
    }
    PyMem_Free(out.p);
    return result;
}

/* On a wrapped tree, whether the box of slot s meets other boxes only directly, so that its
 * partners on the torus are its plain ones: wrapped_query's images of it (query_intervals,
 * each axis) are its own box alone and its shift by +p, and that shift passes every box
 * stored (``reach``: the largest max_x and max_y stored) on both axes. */
static int
direct_only(const Tree *t, int32_t s, const double reach[2])
{
    const double *b = &t->box[4 * (size_t)s];
    const double *p = t->period;
    for (int axis = 0; axis < 2; axis++) {
        double lo = b[axis], hi = b[axis + 2];
        double origin = p[axis], w = p[axis + 2], end = p[axis + 4];
        if (!(hi - lo < w && origin <= lo && lo < end)) {
            return 0;
        }
        double d = lo + (hi - lo);
        if (d != hi || d >= end || d - w >= origin || !(lo + w > reach[axis])) {
            return 0;
        }
    }
    return 1;
}

/* With more entities than this, find_intersections_for on a wrapped tree scans the boxes
 * once for their reach, and searches those that direct_only() clears as a plain tree does
 * (a walk from their node, instead of a search from the root for each image). */
#define DIRECT_SCAN_MIN 16

QT_API PyObject *
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
    double reach[2] = {Py_HUGE_VAL, Py_HUGE_VAL};
    if (t->wrapped && ids.n > DIRECT_SCAN_MIN) {
        reach[0] = reach[1] = -Py_HUGE_VAL;
        for (int32_t s = 0; s < t->n; s++) {
            const double *b = &t->box[4 * (size_t)s];
            reach[0] = b[2] > reach[0] ? b[2] : reach[0];
            reach[1] = b[3] > reach[1] ? b[3] : reach[1];
        }
    }
    for (Py_ssize_t i = 0; i < ids.n; i++) {
        int32_t s = find_slot(t, ids.p[i]);
        Py_ssize_t first = out.n;
        int wrapped = t->wrapped && !direct_only(t, s, reach);
        if ((wrapped ? wrapped_partners(t, s, &out) : partners(t, s, &out)) < 0) {
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
    if (unique_pairs(&out) < 0) {
        goto done;
    }
    busy_end(t); /* the answer is in C memory: a change while it is built goes through */
    busy = 0;
    result = pair_list(out.p, out.n / 2);
done:
    if (busy) {
        busy_end(t);
    }
    PyMem_Free(ids.p);
    PyMem_Free(out.p);
    return result;
}
