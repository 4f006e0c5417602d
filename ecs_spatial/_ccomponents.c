/* ecs_spatial._ccomponents: Position, AABB and CollisionFilter, compiled.
 *
 * components.py holds the reference classes (PyPosition, PyAABB, PyCollisionFilter): each
 * field a property over a slot whose setter stores the value and, when the component is
 * armed, reports its entity to its processor's dirty list. A property call per assignment
 * was most of the tax ecs_spatial put on a user's movement loop. The types here keep the
 * reference's layout as Python sees it and drop the property call:
 *
 * - each field is one object slot exposed by two member descriptors at the same offset,
 *   the public name (``x``) and the reference's slot name (``_x``), beside ``_owner``,
 *   ``_sink`` and ``_eid``: a read of ``p.x`` is CPython's specialised slot read, and
 *   everything that reads or writes the slots by name (components.track, untrack, rearm,
 *   _Shared, _members, _cmembers' offsets) works on both classes unchanged;
 * - the type's own tp_setattro recognises a public field name (by pointer, the names being
 *   interned), stores, and when ``_sink`` is not None sets it to None and appends ``_eid``
 *   to it: the property setter's body, without the Python frame. Any other name (``_x``,
 *   ``_owner``) is the generic store, as for the reference's slots;
 * - the hot calls (construction from floats or ints, translate, move_to) run here on their
 *   common case; every other case, and every method that is not per frame (repr, ==,
 *   box_at, accepts, pickling), runs the reference's own code on this object, which it can
 *   since the slot names are the reference's. So each rule and each error message has one
 *   home, components.py, and the two classes cannot drift apart;
 * - bound to a SpatialProcessor's members table (_cmembers.c), a component stores a fitting
 *   float there too, and the table's dirty array is its mark (below, "The members table").
 *
 * References: every PyObject * below is said to be new or borrowed where it is taken; the
 * fields, _owner, _sink and _eid are owned by the object (NULL: an empty slot, as in a
 * reference instance made by __new__ alone), and so is its members table (NULL: unbound).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <string.h>

#ifndef Py_T_OBJECT_EX
#define Py_T_OBJECT_EX T_OBJECT_EX
#endif

#define MAX_FIELDS 4

#include "_members_table.h" /* Comp, an instance, and the members table it may be bound to */

#define FIELD_OFFSET(i) ((Py_ssize_t)(offsetof(Comp, f) + (size_t)(i) * sizeof(PyObject *)))

/* What differs between the three types. */
typedef struct {
    PyTypeObject *type;               /* made from spec once, owned for ever */
    PyType_Spec *spec;
    const char *reference;            /* the reference class's name in components.py */
    int n;                            /* number of fields */
    int kind;                         /* MT_POSITION, MT_AABB, or -1: never bound */
    int base;                         /* where its fields start in a MemberSlot's f */
    const char *public[MAX_FIELDS];   /* "x", "width", ... */
    PyObject *names[MAX_FIELDS];      /* those names, interned */
    PyObject *descrs[MAX_FIELDS];     /* the type's member descriptors of those names */
} Spec;

static PyObject *s_append, *s_components, *s_sink, *s_eid, *s_delete;
/* copyreg.__newobj__, what a copy or pickle of a component calls (owned for ever). */
static PyObject *newobj;

/* ---------------------------------------------------------------- the reference's code */

/* components.<reference>.<name> (new reference), the reference class's own method or
 * property, or NULL with an error. */
static PyObject *
reference_attr(const Spec *s, const char *name)
{
    PyObject *module = PyImport_Import(s_components); /* new */
    if (module == NULL) {
        return NULL;
    }
    PyObject *cls = PyObject_GetAttrString(module, s->reference); /* new */
    Py_DECREF(module);
    if (cls == NULL) {
        return NULL;
    }
    PyObject *attr = PyObject_GetAttrString(cls, name); /* new */
    Py_DECREF(cls);
    return attr;
}

/* components.<reference>.<name>(self, *args, **kwargs): the reference's method run on this
 * object. New reference, or NULL with an error. */
static PyObject *
delegate(const Spec *s, const char *name, PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *func = reference_attr(s, name); /* new */
    if (func == NULL) {
        return NULL;
    }
    Py_ssize_t n = args == NULL ? 0 : PyTuple_GET_SIZE(args);
    PyObject *all = PyTuple_New(n + 1); /* new */
    if (all == NULL) {
        Py_DECREF(func);
        return NULL;
    }
    Py_INCREF(self);
    PyTuple_SET_ITEM(all, 0, self);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(args, i); /* borrowed */
        Py_INCREF(item);
        PyTuple_SET_ITEM(all, i + 1, item);
    }
    PyObject *result = PyObject_Call(func, all, kwargs);
    Py_DECREF(all);
    Py_DECREF(func);
    return result;
}

/* ``func(first, *args, **kwargs)`` for a vectorcall method's arguments. */
static PyObject *
call_with(PyObject *func, PyObject *first, PyObject *const *args, Py_ssize_t nargs,
          PyObject *kwnames)
{
    Py_ssize_t total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject *small[8];
    PyObject **stack = small;
    if (total + 1 > 8 && (stack = PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *))) == NULL) {
        return PyErr_NoMemory();
    }
    stack[0] = first; /* borrowed, as are args: the caller holds them for the call */
    for (Py_ssize_t i = 0; i < total; i++) {
        stack[i + 1] = args[i];
    }
    PyObject *result = PyObject_Vectorcall(func, stack, (size_t)nargs + 1, kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    return result;
}

/* The reference's method ``name`` run on ``self`` with a vectorcall method's arguments. */
static PyObject *
delegate_fast(const Spec *s, const char *name, PyObject *self, PyObject *const *args,
              Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *func = reference_attr(s, name); /* new */
    if (func == NULL) {
        return NULL;
    }
    PyObject *result = call_with(func, self, args, nargs, kwnames);
    Py_DECREF(func);
    return result;
}

/* ------------------------------------------------------------------ the members table */

/* A component a SpatialProcessor tracks at exactly one place may be *bound* to that
 * processor's members table (_cmembers.c, "The members table"): ``table`` holds it, and
 * the slot there claims it. An exact float that fits (members_table_fits) stored into one
 * of its fields is then also stored into the slot as a double, and the slot's dirty mark is
 * its mark: no Python object is touched. Every other store on a bound component (another
 * value, a translate the table cannot take, any attribute but a field: ``_owner`` when it
 * is tracked anew, ``_x`` behind the property's back) first takes its member out of the
 * table (leave_table), and then does what an unbound component does. */

/* Let go of the table without telling it: the claim cleared where the slot still holds it,
 * then the table released. Only for a component that dies (tp_clear, dealloc): the table's
 * slots outlive it, since it holds the table until here. */
static void
unbind(PyObject *self)
{
    Comp *c = (Comp *)self;
    PyObject *table = c->table; /* owned, handed over to this function */
    if (table == NULL) {
        return;
    }
    MembersTable *t = (MembersTable *)table;
    if (c->slot >= 0 && c->slot < t->cap) {
        for (int k = 0; k < 2; k++) {
            if (t->slots[c->slot].claim[k] == self) {
                t->slots[c->slot].claim[k] = NULL;
            }
        }
    }
    c->table = NULL;
    c->slot = -1;
    Py_DECREF(table);
}

/* Take this component's member out of its table (the table's drop(): both components
 * unbound, the record's box brought up to date), or, when the slot is no longer its, just
 * let go of the table. 0, or -1 with an error (no memory for the record's box: the member
 * is out of the table all the same, its record STALE). */
static int
leave_table(PyObject *self)
{
    Comp *c = (Comp *)self;
    MembersTable *t = (MembersTable *)c->table; /* borrowed: c holds it */
    if (t == NULL) {
        return 0;
    }
    int r = 0;
    if (c->slot >= 0 && c->slot < t->cap
        && (t->slots[c->slot].claim[0] == self || t->slots[c->slot].claim[1] == self)) {
        Py_INCREF(t); /* drop() lets go of c's reference */
        r = t->drop(t, c->slot);
        Py_DECREF(t);
    }
    unbind(self); /* does nothing once drop() unbound it */
    return r;
}

/* ``v`` stored by the table into field ``i`` of ``self`` when it is bound and ``v`` fits:
 * 1, else 0 (the caller then leaves the table and stores as an unbound component). */
static inline int
table_took(const Spec *s, PyObject *self, int i, double v)
{
    return s->kind >= 0 && members_table_fits(s->base + i, v)
           && members_table_store(self, s->kind, s->base + i, v);
}

/* ------------------------------------------------------------------------ the dirty mark */

/* The setters' tail, ``sink = self._sink; if sink is not None: self._sink = None;
 * sink.append(self._eid)``: 0, or -1 with an error. */
static int
mark(PyObject *self)
{
    Comp *c = (Comp *)self;
    if (c->table != NULL && leave_table(self) < 0) {
        return -1;
    }
    PyObject *sink = c->sink; /* borrowed, then owned once the slot lets go of it */
    if (sink == Py_None) {
        return 0;
    }
    if (sink == NULL) { /* an empty slot: the reference's AttributeError */
        PyObject *value = PyObject_GetAttr(self, s_sink); /* new */
        if (value == NULL) {
            return -1;
        }
        Py_DECREF(value);
        return 0;
    }
    Py_INCREF(Py_None);
    c->sink = Py_None; /* the slot's reference to sink is now this function's */
    PyObject *eid = c->eid; /* borrowed */
    if (eid == NULL) {
        eid = PyObject_GetAttr(self, s_eid); /* raises, for an empty slot */
        if (eid == NULL) {
            Py_DECREF(sink);
            return -1;
        }
    }
    else {
        Py_INCREF(eid);
    }
    int r;
    if (PyList_CheckExact(sink)) {
        r = PyList_Append(sink, eid);
    }
    else {
        PyObject *result = PyObject_CallMethodOneArg(sink, s_append, eid); /* new */
        r = result == NULL ? -1 : 0;
        Py_XDECREF(result);
    }
    Py_DECREF(eid);
    Py_DECREF(sink);
    return r;
}

/* Store ``value`` (borrowed) in field ``i`` and mark: the property setter. A component
 * bound to a members table, given an exact float, also stores its double there, and the
 * table's dirty array is its mark (members_table_store). */
static int
store(const Spec *s, PyObject *self, int i, PyObject *value)
{
    Comp *c = (Comp *)self;
    PyObject *old = c->f[i]; /* owned by the slot until replaced */
    int r = 0;
    if (c->table != NULL && PyFloat_CheckExact(value)
        && table_took(s, self, i, PyFloat_AS_DOUBLE(value))) {
        Py_INCREF(value);
        c->f[i] = value;
    }
    else {
        Py_INCREF(value);
        c->f[i] = value;
        r = mark(self); /* which leaves the table first */
    }
    Py_XDECREF(old); /* last: a finaliser it runs sees the object complete */
    return r;
}

/* The index of the public field ``name`` names, or -1. */
static inline int
field_index(const Spec *s, PyObject *name)
{
    for (int i = 0; i < s->n; i++) {
        if (name == s->names[i]) {
            return i;
        }
    }
    if (!PyUnicode_CheckExact(name) || PyUnicode_CHECK_INTERNED(name)) {
        /* not a str (the generic store judges it), or an interned one, which would be the
         * very object of a field's interned name: the names the code spells (_sink, _x),
         * told apart by the pointer tests alone */
        return -1;
    }
    for (int i = 0; i < s->n; i++) {
        if (PyUnicode_Compare(name, s->names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* The generic store (or deletion). CPython 3.13 words the error for an unknown attribute
 * set or deleted on an object without a __dict__ by whether its type's tp_setattro is the
 * generic one: worded here as for the reference, whose is. */
static int
generic_setattr(PyObject *self, PyObject *name, PyObject *value)
{
    int r = PyObject_GenericSetAttr(self, name, value);
#if PY_VERSION_HEX >= 0x030D0000
    PyTypeObject *type = Py_TYPE(self); /* borrowed */
    if (r < 0 && PyErr_ExceptionMatches(PyExc_AttributeError)
        && type->tp_dictoffset == 0 && PyUnicode_Check(name)) {
        PyObject *error = PyErr_GetRaisedException(); /* new */
        PyObject *found = PyObject_GetAttr((PyObject *)type, name); /* new */
        if (found != NULL) { /* a class attribute: CPython's own words stand */
            Py_DECREF(found);
            PyErr_SetRaisedException(error);
        }
        else if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            Py_DECREF(error);
            PyErr_Format(PyExc_AttributeError,
                         "'%.100s' object has no attribute '%U' and no __dict__ for setting "
                         "new attributes", type->tp_name, name);
        }
        else {
            Py_DECREF(error);
        }
    }
#endif
    return r;
}

/* tp_setattro: a public field is stored and marked; anything else is the generic store.
 * On a subclass, the field is this type's only while the subclass does not define the
 * name itself (a property of its own, say), which the generic store then honours. */
static int
setattro(const Spec *s, PyObject *self, PyObject *name, PyObject *value)
{
    int i = field_index(s, name);
    if (((Comp *)self)->table != NULL && (i < 0 || value == NULL) && leave_table(self) < 0) {
        return -1;
    }
    if (i < 0) {
        return generic_setattr(self, name, value);
    }
    if (!Py_IS_TYPE(self, s->type)) {
        PyObject *descr = PyObject_GetAttr((PyObject *)Py_TYPE(self), name); /* new */
        if (descr == NULL) {
            return -1;
        }
        Py_DECREF(descr);
        if (descr != s->descrs[i]) {
            return generic_setattr(self, name, value);
        }
    }
    if (value == NULL) {
        /* ``del p.x``: the reference's property has no deleter; its own error says so. */
        PyObject *prop = reference_attr(s, s->public[i]); /* new */
        if (prop == NULL) {
            return -1;
        }
        PyObject *r = PyObject_CallMethodOneArg(prop, s_delete, self);
        Py_DECREF(prop);
        if (r == NULL) {
            return -1;
        }
        Py_DECREF(r);
        PyErr_Format(PyExc_AttributeError, "can't delete attribute %R", name);
        return -1;
    }
    return store(s, self, i, value);
}

/* ------------------------------------------------------------------ the object's life */

static int
traverse(PyObject *self, visitproc visit, void *arg, int n)
{
    Comp *c = (Comp *)self;
    Py_VISIT(Py_TYPE(self)); /* a heap type's instances own a reference to it */
    Py_VISIT(c->owner);
    Py_VISIT(c->sink);
    Py_VISIT(c->eid);
    Py_VISIT(c->table);
    for (int i = 0; i < n; i++) {
        Py_VISIT(c->f[i]);
    }
    return 0;
}

static int
clear(PyObject *self, int n)
{
    Comp *c = (Comp *)self;
    unbind(self);
    Py_CLEAR(c->owner);
    Py_CLEAR(c->sink);
    Py_CLEAR(c->eid);
    for (int i = 0; i < n; i++) {
        Py_CLEAR(c->f[i]);
    }
    return 0;
}

static void
dealloc(PyObject *self, int n)
{
    PyTypeObject *type = Py_TYPE(self); /* borrowed, until the instance lets go of it */
    PyObject_GC_UnTrack(self);
    clear(self, n);
    type->tp_free(self);
    Py_DECREF(type);
}

/* Set the fields to ``values`` (n borrowed references) and the object untracked: the end
 * of every __init__. 0, or -1 with an error (leave_table's), nothing then set. */
static int
initialise(PyObject *self, int n, PyObject *const *values)
{
    Comp *c = (Comp *)self;
    if (leave_table(self) < 0) {
        return -1;
    }
    PyObject *old[MAX_FIELDS + 3];
    for (int i = 0; i < n; i++) {
        old[i] = c->f[i];
        Py_INCREF(values[i]);
        c->f[i] = values[i];
    }
    old[n] = c->owner;
    old[n + 1] = c->sink;
    old[n + 2] = c->eid;
    Py_INCREF(Py_None);
    c->owner = Py_None;
    Py_INCREF(Py_None);
    c->sink = Py_None;
    c->eid = PyLong_FromLong(0); /* a cached small int: cannot fail */
    for (int i = 0; i < n + 3; i++) {
        Py_XDECREF(old[i]);
    }
    return 0;
}

/* ``value`` as the reference's fast test or ``_checked_real`` would store it, when it is
 * an exact float or int that is finite as a float and at least ``least`` (-inf: any): 1
 * with a new reference in ``*out``; 0 for anything else (a subclass, a Fraction, a bad
 * value), which the reference judges. */
static int
fast_real(PyObject *value, double least, PyObject **out)
{
    double v;
    if (PyFloat_CheckExact(value)) {
        v = PyFloat_AS_DOUBLE(value);
        if (!(v > -Py_HUGE_VAL && v >= least && v < Py_HUGE_VAL)) {
            return 0;
        }
        Py_INCREF(value);
        *out = value;
        return 1;
    }
    if (!PyLong_CheckExact(value)) {
        return 0;
    }
    v = PyLong_AsDouble(value); /* float(value): the same correctly rounded conversion */
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear(); /* too large for a float: the reference says so */
        return 0;
    }
    if (!(v > -Py_HUGE_VAL && v >= least && v < Py_HUGE_VAL)) {
        return 0;
    }
    *out = PyFloat_FromDouble(v);
    return *out == NULL ? -1 : 1;
}

/* __init__ for ``n`` fields from positional ``args`` (``least[i]`` the bound of each, 0 for
 * a size; ``given`` of them at least, the rest from ``defaults``): the common case here,
 * anything else (keywords, another type, a bad value) by the reference's __init__ run on
 * this object, which converts, checks and raises. */
static int
init_fields(const Spec *s, PyObject *self, PyObject *args, PyObject *kwargs, Py_ssize_t given,
            const double *least, PyObject *const *defaults)
{
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    int n = s->n;
    if ((kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0) && nargs >= given && nargs <= n) {
        PyObject *values[MAX_FIELDS] = {NULL}; /* all set when fast: GCC cannot see it */
        int k = 0, fast = 1;
        for (; k < n && fast == 1; k++) {
            PyObject *arg = k < nargs ? PyTuple_GET_ITEM(args, k) : defaults[k]; /* borrowed */
            if (least == NULL) { /* a filter: exact ints, stored as given */
                fast = PyLong_CheckExact(arg);
                if (fast) {
                    Py_INCREF(arg);
                    values[k] = arg;
                }
            }
            else {
                fast = fast_real(arg, least[k], &values[k]);
            }
        }
        int r = fast == 1 ? initialise(self, n, values) : 0;
        for (int i = 0; i < k - (fast != 1); i++) {
            Py_DECREF(values[i]);
        }
        if (fast == 1) {
            return r;
        }
        if (fast < 0) {
            return -1;
        }
    }
    PyObject *r = delegate(s, "__init__", self, args, kwargs);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* ---------------------------------------------------------------------------- the types */

static Spec position_spec, aabb_spec, filter_spec;
static PyObject *zero, *zero_int, *category_default, *mask_default; /* owned, for ever */

static int
position_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static const double least[2] = {-Py_HUGE_VAL, -Py_HUGE_VAL};
    PyObject *const defaults[2] = {zero, zero};
    return init_fields(&position_spec, self, args, kwargs, 0, least, defaults);
}

static int
aabb_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static const double least[4] = {0.0, 0.0, -Py_HUGE_VAL, -Py_HUGE_VAL};
    PyObject *const defaults[4] = {NULL, NULL, zero, zero};
    return init_fields(&aabb_spec, self, args, kwargs, 2, least, defaults);
}

static int
filter_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *const defaults[3] = {category_default, mask_default, zero_int};
    return init_fields(&filter_spec, self, args, kwargs, 0, NULL, defaults);
}

/* A bound Position's store of both coordinates into its slot, when both are exact floats
 * that fit: 1 when the table took them, else 0 (the caller marks, which leaves the
 * table). */
static int
table_took_both(PyObject *self, PyObject *x, PyObject *y)
{
    return ((Comp *)self)->table != NULL && PyFloat_CheckExact(x) && PyFloat_CheckExact(y)
           && members_table_fits(MT_X, PyFloat_AS_DOUBLE(x))
           && members_table_fits(MT_Y, PyFloat_AS_DOUBLE(y))
           && members_table_store(self, MT_POSITION, MT_X, PyFloat_AS_DOUBLE(x))
           && members_table_store(self, MT_POSITION, MT_Y, PyFloat_AS_DOUBLE(y));
}

/* Position.translate(dx, dy): exact floats added here; anything else (an int, keywords,
 * an empty slot) by the reference's method. */
static PyObject *
position_translate(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Comp *c = (Comp *)self;
    if (nargs == 2 && kwnames == NULL && c->f[0] != NULL && c->f[1] != NULL
        && c->sink != NULL && PyFloat_CheckExact(c->f[0]) && PyFloat_CheckExact(c->f[1])
        && PyFloat_CheckExact(args[0]) && PyFloat_CheckExact(args[1])) {
        PyObject *x = PyFloat_FromDouble(PyFloat_AS_DOUBLE(c->f[0]) + PyFloat_AS_DOUBLE(args[0]));
        if (x == NULL) {
            return NULL;
        }
        PyObject *y = PyFloat_FromDouble(PyFloat_AS_DOUBLE(c->f[1]) + PyFloat_AS_DOUBLE(args[1]));
        if (y == NULL) {
            Py_DECREF(x);
            return NULL;
        }
        PyObject *old_x = c->f[0], *old_y = c->f[1]; /* owned by the slots until replaced */
        c->f[0] = x; /* the new references, handed to the slots */
        c->f[1] = y;
        int r = table_took_both(self, x, y) ? 0 : mark(self);
        Py_DECREF(old_x);
        Py_DECREF(old_y);
        if (r < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return delegate_fast(&position_spec, "translate", self, args, nargs, kwnames);
}

/* Position.move_to(x, y): both stored, one mark. */
static PyObject *
position_move_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Comp *c = (Comp *)self;
    if (nargs != 2 || kwnames != NULL) {
        return delegate_fast(&position_spec, "move_to", self, args, nargs, kwnames);
    }
    PyObject *old_x = c->f[0], *old_y = c->f[1]; /* owned by the slots until replaced */
    Py_INCREF(args[0]);
    Py_INCREF(args[1]);
    c->f[0] = args[0];
    c->f[1] = args[1];
    int r = table_took_both(self, args[0], args[1]) ? 0 : mark(self);
    Py_XDECREF(old_x);
    Py_XDECREF(old_y);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* AABB.centered(width, height), a class method: sizes that pass the fast test here, the
 * rest (conversion, the errors) by the reference's class method run for ``cls``. */
static PyObject *
aabb_centered(PyObject *cls, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 2 && kwnames == NULL && PyFloat_CheckExact(args[0])
        && PyFloat_CheckExact(args[1]) && PyFloat_AS_DOUBLE(args[0]) >= 0.0
        && PyFloat_AS_DOUBLE(args[0]) < Py_HUGE_VAL && PyFloat_AS_DOUBLE(args[1]) >= 0.0
        && PyFloat_AS_DOUBLE(args[1]) < Py_HUGE_VAL) {
        double w = PyFloat_AS_DOUBLE(args[0]), h = PyFloat_AS_DOUBLE(args[1]);
        return PyObject_CallFunction(cls, "OOdd", args[0], args[1], -w * 0.5, -h * 0.5);
    }
    PyObject *method = reference_attr(&aabb_spec, "centered"); /* new, bound to PyAABB */
    if (method == NULL) {
        return NULL;
    }
    PyObject *func = PyObject_GetAttrString(method, "__func__"); /* new */
    Py_DECREF(method);
    if (func == NULL) {
        return NULL;
    }
    PyObject *r = call_with(func, cls, args, nargs, kwnames);
    Py_DECREF(func);
    return r;
}

/* The methods that are not per frame: the reference's, run on this object. */
#define DELEGATED(prefix, spec, name)                                                     \
    static PyObject *prefix##_##name(PyObject *self, PyObject *args, PyObject *kwargs)    \
    {                                                                                     \
        return delegate(&spec, #name, self, args, kwargs);                                \
    }

DELEGATED(aabb, aabb_spec, box_at)
DELEGATED(filter, filter_spec, accepts)

/* Whether this module's types are the classes in use (components.Position is ours): 1, 0,
 * or -1 with an error. Asked once, at the first copy or pickle, when components.py has long
 * been imported (it decides, and imports this module to do so). */
static int
in_use(void)
{
    static int known = -1;
    if (known < 0) {
        PyObject *module = PyImport_Import(s_components); /* new */
        if (module == NULL) {
            return -1;
        }
        PyObject *active = PyObject_GetAttrString(module, "Position"); /* new */
        Py_DECREF(module);
        if (active == NULL) {
            return -1;
        }
        known = active == (PyObject *)position_spec.type;
        Py_DECREF(active);
    }
    return known;
}

/* The reference's __reduce__ (components._reduced) of an exact instance of the class in
 * use, without its Python frames: (copyreg.__newobj__, (type,), the fields). Anything else
 * (a subclass, the twin not in use, an empty slot) runs the reference, which then decides. */
static PyObject *
reduce_fast(Spec *s, PyObject *self, PyObject *args, PyObject *kwargs)
{
    Comp *c = (Comp *)self;
    int ours = Py_TYPE(self) == s->type && (args == NULL || PyTuple_GET_SIZE(args) == 0)
               && (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0) ? in_use() : 0;
    if (ours < 0) {
        return NULL;
    }
    for (int i = 0; ours && i < s->n; i++) {
        ours = c->f[i] != NULL;
    }
    if (!ours) {
        return delegate(s, "__reduce__", self, args, kwargs);
    }
    PyObject *values = PyTuple_New(s->n); /* new */
    if (values == NULL) {
        return NULL;
    }
    for (int i = 0; i < s->n; i++) {
        Py_INCREF(c->f[i]);
        PyTuple_SET_ITEM(values, i, c->f[i]);
    }
    return Py_BuildValue("O(O)N", newobj, (PyObject *)s->type, values);
}

/* The reference's __setstate__ of an exact instance given an exact tuple of its fields:
 * store them, untracked (initialise). Anything else runs the reference, for its errors. */
static PyObject *
setstate_fast(Spec *s, PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *state = args != NULL && PyTuple_GET_SIZE(args) == 1 && kwargs == NULL
                      ? PyTuple_GET_ITEM(args, 0) : NULL; /* borrowed */
    if (Py_TYPE(self) != s->type || state == NULL || !PyTuple_CheckExact(state)
        || PyTuple_GET_SIZE(state) != s->n) {
        return delegate(s, "__setstate__", self, args, kwargs);
    }
    PyObject *values[MAX_FIELDS];
    for (int i = 0; i < s->n; i++) {
        values[i] = PyTuple_GET_ITEM(state, i); /* borrowed, the tuple held by args */
    }
    if (initialise(self, s->n, values) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

#define PICKLED(prefix, spec)                                                             \
    static PyObject *prefix##___reduce__(PyObject *self, PyObject *args, PyObject *kwargs) \
    {                                                                                     \
        return reduce_fast(&spec, self, args, kwargs);                                    \
    }                                                                                     \
    static PyObject *prefix##___setstate__(PyObject *self, PyObject *args,                \
                                           PyObject *kwargs)                              \
    {                                                                                     \
        return setstate_fast(&spec, self, args, kwargs);                                  \
    }

PICKLED(position, position_spec)
PICKLED(aabb, aabb_spec)
PICKLED(filter, filter_spec)

/* == by the reference's __eq__; != its negation, as object.__ne__ makes it. */
static PyObject *
richcompare(const Spec *s, PyObject *self, PyObject *other, int op)
{
    if (op != Py_EQ && op != Py_NE) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *args = PyTuple_Pack(1, other); /* new */
    if (args == NULL) {
        return NULL;
    }
    PyObject *eq = delegate(s, "__eq__", self, args, NULL); /* new */
    Py_DECREF(args);
    if (eq == NULL || op == Py_EQ || eq == Py_NotImplemented) {
        return eq;
    }
    int truth = PyObject_IsTrue(eq);
    Py_DECREF(eq);
    if (truth < 0) {
        return NULL;
    }
    return PyBool_FromLong(!truth);
}

static PyObject *
repr(const Spec *s, PyObject *self)
{
    return delegate(s, "__repr__", self, NULL, NULL);
}

/* The per-type slot functions, each the generic one with its Spec. */
#define SLOTS(prefix, spec, n)                                                               \
    static int prefix##_setattro(PyObject *self, PyObject *name, PyObject *value)          \
    {                                                                                        \
        return setattro(&spec, self, name, value);                                           \
    }                                                                                        \
    static int prefix##_traverse(PyObject *self, visitproc visit, void *arg)               \
    {                                                                                        \
        return traverse(self, visit, arg, n);                                                \
    }                                                                                        \
    static int prefix##_clear(PyObject *self) { return clear(self, n); }                   \
    static void prefix##_dealloc(PyObject *self) { dealloc(self, n); }                     \
    static PyObject *prefix##_richcompare(PyObject *self, PyObject *other, int op)         \
    {                                                                                        \
        return richcompare(&spec, self, other, op);                                          \
    }                                                                                        \
    static PyObject *prefix##_repr(PyObject *self) { return repr(&spec, self); }

SLOTS(position, position_spec, 2)
SLOTS(aabb, aabb_spec, 4)
SLOTS(filter, filter_spec, 3)

#define TRACKING_MEMBERS                                                                     \
    {"_owner", Py_T_OBJECT_EX, offsetof(Comp, owner), 0, NULL},                              \
    {"_sink", Py_T_OBJECT_EX, offsetof(Comp, sink), 0, NULL},                                \
    {"_eid", Py_T_OBJECT_EX, offsetof(Comp, eid), 0, NULL}

static PyMemberDef position_members[] = {
    {"x", Py_T_OBJECT_EX, FIELD_OFFSET(0), 0, "The x coordinate; assigning it marks the entity moved."},
    {"y", Py_T_OBJECT_EX, FIELD_OFFSET(1), 0, "The y coordinate; assigning it marks the entity moved."},
    {"_x", Py_T_OBJECT_EX, FIELD_OFFSET(0), 0, NULL},
    {"_y", Py_T_OBJECT_EX, FIELD_OFFSET(1), 0, NULL},
    TRACKING_MEMBERS,
    {NULL, 0, 0, 0, NULL},
};

static PyMemberDef aabb_members[] = {
    {"width", Py_T_OBJECT_EX, FIELD_OFFSET(0), 0, "The box's width (>= 0)."},
    {"height", Py_T_OBJECT_EX, FIELD_OFFSET(1), 0, "The box's height (>= 0)."},
    {"offset_x", Py_T_OBJECT_EX, FIELD_OFFSET(2), 0, "From the position to the box's min_x."},
    {"offset_y", Py_T_OBJECT_EX, FIELD_OFFSET(3), 0, "From the position to the box's min_y."},
    {"_w", Py_T_OBJECT_EX, FIELD_OFFSET(0), 0, NULL},
    {"_h", Py_T_OBJECT_EX, FIELD_OFFSET(1), 0, NULL},
    {"_ox", Py_T_OBJECT_EX, FIELD_OFFSET(2), 0, NULL},
    {"_oy", Py_T_OBJECT_EX, FIELD_OFFSET(3), 0, NULL},
    TRACKING_MEMBERS,
    {NULL, 0, 0, 0, NULL},
};

static PyMemberDef filter_members[] = {
    {"category", Py_T_OBJECT_EX, FIELD_OFFSET(0), 0, "The category bits of this entity."},
    {"mask", Py_T_OBJECT_EX, FIELD_OFFSET(1), 0, "The category bits it collides with."},
    {"group", Py_T_OBJECT_EX, FIELD_OFFSET(2), 0, "Entities sharing a non-zero group never collide."},
    {"_category", Py_T_OBJECT_EX, FIELD_OFFSET(0), 0, NULL},
    {"_mask", Py_T_OBJECT_EX, FIELD_OFFSET(1), 0, NULL},
    {"_group", Py_T_OBJECT_EX, FIELD_OFFSET(2), 0, NULL},
    TRACKING_MEMBERS,
    {NULL, 0, 0, 0, NULL},
};

#define PICKLING(prefix)                                                                    \
    {"__reduce__", (PyCFunction)(void (*)(void))prefix##___reduce__,                        \
     METH_VARARGS | METH_KEYWORDS, "A fresh, untracked copy (components._reduced)."},     \
    {"__setstate__", (PyCFunction)(void (*)(void))prefix##___setstate__,                    \
     METH_VARARGS | METH_KEYWORDS, "Store the fields of a copy, untracked."}

static PyMethodDef position_methods[] = {
    {"translate", (PyCFunction)(void (*)(void))position_translate, METH_FASTCALL | METH_KEYWORDS,
     "translate($self, dx, dy, /)\n--\n\nAdd (dx, dy) to the position: one call, one report "
     "of the change."},
    {"move_to", (PyCFunction)(void (*)(void))position_move_to, METH_FASTCALL | METH_KEYWORDS,
     "move_to($self, x, y, /)\n--\n\nSet both coordinates in one call."},
    PICKLING(position),
    {NULL, NULL, 0, NULL},
};

static PyMethodDef aabb_methods[] = {
    {"centered", (PyCFunction)(void (*)(void))aabb_centered,
     METH_FASTCALL | METH_KEYWORDS | METH_CLASS,
     "centered($cls, width, height, /)\n--\n\nA box of this size centred on the position."},
    {"box_at", (PyCFunction)(void (*)(void))aabb_box_at, METH_VARARGS | METH_KEYWORDS,
     "box_at($self, x, y, /)\n--\n\nThe world box of an entity at position (x, y)."},
    PICKLING(aabb),
    {NULL, NULL, 0, NULL},
};

static PyMethodDef filter_methods[] = {
    {"accepts", (PyCFunction)(void (*)(void))filter_accepts, METH_VARARGS | METH_KEYWORDS,
     "accepts($self, other, /)\n--\n\nWhether an entity with this filter may collide with "
     "one with other (None: no filter)."},
    PICKLING(filter),
    {NULL, NULL, 0, NULL},
};

/* Heap types (PyType_FromSpec), whose __module__ is ecs_spatial.components; ready() then
 * sets __name__ again, which makes the name CPython prints (AttributeError's "'Position'
 * object has no attribute ...") the bare one, as for the reference. */
#define COMPONENT_TYPE(prefix, tname, n, doc)                                                \
    static PyType_Slot prefix##_slots[] = {                                                 \
        {Py_tp_doc, (void *)(doc)},                                                         \
        {Py_tp_new, (void *)PyType_GenericNew},                                             \
        {Py_tp_init, (void *)prefix##_init},                                                \
        {Py_tp_dealloc, (void *)prefix##_dealloc},                                          \
        {Py_tp_traverse, (void *)prefix##_traverse},                                        \
        {Py_tp_clear, (void *)prefix##_clear},                                              \
        {Py_tp_setattro, (void *)prefix##_setattro},                                        \
        {Py_tp_getattro, (void *)PyObject_GenericGetAttr},                                  \
        {Py_tp_richcompare, (void *)prefix##_richcompare},                                  \
        {Py_tp_hash, (void *)PyObject_HashNotImplemented},                                  \
        {Py_tp_repr, (void *)prefix##_repr},                                                \
        {Py_tp_members, (void *)prefix##_members},                                          \
        {Py_tp_methods, (void *)prefix##_methods},                                          \
        {0, NULL},                                                                          \
    };                                                                                      \
    static PyType_Spec prefix##_type_spec = {                                               \
        .name = "ecs_spatial.components." tname,                                           \
        .basicsize = (int)(sizeof(Comp) + (n) * sizeof(PyObject *)),                        \
        .itemsize = 0,                                                                      \
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,             \
        .slots = prefix##_slots,                                                            \
    };

COMPONENT_TYPE(position, "Position", 2,
    "Position(x=0.0, y=0.0)\n--\n\n"
    "Where an entity is (compiled; components.PyPosition is the reference).")
COMPONENT_TYPE(aabb, "AABB", 4,
    "AABB(width, height, offset_x=0.0, offset_y=0.0)\n--\n\n"
    "The size of an entity's box (compiled; components.PyAABB is the reference).")
COMPONENT_TYPE(filter, "CollisionFilter", 3,
    "CollisionFilter(category=1, mask=4294967295, group=0)\n--\n\n"
    "Which pairs may collide (compiled; components.PyCollisionFilter is the reference).")

static Spec position_spec = {NULL, &position_type_spec, "PyPosition", 2, MT_POSITION, MT_X,
                             {"x", "y"}, {NULL}, {NULL}};
static Spec aabb_spec = {NULL, &aabb_type_spec, "PyAABB", 4, MT_AABB, MT_W,
                         {"width", "height", "offset_x", "offset_y"}, {NULL}, {NULL}};
static Spec filter_spec = {NULL, &filter_type_spec, "PyCollisionFilter", 3, -1, 0,
                           {"category", "mask", "group"}, {NULL}, {NULL}};

static int
ready(PyObject *module, Spec *s, const char *name)
{
    if (s->type == NULL
        && (s->type = (PyTypeObject *)PyType_FromSpec(s->spec)) == NULL) { /* new */
        return -1;
    }
    PyObject *bare = PyUnicode_FromString(name); /* new */
    if (bare == NULL) {
        return -1;
    }
    int set = PyObject_SetAttrString((PyObject *)s->type, "__name__", bare);
    Py_DECREF(bare);
    if (set < 0) {
        return -1;
    }
    for (int i = 0; i < s->n; i++) {
        if (s->names[i] == NULL) {
            if ((s->names[i] = PyUnicode_InternFromString(s->public[i])) == NULL) {
                return -1;
            }
            /* new; the type is static, so its descriptors live as long as the process */
            if ((s->descrs[i] = PyObject_GetAttr((PyObject *)s->type, s->names[i])) == NULL) {
                return -1;
            }
        }
    }
    Py_INCREF(s->type);
    if (PyModule_AddObject(module, name, (PyObject *)s->type) < 0) {
        Py_DECREF(s->type);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ made from columns */

/* from_columns(cls, columns, /) or from_columns(cls, columns, sink, ids, pending, /): one
 * new instance of ``cls`` (the compiled Position or AABB, exactly) per row of ``columns``, a
 * tuple of one float buffer a field (array('d') from _columns.pack), each instance as
 * cls.__new__ then the reference's __setstate__ of that row leave it: its fields exact
 * floats, unbound. With two arguments, untracked (``_owner`` and ``_sink`` None, ``_eid`` 0).
 * With ``sink`` (a SpatialProcessor's dirty list), ``ids`` (a list of one exact int a row:
 * the entities) and ``pending`` (a set: the entities already listed in ``sink``), each is
 * born tracked there, as components.track then rearm leave it: ``_owner`` the sink, ``_eid``
 * its entity, ``_sink`` the sink (armed) unless its entity is pending (None: its entity is
 * listed already). So no store can reach an unpickled processor's component before it is
 * tracked (SpatialProcessor.__setstate__). What _columns.unpack makes a saved world's floats
 * column with, without a tuple and two calls a component. _columns checks the columns
 * first, for the reference's errors; anything else given here is refused (TypeError or
 * ValueError). A new list, or NULL with an error and nothing made. */
static PyObject *
from_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 && nargs != 5) {
        PyErr_Format(PyExc_TypeError, "from_columns() takes 2 or 5 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    PyObject *cls = args[0], *columns = args[1]; /* borrowed, held by the caller */
    PyObject *sink = nargs == 5 ? args[2] : Py_None; /* borrowed, held by the caller */
    const Spec *s = cls == (PyObject *)position_spec.type ? &position_spec
                    : cls == (PyObject *)aabb_spec.type ? &aabb_spec : NULL;
    if (s == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "from_columns() makes the compiled Position or AABB, exactly");
        return NULL;
    }
    if (!PyTuple_CheckExact(columns) || PyTuple_GET_SIZE(columns) != s->n) {
        PyErr_Format(PyExc_ValueError, "from_columns(): a %s takes a tuple of %d columns",
                     s == &position_spec ? "Position" : "AABB", s->n);
        return NULL;
    }
    if (nargs == 5 && (!PyList_CheckExact(sink) || !PyList_CheckExact(args[3])
                       || !PyAnySet_Check(args[4]))) {
        PyErr_SetString(PyExc_TypeError,
                        "from_columns(): sink and ids are lists, pending a set");
        return NULL;
    }
    Py_buffer views[MAX_FIELDS];
    int held = 0;
    PyObject *made = NULL; /* new: the list, once its size is known */
    PyObject *eids = NULL; /* new: the ids, held as a tuple (a list may change meanwhile) */
    char *armed = NULL;    /* one flag a row: its _sink is the sink; NULL: every row's is */
    Py_ssize_t size = -1;
    for (; held < s->n; held++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(columns, held), &views[held],
                               PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
            goto done;
        }
        Py_buffer *v = &views[held];
        if (v->ndim != 1 || v->itemsize != (Py_ssize_t)sizeof(double) || v->format == NULL
            || strcmp(v->format, "d") != 0 || (size >= 0 && v->len / v->itemsize != size)) {
            held++;
            PyErr_SetString(PyExc_ValueError,
                            "from_columns(): the columns must be float buffers ('d') of one "
                            "length");
            goto done;
        }
        size = v->len / v->itemsize;
    }
    if (size < 0) {
        size = 0;
    }
    if (nargs == 5) {
        if ((eids = PyList_AsTuple(args[3])) == NULL) {
            goto done;
        }
        if (PyTuple_GET_SIZE(eids) != size) {
            PyErr_Format(PyExc_ValueError, "from_columns(): %zd ids for %zd rows",
                         PyTuple_GET_SIZE(eids), size);
            goto done;
        }
        for (Py_ssize_t k = 0; k < size; k++) {
            if (!PyLong_CheckExact(PyTuple_GET_ITEM(eids, k))) {
                PyErr_SetString(PyExc_TypeError, "from_columns(): the ids must be ints");
                goto done;
            }
        }
        /* Which rows are armed, worked out before anything is made: a look-up in a set of
         * other objects may run Python, which then finds nothing half made. */
        if (PySet_GET_SIZE(args[4]) > 0) {
            if ((armed = PyMem_Malloc(size > 0 ? (size_t)size : 1)) == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            for (Py_ssize_t k = 0; k < size; k++) {
                int listed = PySet_Contains(args[4], PyTuple_GET_ITEM(eids, k));
                if (listed < 0) {
                    goto done;
                }
                armed[k] = (char)!listed;
            }
        }
    }
    if ((made = PyList_New(size)) == NULL) {
        goto done;
    }
    PyTypeObject *type = s->type; /* borrowed: owned for ever */
    for (Py_ssize_t k = 0; k < size; k++) {
        /* The buffers cannot change while they are exported (an array refuses to resize),
         * whatever an allocation here runs (the collector, a finaliser). */
        PyObject *self = type->tp_alloc(type, 0); /* new: tracked by the collector */
        if (self == NULL) {
            Py_CLEAR(made);
            goto done;
        }
        PyList_SET_ITEM(made, k, self); /* stolen; the list's items until k are set */
        Comp *c = (Comp *)self;
        for (int i = 0; i < s->n; i++) {
            if ((c->f[i] = PyFloat_FromDouble(((const double *)views[i].buf)[k])) == NULL) {
                Py_CLEAR(made);
                goto done;
            }
        }
        /* Tracked before anything more is allocated: no Python runs in between. */
        Py_INCREF(sink);
        c->owner = sink;
        if (eids == NULL) {
            c->eid = PyLong_FromLong(0); /* a cached small int: cannot fail */
            Py_INCREF(Py_None);
            c->sink = Py_None;
        }
        else {
            c->eid = Py_NewRef(PyTuple_GET_ITEM(eids, k));
            c->sink = Py_NewRef(armed == NULL || armed[k] ? sink : Py_None);
        }
    }
done:
    for (int i = 0; i < held; i++) {
        PyBuffer_Release(&views[i]);
    }
    PyMem_Free(armed);
    Py_XDECREF(eids); /* ints: no finaliser runs */
    return made;
}

static PyMethodDef module_methods[] = {
    {"from_columns", (PyCFunction)(void (*)(void))from_columns, METH_FASTCALL,
     "from_columns($module, cls, columns, sink=None, ids=None, pending=None, /)\n--\n\n"
     "New instances of cls (the compiled Position or AABB), one a row of columns (one\n"
     "array('d') a field), as cls.__new__ then __setstate__ make them, unbound: untracked,\n"
     "or with sink, ids and pending each born tracked at sink for its id, armed unless its\n"
     "id is in pending."},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    const char *const names[] = {"append", "ecs_spatial.components", "_sink", "_eid",
                                 "__delete__"};
    PyObject **const interned[] = {&s_append, &s_components, &s_sink, &s_eid, &s_delete};
    for (int i = 0; i < 5; i++) {
        if (*interned[i] == NULL && (*interned[i] = PyUnicode_InternFromString(names[i])) == NULL) {
            return -1;
        }
    }
    if ((zero == NULL && (zero = PyFloat_FromDouble(0.0)) == NULL)
        || (zero_int == NULL && (zero_int = PyLong_FromLong(0)) == NULL)
        || (category_default == NULL && (category_default = PyLong_FromLong(1)) == NULL)
        || (mask_default == NULL
            && (mask_default = PyLong_FromUnsignedLong(0xFFFFFFFFUL)) == NULL)) {
        return -1;
    }
    if (newobj == NULL) {
        PyObject *copyreg = PyImport_ImportModule("copyreg"); /* new */
        if (copyreg == NULL) {
            return -1;
        }
        newobj = PyObject_GetAttrString(copyreg, "__newobj__"); /* new, kept */
        Py_DECREF(copyreg);
        if (newobj == NULL) {
            return -1;
        }
    }
    if (ready(module, &position_spec, "Position") < 0 || ready(module, &aabb_spec, "AABB") < 0
        || ready(module, &filter_spec, "CollisionFilter") < 0) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ecs_spatial._ccomponents",
    .m_doc = "Position, AABB and CollisionFilter, compiled (components.py holds the reference).",
    .m_size = 0,
    .m_methods = module_methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__ccomponents(void)
{
    return PyModuleDef_Init(&module);
}
