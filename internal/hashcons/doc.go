// Package hashcons makes equal sub-objects of API objects one instance
// (hash-consing), for caches that hold many objects with equal parts: the
// labels, tolerations, probes, volume sources and resource lists of the Pods
// of one ReplicaSet, for example. The informer factory runs it last in its
// default transform.
//
// The API is small: New makes a Table, and Table.Share canonicalises one
// object in place against it (and sizes it, see size.go). An object given to Share may afterwards hold
// sub-objects that other objects hold too, so it must be treated as read-only
// (client-go's contract for cached objects); its DeepCopy is the caller's own.
//
// How it works, by file:
//
//   - walk.go (maps.go for maps): Share walks the object bottom-up. Every pointer target,
//     non-empty slice backing array and non-empty map (a "node") gets a
//     content hash built from its scalars and strings and its children's
//     hashes. Children are made canonical first, so two nodes are equal when
//     their scalars and strings are equal and their children are the same
//     instances. An equal node found in the table replaces the object's own.
//     Strings seen in a second object are interned (package unique).
//   - table.go: the table of canonical nodes, held through weak pointers and
//     dropped by a cleanup once no object uses them, and the admission filter:
//     a node is admitted on its second sighting (a small lossy set of recent
//     hashes), and only once every node inside it is canonical, so nodes
//     unique to one object cost nothing but the walk.
//   - plan.go: how to walk a Go type, computed once per type by reflection.
//   - size.go: what an object keeps alive on the heap, for the informers'
//     accounting: Share returns an object's own and unshared sizes and
//     charges the canonical nodes it brings to an Account while they live;
//     Size sizes an object nothing is shared with. Each allocation is
//     rounded as Go's allocator rounds it.
//   - quantity.go: resource.Quantity, hashed and compared by its value, not
//     its cached string form, through a field layout checked by reflection
//     at first use. Should apimachinery ever change that layout, quantities
//     and everything holding them are simply not shared (logged once).
//
// Unstructured objects (maps of interfaces) are walked but not shared.
package hashcons
