/* ecs_spatial._cmembers: the read loop of _members.py, compiled.
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

/* One member: its checked box, appended to ``changed`` if it differs from the record's, and
 * its components re-armed. 0, or -1 with an error. */
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
            goto flags;
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
flags:
    if (rearm(c, pos, c->position, c->pos_owner, c->pos_sink, dirty, entity) < 0
        || rearm(c, aabb, c->aabb, c->aabb_owner, c->aabb_sink, dirty, entity) < 0) {
        goto checked; /* inside the Python loop's try as well */
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

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, configure_doc},
    {"read_boxes", read_boxes, METH_VARARGS, read_boxes_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *Py_UNUSED(module))
{
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
