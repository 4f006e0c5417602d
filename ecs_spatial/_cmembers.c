/* ecs_spatial._cmembers: the read loop of _members.py, compiled, and the members table
 * that spares its simplest members that loop (below, "The members table").
 *
 * _members.read_boxes_reference reads every dirty member's Position and AABB for the
 * SpatialProcessor, checks the box they make and re-arms their dirty flags. In Python that
 * loop was half the processor's frame once the index was compiled (the figures:
 * docs/design.md, "Decisions"). read_boxes() below is that loop, and only
 * that loop, with the same reads in the same order, the same float arithmetic and the same
 * errors; the Python loop stays the reference (ECS_SPATIAL_PURE=1 runs it, and
 * tests/test_cmembers.py drives both side by side).
 *
 * The fast path reads the components' slots at their offsets when a component's type is
 * exactly Position or AABB (the member descriptors' offsets, taken once by configure()) and
 * its values are exact floats; anything else (a subclass, an int, a Fraction, an empty slot)
 * takes the generic path, which performs the Python loop's operations through the C API, so
 * the answers, the types of the results and the exceptions are the Python loop's own.
 *
 * Two things the fast path does that no caller can tell from the Python loop's: a changed
 * box is written into the record's own tuple when nothing else holds it or its floats (see
 * store_in_place(): a new box in all but identity, with no object made or freed), and both
 * loops write the frame's moves into the caller's two bytearrays, which the index takes
 * whole (see Moves; why: docs/design.md, "Decisions").
 *
 * Python runs inside the loop (_rearm, a generic read, a comparison, and any finaliser the
 * collector runs at an allocation), and may change the lists, the records, the components or
 * the configuration itself: the loop holds a strong reference to everything it reads before
 * it reads on, reads todo by index and a record's list bounds-checked after Python has run,
 * and holds the configuration it started with to the end of the call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>

#include "_cquadtree_src/floats.h" /* the index's float rules */

#ifndef Py_T_OBJECT_EX
#define Py_T_OBJECT_EX T_OBJECT_EX
#endif

/* What configure() took: the component types, the slots' offsets, and the Python helpers
 * that build an error and re-arm a shared component. */
typedef struct {
    PyTypeObject *position;
    PyTypeObject *aabb;
    Py_ssize_t x, y;            /* Position._x, Position._y */
    Py_ssize_t w, h, ox, oy;    /* AABB._w, _h, _ox, _oy */
    Py_ssize_t pos_owner, pos_sink, aabb_owner, aabb_sink; /* _Tracked._owner, _sink */
    PyObject *bad_box;          /* _members.box_error(entity, pos, aabb) -> Exception */
    PyObject *rearm;            /* components.rearm(component, sink, entity) */
} Config;

static Config config;
static int configured = 0;

/* Interned attribute names for the generic path. */
static PyObject *s_x, *s_y, *s_w, *s_h, *s_ox, *s_oy, *s_owner, *s_sink;

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* The offset of ``type.name`` when it is a writable object slot (a __slots__ entry) of
 * ``type`` or of a base of it: the offset is then inside every instance of ``type``. A slot
 * descriptor of another class, assigned as a class attribute, would have the loop read
 * outside the object: refused by name. */
static int
slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, name); /* new */
    if (descr == NULL) {
        return -1;
    }
    int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type)
             && ((PyMemberDescrObject *)descr)->d_member->type == Py_T_OBJECT_EX
             && !(((PyMemberDescrObject *)descr)->d_member->flags & READONLY);
    PyTypeObject *owner = ok ? PyDescr_TYPE(descr) : NULL; /* borrowed from descr */
    if (ok && !PyType_IsSubtype(type, owner)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is a slot of %s, which %s does not derive from",
                     type->tp_name, name, owner->tp_name, type->tp_name);
        Py_DECREF(descr);
        return -1;
    }
    if (ok) {
        *offset = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    Py_DECREF(descr);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a writable __slots__ entry",
                     type->tp_name, name);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(configure_doc,
"configure(position_type, aabb_type, bad_box, rearm)\n\n"
"Take the component classes (their slots' offsets) and the two Python helpers that the\n"
"loop calls on its rare paths. Called once, by ecs_spatial._members.");

static PyObject *
configure(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *position, *aabb, *bad_box, *rearm;
    if (!PyArg_ParseTuple(args, "O!O!OO:configure", &PyType_Type, &position, &PyType_Type,
                          &aabb, &bad_box, &rearm)) {
        return NULL;
    }
    Config c;
    c.position = (PyTypeObject *)position;
    c.aabb = (PyTypeObject *)aabb;
    if (slot_offset(c.position, "_x", &c.x) < 0 || slot_offset(c.position, "_y", &c.y) < 0
        || slot_offset(c.aabb, "_w", &c.w) < 0 || slot_offset(c.aabb, "_h", &c.h) < 0
        || slot_offset(c.aabb, "_ox", &c.ox) < 0 || slot_offset(c.aabb, "_oy", &c.oy) < 0
        || slot_offset(c.position, "_owner", &c.pos_owner) < 0
        || slot_offset(c.position, "_sink", &c.pos_sink) < 0
        || slot_offset(c.aabb, "_owner", &c.aabb_owner) < 0
        || slot_offset(c.aabb, "_sink", &c.aabb_sink) < 0) {
        return NULL;
    }
    Py_INCREF(position);
    Py_INCREF(aabb);
    Py_INCREF(bad_box);
    Py_INCREF(rearm);
    c.bad_box = bad_box;
    c.rearm = rearm;
    Config old = config;
    int had = configured;
    config = c;
    configured = 1;
    if (had) { /* the old ones let go of last: a finaliser may run, and find the new ones */
        Py_DECREF(old.position);
        Py_DECREF(old.aabb);
        Py_DECREF(old.bad_box);
        Py_DECREF(old.rearm);
    }
    Py_RETURN_NONE;
}

/* ``obj.<name>``: the slot at ``offset`` when ``obj`` is exactly of ``type`` and the slot is
 * set, else the generic lookup (which honours a subclass, and raises AttributeError for an
 * empty slot as Python does). New reference, or NULL with an error. */
static inline PyObject *
get_field(PyObject *obj, PyTypeObject *type, Py_ssize_t offset, PyObject *name)
{
    if (Py_IS_TYPE(obj, type)) {
        PyObject *value = SLOT(obj, offset);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(obj, name);
}

/* ``if component._owner is dirty: component._sink = dirty`` else
 * ``_rearm(component, dirty, entity)``: 0, or -1 with an error. */
static int
rearm(const Config *c, PyObject *component, PyTypeObject *type, Py_ssize_t owner_at,
      Py_ssize_t sink_at, PyObject *dirty, PyObject *entity)
{
    if (Py_IS_TYPE(component, type) && SLOT(component, owner_at) != NULL) {
        if (SLOT(component, owner_at) == dirty) {
            PyObject *old = SLOT(component, sink_at);
            Py_INCREF(dirty);
            SLOT(component, sink_at) = dirty;
            Py_XDECREF(old);
            return 0;
        }
    }
    else {
        PyObject *owner = PyObject_GetAttr(component, s_owner); /* new */
        if (owner == NULL) {
            return -1;
        }
        int mine = owner == dirty;
        Py_DECREF(owner);
        if (mine) {
            return PyObject_SetAttr(component, s_sink, dirty);
        }
    }
    PyObject *r = PyObject_CallFunctionObjArgs(c->rearm, component, dirty, entity, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* The six fields of a member, as Python reads them: _w, _h, _x, _ox, _y, _oy. */
enum { W, H, X, OX, Y, OY, FIELDS };

/* The box of one member as the generic path computes it (the Python expressions, operation
 * by operation): 1 with box[0..3] set (new references), 0 when the box fails the check,
 * -1 with an error. */
static int
generic_box(PyObject *const f[FIELDS], PyObject *box[4])
{
    static PyObject *zero, *inf, *minus_inf;
    if ((zero == NULL && (zero = PyFloat_FromDouble(0.0)) == NULL)
        || (inf == NULL && (inf = PyFloat_FromDouble(Py_HUGE_VAL)) == NULL)
        || (minus_inf == NULL && (minus_inf = PyFloat_FromDouble(-Py_HUGE_VAL)) == NULL)) {
        return -1; /* each made once; one that failed is tried again next time */
    }
    box[0] = box[1] = box[2] = box[3] = NULL;
    PyObject *t;
    if ((t = PyNumber_Add(f[X], f[OX])) == NULL) {
        return -1;
    }
    box[0] = PyNumber_Add(t, zero);
    Py_DECREF(t);
    if (box[0] == NULL || (t = PyNumber_Add(f[Y], f[OY])) == NULL) {
        goto fail;
    }
    box[1] = PyNumber_Add(t, zero);
    Py_DECREF(t);
    if (box[1] == NULL || (box[2] = PyNumber_Add(box[0], f[W])) == NULL
        || (box[3] = PyNumber_Add(box[1], f[H])) == NULL) {
        goto fail;
    }
    /* x0 > -inf and x1 < inf and y0 > -inf and y1 < inf and w >= 0.0 and h >= 0.0 */
    PyObject *const left[6] = {box[0], box[2], box[1], box[3], f[W], f[H]};
    PyObject *const right[6] = {minus_inf, inf, minus_inf, inf, zero, zero};
    const int op[6] = {Py_GT, Py_LT, Py_GT, Py_LT, Py_GE, Py_GE};
    for (int i = 0; i < 6; i++) {
        int holds = PyObject_RichCompareBool(left[i], right[i], op[i]);
        if (holds < 0) {
            goto fail;
        }
        if (!holds) {
            for (int k = 0; k < 4; k++) {
                Py_CLEAR(box[k]);
            }
            return 0;
        }
    }
    return 1;
fail:
    for (int k = 0; k < 4; k++) {
        Py_CLEAR(box[k]);
    }
    return -1;
}

/* ``box != old`` for the new box (x0, y0, x1, y1, entity): 1, 0, or -1 with an error. The
 * common case, two tuples of exact floats and the same entity object, compares doubles. */
static int
box_differs(PyObject *box, PyObject *old)
{
    if (PyTuple_CheckExact(old) && PyTuple_GET_SIZE(old) == 5
        && PyTuple_GET_ITEM(old, 4) == PyTuple_GET_ITEM(box, 4)) {
        int floats = 1;
        for (int i = 0; i < 4 && floats; i++) {
            floats = PyFloat_CheckExact(PyTuple_GET_ITEM(old, i))
                     && PyFloat_CheckExact(PyTuple_GET_ITEM(box, i));
        }
        if (floats) {
            for (int i = 0; i < 4; i++) {
                if (PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(old, i))
                    != PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(box, i))) {
                    return 1;
                }
            }
            return 0;
        }
    }
    return PyObject_RichCompareBool(box, old, Py_NE);
}

/* Replace the current error, a TypeError or an ArithmeticError from the box's arithmetic or
 * the check's own refusal, by _members.box_error(entity, pos, aabb): ``raise ... from None``. */
static void
raise_bad_box(const Config *c, PyObject *entity, PyObject *pos, PyObject *aabb, int from_none)
{
    PyObject *error = PyObject_CallFunctionObjArgs(c->bad_box, entity, pos, aabb, NULL);
    if (error == NULL) {
        return;
    }
    if (from_none) {
        PyException_SetCause(error, NULL); /* sets __suppress_context__ as well */
    }
    PyErr_SetObject((PyObject *)Py_TYPE(error), error);
    Py_DECREF(error);
}

/* The changed records' moves, for the index's buffer path (move_many of two buffers): each
 * id as an int64 and each box as four doubles, written into two bytearrays the caller owns,
 * in the order the records are appended to ``changed``. ``complete`` stays 1 while every
 * changed record is there; a record whose id is not an exact int of 64 bits or whose box is
 * not four exact floats cannot be carried exactly, and clears it (the caller then moves the
 * records themselves). ``ids`` NULL: no buffers asked for. */
typedef struct {
    PyObject *ids, *boxes;  /* borrowed from the call's arguments */
    Py_ssize_t n, cap;      /* moves written; room in both buffers, in moves */
    int complete;
} Moves;

/* Room for ``want`` moves in both buffers: 0, or -1 with an error (a buffer exported, or no
 * memory). The bytearrays keep their allocation from frame to frame, so this resizes only
 * when the frame has more moves than any before. */
static int
moves_grow(Moves *m, Py_ssize_t want)
{
    Py_ssize_t cap = want < 2 * m->cap ? 2 * m->cap : want;
    if (PyByteArray_Resize(m->ids, cap * 8) < 0 || PyByteArray_Resize(m->boxes, cap * 32) < 0) {
        return -1;
    }
    m->cap = cap;
    return 0;
}

static inline int
moves_reserve(Moves *m, Py_ssize_t want)
{
    return want <= m->cap ? 0 : moves_grow(m, want);
}

/* Append one move: 0, or -1 with an error. */
static inline int
moves_add(Moves *m, PyObject *entity, const double v[4])
{
    if (m->ids == NULL || !m->complete) {
        return 0;
    }
    int overflow = 0;
    long long id = PyLong_CheckExact(entity) ? PyLong_AsLongLongAndOverflow(entity, &overflow) : 0;
    if (!PyLong_CheckExact(entity) || overflow || (id == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        m->complete = 0;
        return 0;
    }
    if (moves_reserve(m, m->n + 1) < 0) {
        return -1;
    }
    int64_t id64 = (int64_t)id;
    memcpy(PyByteArray_AS_STRING(m->ids) + 8 * m->n, &id64, 8);
    memcpy(PyByteArray_AS_STRING(m->boxes) + 32 * m->n, v, 32);
    m->n++;
    return 0;
}

/* Append a changed record's move from its new box, a 5-tuple: 0, or -1 with an error. */
static int
moves_add_box(Moves *m, PyObject *box, PyObject *entity)
{
    if (m->ids == NULL || !m->complete) {
        return 0;
    }
    double v[4];
    for (int i = 0; i < 4; i++) {
        PyObject *corner = PyTuple_GET_ITEM(box, i);
        if (!PyFloat_CheckExact(corner)) {
            m->complete = 0;
            return 0;
        }
        v[i] = PyFloat_AS_DOUBLE(corner);
    }
    return moves_add(m, entity, v);
}

/* The box of six exact float fields, by the Python loop's expressions in their order:
 * (x + ox) + 0.0 (which makes -0.0 into 0.0), then x0 + w; compiled without contraction, so
 * the sums round as CPython's. 1 with v set, or 0 when the box fails the loop's check. */
static inline int
float_box(PyObject *const f[FIELDS], double v[4])
{
    const double w = PyFloat_AS_DOUBLE(f[W]), h = PyFloat_AS_DOUBLE(f[H]);
    const double x0 = (PyFloat_AS_DOUBLE(f[X]) + PyFloat_AS_DOUBLE(f[OX])) + 0.0;
    const double y0 = (PyFloat_AS_DOUBLE(f[Y]) + PyFloat_AS_DOUBLE(f[OY])) + 0.0;
    const double x1 = x0 + w, y1 = y0 + h;
    v[0] = x0;
    v[1] = y0;
    v[2] = x1;
    v[3] = y1;
    return x0 > -Py_HUGE_VAL && x1 < Py_HUGE_VAL && y0 > -Py_HUGE_VAL && y1 < Py_HUGE_VAL
           && w >= 0.0 && h >= 0.0;
}

/* ``rec[2] = box`` for the new box ``v`` without a new object, when the record's box ``old``
 * allows it: a 5-tuple of ``entity`` (the same object) and four exact floats, still the
 * record's (a generic read of a field may have run Python), that either equals ``v`` (no
 * change, by the float comparison ``box != old`` makes) or that nothing but the record (and
 * the ``held`` references of the caller) refers to, nor to its floats: writing the corners
 * into it is then unobservable, and saves making five objects and freeing five. The record
 * is a new box in all but identity, which only a holder could tell, and a holder (the
 * sweep's ``_swept_from``) raises the count. A changed record is appended to ``changed``
 * and its move to ``moves``. 1 done, 0 when ``old`` does not allow it (nothing done), -1
 * with an error. */
static inline int
store_in_place(PyObject *rec, PyObject *old, Py_ssize_t held, PyObject *entity,
               const double v[4], PyObject *changed, Moves *moves)
{
    if (PyList_GET_SIZE(rec) != 4 || PyList_GET_ITEM(rec, 2) != old || !PyTuple_CheckExact(old)
        || PyTuple_GET_SIZE(old) != 5 || PyTuple_GET_ITEM(old, 4) != entity) {
        return 0;
    }
    int same = 1, owned = Py_REFCNT(old) == 1 + held;
    for (int i = 0; i < 4; i++) {
        PyObject *corner = PyTuple_GET_ITEM(old, i);
        if (!PyFloat_CheckExact(corner)) {
            return 0;
        }
        same &= PyFloat_AS_DOUBLE(corner) == v[i];
        owned &= Py_REFCNT(corner) == 1;
    }
    if (same) {
        return 1;
    }
    if (!owned) {
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        ((PyFloatObject *)PyTuple_GET_ITEM(old, i))->ob_fval = v[i];
    }
    return PyList_Append(changed, rec) < 0 || moves_add(moves, entity, v) < 0 ? -1 : 1;
}

/* plan_one()'s common case, taken first: exact Position and AABB holding exact floats whose
 * box is valid, a record box the loop may reuse (see store_in_place()), and components armed
 * for ``dirty`` by this processor alone. It reads the slots in place, with borrowed references:
 * no Python runs until it is done, so nothing can change under it. 1 when it did the whole of
 * plan_one's work, 0 when the member is not such a case (plan_one then does it all, and
 * nothing has been changed), -1 with an error (no memory). */
static inline int
fast_one(const Config *c, PyObject *entity, PyObject *rec, PyObject *dirty, PyObject *changed,
         Moves *moves)
{
    if (!PyList_CheckExact(rec) || PyList_GET_SIZE(rec) != 4) {
        return 0;
    }
    PyObject *pos = PyList_GET_ITEM(rec, 0), *aabb = PyList_GET_ITEM(rec, 1);
    if (!Py_IS_TYPE(pos, c->position) || !Py_IS_TYPE(aabb, c->aabb)
        || SLOT(pos, c->pos_owner) != dirty || SLOT(aabb, c->aabb_owner) != dirty) {
        return 0;
    }
    PyObject *const f[FIELDS] = {SLOT(aabb, c->w), SLOT(aabb, c->h), SLOT(pos, c->x),
                                 SLOT(aabb, c->ox), SLOT(pos, c->y), SLOT(aabb, c->oy)};
    for (int i = 0; i < FIELDS; i++) {
        if (f[i] == NULL || !PyFloat_CheckExact(f[i])) {
            return 0;
        }
    }
    double v[4];
    if (!float_box(f, v)) {
        return 0; /* plan_one raises the error */
    }
    int stored = store_in_place(rec, PyList_GET_ITEM(rec, 2), 0, entity, v, changed, moves);
    if (stored <= 0) {
        return stored;
    }
    /* rearm()'s case of a component whose owner is ``dirty``: its sink, None or ``dirty``
     * itself, becomes ``dirty`` (so the old one's decref frees nothing) */
    PyObject *const comps[2] = {pos, aabb};
    const Py_ssize_t sinks[2] = {c->pos_sink, c->aabb_sink};
    for (int i = 0; i < 2; i++) {
        PyObject *was = SLOT(comps[i], sinks[i]);
        Py_INCREF(dirty);
        SLOT(comps[i], sinks[i]) = dirty;
        Py_XDECREF(was);
    }
    return 1;
}

/* One member: its components re-armed, then its checked box, appended to ``changed`` if it
 * differs from the record's (re-armed first, as the Python loop: a store made by Python run
 * here, a generic read or a finaliser at an allocation, lists the entity again). 0, or -1
 * with an error. */
static int
plan_one(const Config *c, PyObject *entity, PyObject *rec, PyObject *dirty, PyObject *changed,
         Moves *moves)
{
    if (!PyList_CheckExact(rec) || PyList_GET_SIZE(rec) != 4) {
        PyErr_Format(PyExc_TypeError, "member records are 4-lists, got %R", rec);
        return -1;
    }
    PyObject *pos = PyList_GET_ITEM(rec, 0);
    PyObject *aabb = PyList_GET_ITEM(rec, 1);
    PyObject *old = PyList_GET_ITEM(rec, 2); /* ``pos, aabb, old, _ = rec``: held, as unpacked */
    Py_INCREF(pos);
    Py_INCREF(aabb);
    Py_INCREF(old);
    PyObject *f[FIELDS] = {NULL};
    PyObject *box = NULL;
    int r = -1;
    if (rearm(c, pos, c->position, c->pos_owner, c->pos_sink, dirty, entity) < 0
        || rearm(c, aabb, c->aabb, c->aabb_owner, c->aabb_sink, dirty, entity) < 0) {
        goto checked; /* inside the Python loop's try as well */
    }
    const PyTypeObject *types[FIELDS] = {c->aabb, c->aabb, c->position, c->aabb,
                                         c->position, c->aabb};
    PyObject *const owners[FIELDS] = {aabb, aabb, pos, aabb, pos, aabb};
    const Py_ssize_t offsets[FIELDS] = {c->w, c->h, c->x, c->ox, c->y, c->oy};
    PyObject *const names[FIELDS] = {s_w, s_h, s_x, s_ox, s_y, s_oy};
    for (int i = 0; i < FIELDS; i++) {
        f[i] = get_field(owners[i], (PyTypeObject *)types[i], offsets[i], names[i]);
        if (f[i] == NULL) {
            goto done; /* AttributeError: not the loop's to translate */
        }
    }
    int all_floats = 1;
    for (int i = 0; i < FIELDS; i++) {
        all_floats &= PyFloat_CheckExact(f[i]);
    }
    PyObject *corners[4];
    if (all_floats) {
        double v[4];
        if (!float_box(f, v)) {
            raise_bad_box(c, entity, pos, aabb, 0);
            goto checked;
        }
        int stored = store_in_place(rec, old, 1, entity, v, changed, moves); /* old held */
        if (stored < 0) {
            goto done;
        }
        if (stored) {
            r = 0;
            goto done;
        }
        for (int i = 0; i < 4; i++) {
            if ((corners[i] = PyFloat_FromDouble(v[i])) == NULL) {
                for (int k = 0; k < i; k++) {
                    Py_DECREF(corners[k]);
                }
                goto done;
            }
        }
    }
    else {
        int fits = generic_box(f, corners);
        if (fits <= 0) {
            if (fits == 0) {
                raise_bad_box(c, entity, pos, aabb, 0);
            }
            goto checked;
        }
    }
    box = PyTuple_New(5);
    if (box == NULL) {
        for (int k = 0; k < 4; k++) {
            Py_DECREF(corners[k]);
        }
        goto done;
    }
    for (int i = 0; i < 4; i++) {
        PyTuple_SET_ITEM(box, i, corners[i]);
    }
    Py_INCREF(entity);
    PyTuple_SET_ITEM(box, 4, entity);
    int differs = box_differs(box, old);
    if (differs < 0) {
        goto checked;
    }
    if (differs) {
        /* ``rec[2] = box``: bounds-checked, since Python code has run since the unpacking. */
        Py_INCREF(box);
        if (PyList_SetItem(rec, 2, box) < 0 || PyList_Append(changed, rec) < 0
            || moves_add_box(moves, box, entity) < 0) {
            goto done;
        }
    }
    r = 0;
    goto done;
checked:
    /* The Python loop's ``except (TypeError, ArithmeticError): raise box_error(...) from
     * None``, which also catches a TypeError that box_error itself built. */
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ArithmeticError)) {
        PyErr_Clear();
        PyObject *now_pos = PyList_GetItem(rec, 0); /* ``rec[0]``, bounds-checked */
        PyObject *now_aabb = now_pos == NULL ? NULL : PyList_GetItem(rec, 1);
        if (now_aabb != NULL) {
            raise_bad_box(c, entity, now_pos, now_aabb, 1);
        }
    }
done:
    Py_XDECREF(box);
    for (int i = 0; i < FIELDS; i++) {
        Py_XDECREF(f[i]);
    }
    Py_DECREF(pos);
    Py_DECREF(aabb);
    Py_DECREF(old);
    return r;
}

PyDoc_STRVAR(read_boxes_doc,
"read_boxes(todo, members, dirty, changed, ids=None, boxes=None)\n--\n\n"
"For each entity of the list ``todo`` with a record in ``members``: compute its checked box\n"
"(x0, y0, x1, y1, entity), store it in the record and append the record to ``changed`` when\n"
"it differs from the one there, and re-arm its components for ``dirty``. Raises what the\n"
"Python loop, _members.read_boxes_reference, raises, leaving ``changed`` as far as it got.\n\n"
"With ``ids`` and ``boxes``, two bytearrays: they are made to hold the moves of the records\n"
"appended to ``changed``, in that order (each id an int64, each box four float64, native\n"
"order), and the answer is whether every one of them is there (an id that is not an int of\n"
"64 bits, or a box that is not four floats, cannot be carried exactly). Without: False.");

static PyObject *
read_boxes(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *todo, *members, *dirty, *changed, *ids = Py_None, *boxes = Py_None;
    if (!PyArg_ParseTuple(args, "O!O!O!O!|OO:read_boxes", &PyList_Type, &todo, &PyDict_Type,
                          &members, &PyList_Type, &dirty, &PyList_Type, &changed, &ids,
                          &boxes)) {
        return NULL;
    }
    Moves moves = {NULL, NULL, 0, 0, 0};
    if (ids != Py_None || boxes != Py_None) {
        if (!PyByteArray_CheckExact(ids) || !PyByteArray_CheckExact(boxes)) {
            PyErr_Format(PyExc_TypeError, "ids and boxes are bytearrays, got %.200s and %.200s",
                         Py_TYPE(ids)->tp_name, Py_TYPE(boxes)->tp_name);
            return NULL;
        }
        Py_ssize_t room = PyByteArray_GET_SIZE(ids) / 8;
        Py_ssize_t box_room = PyByteArray_GET_SIZE(boxes) / 32;
        moves = (Moves){ids, boxes, 0, room < box_room ? room : box_room, 1};
        /* every resize before the first change: a buffer exported, or no memory, fails here */
        if (moves_reserve(&moves, PyList_GET_SIZE(todo)) < 0) {
            return NULL;
        }
    }
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "read_boxes() before configure()");
        return NULL;
    }
    /* The configuration as it is now, held to the end of the call: Python code that runs
     * meanwhile (_rearm, a field's generic read, a finaliser the collector runs) may call
     * configure() again, which would free the types and helpers the loop compares and calls. */
    Config c = config;
    Py_INCREF(c.position);
    Py_INCREF(c.aabb);
    Py_INCREF(c.bad_box);
    Py_INCREF(c.rearm);
    int r = 0;
    /* An index, not an iterator: handlers never run here, but _rearm of a shared component
     * is Python code, and the list may be appended to meanwhile (it is the dirty list). */
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(todo); i++) {
        PyObject *entity = PyList_GET_ITEM(todo, i);
        Py_INCREF(entity);
        PyObject *rec = PyDict_GetItemWithError(members, entity); /* borrowed */
        if (rec != NULL) {
            Py_INCREF(rec);
            r = fast_one(&c, entity, rec, dirty, changed, &moves);
            if (r == 0) {
                r = plan_one(&c, entity, rec, dirty, changed, &moves);
            }
            else if (r == 1) {
                r = 0;
            }
            Py_DECREF(rec);
        }
        else if (PyErr_Occurred()) {
            r = -1;
        }
        Py_DECREF(entity);
    }
    Py_DECREF(c.position);
    Py_DECREF(c.aabb);
    Py_DECREF(c.bad_box);
    Py_DECREF(c.rearm);
    if (r < 0) {
        return NULL;
    }
    if (moves.ids == NULL) {
        Py_RETURN_FALSE;
    }
    if (PyByteArray_Resize(ids, moves.n * 8) < 0 || PyByteArray_Resize(boxes, moves.n * 32) < 0) {
        return NULL;
    }
    return PyBool_FromLong(moves.complete);
}


/* ---------------------------------------------------------------------- the members table
 *
 * The read loop above starts from the dirty list: per dirty member an entity object, a dict
 * lookup, the record, two components, six field floats and the record's box, most of them a
 * cache miss at 10,000 moving entities. The members table keeps what the frame needs of its
 * simplest members in one C array, so that their frame touches nothing else:
 *
 * - a *slot* per member whose Position and AABB are the compiled types, tracked by this
 *   processor alone and armed, holding floats that fit (members_table_fits: a box of them
 *   is always valid): the six fields as doubles, the box the index holds, the record;
 * - such components are *bound* (_members_table.h, Comp.table and .slot) and claimed by
 *   the slot (MemberSlot.claim). A bound component's store of a fitting float also writes
 *   the double into the slot and, on the slot's first store since the last read, appends
 *   the slot to the dirty array: that is its dirty mark, and its entity never reaches the
 *   dirty list;
 * - read() turns the dirty slots into moves, written into two bytearrays for the index's
 *   buffer path; it cannot fail once it has room for them, so it runs last in the planning
 *   phase, after everything that can raise (the dirty list's members, the arrivals). On a
 *   torus it first checks the new boxes against the period, as the dirty list's path does,
 *   and refuses with nothing changed; the caller then reads those members on the dirty
 *   list's path (flush), which names the box (_members.Membership._plan_boxes);
 * - anything else on a bound component (another value, an attribute stored by name,
 *   tracked anew or shared, re-initialised) first *drops* its member: both components
 *   unbound, the record's box brought up to date, and the member is back on the dirty
 *   list's path (_ccomponents.c, leave_table). The processor binds a member again after a
 *   frame that read it there (_members.Membership._apply_members).
 *
 * The record's box (rec[2]) may lag behind the slot's between frames (MemberSlot.behind):
 * whatever reads it goes through sync() or sync_all() first (the sweep, pickling) or drops
 * the member (an arrival, a departure).
 *
 * Who owns what, said once: the table owns its slots' records and entities and its dict
 * slot_of; a bound component owns a reference to the table (so the slots, freed only by the
 * table's dealloc, outlive every component bound to them); a slot's claims are borrowed
 * pointers, only ever compared with a live component (the one storing), and each component
 * clears its claim before it dies (tp_clear, dealloc). A slot never dereferences a claim
 * unless it matches a component whose binding points back at it, which drop() then clears.
 */

#include "_members_table.h"

/* The compiled component types, the only ones a slot binds (their layout is Comp). */
static PyTypeObject *bound_position, *bound_aabb; /* owned for ever, from _ccomponents */

static int
table_grow(MembersTable *t, Py_ssize_t want)
{
    if (want <= t->cap) {
        return 0;
    }
    Py_ssize_t cap = want < 2 * t->cap ? 2 * t->cap : want;
    if (cap < 64) {
        cap = 64;
    }
    if ((size_t)cap > PY_SSIZE_T_MAX / sizeof(MemberSlot)) {
        PyErr_NoMemory();
        return -1;
    }
    MemberSlot *slots = PyMem_Realloc(t->slots, (size_t)cap * sizeof(MemberSlot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(slots + t->cap, 0, (size_t)(cap - t->cap) * sizeof(MemberSlot));
    t->slots = slots;
    Py_ssize_t *dirty = PyMem_Realloc(t->dirty, (size_t)cap * sizeof(Py_ssize_t));
    if (dirty == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->dirty = dirty;
    Py_ssize_t *free_slots = PyMem_Realloc(t->free, (size_t)cap * sizeof(Py_ssize_t));
    if (free_slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->free = free_slots;
    t->cap = cap; /* last: every array has room for cap now */
    return 0;
}

/* ``rec[2] = box``: a new record tuple (x0, y0, x1, y1, entity), or STALE for a box whose
 * x0 is NaN. 0, or -1 with an error (no memory: the record is then STALE, which moves the
 * member at its next read, so the index stays right). */
static int
write_record(MembersTable *t, PyObject *rec, PyObject *entity, const double box[4])
{
    if (!PyList_CheckExact(rec) || PyList_GET_SIZE(rec) != 4) {
        return 0; /* a record cleared by the collector: nobody reads it again */
    }
    PyObject *value = NULL;
    int r = 0;
    if (box[0] == box[0]) {
        value = PyTuple_New(5);
        for (int i = 0; value != NULL && i < 4; i++) {
            PyObject *corner = PyFloat_FromDouble(box[i]);
            if (corner == NULL) {
                Py_CLEAR(value);
                break;
            }
            PyTuple_SET_ITEM(value, i, corner);
        }
        if (value != NULL) {
            Py_INCREF(entity);
            PyTuple_SET_ITEM(value, 4, entity);
        }
        else {
            r = -1;
        }
    }
    if (value == NULL) {
        Py_INCREF(t->stale);
        value = t->stale;
    }
    if (PyList_GET_SIZE(rec) != 4) { /* an allocation ran the collector, which cleared it */
        Py_DECREF(value);
        return r;
    }
    PyObject *old = PyList_GET_ITEM(rec, 2); /* the record's reference, handed over here */
    PyList_SET_ITEM(rec, 2, value);
    Py_XDECREF(old); /* a tuple of floats and an int: no finaliser runs */
    return r;
}

/* Put ``entity``, first stored into at ``stamp`` when the dirty list was ``seq`` long, into
 * the dirty list where the dirty list's path would have appended it: after the ``seq``
 * entries listed before it, and after the members put there before it that were stored
 * into earlier (the stamps say which). So the dirty list's order stays the order of the
 * first stores, which decides which of two bad boxes a frame names. 0, or -1 with an
 * error. */
static int
list_pending(MembersTable *t, PyObject *entity, Py_ssize_t seq, int64_t stamp)
{
    if (t->ninserted == t->inserted_cap) {
        Py_ssize_t cap = t->inserted_cap < 16 ? 16 : 2 * t->inserted_cap;
        int64_t *grown = PyMem_Realloc(t->inserted, (size_t)cap * sizeof(int64_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->inserted = grown;
        t->inserted_cap = cap;
    }
    Py_ssize_t at = seq;
    for (Py_ssize_t i = 0; i < t->ninserted; i++) {
        at += t->inserted[i] < stamp;
    }
    if (at > PyList_GET_SIZE(t->sink)) {
        at = PyList_GET_SIZE(t->sink); /* cleared meanwhile by someone else: the end */
    }
    if (PyList_Insert(t->sink, at, entity) < 0) {
        return -1;
    }
    t->inserted[t->ninserted++] = stamp;
    return 0;
}

/* Take slot ``slot``'s member out of the table: its components unbound, the slot freed,
 * then its record's box brought up to date. 0, or -1 with an error (write_record's); the
 * member is out of the table either way. The caller holds a reference to the table. */
static int
table_drop(MembersTable *t, Py_ssize_t slot)
{
    if (slot < 0 || slot >= t->used || t->slots[slot].rec == NULL) {
        return 0;
    }
    MemberSlot *s = &t->slots[slot];
    PyObject *rec = s->rec, *entity = s->entity; /* owned, from here on by this function */
    const double box[4] = {s->box[0], s->box[1], s->box[2], s->box[3]};
    int behind = s->behind, pending = s->dirty;
    const Py_ssize_t seq = s->seq;
    const int64_t stamp = s->stamp;
    s->rec = s->entity = NULL;
    s->behind = 0;
    for (int k = 0; k < 2; k++) {
        Comp *c = (Comp *)s->claim[k]; /* borrowed; alive while it claims the slot */
        s->claim[k] = NULL;
        if (c != NULL && c->table == (PyObject *)t && c->slot == slot) {
            c->table = NULL;
            c->slot = -1;
            Py_DECREF(t); /* not the last: the caller holds one */
            if (pending && c->sink == t->sink) {
                /* marked, as the dirty list's path has it: disarmed, the entity listed */
                c->sink = Py_None;
                Py_INCREF(Py_None);
                Py_DECREF(t->sink); /* not the last: the table holds one */
            }
        }
    }
    t->free[t->nfree++] = slot; /* its dirty flag stays with its place in the array */
    int r = 0;
    if (t->slot_of != NULL && PyDict_DelItem(t->slot_of, entity) < 0) {
        PyErr_Clear(); /* not there: nothing to forget (an exact int key runs no Python) */
    }
    if (behind && write_record(t, rec, entity, box) < 0) {
        /* The slot's box is the one the index holds, or will once this frame's moves are
         * applied: the record's box has to say so before the dirty list's path reads it. */
        r = -1;
    }
    if (r == 0 && pending && t->sink != NULL && list_pending(t, entity, seq, stamp) < 0) {
        r = -1;
    }
    Py_DECREF(rec);
    Py_DECREF(entity);
    return r;
}

/* The live slot of ``entity`` (a borrowed key), or -1 (none; or an error, then set). */
static Py_ssize_t
slot_of(MembersTable *t, PyObject *entity)
{
    PyObject *found = PyDict_GetItemWithError(t->slot_of, entity); /* borrowed */
    return found == NULL ? -1 : PyLong_AsSsize_t(found);
}

static int
table_ready(MembersTable *t)
{
    if (t->slot_of == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the members table was cleared by the collector");
        return -1;
    }
    return 0;
}

static PyObject *
table_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"sink", "stale", "wrap", NULL};
    PyObject *sink, *stale, *wrap = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O|O:MembersTable", kwlist, &PyList_Type,
                                     &sink, &stale, &wrap)) {
        return NULL;
    }
    double period[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (wrap != Py_None) {
        int ok = PyTuple_CheckExact(wrap) && PyTuple_GET_SIZE(wrap) == 6;
        for (int i = 0; ok && i < 6; i++) {
            ok = PyFloat_CheckExact(PyTuple_GET_ITEM(wrap, i));
            period[i] = ok ? PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(wrap, i)) : 0.0;
        }
        if (!ok || !(period[2] > 0.0 && period[3] > 0.0)) {
            PyErr_SetString(PyExc_TypeError,
                            "MembersTable(): wrap is None or a period, 6 floats (_wrap.period_of)");
            return NULL;
        }
    }
    if (bound_position == NULL) {
        PyObject *module = PyImport_ImportModule("ecs_spatial._ccomponents"); /* new */
        if (module == NULL) {
            return NULL;
        }
        PyObject *p = PyObject_GetAttrString(module, "Position"); /* new, kept */
        PyObject *a = p == NULL ? NULL : PyObject_GetAttrString(module, "AABB");
        Py_DECREF(module);
        if (a == NULL || !PyType_Check(p) || !PyType_Check(a)) {
            Py_XDECREF(p);
            Py_XDECREF(a);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "_ccomponents.Position and AABB are types");
            }
            return NULL;
        }
        bound_position = (PyTypeObject *)p;
        bound_aabb = (PyTypeObject *)a;
    }
    MembersTable *t = (MembersTable *)type->tp_alloc(type, 0); /* new, zeroed */
    if (t == NULL) {
        return NULL;
    }
    if ((t->slot_of = PyDict_New()) == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    Py_INCREF(sink);
    t->sink = sink;
    Py_INCREF(stale);
    t->stale = stale;
    t->drop = table_drop;
    t->wrapped = wrap != Py_None;
    memcpy(t->period, period, sizeof period);
    return (PyObject *)t;
}

static int
table_traverse(PyObject *self, visitproc visit, void *arg)
{
    MembersTable *t = (MembersTable *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(t->slot_of);
    Py_VISIT(t->sink);
    Py_VISIT(t->stale);
    for (Py_ssize_t i = 0; i < t->used; i++) {
        Py_VISIT(t->slots[i].rec);
        Py_VISIT(t->slots[i].entity);
    }
    return 0;
}

/* Every slot freed and every reference let go of, the records' boxes left as they are (the
 * records are dropped too: the processor forgets its world, or is itself dropped). The
 * components still bound find their claims gone and let go of the table at their next
 * store. The slots' memory stays until the dealloc. */
static void
table_release(MembersTable *t, PyObject **held)
{
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < t->used; i++) {
        MemberSlot *s = &t->slots[i];
        for (int k = 0; k < 2; k++) {
            Comp *c = (Comp *)s->claim[k]; /* borrowed, alive while it claims the slot */
            s->claim[k] = NULL;
            if (c != NULL && c->table == (PyObject *)t && c->slot == i) {
                c->table = NULL;
                c->slot = -1;
                held[n++] = (PyObject *)t; /* its reference, let go of below */
            }
        }
        if (s->rec != NULL) {
            held[n++] = s->rec;
            held[n++] = s->entity;
        }
    }
    memset(t->slots, 0, (size_t)t->used * sizeof(MemberSlot));
    t->used = t->ndirty = t->nfree = t->ninserted = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* last: what this frees may run Python */
        Py_DECREF(held[i]);
    }
}

static int
table_forget(MembersTable *t)
{
    PyObject **held = PyMem_Malloc((size_t)(4 * t->used + 1) * sizeof(PyObject *));
    if (held == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(t); /* the components' references may be the last ones */
    table_release(t, held);
    PyMem_Free(held);
    if (t->slot_of != NULL) {
        PyDict_Clear(t->slot_of);
    }
    Py_DECREF(t);
    return 0;
}

static int
table_clear(PyObject *self)
{
    MembersTable *t = (MembersTable *)self;
    if (t->used > 0 && table_forget(t) < 0) {
        PyErr_Clear(); /* no memory: the references stay (a leak, not a crash) */
        return 0;
    }
    Py_CLEAR(t->slot_of);
    Py_CLEAR(t->sink);
    Py_CLEAR(t->stale);
    return 0;
}

static void
table_dealloc(PyObject *self)
{
    MembersTable *t = (MembersTable *)self;
    PyObject_GC_UnTrack(self);
    /* No component holds the table any more (each holds a reference): no claim is live. */
    for (Py_ssize_t i = 0; i < t->used; i++) {
        Py_CLEAR(t->slots[i].rec);
        Py_CLEAR(t->slots[i].entity);
    }
    Py_CLEAR(t->slot_of);
    Py_CLEAR(t->sink);
    Py_CLEAR(t->stale);
    PyMem_Free(t->slots);
    PyMem_Free(t->dirty);
    PyMem_Free(t->free);
    PyMem_Free(t->inserted);
    PyTypeObject *type = Py_TYPE(self);
    type->tp_free(self);
    Py_DECREF(type);
}

/* A component ``comp`` of ``entity`` this table may bind: its exact compiled type, tracked
 * at this processor alone for ``entity`` (owner the dirty list, _eid the entity), armed,
 * unbound, its fields exact floats that fit, copied into ``f`` from ``base``. 1, 0, or -1
 * with an error. */
static int
bindable(MembersTable *t, PyObject *comp, PyTypeObject *type, int base, int n, PyObject *entity,
         double *f)
{
    if (!Py_IS_TYPE(comp, type)) {
        return 0;
    }
    Comp *c = (Comp *)comp;
    if (c->owner != t->sink || c->sink != t->sink || c->table != NULL || c->eid == NULL
        || !PyLong_CheckExact(c->eid)) {
        return 0;
    }
    int same = PyObject_RichCompareBool(c->eid, entity, Py_EQ); /* two exact ints */
    if (same <= 0) {
        return same;
    }
    for (int i = 0; i < n; i++) {
        if (c->f[i] == NULL || !PyFloat_CheckExact(c->f[i])
            || !members_table_fits(base + i, PyFloat_AS_DOUBLE(c->f[i]))) {
            return 0;
        }
        f[base + i] = PyFloat_AS_DOUBLE(c->f[i]);
    }
    return 1;
}

PyDoc_STRVAR(table_bind_doc,
"bind(entity, rec)\n--\n\n"
"Give the member ``entity``, whose record is ``rec``, a slot if its components allow it\n"
"(the compiled types, tracked here alone, armed, holding floats that fit) and its record's\n"
"box is a box of floats or STALE; say whether it has one now.");

static PyObject *
table_bind(PyObject *self, PyObject *args)
{
    MembersTable *t = (MembersTable *)self;
    PyObject *entity, *rec;
    if (!PyArg_ParseTuple(args, "OO!:bind", &entity, &PyList_Type, &rec) || table_ready(t) < 0) {
        return NULL;
    }
    int overflow = 0;
    long long eid = PyLong_CheckExact(entity) ? PyLong_AsLongLongAndOverflow(entity, &overflow)
                                              : 0;
    if (eid == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (!PyLong_CheckExact(entity) || overflow || PyList_GET_SIZE(rec) != 4
        || PyList_GET_ITEM(rec, 3) != entity) {
        Py_RETURN_FALSE;
    }
    PyObject *pos = PyList_GET_ITEM(rec, 0), *aabb = PyList_GET_ITEM(rec, 1); /* borrowed */
    Py_ssize_t had = slot_of(t, entity);
    if (had < 0 && PyErr_Occurred()) {
        return NULL;
    }
    if (had >= 0) {
        if (t->slots[had].claim[MT_POSITION] == pos && t->slots[had].claim[MT_AABB] == aabb
            && t->slots[had].rec == rec) {
            Py_RETURN_TRUE;
        }
        if (table_drop(t, had) < 0) {
            return NULL;
        }
    }
    double f[MT_FIELDS], box[4];
    int ok = bindable(t, pos, bound_position, MT_X, 2, entity, f);
    if (ok > 0) {
        ok = bindable(t, aabb, bound_aabb, MT_W, 4, entity, f);
    }
    if (ok <= 0) {
        return ok < 0 ? NULL : Py_NewRef(Py_False);
    }
    PyObject *old = PyList_GET_ITEM(rec, 2); /* borrowed */
    if (old == t->stale) {
        box[0] = box[1] = box[2] = box[3] = Py_NAN;
    }
    else {
        if (!PyTuple_CheckExact(old) || PyTuple_GET_SIZE(old) != 5
            || PyTuple_GET_ITEM(old, 4) != entity) {
            Py_RETURN_FALSE;
        }
        for (int i = 0; i < 4; i++) {
            PyObject *corner = PyTuple_GET_ITEM(old, i);
            if (!PyFloat_CheckExact(corner)) {
                Py_RETURN_FALSE;
            }
            box[i] = PyFloat_AS_DOUBLE(corner);
        }
    }
    Py_ssize_t slot;
    if (t->nfree > 0) {
        slot = t->free[t->nfree - 1];
    }
    else {
        if (table_grow(t, t->used + 1) < 0) {
            return NULL;
        }
        slot = t->used;
    }
    PyObject *index = PyLong_FromSsize_t(slot); /* new */
    if (index == NULL) {
        return NULL;
    }
    int set = PyDict_SetItem(t->slot_of, entity, index); /* an exact int key: no Python */
    Py_DECREF(index);
    if (set < 0) {
        return NULL;
    }
    /* Nothing below fails, and nothing below runs Python. */
    if (t->nfree > 0 && t->free[t->nfree - 1] == slot) {
        t->nfree--;
    }
    else {
        t->used++;
    }
    MemberSlot *s = &t->slots[slot]; /* its dirty flag kept: set, it is in the dirty array */
    memcpy(s->f, f, sizeof f);
    memcpy(s->box, box, sizeof box);
    s->eid = (int64_t)eid;
    s->behind = 0;
    s->claim[MT_POSITION] = pos;
    s->claim[MT_AABB] = aabb;
    Py_INCREF(rec);
    s->rec = rec;
    Py_INCREF(entity);
    s->entity = entity;
    PyObject *const comps[2] = {pos, aabb};
    for (int k = 0; k < 2; k++) {
        Comp *c = (Comp *)comps[k];
        Py_INCREF(self);
        c->table = self;
        c->slot = slot;
    }
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(table_drop_doc,
"drop(entity)\n--\n\n"
"Take ``entity`` out of the table (nothing if it has no slot): its components unbound, its\n"
"record's box brought up to date, and if it was stored into since the last read, listed in\n"
"the dirty list (its components disarmed), as the dirty list's path would have it.");

/* ``act`` on ``entity``'s slot, nothing when it has none (drop and sync): None, or NULL
 * with an error. */
static PyObject *
act_on_slot(PyObject *self, PyObject *entity, int (*act)(MembersTable *, Py_ssize_t))
{
    MembersTable *t = (MembersTable *)self;
    if (table_ready(t) < 0) {
        return NULL;
    }
    Py_ssize_t slot = slot_of(t, entity);
    if (slot < 0 && PyErr_Occurred()) {
        return NULL;
    }
    if (slot >= 0 && act(t, slot) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
table_drop_method(PyObject *self, PyObject *entity)
{
    return act_on_slot(self, entity, table_drop);
}

/* The record of slot ``slot`` brought up to date: 0, or -1 with an error. */
static int
table_sync_slot(MembersTable *t, Py_ssize_t slot)
{
    MemberSlot *s = &t->slots[slot];
    if (s->rec == NULL || !s->behind) {
        return 0;
    }
    PyObject *rec = s->rec, *entity = s->entity;
    const double box[4] = {s->box[0], s->box[1], s->box[2], s->box[3]};
    Py_INCREF(rec); /* held across write_record, which may run the collector */
    Py_INCREF(entity);
    s->behind = 0;
    int r = write_record(t, rec, entity, box);
    Py_DECREF(rec);
    Py_DECREF(entity);
    return r;
}

PyDoc_STRVAR(table_sync_doc,
"sync(entity)\n--\n\n"
"Bring ``entity``'s record's box up to date with its slot (nothing without a slot).");

static PyObject *
table_sync(PyObject *self, PyObject *entity)
{
    return act_on_slot(self, entity, table_sync_slot);
}

PyDoc_STRVAR(table_sync_all_doc,
"sync_all()\n--\n\nBring every record's box up to date with its slot.");

static PyObject *
table_sync_all(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    MembersTable *t = (MembersTable *)self;
    if (table_ready(t) < 0) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < t->used; i++) { /* used re-read: the collector may run */
        if (table_sync_slot(t, i) < 0) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(table_forget_doc,
"clear()\n--\n\n"
"Free every slot and unbind every component, the records left as they are: for a processor\n"
"that drops its records too (its world forgotten, or itself dropped).");

static PyObject *
table_forget_method(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    MembersTable *t = (MembersTable *)self;
    if (table_ready(t) < 0 || table_forget(t) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(table_read_doc,
"read(ids, boxes)\n--\n\n"
"The moves of the slots stored into since the last read, in the order of their first\n"
"store: the two bytearrays made to hold them (each id an int64, each box four float64),\n"
"each slot's box now the new one. Returns their number. Fails only for room, before any\n"
"change. On a torus (wrap=): -1, and nothing changed, if a slot's new box is one the\n"
"period refuses (_wrap.canonical): the caller reads them on the dirty list's path (flush),\n"
"which names it.");

/* Whether the period refuses the box v (a box of fitting fields), by _wrap.canonical's
 * rule (the index's own: canonical_box in _cquadtree_src/floats.h): its min corner has no
 * image, or the box moved there is wider or higher than half the period. The index makes
 * the box canonical itself as it moves it. */
static inline int
period_refuses(const double p[6], const double v[4])
{
    double w[4];
    return !canonical_as_given(p, v) && canonical_box(p, v, w) < 0;
}

/* The box a slot's fields make, by the Python loop's expressions in its order (float_box). */
static inline void
slot_box(const MemberSlot *s, double v[4])
{
    const double w = s->f[MT_W], h = s->f[MT_H];
    const double x0 = (s->f[MT_X] + s->f[MT_OX]) + 0.0;
    const double y0 = (s->f[MT_Y] + s->f[MT_OY]) + 0.0;
    v[0] = x0;
    v[1] = y0;
    v[2] = x0 + w;
    v[3] = y0 + h;
}

/* Whether the slot's new box v is not the box it holds (box[0] NaN: never the same). */
static inline int
slot_moved(const double v[4], const double box[4])
{
    return v[0] != box[0] || v[1] != box[1] || v[2] != box[2] || v[3] != box[3];
}

static PyObject *
table_read(PyObject *self, PyObject *args)
{
    MembersTable *t = (MembersTable *)self;
    PyObject *ids, *boxes;
    if (!PyArg_ParseTuple(args, "O!O!:read", &PyByteArray_Type, &ids, &PyByteArray_Type,
                          &boxes)) {
        return NULL;
    }
    if (t->wrapped) { /* first: a box the period refuses leaves everything as it is */
        for (Py_ssize_t i = 0; i < t->ndirty; i++) {
            const MemberSlot *s = &t->slots[t->dirty[i]];
            double v[4];
            slot_box(s, v);
            if (s->rec != NULL && slot_moved(v, s->box) && period_refuses(t->period, v)) {
                return PyLong_FromLong(-1);
            }
        }
    }
    Py_ssize_t room = PyByteArray_GET_SIZE(ids) / 8, box_room = PyByteArray_GET_SIZE(boxes) / 32;
    Moves m = {ids, boxes, 0, room < box_room ? room : box_room, 1};
    if (moves_reserve(&m, t->ndirty) < 0) {
        return NULL;
    }
    /* Nothing below runs Python or fails, until the buffers are cut to size. */
    char *id_at = PyByteArray_AS_STRING(ids), *box_at = PyByteArray_AS_STRING(boxes);
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < t->ndirty; i++) {
        MemberSlot *s = &t->slots[t->dirty[i]];
        s->dirty = 0;
        if (s->rec == NULL) {
            continue; /* dropped since its store: the dirty list's path has it */
        }
        double v[4];
        slot_box(s, v);
        if (slot_moved(v, s->box)) {
            memcpy(s->box, v, sizeof v);
            s->behind = 1;
            memcpy(id_at + 8 * n, &s->eid, 8);
            memcpy(box_at + 32 * n, v, sizeof v);
            n++;
        }
    }
    t->ndirty = 0;
    if (PyByteArray_Resize(ids, n * 8) < 0 || PyByteArray_Resize(boxes, n * 32) < 0) {
        return NULL;
    }
    return PyLong_FromSsize_t(n);
}

PyDoc_STRVAR(table_pending_doc,
"pending()\n--\n\n"
"The entities stored into since the last read, in the order of their first store: the\n"
"table's part of the dirty list, for a pickle of the processor.");

static PyObject *
table_pending(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    MembersTable *t = (MembersTable *)self;
    if (table_ready(t) < 0) {
        return NULL;
    }
    PyObject *pending = PyList_New(0); /* new */
    if (pending == NULL) {
        return NULL;
    }
    /* ndirty re-read: an append may run the collector, and a finaliser a store */
    for (Py_ssize_t i = 0; i < t->ndirty; i++) {
        PyObject *entity = t->slots[t->dirty[i]].entity; /* borrowed; NULL once dropped */
        if (entity != NULL && PyList_Append(pending, entity) < 0) {
            Py_DECREF(pending);
            return NULL;
        }
    }
    return pending;
}

PyDoc_STRVAR(table_list_cleared_doc,
"list_cleared(read)\n--\n\n"
"The processor dropped the first ``read`` entries of its dirty list, those its read\n"
"covered: the members stored into since the read come after the entries left (reported\n"
"after the read, by a finaliser, a collector callback or another thread).");

static PyObject *
table_list_cleared(PyObject *self, PyObject *arg)
{
    MembersTable *t = (MembersTable *)self;
    Py_ssize_t read = PyLong_AsSsize_t(arg);
    if (read == -1 && PyErr_Occurred()) {
        return NULL;
    }
    /* The members put into the list by list_pending are forgotten with the entries read:
     * one left after them (put there after the read) only counts in the order of two bad
     * boxes stored into in that same window, which is left approximate. */
    t->ninserted = 0;
    for (Py_ssize_t i = 0; i < t->ndirty; i++) {
        MemberSlot *s = &t->slots[t->dirty[i]];
        s->seq = s->seq > read ? s->seq - read : 0;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(table_stale_before_doc,
"stale_before(limit)\n--\n\n"
"After a frame that raised at the dirty list's entry ``limit`` (its length: after the\n"
"whole list): the members stored into before that entry whose box changed get a STALE\n"
"box, as the dirty list's path leaves the records it read before the error, so that their\n"
"next read moves them whatever their box. They stay stored into.");

static PyObject *
table_stale_before(PyObject *self, PyObject *arg)
{
    MembersTable *t = (MembersTable *)self;
    Py_ssize_t limit = PyLong_AsSsize_t(arg);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < t->ndirty; i++) {
        MemberSlot *s = &t->slots[t->dirty[i]];
        Py_ssize_t at = s->seq; /* where list_pending would put it */
        for (Py_ssize_t k = 0; k < t->ninserted; k++) {
            at += t->inserted[k] < s->stamp;
        }
        if (s->rec == NULL || at > limit) {
            continue;
        }
        double v[4];
        slot_box(s, v);
        if (slot_moved(v, s->box)) {
            s->box[0] = s->box[1] = s->box[2] = s->box[3] = Py_NAN;
            s->behind = 1;
        }
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(table_flush_doc,
"flush()\n--\n\n"
"Drop every member stored into since the last read: they are then in the dirty list, in\n"
"the order of their first stores (for a pickle of the processor, whose copy has no table).");

static PyObject *
table_flush(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    MembersTable *t = (MembersTable *)self;
    if (table_ready(t) < 0) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < t->ndirty; i++) { /* ndirty re-read: Python may run */
        if (table_drop(t, t->dirty[i]) < 0) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(table_bound_doc,
"bound(entity)\n--\n\nWhether ``entity`` has a slot (for tests).");

static PyObject *
table_bound(PyObject *self, PyObject *entity)
{
    MembersTable *t = (MembersTable *)self;
    if (table_ready(t) < 0) {
        return NULL;
    }
    Py_ssize_t slot = slot_of(t, entity);
    if (slot < 0 && PyErr_Occurred()) {
        return NULL;
    }
    return PyBool_FromLong(slot >= 0);
}

static Py_ssize_t
table_len(PyObject *self)
{
    MembersTable *t = (MembersTable *)self;
    return t->slot_of == NULL ? 0 : PyDict_GET_SIZE(t->slot_of);
}

static PyMethodDef table_methods[] = {
    {"bind", table_bind, METH_VARARGS, table_bind_doc},
    {"drop", table_drop_method, METH_O, table_drop_doc},
    {"sync", table_sync, METH_O, table_sync_doc},
    {"sync_all", table_sync_all, METH_NOARGS, table_sync_all_doc},
    {"clear", table_forget_method, METH_NOARGS, table_forget_doc},
    {"read", table_read, METH_VARARGS, table_read_doc},
    {"bound", table_bound, METH_O, table_bound_doc},
    {"pending", table_pending, METH_NOARGS, table_pending_doc},
    {"list_cleared", table_list_cleared, METH_O, table_list_cleared_doc},
    {"flush", table_flush, METH_NOARGS, table_flush_doc},
    {"stale_before", table_stale_before, METH_O, table_stale_before_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot table_slots[] = {
    {Py_tp_doc, (void *)"MembersTable(sink, stale)\n--\n\n"
                        "A SpatialProcessor's members table (see _cmembers.c): ``sink`` its "
                        "dirty list, ``stale`` _members.STALE."},
    {Py_tp_new, (void *)table_new},
    {Py_tp_dealloc, (void *)table_dealloc},
    {Py_tp_traverse, (void *)table_traverse},
    {Py_tp_clear, (void *)table_clear},
    {Py_tp_methods, (void *)table_methods},
    {Py_sq_length, (void *)table_len},
    {Py_mp_length, (void *)table_len},
    {0, NULL},
};

static PyType_Spec table_spec = {
    .name = "ecs_spatial._cmembers.MembersTable",
    .basicsize = sizeof(MembersTable),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = table_slots,
};

/* ---------------------------------------------------------------- array members' rows
 *
 * read_rows() is arrays.read_rows, compiled: the rows of one BoxArray that changed since the
 * last frame (a row's 32 bytes compared with last frame's, in the rows' order) and their
 * members' moves, appended to the index's two move buffers (an int64 id and four doubles a
 * move), with no Python object made on the common path: a row's member is read from
 * ``owners`` (an int64 a row: nobody, the one entity, or SHARED: its entities are in the
 * ``shared`` dict). A row past the end or one that is not a box calls ``check``
 * (arrays.checked_row), which raises the reference's own error. On a torus the first move
 * whose box the period refuses (_wrap.canonical's rule, below) is reported by its place. A
 * shared row's list and each of its entities are owned while Python may run.
 *
 * A BoxArray of positions (BoxArray.of_positions) is read alike with a row of 16 bytes, ``(x,
 * y)``, whose box is ``(x, y, x + w, y + h)`` for the array's one size: row_box() below, the
 * reference's arrays._box_at. One of per-row sizes (``sizes=``) is read as rows of 32 bytes,
 * ``(x, y, w, h)``, the processor's copy of both buffers (arrays.BoxArray._interleave), whose
 * box is ``(x, y, x + w, y + h)``; a ``w`` or ``h`` that is not >= 0 makes a box that is not
 * one (its max NaN), so that ``check`` names it. */

#define ROW_NOBODY 0
#define ROW_SHARED (-1)

/* What one read_rows() call works with. */
typedef struct {
    PyObject *now;              /* borrowed: held by its buffer */
    PyObject *skip, *check;     /* borrowed from the arguments */
    int skipping;               /* skip may hold something */
    PyObject *ids, *boxes, *at; /* borrowed: the move buffers (bytearrays), each move's row */
    Py_ssize_t n, cap, made;    /* moves in the buffers, room for, there before the call */
    const double *period;       /* NULL on a plain world */
    Py_ssize_t refused;         /* place of the first move the period refuses, or -1 */
    Py_ssize_t stride;          /* bytes a row: 32 (a box), or 16 (a position) */
    double w, h;                /* a position's box's size (stride 16) */
    int sized;                  /* rows of (x, y, w, h) (stride 32) */
} RowRead;

/* Inlined into each call whatever the inliner would weigh (see scan_rows_of). */
#if defined(__GNUC__) || defined(__clang__)
#define ROWS_INLINE inline __attribute__((always_inline))
#else
#define ROWS_INLINE inline
#endif

/* The box of the row at ``p`` (``s`` bytes, r->stride): the row itself, the box of size
 * (w, h) whose min corner is the position there, or (``sized``) the box of the row's
 * position and size, its max NaN where the size is not >= 0. */
static ROWS_INLINE void
row_box(const RowRead *r, const char *p, double v[4], const Py_ssize_t s, const int sized)
{
    if (s == 32 && sized) {
        double q[4];
        memcpy(q, p, 32);
        v[0] = q[0];
        v[1] = q[1];
        v[2] = q[2] >= 0.0 ? q[0] + q[2] : Py_NAN;
        v[3] = q[3] >= 0.0 ? q[1] + q[3] : Py_NAN;
    }
    else if (s == 32) {
        memcpy(v, p, 32);
    }
    else {
        memcpy(v, p, 16);
        v[2] = v[0] + r->w;
        v[3] = v[1] + r->h;
    }
}

/* Twice the room (64 moves at least): 0, or -1 with an error. */
static int
row_reserve_more(RowRead *r)
{
    Py_ssize_t cap = r->cap < 64 ? 64 : 2 * r->cap;
    if (PyByteArray_Resize(r->ids, cap * 8) < 0 || PyByteArray_Resize(r->boxes, cap * 32) < 0
        || PyByteArray_Resize(r->at, cap * 8) < 0) {
        return -1;
    }
    r->cap = cap;
    return 0;
}

/* Room for one more move: 0, or -1 with an error. */
static int
row_reserve(RowRead *r)
{
    return r->n < r->cap ? 0 : row_reserve_more(r);
}

/* One member's move: ``entity`` (NULL: ``id`` alone, made into an int only if Python must
 * see it) placed by ``row``, whose box ``v`` is ``good`` or not, and whose last frame's box is
 * ``old`` (NULL: none). 0, or -1 with the error set. */
static int
row_move(RowRead *r, PyObject *entity, long long id, Py_ssize_t row, const double v[4],
         int good, const double *old)
{
    PyObject *made = NULL;  /* owned: entity made from id */
    if (entity == NULL && (r->skipping || !good)) {
        entity = made = PyLong_FromLongLong(id);
        if (made == NULL) {
            return -1;
        }
    }
    int result = 0;
    if (r->skipping) {
        int skipped = PySequence_Contains(r->skip, entity);
        if (skipped != 0) {
            Py_XDECREF(made);
            return skipped < 0 ? -1 : 0;
        }
    }
    if (!good) {
        PyObject *done = PyObject_CallFunction(r->check, "OnO", entity, row, r->now);
        if (done != NULL) {
            Py_DECREF(done);
            PyErr_SetString(PyExc_SystemError, "read_rows: check accepted a bad row");
        }
        Py_XDECREF(made);
        return -1;
    }
    if (old != NULL && old[0] == v[0] && old[1] == v[1] && old[2] == v[2] && old[3] == v[3]) {
        Py_XDECREF(made);
        return 0;
    }
    if (made == NULL && entity != NULL) {
        id = PyLong_AsLongLong(entity);
        if (id == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    Py_XDECREF(made);
    if (r->period != NULL && r->refused < 0 && period_refuses(r->period, v)) {
        r->refused = r->n - r->made;
    }
    if (row_reserve(r) < 0) {
        return -1;
    }
    int64_t id64 = (int64_t)id, row64 = (int64_t)row;
    memcpy(PyByteArray_AS_STRING(r->ids) + 8 * r->n, &id64, 8);
    memcpy(PyByteArray_AS_STRING(r->boxes) + 32 * r->n, v, 32);
    memcpy(PyByteArray_AS_STRING(r->at) + 8 * r->n, &row64, 8);
    r->n++;
    return result;
}

/* The moves of the members of a SHARED ``row`` (the list in ``shared``). 0, or -1. */
static int
row_shared(RowRead *r, PyObject *shared, Py_ssize_t row, const double v[4], int good,
           const double *old)
{
    PyObject *key = PyLong_FromSsize_t(row);
    if (key == NULL) {
        return -1;
    }
    PyObject *entities = PyDict_GetItemWithError(shared, key);  /* borrowed */
    Py_DECREF(key);
    if (entities == NULL || !PyList_Check(entities)) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_SystemError, "read_rows: shared row %zd has no list", row);
        }
        return -1;
    }
    Py_INCREF(entities);   /* owned while Python may run (an allocation, check) */
    int result = 0;
    for (Py_ssize_t i = 0; result == 0 && i < PyList_GET_SIZE(entities); i++) {
        PyObject *entity = PyList_GET_ITEM(entities, i);   /* borrowed from the owned list */
        Py_INCREF(entity);
        result = row_move(r, entity, 0, row, v, good, old);
        Py_DECREF(entity);
    }
    Py_DECREF(entities);
    return result;
}

static int scan_rows(RowRead *r, const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb,
                     const char *owners, Py_ssize_t rows, PyObject *shared);

PyDoc_STRVAR(read_rows_doc,
"read_rows(now, last, owners, shared, skip, ids, boxes, rows, n, check, period=None, size=None, sized=False, /)\n"
"--\n\n"
"arrays.read_rows, compiled: write into the bytearrays ``ids``, ``boxes`` and ``rows``, after their "
"first ``n`` moves, the moves of the members (``owners``: an int64 a row; ``shared``: row "
"-> entities; not in ``skip``) whose row differs as floats between the bytes ``last`` and "
"``now`` (the buffers grown if need be, never shrunk); return the number of moves in them "
"and the place among those written of the first ``period`` refuses, or -1. With ``size`` "
"(w, h), ``now`` and ``last`` hold positions (x, y), each the box (x, y, x + w, y + h); with "
"``sized``, rows (x, y, w, h), each the box (x, y, x + w, y + h).");

static PyObject *
read_rows(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer now_buf, last_buf, owners_buf;
    PyObject *shared, *skip, *ids, *boxes, *at, *check, *period = Py_None, *size = Py_None;
    Py_ssize_t n;
    int sized = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*O!OO!O!O!nO|OOp:read_rows", &now_buf, &last_buf,
                          &owners_buf, &PyDict_Type, &shared, &skip, &PyByteArray_Type, &ids,
                          &PyByteArray_Type, &boxes, &PyByteArray_Type, &at, &n, &check,
                          &period, &size, &sized)) {
        return NULL;
    }
    double p[6];
    RowRead r = {now_buf.obj, skip, check, 1, ids, boxes, at, 0, 0, 0, NULL, -1, 32, 0.0, 0.0,
                 0};
    int result = 0;
    if (sized && size != Py_None) {
        PyErr_SetString(PyExc_TypeError, "read_rows: one of size and sized");
        result = -1;
    }
    else if (sized) {
        r.sized = 1;
    }
    else if (size != Py_None) {
        if (!PyTuple_Check(size) || PyTuple_GET_SIZE(size) != 2) {
            PyErr_SetString(PyExc_TypeError, "read_rows: size is a pair of floats");
            result = -1;
        }
        else {
            r.stride = 16;
            r.w = PyFloat_AsDouble(PyTuple_GET_ITEM(size, 0));
            result = r.w == -1.0 && PyErr_Occurred() ? -1 : 0;
            if (result == 0) {
                r.h = PyFloat_AsDouble(PyTuple_GET_ITEM(size, 1));
                result = r.h == -1.0 && PyErr_Occurred() ? -1 : 0;
            }
        }
    }
    if (period != Py_None) {
        if (!PyTuple_Check(period) || PyTuple_GET_SIZE(period) != 6) {
            PyErr_SetString(PyExc_TypeError, "read_rows: period is a 6-tuple of floats");
            result = -1;
        }
        for (int i = 0; result == 0 && i < 6; i++) {
            p[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(period, i));
            result = p[i] == -1.0 && PyErr_Occurred() ? -1 : 0;
        }
        r.period = p;
    }
    if (result == 0 && PyAnySet_Check(skip) && PySet_GET_SIZE(skip) == 0) {
        r.skipping = 0;
    }
    Py_ssize_t had_ids = PyByteArray_GET_SIZE(ids), had_boxes = PyByteArray_GET_SIZE(boxes);
    if (result == 0 && (had_ids % 8 || had_boxes != 4 * had_ids
                        || PyByteArray_GET_SIZE(at) != had_ids || n < 0 || 8 * n > had_ids)) {
        PyErr_SetString(PyExc_ValueError,
                        "read_rows: ids and boxes hold room for as many whole moves, n at most");
        result = -1;
    }
    r.cap = had_ids / 8;
    r.n = r.made = n;
    if (result == 0) {
        result = scan_rows(&r, now_buf.buf, now_buf.len, last_buf.buf, last_buf.len,
                           owners_buf.buf, owners_buf.len / 8, shared);
    }
    PyBuffer_Release(&now_buf);
    PyBuffer_Release(&last_buf);
    PyBuffer_Release(&owners_buf);
    if (result < 0) {
        return NULL;
    }
    return Py_BuildValue("nn", r.n, r.refused);
}

/* Rows scan_rows() compares at once before it looks at each (a power of two). */
#define ROW_BLOCK 8

/* scan_rows() for rows of ``s`` bytes, compiled once for each (32 and 16): inlined into
 * its two calls whatever the inliner would weigh, so that ``s`` is a constant there and each
 * row's copies and comparisons are the fixed-size ones of a loop written for it. */
static ROWS_INLINE int
scan_rows_of(RowRead *r, const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb,
             const char *owners, Py_ssize_t rows, PyObject *shared, const Py_ssize_t s,
             const int sized);

/* read_rows() with its buffers held (exported: none can be resized meanwhile). */
static int
scan_rows(RowRead *r, const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb,
          const char *owners, Py_ssize_t rows, PyObject *shared)
{
    if (na == nb && memcmp(a, b, (size_t)na) == 0) {
        return 0;
    }
    if (r->sized) {
        return scan_rows_of(r, a, na, b, nb, owners, rows, shared, 32, 1);
    }
    return r->stride == 32 ? scan_rows_of(r, a, na, b, nb, owners, rows, shared, 32, 0)
                           : scan_rows_of(r, a, na, b, nb, owners, rows, shared, 16, 0);
}

static ROWS_INLINE int
scan_rows_of(RowRead *r, const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb,
             const char *owners, Py_ssize_t rows, PyObject *shared, const Py_ssize_t s,
             const int sized)
{
    /* room for a move a row, so that the common case never grows the buffers (a shared
     * row's members, beyond, take row_move's path) */
    while (r->cap - r->n < rows) {
        if (row_reserve_more(r) < 0) {
            return -1;
        }
    }
    Py_ssize_t whole = (na < nb ? na : nb) / s;  /* rows in both */
    char *ids_at = NULL, *boxes_at = NULL, *rows_at = NULL; /* NULL: to be read */
    for (Py_ssize_t row = 0; row < rows; row++) {
        Py_ssize_t at = row * s;
        /* a block of rows the same in both skipped by one memcmp: at 1% of the rows
         * changed most blocks are, and memcmp runs at the memory's speed where the loop
         * below, a row at a time, does not */
        if ((row & (ROW_BLOCK - 1)) == 0 && row + ROW_BLOCK <= whole
            && memcmp(a + at, b + at, (size_t)(s * ROW_BLOCK)) == 0) {
            row += ROW_BLOCK - 1;
            continue;
        }
        /* the rows compared first: at 1% of them changed, most owners are never read */
        if (row < whole) {
            uint64_t x[4] = {0, 0, 0, 0}, y[4] = {0, 0, 0, 0};
            memcpy(x, a + at, (size_t)s);
            memcpy(y, b + at, (size_t)s);
            if (((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) == 0) {
                continue;
            }
        }
        int64_t held;
        memcpy(&held, owners + 8 * row, 8);
        if (held == ROW_NOBODY) {
            continue;
        }
        if (row < whole && held > 0 && !r->skipping && r->n < r->cap) {
            /* the common case, row_move's steps inline: one member, a good box, room */
            double v[4], old[4];
            row_box(r, a + at, v, s, sized);
            row_box(r, b + at, old, s, sized);
            /* on a torus a box canonical as it is (most) is valid and not refused: one
             * test for both */
            int canon = r->period != NULL && canonical_as_given(r->period, v);
            if (canon
                || (v[0] > -Py_HUGE_VAL && v[1] > -Py_HUGE_VAL && v[2] < Py_HUGE_VAL
                    && v[3] < Py_HUGE_VAL && v[0] <= v[2] && v[1] <= v[3])) {
                if (old[0] == v[0] && old[1] == v[1] && old[2] == v[2] && old[3] == v[3]) {
                    continue;
                }
                if (!canon && r->period != NULL && r->refused < 0
                    && period_refuses(r->period, v)) {
                    r->refused = r->n - r->made;
                }
                if (ids_at == NULL) { /* the buffers' memory, read again after a slow row */
                    ids_at = PyByteArray_AS_STRING(r->ids);
                    boxes_at = PyByteArray_AS_STRING(r->boxes);
                    rows_at = PyByteArray_AS_STRING(r->at);
                }
                int64_t row64 = (int64_t)row;
                memcpy(ids_at + 8 * r->n, &held, 8);
                memcpy(boxes_at + 32 * r->n, v, 32);
                memcpy(rows_at + 8 * r->n, &row64, 8);
                r->n++;
                continue;
            }
        }
        Py_ssize_t ka = na - at < 0 ? 0 : (na - at > s ? s : na - at);
        Py_ssize_t kb = nb - at < 0 ? 0 : (nb - at > s ? s : nb - at);
        if (ka == kb && (ka == 0 || memcmp(a + at, b + at, (size_t)ka) == 0)) {
            continue;
        }
        double v[4] = {0.0, 0.0, 0.0, 0.0}, old[4];
        if (ka == s) {
            row_box(r, a + at, v, s, sized);
        }
        if (kb == s) {
            row_box(r, b + at, old, s, sized);
        }
        int good = ka == s && v[0] > -Py_HUGE_VAL && v[1] > -Py_HUGE_VAL
                   && v[2] < Py_HUGE_VAL && v[3] < Py_HUGE_VAL && v[0] <= v[2] && v[1] <= v[3];
        ids_at = boxes_at = rows_at = NULL; /* Python may run: the buffers may move */
        int done = held == ROW_SHARED
            ? row_shared(r, shared, row, v, good, kb == s ? old : NULL)
            : row_move(r, NULL, (long long)held, row, v, good, kb == s ? old : NULL);
        if (done < 0) {
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(write_rows_doc,
"write_rows(last, rows, boxes, start, end, stride=32, /)\n--\n\n"
"arrays.write_rows, compiled: the boxes of moves ``start`` to ``end`` written into the "
"bytearray ``last`` at their rows (an int64 a move in ``rows``), ``stride`` bytes of each "
"(32, or 16: the min corner, a position).");

static PyObject *
write_rows(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *last;
    Py_buffer rows_buf, boxes_buf;
    Py_ssize_t start, end, stride = 32;
    if (!PyArg_ParseTuple(args, "O!y*y*nn|n:write_rows", &PyByteArray_Type, &last, &rows_buf,
                          &boxes_buf, &start, &end, &stride)) {
        return NULL;
    }
    Py_ssize_t size = PyByteArray_GET_SIZE(last);
    int ok = (stride == 32 || stride == 16) && 0 <= start && start <= end
             && 8 * end <= rows_buf.len && 32 * end <= boxes_buf.len;
    for (Py_ssize_t i = start; ok && i < end; i++) {
        int64_t row;
        memcpy(&row, (const char *)rows_buf.buf + 8 * i, 8);
        ok = 0 <= row && size >= stride && row <= (size - stride) / stride;
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "write_rows: a move or its row is out of range");
    }
    char *dst = PyByteArray_AS_STRING(last);
    for (Py_ssize_t i = start; ok && i < end; i++) {
        int64_t row;
        memcpy(&row, (const char *)rows_buf.buf + 8 * i, 8);
        memcpy(dst + stride * row, (const char *)boxes_buf.buf + 32 * i, (size_t)stride);
    }
    PyBuffer_Release(&rows_buf);
    PyBuffer_Release(&boxes_buf);
    if (!ok) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"write_rows", write_rows, METH_VARARGS, write_rows_doc},
    {"configure", configure, METH_VARARGS, configure_doc},
    {"read_boxes", read_boxes, METH_VARARGS, read_boxes_doc},
    {"read_rows", read_rows, METH_VARARGS, read_rows_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    PyObject *table_type = PyType_FromSpec(&table_spec);
    if (table_type == NULL || PyModule_AddObject(module, "MembersTable", table_type) < 0) {
        Py_XDECREF(table_type);
        return -1;
    }
    const char *const names[] = {"_x", "_y", "_w", "_h", "_ox", "_oy", "_owner", "_sink"};
    PyObject **const slots[] = {&s_x, &s_y, &s_w, &s_h, &s_ox, &s_oy, &s_owner, &s_sink};
    for (int i = 0; i < 8; i++) {
        if (*slots[i] == NULL && (*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) {
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
    .m_name = "ecs_spatial._cmembers",
    .m_doc = "The read loop of _members.py, compiled (see _members.read_boxes_reference).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__cmembers(void)
{
    return PyModuleDef_Init(&module);
}
