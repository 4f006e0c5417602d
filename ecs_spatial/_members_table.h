/* The members table's layout, shared by _cmembers.c, which owns the table, and
 * _ccomponents.c, whose bound components store into it (the design: _cmembers.c, "The
 * members table"). Both modules are built with this one header, so they agree on it. */
#ifndef ECS_SPATIAL_MEMBERS_TABLE_H
#define ECS_SPATIAL_MEMBERS_TABLE_H

#include <Python.h>
#include <stdint.h>

/* A compiled component (Position, AABB, CollisionFilter): the tracking slots, its binding
 * to a members table, then the fields (2, 4 or 3 of them by type). */
typedef struct {
    PyObject_HEAD
    PyObject *owner;  /* _owner: None, a dirty list, or a components._Shared */
    PyObject *sink;   /* _sink: _owner while armed, else None */
    PyObject *eid;    /* _eid: the entity, when _owner is a dirty list */
    PyObject *table;  /* owned: the MembersTable this component is bound to, or NULL */
    Py_ssize_t slot;  /* its slot there */
    PyObject *f[];    /* the fields, in the order of Spec.public */
} Comp;

/* A member's fields as the table keeps them: a Position's x, y, then an AABB's width,
 * height, offset_x, offset_y. */
enum { MT_X, MT_Y, MT_W, MT_H, MT_OX, MT_OY, MT_FIELDS };
enum { MT_POSITION, MT_AABB };

/* The table keeps only values it can add without overflow or NaN: a box of such fields is
 * always valid, so the table's read never fails. */
#define MT_LIMIT 1e300

typedef struct {
    double f[MT_FIELDS];  /* the bound components' fields, as last stored */
    double box[4];        /* the box the index holds (box[0] NaN: the record is STALE) */
    int64_t eid;          /* the entity */
    int64_t stamp;        /* when it was first stored into since the last read (a count) */
    Py_ssize_t seq;       /* how long the dirty list was then: its place in that order */
    int dirty;            /* 1 while the slot's index is in the dirty array (once) */
    int behind;           /* the record's box (rec[2]) is older than box: sync writes it */
    PyObject *claim[2];   /* the Position and the AABB bound here: borrowed, compared and
                           * never dereferenced; each clears its claim before it dies */
    PyObject *rec;        /* owned: the member record [pos, aabb, box, entity]; NULL: free */
    PyObject *entity;     /* owned: the entity, the key of slot_of */
} MemberSlot;

typedef struct MembersTable MembersTable;
struct MembersTable {
    PyObject_HEAD
    MemberSlot *slots;    /* cap of them; they live as long as the table */
    Py_ssize_t cap, used; /* allocated; ever handed out (the rest are zeroed) */
    Py_ssize_t *dirty;    /* the slots stored into since the last read, in that order; room
                           * for cap, each slot being there at most once */
    Py_ssize_t ndirty;
    Py_ssize_t *free;     /* freed slots, for reuse; room for cap */
    Py_ssize_t nfree;
    int64_t stamp;        /* the next MemberSlot.stamp */
    int64_t *inserted;    /* the stamps of the members drop() put into the dirty list since
                           * it was last cleared (list_cleared), to place the next ones */
    Py_ssize_t ninserted, inserted_cap;
    PyObject *slot_of;    /* owned: dict, entity -> slot index, of the live slots */
    PyObject *sink;       /* owned: the processor's dirty list, the bound components' _owner */
    PyObject *stale;      /* owned: _members.STALE */
    /* Drop slot ``slot`` (its member goes back to the dirty list's path): 0, or -1 with an
     * error. Set by _cmembers, called by a bound component about to leave the table. */
    int (*drop)(MembersTable *table, Py_ssize_t slot);
    int wrapped;          /* 1: the processor's world is a torus of ``period`` */
    double period[6];     /* (x0, y0, w, h, ex, ey), as _wrap.period_of keeps it */
};

/* Whether ``v`` may be stored as field ``field`` (sizes are not negative). */
static inline int
members_table_fits(int field, double v)
{
    return v > -MT_LIMIT && v < MT_LIMIT && (field < MT_W || field > MT_H || v >= 0.0);
}

/* The bound component ``self``'s store of ``v`` into field ``field`` of its slot: 1 when
 * the table took it (the slot is then marked dirty, which is the component's mark), 0 when
 * the component is not the slot's (any more). Never fails: the dirty array has room for
 * every slot. The caller checked ``members_table_fits``. */
static inline int
members_table_store(PyObject *self, int kind, int field, double v)
{
    Comp *c = (Comp *)self;
    MembersTable *t = (MembersTable *)c->table;
    if (c->slot < 0 || c->slot >= t->cap) {
        return 0;
    }
    MemberSlot *s = &t->slots[c->slot];
    if (s->claim[kind] != self) {
        return 0;
    }
    s->f[field] = v;
    if (!s->dirty) {
        s->dirty = 1;
        s->seq = PyList_GET_SIZE(t->sink);
        s->stamp = t->stamp++;
        t->dirty[t->ndirty++] = c->slot;
    }
    return 1;
}

#endif
