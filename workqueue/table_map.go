//go:build wqmap

package workqueue

// This file replaces table.go when built with -tags wqmap: the same table over Go's built-in
// map, kept so that the choice of a table of our own can be measured again (see
// docs/design/workqueue.md):
//
//	go test -tags wqmap -run '^$' -bench 'Fill|Burst' ./workqueue/
//
// A map never shrinks, so a new one replaces it when it empties after a burst. The entries live
// in the same arena as with the table.

type table[T comparable] struct {
	m     map[T]*entry[T]
	n     int // entries, retired ones included (they have left m)
	peak  int
	arena arena[T]
}

const keepTable = 4096

func newTable[T comparable]() table[T] {
	return table[T]{m: make(map[T]*entry[T]), arena: newArena[T]()}
}

func (t *table[T]) hash(item T) uint64     { return 0 }
func (t *table[T]) touch(h uint64) uint64  { return 0 }
func (t *table[T]) peek(tag uint32) uint64 { return 0 }
func (t *table[T]) len() int               { return t.n }
func (t *table[T]) get(h uint64, item T) *entry[T] {
	return t.m[item]
}
func (t *table[T]) insert(item T, h uint64) *entry[T] {
	e := t.arena.alloc()
	if e == nil {
		return nil
	}
	e.item, e.tag = item, tagOf(h)
	t.m[item] = e
	t.n++
	t.peak = max(t.peak, len(t.m))
	return e
}
func (t *table[T]) retire(e *entry[T]) {
	delete(t.m, e.item)
	var zero T
	e.item = zero
}
func (t *table[T]) delete(e *entry[T]) {
	if t.m[e.item] == e { // a retired entry has left the map already
		delete(t.m, e.item)
	}
	t.n--
	t.arena.release(e)
	if len(t.m) == 0 && t.peak > keepTable {
		t.m = make(map[T]*entry[T])
		t.peak = 0
	}
}
func (t *table[T]) all(f func(*entry[T])) {
	for _, e := range t.m {
		f(e)
	}
}
