/* tree_updates.c: updates: insert, insert_many, insert_records, move, move_many, move_records,
 * remove, discard, clear.
 *
 * The twin of ecs_spatial/_tree_updates.py.
 */

#include "tree_updates.h"
#include "constants.h"
#include "containers.h"
#include "geometry.h"
#include "growth.h"
#include "records.h"
#include "tree_storage.h"
#include "tree_nodes.h"
#include "wrap.h"

/* quadtree.insert for a valid box and a new id. -1 with MemoryError: the tree is unchanged
 * unless memory ran out for new nodes in the middle (then broken). */
QT_API int
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

/* _tree_updates._insert_records for k new, distinct ids with valid boxes: the root grows once
 * toward all of them, then they go down together. */
QT_API int
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
    /* _records.bbox: min() and max() keep the first of equal values. */
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
        PyErr_Format(PyExc_ValueError, MSG_ALREADY_INDEXED, entity);
        goto fail;
    }
    if (box_any(box_arg, entity, c) < 0 || (t->wrapped && canonical(t->period, c, entity, id))) {
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

QT_API PyObject *
Tree_insert(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&insert_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 1) < 0) {
        return NULL;
    }
    int64_t id;
    double c[4];
    PyObject *r;
    if (!t->wrapped && PyLong_CheckExact(a[0]) && int64_of(a[0], &id) > 0
        && find_slot(t, id) == NO_SLOT && box_fast(a[1], c)) {
        /* a new int, a valid box of floats, a plain tree: no Python runs, no busy section */
        r = insert_record(t, id, c) < 0 ? NULL : Py_NewRef(Py_None);
    }
    else {
        change_begin(t);
        r = insert_impl(t, a[0], a[1]);
        change_end(t);
    }
    maybe_compact(t);
    return r;
}

/* quadtree.move's careful path (_move_target): the id's type, then its absence, then the
 * box (made canonical on a wrapped tree), each with the reference's error. The slot, or -1
 * with the error. */
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
    else if (fit >= 0 && box_any(box_arg, entity, c) == 0
             && !(t->wrapped && canonical(t->period, c, entity, id) < 0)) {
        Py_DECREF(entity);
        return find_slot(t, id); /* the same slot: nothing can change the tree while busy */
    }
    Py_DECREF(entity);
    return -1;
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
        if (s != NO_SLOT && t->wrapped && canonical(t->period, c, entity, 0) < 0) {
            return -1;
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

/* move() made at once: an int t holds, four floats in a tuple or Box that form a valid box, a
 * plain tree: 1, *r move_slot's answer; else 0, nothing done, no error. No Python runs: no
 * busy section (tree.h); a box strictly inside its leaf's fit bounds and ordered is valid. */
static inline int
move_at_once(Tree *t, PyObject *entity, PyObject *box, int *r)
{
    int64_t id;
    double c[4];
    int32_t s;
    if (t->wrapped || !PyLong_CheckExact(entity) || int64_of(entity, &id) <= 0
        || (s = find_slot(t, id)) == NO_SLOT || !floats_of(box, c)) {
        return 0;
    }
    prefetch_call(t, s, id);
    const Node *nd = &t->nodes[t->node_of[s]];
    if (nd->kids[0] == NO_NODE && fits_valid(nd, c)) {
        memcpy(&t->box[4 * (size_t)s], c, 4 * sizeof(double));
        *r = 0;
        return 1;
    }
    if (!valid_box(c)) {
        return 0;
    }
    *r = move_slot(t, s, c);
    return 1;
}

QT_API PyObject *
Tree_move(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&move_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 1) < 0) {
        return NULL;
    }
    int r;
    if (!move_at_once(t, a[0], a[1], &r)) {
        change_begin(t);
        r = move_one(t, a[0], a[1], NULL);
        change_end(t);
    }
    maybe_compact(t);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

QT_API PyObject *
Tree_remove(Tree *t, PyObject *entity)
{
    if (guard(t, 1) < 0) {
        return NULL;
    }
    int busy = !PyLong_CheckExact(entity); /* an int's lookup and removal run no Python */
    if (busy) {
        change_begin(t);
    }
    int32_t s = lookup_slot(t, entity);
    if (s >= 0) {
        remove_slot(t, s);
    }
    if (busy) {
        change_end(t);
    }
    if (s == -2) {
        return NULL;
    }
    if (s == NO_SLOT) {
        return raise_missing(entity);
    }
    Py_RETURN_NONE;
}

QT_API PyObject *
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
    int busy = !PyLong_CheckExact(entity); /* an int's lookup and removal run no Python */
    if (busy) {
        change_begin(t);
    }
    int32_t s = lookup_slot(t, entity);
    if (s >= 0) {
        remove_slot(t, s);
    }
    if (busy) {
        change_end(t);
    }
    if (s == -2) {
        return NULL;
    }
    Py_RETURN_NONE;
}

QT_API PyObject *
Tree_clear(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 1) < 0 || reset(t) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
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
        PyErr_Format(PyExc_ValueError, in_tree ? MSG_ALREADY_INDEXED : MSG_LISTED_TWICE, entity);
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
                PyErr_Format(PyExc_ValueError, MSG_FLAT_IDS, "insert_many");
            }
            else if (n_boxes >= 0) {
                Py_ssize_t k = n_ids < n_boxes ? n_ids : n_boxes, i;
                for (i = 0; i < k; i++) {
                    const double *c = &coords[4 * i];
                    PyObject *entity = PyLong_FromLongLong(ids[i]);
                    double w[4] = {c[0], c[1], c[2], c[3]};
                    int bad = entity == NULL
                              || (!valid_box(c) && raise_box_error(c, ids[i]) < 0)
                              || (t->wrapped && canonical(t->period, w, entity, 0) < 0)
                              || check_new(t, &fresh, entity, ids[i], w, &batch) < 0;
                    Py_XDECREF(entity);
                    if (bad) {
                        break;
                    }
                }
                if (i == k && n_ids != n_boxes) {
                    PyErr_Format(PyExc_ValueError, MSG_LENGTHS_DIFFER, "insert_many", "");
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
                  || (t->wrapped && canonical(t->period, c, entity, 0) < 0)
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
            PyErr_Format(PyExc_ValueError, MSG_LENGTHS_DIFFER, "insert_many", "");
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

QT_API PyObject *
Tree_insert_many(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&insert_many_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 1) < 0) {
        return NULL;
    }
    change_begin(t);
    int r = insert_many_impl(t, a[0], a[1]);
    change_end(t);
    maybe_compact(t);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* move_many's moves from buffers: ids as int64, boxes as 4 doubles each, no Python object per
 * move. 1 when every pair moved, else 0 with the error (the moves before it made, and logged
 * in log if not NULL). Compiled twice (move_buffers()), for a plain tree and a wrapped one,
 * so that a plain tree's loop tests nothing of the period. */
static ALWAYS_INLINE int
move_buffers_of(Tree *t, const int64_t *ids, const double *coords, Py_ssize_t n_ids,
                Py_ssize_t n_boxes, I64Buf *log, const int wrapped)
{
    Py_ssize_t k = n_ids < n_boxes ? n_ids : n_boxes, i;
    /* The hints spare the hashing, here and in the prefetch, for the ids sent in the
     * order of the last call (see docs/design.md#decisions). */
    int32_t *hint = slot_hints(t, k);
    double w[4]; /* a wrapped tree's canonical box */
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
        /* A wrapped tree's box already canonical (its min corner in the period, min <= max
         * and no wider or higher than half the period: then valid, and canonical_box gives
         * it back to the bit) is used as given; any other goes the reference's way. */
        if (wrapped && !canonical_as_given(t->period, c)
            && (c = checked_canonical(t->period, c, ids[i], w)) == NULL) {
            break;
        }
        /* Strictly inside the node's fit bounds, the box has no NaN and no
         * infinity, so two comparisons finish valid_box's six; a box that stays
         * in its leaf (most moves) is then stored at once (see docs/design.md#decisions). */
        const Node *nd = &t->nodes[t->node_of[s]];
        int stays = fits_valid(nd, c);
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
        return 0;
    }
    return i == k;
}

static int
move_buffers(Tree *t, const int64_t *ids, const double *coords, Py_ssize_t n_ids,
             Py_ssize_t n_boxes, I64Buf *log)
{
    return t->wrapped ? move_buffers_of(t, ids, coords, n_ids, n_boxes, log, 1)
                      : move_buffers_of(t, ids, coords, n_ids, n_boxes, log, 0);
}

/* A move_many that failed, the tree whole: undo the logged moves (undo: the id and the box
 * before, five int64 each; none unless atomic) and, when atomic, the root's growth
 * (root_bounds: the root's bounds before the call, NULL if it had none), then set the
 * method's error. Memory running out meanwhile leaves the tree broken and its error set. */
static void
undo_moves(Tree *t, const I64Buf *undo, int atomic, const double *root_bounds,
           int32_t root_level)
{
    /* Undo newest first: each step is a valid move, and the tree's shape is a function
     * of its boxes and its root, so this restores the tree exactly. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (Py_ssize_t i = undo->n - 5; i >= 0; i -= 5) {
        double c[4];
        memcpy(c, &undo->p[i + 1], 4 * sizeof(double));
        int32_t s = find_slot(t, undo->p[i]);
        if (s != NO_SLOT && move_slot(t, s, c) < 0) {
            break;
        }
    }
    if (atomic && root_bounds != NULL && !t->broken) {
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
                    PyErr_Format(PyExc_ValueError, MSG_FLAT_IDS, "move_many");
                }
                PyBuffer_Release(&box_view);
                PyBuffer_Release(&ids_view);
                return -1;
            }
            ok = move_buffers(t, ids, coords, n_ids, n_boxes, log);
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
        undo_moves(t, &undo, atomic, had_root ? root_bounds : NULL, root_level);
    }
    PyMem_Free(undo.p);
    if (!ok) {
        drop_hints(t); /* for positions of a call that went wrong: no use to the next */
    }
    return ok ? 0 : -1;
}

static const Params move_many_params = {"move_many", 2, 2, 3, {"entities", "boxes", "atomic"}};

QT_API PyObject *
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
    change_begin(t);
    int r = move_many_impl(t, a[0], a[1], atomic);
    change_end(t);
    maybe_compact(t);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

QT_API PyObject *
Tree_move_records(Tree *t, PyObject *records)
{
    if (guard(t, 1) < 0) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(records); /* new */
    if (it == NULL) {
        return NULL;
    }
    change_begin(t);
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
        bad = bad || (t->wrapped && canonical(t->period, c, entity, id) < 0);
        Py_XDECREF(entity);
        Py_DECREF(rec);
        if (bad || move_slot(t, s, c) < 0) {
            break;
        }
    }
    change_end(t);
    Py_DECREF(it);
    maybe_compact(t);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

QT_API PyObject *
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
    change_begin(t);
    PyObject *rec;
    while ((rec = PyIter_Next(it)) != NULL) { /* new */
        int64_t id;
        double c[4];
        PyObject *entity;
        int bad = read_record(rec, 1, &id, c, &entity) < 0
                  || (t->wrapped && canonical(t->period, c, entity, id) < 0)
                  || check_new(t, &fresh, entity, id, c, &batch) < 0;
        Py_XDECREF(entity);
        Py_DECREF(rec);
        if (bad) {
            break;
        }
    }
    Py_DECREF(it);
    int r = PyErr_Occurred() ? -1 : insert_checked(t, &batch);
    change_end(t);
    maybe_compact(t);
    PyMem_Free(batch.p);
    idset_free(&fresh);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}
