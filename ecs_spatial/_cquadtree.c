/* _cquadtree.c: the compiled twin of ecs_spatial.quadtree.QuadTree, built as one translation
 * unit from its units in ecs_spatial/_cquadtree_src/ (listed in _cquadtree_src/quadtree.c,
 * each the twin of the reference module of the same name), included here in dependency
 * order. One unit
 * keeps every hot call inlinable, as when this was one file: QT_API (tree.h) makes the
 * functions the units share static here. setup.py, CI and the sdist build this file. */
#define QT_UNITY 1

#include "_cquadtree_src/containers.c"
#include "_cquadtree_src/geometry.c"
#include "_cquadtree_src/growth.c"
#include "_cquadtree_src/snapshots.c"
#include "_cquadtree_src/records.c"
#include "_cquadtree_src/wrap.c"
#include "_cquadtree_src/tree_storage.c"
#include "_cquadtree_src/tree_nodes.c"
#include "_cquadtree_src/tree_updates.c"
#include "_cquadtree_src/tree_queries.c"
#include "_cquadtree_src/tree_nearest.c"
#include "_cquadtree_src/tree_casts.c"
#include "_cquadtree_src/tree_pairs.c"
#include "_cquadtree_src/tree_state.c"
#include "_cquadtree_src/tree_check.c"
#include "_cquadtree_src/quadtree.c"
