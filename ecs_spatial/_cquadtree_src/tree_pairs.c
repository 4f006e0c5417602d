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
#include "wrap.h"
#include "quadtree.h"
#include "constants.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A node's records are swept (sorted by min_x) rather than each pair tested when testing
 * would cost more than this many tests a record (see crowded()). */
#define TEST_ALL_PER_RECORD 8

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
 * meet on x meet on y is as good as random): written always, counted only when hit; put in
 * order (a < b) when the search is done (order_pairs). 0, or -1 and MemoryError. */
static inline int
emit_if(I64Buf *out, int64_t a, int64_t b, int hit)
{
    if (out->n + 2 > out->cap && i64_reserve(out, 2) < 0) {
        return -1;
    }
    out->p[out->n] = a;
    out->p[out->n + 1] = b;
    out->n += 2 * (Py_ssize_t)hit;
    return 0;
}

static inline int
own_less(const OwnRec *x, const OwnRec *y)
{
    return x->x0 < y->x0;
}

DEFINE_SORT(sort_own, OwnRec, own_less)

static inline int
rec_less(const Rec *x, const Rec *y)
{
    return x->x0 < y->x0;
}

DEFINE_SORT(sort_recs, Rec, rec_less)

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

/* The arena's room made at least `need` records: 0, or -1 and MemoryError (the arena kept). */
static int
arena_reserve(Scratch *sc, Py_ssize_t need)
{
    if (need <= sc->arena_cap) {
        return 0;
    }
    Py_ssize_t cap = sc->arena_cap * 2;
    while (cap < need) {
        cap *= 2;
    }
    Rec *arena = resize_items(sc->arena, cap, sizeof(Rec));
    if (arena == NULL) {
        return -1;
    }
    sc->arena = arena;
    sc->arena_cap = cap;
    return 0;
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

/* A crowded node's pairs: its own records (sorted, sentinel-ended) against each other,
 * then, in one merge-like pass, against the inherited ones (sorted, sentinel-ended): 0, or
 * -1 and MemoryError. */
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
                if (emit_if(out, a->id, inh[k].id,
                            (inh[k].y0 <= a->y1) & (a->y0 <= inh[k].y1) & (a->id != inh[k].id))
                    < 0) {
                    return -1;
                }
            }
        }
        else {
            const Rec *b = &inh[j++];
            for (k = i; own[k].x0 <= b->x1; k++) {
                if (emit_if(out, b->id, own[k].id,
                            (own[k].y0 <= b->y1) & (b->y0 <= own[k].y1) & (b->id != own[k].id))
                    < 0) {
                    return -1;
                }
            }
        }
    }
    return 0;
}

/* Whether records a and b meet (touching counts), with no branch: on x86-64 the two
 * corners' comparisons two at a time (the same IEEE comparisons as the scalar ones). */
#if defined(__SSE2__)
static inline int
recs_meet(const Rec *a, const Rec *b)
{
    __m128d alo = _mm_loadu_pd(&a->x0), ahi = _mm_loadu_pd(&a->x1);
    __m128d blo = _mm_loadu_pd(&b->x0), bhi = _mm_loadu_pd(&b->x1);
    return _mm_movemask_pd(_mm_and_pd(_mm_cmple_pd(blo, ahi), _mm_cmple_pd(alo, bhi))) == 3;
}
#else
static inline int
recs_meet(const Rec *a, const Rec *b)
{
    return (b->x0 <= a->x1) & (a->x0 <= b->x1) & (b->y0 <= a->y1) & (a->y0 <= b->y1);
}
#endif

/* A node's pairs by testing every pair: all[0 .. first) the inherited records, all[first ..
 * n) its own, each own record against every record before it. No sort: for the few records
 * of most nodes that costs less than sweeping them. Each own record's corners are held in
 * registers while the records before it are tested two coordinates at a time (recs_meet's
 * comparisons); a hit (rare: two boxes that share a node mostly miss) is the one branch
 * taken seldom, so the loop of a record's tests predicts well. Records of one entity (an
 * image of a box reaching a seam, and the box) make no pair. 0, or -1 and MemoryError. */
static int
test_all(const Rec *all, Py_ssize_t first, Py_ssize_t n, I64Buf *out)
{
    Py_ssize_t no = n - first, tests = no * first + no * (no - 1) / 2;
    if (out->n + 2 * tests + 2 > out->cap && i64_reserve(out, 2 * tests + 2) < 0) {
        return -1;
    }
    int64_t *p = out->p + out->n;
    for (Py_ssize_t i = first; i < n; i++) {
        const Rec *a = &all[i];
#if defined(__SSE2__)
        __m128d alo = _mm_loadu_pd(&a->x0), ahi = _mm_loadu_pd(&a->x1);
#endif
        for (Py_ssize_t j = 0; j < i; j++) {
            const Rec *b = &all[j];
#if defined(__SSE2__)
            __m128d m = _mm_and_pd(_mm_cmple_pd(_mm_loadu_pd(&b->x0), ahi),
                                   _mm_cmple_pd(alo, _mm_loadu_pd(&b->x1)));
            int meet = _mm_movemask_pd(m) == 3;
#else
            int meet = recs_meet(a, b);
#endif
            if (meet && a->id != b->id) {
                p[0] = a->id;
                p[1] = b->id;
                p += 2;
            }
        }
    }
    out->n = p - out->p;
    return 0;
}

/* Whether a node of no own and ni inherited records is crowded: testing its every pair
 * (test_all) would cost more than sorting and sweeping them (sweep_node). */
static inline int
crowded(Py_ssize_t no, Py_ssize_t ni)
{
    return no * ni + no * (no - 1) / 2 > TEST_ALL_PER_RECORD * (no + ni);
}

/* The children's inherited lists of internal node nd from its records all[0 .. n), dealt
 * into four lists of room `room` each from `at`; the end of each in end[]. Every record
 * here overlaps this node, so it overlaps a child exactly when it reaches that child's side
 * of both split lines. Branch-free: each list's share is as good as random; every list has
 * room for one more record, which is written and not counted. */
static void
deal(const Node *nd, const Rec *all, Py_ssize_t n, Rec *at, Py_ssize_t room, Rec *end[4])
{
    double cx = nd->cx, cy = nd->cy;
    Rec *at0 = at, *at1 = at0 + room, *at2 = at1 + room, *at3 = at2 + room;
    for (Py_ssize_t k = 0; k < n; k++) {
        const Rec r = all[k];
        int left = r.x0 <= cx, right = r.x1 >= cx;
        int low = r.y0 <= cy, high = r.y1 >= cy;
        *at0 = r;
        at0 += left & low;
        *at1 = r;
        at1 += right & low;
        *at2 = r;
        at2 += left & high;
        *at3 = r;
        at3 += right & high;
    }
    end[0] = at0;
    end[1] = at1;
    end[2] = at2;
    end[3] = at3;
}

/* Every intersecting pair, each once, unsorted and each in either order:
 * quadtree.find_all_intersections's walk. One top-down pass carries down the ancestors'
 * records that overlap each node; a node finds the pairs of its own records with each other
 * and with the inherited ones (which met each other higher up, and are never compared), by
 * testing every such pair (test_all), or when it is crowded by sorting both by min_x and
 * sweeping them (sweep_node). The children's lists are dealt from the node's records,
 * inherited then own, which lie together: arena[off .. off + len) the inherited list, then
 * the own records, then the children's lists, each with room for the most it could hold
 * and one more (for a sentinel), so no counting pass comes first (see
 * docs/design.md#decisions).
 *
 * images[0 .. n_images): records the root inherits (a wrapped tree's images of its boxes
 * that reach a seam), met by every stored box but never by each other, nor by their own
 * entity's box. reorder: whether own_records may relink the nodes' lists. 0, or -1 and
 * MemoryError. */
static int
all_pairs(Tree *t, int reorder, const Rec *images, Py_ssize_t n_images, I64Buf *out)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    int r = -1;
    Scratch sc;
    if (scratch_take(t, &sc) < 0) {
        goto done;
    }
    if (arena_reserve(&sc, n_images + 1) < 0) {
        goto done;
    }
    Rec *arena = sc.arena;
    OwnRec *own = sc.own;
    SweepFrame *frames = sc.frames;
    Py_ssize_t nf = 0;
    if (n_images > 0) {
        memcpy(arena, images, (size_t)n_images * sizeof(Rec));
    }
    frames[nf++] = (SweepFrame){t->root, 0, n_images};
    while (nf > 0) {
        SweepFrame f = frames[--nf];
        const Node *nd = &t->nodes[f.node];
        Py_ssize_t no = nd->n, ni = f.len, n = ni + no;
        int leaf = nd->kids[0] == NO_NODE;
        /* above arena[f.off]: this list, its own records and a sentinel, then the children's
         * lists; above them, finished subtrees */
        Py_ssize_t top = f.off + n + 1, room = n + 1;
        if (arena_reserve(&sc, top + (leaf ? 0 : 4 * room)) < 0) {
            goto done;
        }
        arena = sc.arena;
        Rec *inh = arena + f.off;
        if (crowded(no, ni)) {
            if (no + 1 > sc.own_cap) {
                Py_ssize_t cap = no < 64 ? 64 : no * 2;
                if ((own = resize_items(sc.own, cap, sizeof(OwnRec))) == NULL) {
                    goto done;
                }
                sc.own = own;
                sc.own_cap = cap;
            }
            if (own_records(t, f.node, own, reorder) < 0 || sort_recs(inh, ni) < 0) {
                goto done;
            }
            inh[ni].x0 = INFINITY; /* the sentinel: boxes are finite */
            if (sweep_node(own, no, inh, ni, out) < 0) {
                goto done;
            }
            for (Py_ssize_t i = 0; i < no; i++) {
                inh[ni + i] = (Rec){own[i].x0, own[i].y0, own[i].x1, own[i].y1, own[i].id};
            }
        }
        else {
            Rec *at = inh + ni;
            for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
                const double *b = &t->box[4 * (size_t)s];
                *at++ = (Rec){b[0], b[1], b[2], b[3], t->ids[s]};
            }
            if (test_all(inh, ni, n, out) < 0) {
                goto done;
            }
        }
        if (leaf) {
            continue;
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
        deal(nd, inh, n, arena + top, room, end);
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

/* The pairs of out put in order, a < b each, without a branch on which comes first. */
static void
order_pairs(I64Buf *out)
{
    for (Py_ssize_t i = 0; i < out->n; i += 2) {
        int64_t a = out->p[i], b = out->p[i + 1];
        out->p[i] = a < b ? a : b;
        out->p[i + 1] = a < b ? b : a;
    }
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

/* Whether a node may hold a box reaching a seam of period p (max_x >= end_x or max_y >=
 * end_y): the root any box, any other only boxes strictly inside its fit bounds. */
static inline int
may_reach_seam(const Tree *t, int32_t node, const double p[6])
{
    const Node *nd = &t->nodes[node];
    return node == t->root || !(nd->fx1 <= p[4] && nd->fy1 <= p[5]);
}

/* The images of a wrapped tree's boxes that reach a seam (only such a box meets another
 * through an image), as records of their entity: those that wrapped_query searches for the
 * box (_tree_pairs._wrapped_partners's), the box's own place among them. Only the nodes that
 * may hold such a box are read (may_reach_seam: the tree's far edges), not every box; the
 * records' order is the walk's, which the caller's sort of the pairs makes moot. Into *recs
 * (a PyMem block, the caller's to free); their number, or -1 and MemoryError. */
static Py_ssize_t
seam_images(const Tree *t, Rec **recs)
{
    const double *p = t->period;
    Py_ssize_t n = 0, cap = 0;
    Rec *images = NULL;
    NodeStack stack;
    ns_init(&stack);
    if (t->root != NO_NODE && ns_push(&stack, t->root) < 0) {
        goto fail;
    }
    while (stack.n > 0) {
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        if (nd->kids[0] != NO_NODE) {
            for (int q = 0; q < 4; q++) {
                if (t->nodes[nd->kids[q]].count > 0 && may_reach_seam(t, nd->kids[q], p)
                    && ns_push(&stack, nd->kids[q]) < 0) {
                    goto fail;
                }
            }
        }
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            const double *b = &t->box[4 * (size_t)s];
            if (!(b[2] >= p[4] || b[3] >= p[5])) {
                continue;
            }
            if (n + 9 > cap) {
                cap = cap < 64 ? 64 : 2 * cap;
                Rec *more = resize_items(images, cap, sizeof(Rec));
                if (more == NULL) {
                    goto fail;
                }
                images = more;
            }
            double xs[3][2], ys[3][2];
            int nx = query_intervals(b[0], b[2], p[0], p[2], p[4], xs);
            int ny = query_intervals(b[1], b[3], p[1], p[3], p[5], ys);
            for (int i = 0; i < nx; i++) {
                for (int j = 0; j < ny; j++) {
                    images[n++] = (Rec){xs[i][0], ys[j][0], xs[i][1], ys[j][1], t->ids[s]};
                }
            }
        }
    }
    ns_free(&stack);
    *recs = images;
    return n;
fail:
    ns_free(&stack);
    PyMem_Free(images);
    return -1;
}

/* find_all_intersections' pairs into out, sorted, each once. On a wrapped tree, the plain
 * pairs and those of each box that reaches a seam with the boxes its images meet, found in
 * the same walk (the images inherited by the root): a pair met both ways, or plainly and
 * through an image, is kept once. */
static int
all_pairs_sorted(Tree *t, I64Buf *out)
{
    /* busy: a where= predicate runs, and a search it started may be walking the lists */
    int reorder = t->busy == 0;
    if (!t->wrapped) {
        if (all_pairs(t, reorder, NULL, 0, out) < 0) {
            return -1;
        }
        order_pairs(out);
        return sort_pairs((IdPair *)out->p, out->n / 2);
    }
    Rec *images = NULL;
    Py_ssize_t n_images = seam_images(t, &images);
    int err = n_images < 0 || all_pairs(t, reorder, images, n_images, out) < 0 ? -1 : 0;
    PyMem_Free(images);
    if (err < 0) {
        return -1;
    }
    order_pairs(out);
    return unique_pairs(out);
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
