/* ecs_spatial._cgeometry: geometry.Box built and freed at C speed (geometry.py's Box.__new__
 * is its reference).
 *
 * geometry.Box stays the Python class that geometry.py defines (a NamedTuple's tuple, with
 * its methods, fields, pickling and subclassing); install() gives that very class three
 * compiled slots, each standing for the reference where it would do the same thing:
 *
 * - Box.__new__ becomes staticmethod(_cgeometry.box_new): four exact floats that form a
 *   valid box (the one chained comparison -inf < min <= max < inf on each axis, which NaN
 *   fails) become the Box at once, holding the very float objects given, as tuple.__new__
 *   does; every other call (other types, keywords, another count, a failing comparison, a
 *   class that is not a Box) is handed to the reference's own Box.__new__, so that every
 *   conversion and every error (type and text) is the reference's by construction;
 * - the call of Box itself (the type's tp_vectorcall, which a subclass never inherits) takes
 *   the same fast path without building an argument tuple or looking __new__ up through the
 *   type's call, while Box.__new__ is the one installed and Box.__init__ is object's; every
 *   other call is the type's own call;
 * - the Box's dealloc: the work subtype_dealloc does for a class with __slots__ = () and no
 *   __del__ (untrack, release the items, free, release the type), without its general
 *   machinery, and with a short free list of four-item Boxes, so that the Box a loop of
 *   move(e, Box(...)) builds and drops costs about what a plain tuple costs.
 *
 * A build without this module, or ECS_SPATIAL_PURE=1, runs Box exactly as geometry.py writes
 * it: that is the reference, and tests/test_box_construction.py drives both side by side.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* What install() took (owned): geometry.Box, the reference's Box.__new__ (the function),
 * and the staticmethod installed as Box.__new__ (what the fast call checks is in place). */
static PyTypeObject *box_type = NULL;
static PyObject *reference_new = NULL;
static PyObject *installed_new = NULL;
static PyObject *str_dunder_new = NULL; /* owned, interned: "__new__" */

/* Box's type version tag when box_vectorcall last found its own __new__ in Box's dict and
 * object's __init__ (0: not yet). Every CPython from 3.10 to 3.13 sets a type's
 * tp_version_tag to 0 when the type or a base is modified (PyType_Modified: an attribute set
 * or deleted, __new__ and __init__ included) and never gives a type the same nonzero tag
 * twice, so an equal nonzero tag means that dict and slot are as they were checked: the
 * dict lookup of __new__, the costliest step of a Box's construction, is made once per
 * state of the class rather than once per call. A type gets a tag at its first attribute
 * lookup (the method cache's); tag_asked says that box_vectorcall asked for one and got
 * none (a CPython whose tags ran out), so that it does not ask again each call. */
static unsigned int checked_tag = 0;
static int tag_asked = 0;

/* Freed four-item Boxes kept for the next (untracked, holding no reference to their items
 * or to the type): most Boxes die young, one at a time. */
#define FREE_MAX 16
static PyObject *free_list[FREE_MAX];
static int free_count = 0;

static inline int
valid_box(const double c[4])
{
    /* Box's rule in one chain: NaN fails every comparison, and so do the infinities. */
    return -INFINITY < c[0] && c[0] <= c[2] && c[2] < INFINITY
           && -INFINITY < c[1] && c[1] <= c[3] && c[3] < INFINITY;
}

/* Whether the four objects are exact floats that form a valid box. */
static inline int
four_floats(PyObject *const *args)
{
    if (!(PyFloat_CheckExact(args[0]) && PyFloat_CheckExact(args[1])
          && PyFloat_CheckExact(args[2]) && PyFloat_CheckExact(args[3]))) {
        return 0;
    }
    const double c[4] = {PyFloat_AS_DOUBLE(args[0]), PyFloat_AS_DOUBLE(args[1]),
                         PyFloat_AS_DOUBLE(args[2]), PyFloat_AS_DOUBLE(args[3])};
    return valid_box(c);
}

/* A `type` (Box or a subclass) holding the four objects (new references taken), as
 * tuple.__new__(type, args) builds it. New reference, or NULL with an error. */
static PyObject *
make(PyTypeObject *type, PyObject *const *args)
{
    PyObject *box;
    if (type == box_type && free_count > 0) {
        box = free_list[--free_count];
        PyObject_InitVar((PyVarObject *)box, type, 4); /* takes a reference to the type */
        PyTuple_SET_ITEM(box, 0, Py_NewRef(args[0])); /* each steals the new reference */
        PyTuple_SET_ITEM(box, 1, Py_NewRef(args[1]));
        PyTuple_SET_ITEM(box, 2, Py_NewRef(args[2]));
        PyTuple_SET_ITEM(box, 3, Py_NewRef(args[3]));
        PyObject_GC_Track(box);
        return box;
    }
    box = type->tp_alloc(type, 4);
    if (box == NULL) {
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(box, i, args[i]); /* steals the reference just taken */
    }
    return box;
}

PyDoc_STRVAR(box_new_doc,
"box_new(cls, min_x, min_y, max_x, max_y)\n--\n\n"
"Box.__new__ when install() has run: four floats that form a valid box become the Box\n"
"at once; every other call is the reference's Box.__new__.");

static PyObject *
box_new(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    if (reference_new == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ecs_spatial._cgeometry.install() has not run");
        return NULL;
    }
    if (kwnames == NULL && nargs == 5 && PyType_Check(args[0])
        && PyType_IsSubtype((PyTypeObject *)args[0], box_type) && four_floats(args + 1)) {
        return make((PyTypeObject *)args[0], args + 1);
    }
    return PyObject_Vectorcall(reference_new, args, (size_t)nargs, kwnames);
}

/* type.__call__(type, *args, **kwargs): the call Box makes without box_vectorcall. */
static PyObject *
type_call(PyObject *type, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *tuple = PyTuple_New(nargs); /* new */
    PyObject *kwargs = NULL;              /* new */
    PyObject *result = NULL;
    if (tuple == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]); /* steals the reference just taken */
    }
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        kwargs = PyDict_New();
        if (kwargs == NULL) {
            goto done;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
                goto done;
            }
        }
    }
    if (Py_EnterRecursiveCall(" while calling a Python object") == 0) {
        result = PyType_Type.tp_call(type, tuple, kwargs);
        Py_LeaveRecursiveCall();
    }
done:
    Py_DECREF(tuple);
    Py_XDECREF(kwargs);
    return result;
}

/* Box(...): the fast path when it gives what type.__call__ would (Box's own __new__ is the
 * one installed, its __init__ object's), else the type's own call. */
static PyObject *
box_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (type == (PyObject *)box_type && nargs == 4
        && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) && four_floats(args)) {
        if (box_type->tp_version_tag != 0 && box_type->tp_version_tag == checked_tag) {
            return make(box_type, args);
        }
        if (box_type->tp_init == PyBaseObject_Type.tp_init) {
            PyObject *new = PyDict_GetItemWithError(box_type->tp_dict, str_dunder_new); /* borrowed */
            if (new == NULL && PyErr_Occurred()) {
                return NULL;
            }
            if (new == installed_new) {
                if (box_type->tp_version_tag == 0 && !tag_asked) {
                    /* Box.__new__ through the type's attribute lookup, which gives the type a
                     * tag: the staticmethod's function, no Python code run. */
                    PyObject *found = PyObject_GetAttr((PyObject *)box_type, str_dunder_new);
                    if (found == NULL) {
                        return NULL;
                    }
                    Py_DECREF(found);
                    tag_asked = box_type->tp_version_tag == 0;
                }
                else if (box_type->tp_version_tag != 0) {
                    tag_asked = 0;
                }
                checked_tag = box_type->tp_version_tag;
                return make(box_type, args);
            }
        }
    }
    return type_call(type, args, nargs, kwnames);
}

/* The dealloc of Box and, through subtype_dealloc (which calls it as the first base's
 * dealloc that is not its own), of every subclass: a subclass's __dict__, weak references
 * and __del__ are released by subtype_dealloc before it gets here. */
static void
box_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    if (type == box_type && type->tp_finalize == NULL && Py_SIZE(self) == 4
        && PyFloat_CheckExact(PyTuple_GET_ITEM(self, 0))
        && PyFloat_CheckExact(PyTuple_GET_ITEM(self, 1))
        && PyFloat_CheckExact(PyTuple_GET_ITEM(self, 2))
        && PyFloat_CheckExact(PyTuple_GET_ITEM(self, 3))) {
        /* A Box of four floats (all but a Box that tuple.__new__ filled with other things):
         * releasing them runs no Python code and cannot recurse, so no trashcan. */
        PyObject_GC_UnTrack(self);
        Py_DECREF(PyTuple_GET_ITEM(self, 0));
        Py_DECREF(PyTuple_GET_ITEM(self, 1));
        Py_DECREF(PyTuple_GET_ITEM(self, 2));
        Py_DECREF(PyTuple_GET_ITEM(self, 3));
        /* (A Box whose finalizer ran keeps that mark in its GC header: never reused.) */
        if (free_count < FREE_MAX && !PyObject_GC_IsFinalized(self)) {
            free_list[free_count++] = self;
        }
        else {
            PyObject_GC_Del(self);
        }
        Py_DECREF(type);
        return;
    }
    if (type->tp_finalize != NULL && type->tp_dealloc == box_dealloc) { /* Box.__del__ */
        if (PyObject_CallFinalizerFromDealloc(self) < 0) {
            return; /* resurrected */
        }
    }
    PyObject_GC_UnTrack(self);
    Py_TRASHCAN_BEGIN(self, box_dealloc)
    Py_ssize_t n = Py_SIZE(self);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(PyTuple_GET_ITEM(self, i));
    }
    if (type == box_type && n == 4 && free_count < FREE_MAX && !PyObject_GC_IsFinalized(self)) {
        free_list[free_count++] = self;
    }
    else {
        type->tp_free(self);
    }
    Py_DECREF(type);
    Py_TRASHCAN_END
}

PyDoc_STRVAR(install_doc,
"install(box, reference_new, /)\n--\n\n"
"Give geometry.Box (box, the class as geometry.py defines it) the compiled __new__, call and\n"
"dealloc; reference_new is its own Box.__new__ (the function), which box_new hands every\n"
"call it does not answer to. Once, at geometry's import; a second call is refused.");

static PyObject *
install(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "install() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (box_type != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "ecs_spatial._cgeometry.install() has run already");
        return NULL;
    }
    PyObject *box = args[0];
    if (!PyType_Check(box) || !PyType_IsSubtype((PyTypeObject *)box, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "install() needs a tuple subclass");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)box;
    /* The layout that subtype_dealloc would release exactly as box_dealloc does: a heap type
     * with a tuple's layout and nothing of its own (__slots__ = (), no __del__). */
    unsigned long own = 0;
#ifdef Py_TPFLAGS_MANAGED_DICT
    own |= Py_TPFLAGS_MANAGED_DICT;
#endif
#ifdef Py_TPFLAGS_MANAGED_WEAKREF
    own |= Py_TPFLAGS_MANAGED_WEAKREF;
#endif
    if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE) || (type->tp_flags & own)
        || type->tp_basicsize != PyTuple_Type.tp_basicsize
        || type->tp_itemsize != PyTuple_Type.tp_itemsize || type->tp_dictoffset != 0
        || type->tp_weaklistoffset != 0 || type->tp_finalize != NULL || type->tp_del != NULL
        || type->tp_free != PyObject_GC_Del) {
        PyErr_SetString(PyExc_TypeError,
                        "install() needs a tuple subclass with __slots__ = () and no __del__");
        return NULL;
    }
    if (!PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "install() needs the reference's __new__");
        return NULL;
    }
    if (str_dunder_new == NULL) {
        str_dunder_new = PyUnicode_InternFromString("__new__");
        if (str_dunder_new == NULL) {
            return NULL;
        }
    }
    static PyMethodDef new_def = {"box_new", (PyCFunction)(void (*)(void))box_new,
                                  METH_FASTCALL | METH_KEYWORDS, box_new_doc};
    PyObject *name = PyModule_GetNameObject(module); /* new */
    if (name == NULL) {
        return NULL;
    }
    PyObject *function = PyCFunction_NewEx(&new_def, module, name); /* new */
    Py_DECREF(name);
    if (function == NULL) {
        return NULL;
    }
    PyObject *method = PyStaticMethod_New(function); /* new */
    Py_DECREF(function);
    if (method == NULL) {
        return NULL;
    }
    box_type = (PyTypeObject *)Py_NewRef(box);
    reference_new = Py_NewRef(args[1]);
    if (PyObject_SetAttr(box, str_dunder_new, method) < 0) {
        Py_DECREF(method);
        Py_CLEAR(box_type);
        Py_CLEAR(reference_new);
        return NULL;
    }
    installed_new = method; /* the reference taken by PyStaticMethod_New */
    type->tp_vectorcall = box_vectorcall;
    type->tp_dealloc = box_dealloc;
    Py_RETURN_NONE;
}

static PyMethodDef cgeometry_methods[] = {
    {"install", (PyCFunction)(void (*)(void))install, METH_FASTCALL, install_doc},
    {NULL, NULL, 0, NULL},
};

static void
cgeometry_free(void *Py_UNUSED(module))
{
    while (free_count > 0) {
        PyObject_GC_Del(free_list[--free_count]);
    }
}

static struct PyModuleDef cgeometry_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ecs_spatial._cgeometry",
    .m_doc = "geometry.Box's __new__, call and dealloc, compiled (see install()).",
    .m_size = -1,
    .m_methods = cgeometry_methods,
    .m_free = cgeometry_free,
};

PyMODINIT_FUNC
PyInit__cgeometry(void)
{
    return PyModule_Create(&cgeometry_module);
}
