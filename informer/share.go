package informer

import (
	"hash/maphash"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unique"
	"unsafe"
	"weak"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Structural sharing (hash-consing) of the objects a Factory caches.
//
// Cached objects are read-only, so sub-objects with equal content can be one
// instance for all the objects that contain them: the labels, tolerations,
// probes, volume sources and resource lists of the Pods of one ReplicaSet,
// for example. A sharer walks each object bottom-up. Every pointer target,
// non-empty slice backing array and non-empty map (a "node") gets a content
// hash built from its scalars and strings and its children's hashes; since
// the children are made canonical first, two nodes are equal when their
// scalars and strings are equal and their children are the same instances.
// An equal node found in the table replaces the object's own. A node not in
// the table is admitted on its second sighting (a small lossy filter of
// recent hashes), and only once every node inside it is canonical, so that
// nodes unique to one object (a Pod's volume list holding its token volume's
// random name) cost nothing but the walk. Admission copies the node into a
// fresh, exact-size allocation, which the table holds through a weak pointer
// and drops, by a cleanup, once no cached object uses it. Strings are
// interned (package unique) once seen in a second object.
//
// Unstructured objects (maps of interfaces) are walked but not shared.

// sharer canonicalises objects into one table. Safe for concurrent use.
type sharer struct {
	seed   maphash.Seed
	filter []atomic.Uint64 // lossy "seen once" set of hashes, 2-way (see seen)
	shift  uint            // 64 - log2(len(filter))
	mask   uint64          // applied to node hashes; tests narrow it to force collisions

	mu      sync.Mutex
	entries map[uint64]*entry // by content hash; chained on collision
	count   int

	remove func(*entry)  // t.removeEntry, bound once
	serial atomic.Uint64 // numbers the objects shared
}

// entry is one canonical node.
type entry struct {
	wp   weak.Pointer[byte] // the pointer target, array, or map header
	pl   *plan              // the pointer, slice or map type
	n    int                // slice length
	h    uint64
	next *entry
}

const filterBits = 14 // 16 Ki hashes, 128 KiB per Factory

func newSharer() *sharer {
	s := &sharer{
		seed:    maphash.MakeSeed(),
		filter:  make([]atomic.Uint64, 1<<filterBits),
		shift:   64 - filterBits,
		mask:    ^uint64(0),
		entries: map[uint64]*entry{},
	}
	s.remove = s.removeEntry
	return s
}

// share canonicalises obj, a pointer to an API struct, in place: the
// sub-objects it holds may afterwards be shared with other objects. obj
// itself stays the caller's. Other values are left alone.
func (s *sharer) share(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem().Kind() != reflect.Struct {
		return
	}
	pl := planFor(v.Type().Elem())
	p := v.UnsafePointer()
	w := &walk{sharer: s, obj: s.serial.Add(1)}
	w.visit(pl, p)
	w.internInline(pl, p)
	runtime.KeepAlive(obj)
}

// walk is one share call: the sharer and a serial number of the object.
type walk struct {
	*sharer
	obj uint64
}

// len reports the number of canonical nodes in the table, live or awaiting
// their cleanup.
func (s *sharer) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// seen reports whether h was recorded before, and records it. The filter
// is 2-way: a slot pair holds the latest hash and the one before, so two
// hashes that share a pair and alternate (two nodes of every object of a
// kind) are both remembered.
func (s *sharer) seen(h uint64) bool {
	h &= s.mask
	i := (h >> s.shift) &^ 1
	recent, older := &s.filter[i], &s.filter[i+1]
	r := recent.Load()
	if r == h || older.Load() == h {
		return true
	}
	older.Store(r)
	recent.Store(h)
	return false
}

func (s *sharer) lookup(h uint64, pl *plan, n int, cand unsafe.Pointer) unsafe.Pointer {
	h &= s.mask
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.entries[h]; e != nil; e = e.next {
		if e.pl != pl || e.n != n {
			continue
		}
		c := unsafe.Pointer(e.wp.Value())
		if c != nil && s.nodeEqual(pl, n, c, cand) {
			return c
		}
	}
	return nil
}

func (s *sharer) register(h uint64, pl *plan, n int, c unsafe.Pointer) {
	h &= s.mask
	e := &entry{wp: weak.Make((*byte)(c)), pl: pl, n: n, h: h}
	s.mu.Lock()
	e.next = s.entries[h]
	s.entries[h] = e
	s.count++
	s.mu.Unlock()
	runtime.AddCleanup((*byte)(c), s.remove, e)
}

func (s *sharer) removeEntry(e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	link := s.entries[e.h]
	if link == e {
		if e.next == nil {
			delete(s.entries, e.h)
		} else {
			s.entries[e.h] = e.next
		}
		s.count--
		return
	}
	for prev := link; prev != nil; prev = prev.next {
		if prev.next == e {
			prev.next = e.next
			s.count--
			return
		}
	}
}

// Hashing. Collisions cost only a failed comparison.

const (
	tagNil   = 0x6e696c
	tagEmpty = 0x656d707479
	tagIface = 0x6966616365
)

func mix(h, x uint64) uint64 {
	h ^= x
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	return h ^ h>>29
}

func (s *sharer) hashString(str string) uint64 { return maphash.String(s.seed, str) }

func (s *sharer) hashRaw(p unsafe.Pointer, size uintptr) uint64 {
	switch size {
	case 0:
		return 0
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	case 8:
		return *(*uint64)(p)
	}
	return maphash.Bytes(s.seed, unsafe.Slice((*byte)(p), size))
}

func rawEqual(a, b unsafe.Pointer, size uintptr) bool {
	return unsafe.String((*byte)(a), size) == unsafe.String((*byte)(b), size)
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// state is what visit learnt about a value, worst first.
type state uint8

const (
	// opaque: the value cannot be compared (a non-nil interface, for
	// example); it and every node containing it are never shared, though
	// nodes inside it still are.
	opaque state = iota
	// loose: comparable, but some node inside is not canonical (seen for the
	// first time), so no canonical node can equal it yet.
	loose
	// fixed: every node inside is canonical (or nil or empty).
	fixed
)

// visit makes the nodes inside the value at p (of plan pl) canonical, in
// place, and returns the value's content hash and state. The hash depends on
// content only, not on which nodes are canonical.
func (s *walk) visit(pl *plan, p unsafe.Pointer) (h uint64, st state) {
	switch pl.kind {
	case kindRaw:
		return s.hashRaw(p, pl.size), fixed
	case kindString:
		return s.hashString(*(*string)(p)), fixed
	case kindStruct:
		h, st = pl.seed, fixed
		for i := range pl.fields {
			f := &pl.fields[i]
			fh, fst := s.visit(f.pl, unsafe.Add(p, f.off))
			h = mix(h, fh)
			st = min(st, fst)
		}
		return h, st
	case kindArray:
		h, st = pl.seed, fixed
		for i := range pl.n {
			eh, est := s.visit(pl.elem, unsafe.Add(p, uintptr(i)*pl.elem.size))
			h = mix(h, eh)
			st = min(st, est)
		}
		return h, st
	case kindPointer:
		return s.pointerNode(pl, p)
	case kindSlice:
		return s.sliceNode(pl, p)
	case kindMap:
		return s.mapNode(pl, p)
	case kindIface:
		if *(*[2]unsafe.Pointer)(p) == [2]unsafe.Pointer{} {
			return tagIface, fixed
		}
		return 0, opaque
	}
	return 0, opaque // chan, func, unsafe.Pointer: never in API types
}

// equal compares two values of plan pl whose nodes are canonical: scalars
// and strings by content, nodes by identity. It may answer false for equal
// content (then nothing is shared), never true for different content.
func (s *sharer) equal(pl *plan, a, b unsafe.Pointer) bool {
	switch pl.kind {
	case kindRaw:
		return rawEqual(a, b, pl.size)
	case kindString:
		return *(*string)(a) == *(*string)(b)
	case kindStruct:
		for i := range pl.fields {
			f := &pl.fields[i]
			if !s.equal(f.pl, unsafe.Add(a, f.off), unsafe.Add(b, f.off)) {
				return false
			}
		}
		return true
	case kindArray:
		for i := range pl.n {
			off := uintptr(i) * pl.elem.size
			if !s.equal(pl.elem, unsafe.Add(a, off), unsafe.Add(b, off)) {
				return false
			}
		}
		return true
	case kindPointer, kindMap:
		return *(*unsafe.Pointer)(a) == *(*unsafe.Pointer)(b)
	case kindSlice:
		x, y := (*sliceHeader)(a), (*sliceHeader)(b)
		if x.len != y.len || (x.data == nil) != (y.data == nil) {
			return false
		}
		return x.len == 0 || x.data == y.data
	case kindIface:
		return *(*[2]unsafe.Pointer)(a) == [2]unsafe.Pointer{} && *(*[2]unsafe.Pointer)(b) == [2]unsafe.Pointer{}
	}
	return false
}

// nodeEqual compares a canonical node c with a candidate of the node type pl.
func (s *sharer) nodeEqual(pl *plan, n int, c, cand unsafe.Pointer) bool {
	switch pl.kind {
	case kindPointer:
		return s.equal(pl.elem, c, cand)
	case kindSlice:
		if pl.elem.kind == kindRaw {
			return rawEqual(c, cand, uintptr(n)*pl.elem.size)
		}
		for i := range n {
			off := uintptr(i) * pl.elem.size
			if !s.equal(pl.elem, unsafe.Add(c, off), unsafe.Add(cand, off)) {
				return false
			}
		}
		return true
	case kindMap:
		return s.mapEqual(pl, c, cand)
	}
	return false
}

// internInline interns, on their second sighting, the strings held inline in
// the value at p (not those inside its nodes, which have their own turn).
func (s *walk) internInline(pl *plan, p unsafe.Pointer) {
	if !pl.inlineStrings {
		return
	}
	switch pl.kind {
	case kindString:
		sp := (*string)(p)
		if len(*sp) == 0 {
			return
		}
		if u := s.intern(*sp); unsafe.StringData(u) != unsafe.StringData(*sp) {
			*sp = u
		}
	case kindStruct:
		for i := range pl.fields {
			f := &pl.fields[i]
			s.internInline(f.pl, unsafe.Add(p, f.off))
		}
	case kindArray:
		for i := range pl.n {
			s.internInline(pl.elem, unsafe.Add(p, uintptr(i)*pl.elem.size))
		}
	}
}

// intern returns the interned copy of str if str was seen before in
// another object. (A string repeated within one object only, such as the
// name of a Pod's token volume in the volume and its mount, would cost more
// in the interning table than it saves.)
func (s *walk) intern(str string) string {
	const objBits = 0xff
	h := (s.hashString(str) ^ 0x737472) & s.mask
	i := (h >> s.shift) &^ 1
	recent, older := &s.filter[i], &s.filter[i+1]
	mine := h&^objBits | s.obj&objBits
	for _, slot := range []*atomic.Uint64{recent, older} {
		if old := slot.Load(); old&^objBits == h&^objBits {
			if old == mine {
				return str // seen, but only in this object
			}
			return unique.Make(str).Value()
		}
	}
	older.Store(recent.Load())
	recent.Store(mine)
	return str
}

// cacheQuantities caches the string form of every resource.Quantity held
// inline in the value at p. Quantity.String caches it on first use, a write;
// done before the value is shared, readers calling String only read.
func cacheQuantities(pl *plan, p unsafe.Pointer) {
	if !pl.inlineQuantity {
		return
	}
	if pl.quantity {
		_ = (*resource.Quantity)(p).String()
		return
	}
	switch pl.kind {
	case kindStruct:
		for i := range pl.fields {
			f := &pl.fields[i]
			cacheQuantities(f.pl, unsafe.Add(p, f.off))
		}
	case kindArray:
		for i := range pl.n {
			cacheQuantities(pl.elem, unsafe.Add(p, uintptr(i)*pl.elem.size))
		}
	}
}

// A node is looked up only when every node inside it is canonical (fixed),
// and admitted only then: a canonical node holds only canonical nodes, so
// equality by identity finds it again.

func (s *walk) pointerNode(pl *plan, fp unsafe.Pointer) (uint64, state) {
	p := *(*unsafe.Pointer)(fp)
	if p == nil {
		return tagNil, fixed
	}
	ep := pl.elem
	h, st := s.visit(ep, p)
	if st == opaque {
		return 0, opaque
	}
	h = mix(h, pl.seed)
	if ep.size == 0 {
		return h, fixed
	}
	if st == fixed {
		if c := s.lookup(h, pl, 0, p); c != nil {
			if c != p {
				*(*unsafe.Pointer)(fp) = c
			}
			return h, fixed
		}
	}
	s.internInline(ep, p)
	if !s.seen(h) || st != fixed {
		return h, loose
	}
	c := allocNode(ep.typ, ep.size, 1)
	reflect.NewAt(ep.typ, c).Elem().Set(reflect.NewAt(ep.typ, p).Elem())
	cacheQuantities(ep, c)
	s.register(h, pl, 0, c)
	*(*unsafe.Pointer)(fp) = c
	return h, fixed
}

func (s *walk) sliceNode(pl *plan, fp unsafe.Pointer) (uint64, state) {
	hdr := (*sliceHeader)(fp)
	if hdr.data == nil {
		return tagNil, fixed
	}
	if hdr.len == 0 {
		return tagEmpty, fixed
	}
	ep, n := pl.elem, hdr.len
	h, st := mix(pl.seed, uint64(n)), fixed
	if ep.kind == kindRaw {
		h = mix(h, maphash.Bytes(s.seed, unsafe.Slice((*byte)(hdr.data), uintptr(n)*ep.size)))
	} else {
		for i := range n {
			eh, est := s.visit(ep, unsafe.Add(hdr.data, uintptr(i)*ep.size))
			h = mix(h, eh)
			st = min(st, est)
		}
	}
	if st == opaque {
		return 0, opaque
	}
	if ep.size == 0 {
		return h, fixed
	}
	if st == fixed {
		if c := s.lookup(h, pl, n, hdr.data); c != nil {
			if c != hdr.data || hdr.cap != n {
				*hdr = sliceHeader{data: c, len: n, cap: n}
			}
			return h, fixed
		}
	}
	for i := range n {
		s.internInline(ep, unsafe.Add(hdr.data, uintptr(i)*ep.size))
	}
	if !s.seen(h) || st != fixed {
		return h, loose
	}
	c := allocNode(ep.typ, ep.size, n)
	dst := reflect.SliceAt(ep.typ, c, n)
	reflect.Copy(dst, reflect.NewAt(pl.typ, fp).Elem())
	for i := range n {
		cacheQuantities(ep, unsafe.Add(c, uintptr(i)*ep.size))
	}
	s.register(h, pl, n, c)
	*hdr = sliceHeader{data: c, len: n, cap: n}
	return h, fixed
}

// allocNode allocates room for n values of t. Small pointer-free nodes are
// rounded up past the tiny allocator, which batches them into shared blocks
// that would keep dead entries in the table.
func allocNode(t reflect.Type, size uintptr, n int) unsafe.Pointer {
	total := size * uintptr(n)
	if total < 16 && pointerFree(t) {
		return unsafe.Pointer(new([2]uint64))
	}
	if n == 1 {
		return reflect.New(t).UnsafePointer()
	}
	return reflect.MakeSlice(reflect.SliceOf(t), n, n).UnsafePointer()
}

func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// Maps. map[~string]~string (labels, annotations, selectors) and
// map[~string]resource.Quantity (resource lists) have fast paths; other maps
// whose values hold no nodes go through reflection; the rest are not shared.

// Map values hold no nodes (see shapeOf), so a map is always fixed once
// hashed.
func (s *walk) mapNode(pl *plan, fp unsafe.Pointer) (uint64, state) {
	m := *(*unsafe.Pointer)(fp)
	if m == nil {
		return tagNil, fixed
	}
	var h uint64
	n := reflect.NewAt(pl.typ, fp).Elem().Len()
	if n == 0 {
		return tagEmpty, fixed
	}
	switch pl.mapShape {
	case mapStrings:
		for k, v := range *(*map[string]string)(fp) {
			h += mix(s.hashString(k), s.hashString(v))
		}
	case mapQuantities:
		for k, q := range *(*map[string]resource.Quantity)(fp) {
			h += mix(s.hashString(k), s.hashQuantity(&q))
		}
	case mapGeneric:
		mv := reflect.NewAt(pl.typ, fp).Elem()
		kt, vt := reflect.New(pl.key.typ).Elem(), reflect.New(pl.elem.typ).Elem()
		it := mv.MapRange()
		for it.Next() {
			kt.SetIterKey(it)
			vt.SetIterValue(it)
			kh, _ := s.visit(pl.key, kt.Addr().UnsafePointer())
			vh, _ := s.visit(pl.elem, vt.Addr().UnsafePointer())
			h += mix(kh, vh)
		}
	default:
		return 0, opaque
	}
	h = mix(mix(pl.seed, uint64(n)), h)
	if c := s.lookup(h, pl, 0, m); c != nil {
		if c != m {
			*(*unsafe.Pointer)(fp) = c
		}
		return h, fixed
	}
	if !s.seen(h) {
		return h, loose
	}
	c := s.copyMap(pl, fp, n)
	s.register(h, pl, 0, c)
	*(*unsafe.Pointer)(fp) = c
	return h, fixed
}

// copyMap returns the map header of a fresh copy of the map at fp, its
// strings interned and its quantities' strings cached.
func (s *walk) copyMap(pl *plan, fp unsafe.Pointer, n int) unsafe.Pointer {
	out := reflect.MakeMapWithSize(pl.typ, n)
	c := out.UnsafePointer()
	switch pl.mapShape {
	case mapStrings:
		dst := *(*map[string]string)(unsafe.Pointer(&c))
		for k, v := range *(*map[string]string)(fp) {
			dst[unique.Make(k).Value()] = s.intern(v)
		}
	case mapQuantities:
		dst := *(*map[string]resource.Quantity)(unsafe.Pointer(&c))
		for k, q := range *(*map[string]resource.Quantity)(fp) {
			_ = q.String()
			dst[unique.Make(k).Value()] = q
		}
	default:
		mv := reflect.NewAt(pl.typ, fp).Elem()
		it := mv.MapRange()
		for it.Next() {
			kt, vt := reflect.New(pl.key.typ).Elem(), reflect.New(pl.elem.typ).Elem()
			kt.SetIterKey(it)
			vt.SetIterValue(it)
			s.internInline(pl.key, kt.Addr().UnsafePointer())
			s.internInline(pl.elem, vt.Addr().UnsafePointer())
			cacheQuantities(pl.elem, vt.Addr().UnsafePointer())
			out.SetMapIndex(kt, vt)
		}
	}
	return c
}

func (s *sharer) mapEqual(pl *plan, c, cand unsafe.Pointer) bool {
	switch pl.mapShape {
	case mapStrings:
		a, b := *(*map[string]string)(unsafe.Pointer(&c)), *(*map[string]string)(unsafe.Pointer(&cand))
		if len(a) != len(b) {
			return false
		}
		for k, v := range b {
			if w, ok := a[k]; !ok || w != v {
				return false
			}
		}
		return true
	case mapQuantities:
		a, b := *(*map[string]resource.Quantity)(unsafe.Pointer(&c)), *(*map[string]resource.Quantity)(unsafe.Pointer(&cand))
		if len(a) != len(b) {
			return false
		}
		for k, v := range b {
			w, ok := a[k]
			if !ok || !quantityEqual(&w, &v) {
				return false
			}
		}
		return true
	case mapGeneric:
		a, b := reflect.NewAt(pl.typ, unsafe.Pointer(&c)).Elem(), reflect.NewAt(pl.typ, unsafe.Pointer(&cand)).Elem()
		if a.Len() != b.Len() {
			return false
		}
		kt, vb, va := reflect.New(pl.key.typ).Elem(), reflect.New(pl.elem.typ).Elem(), reflect.New(pl.elem.typ).Elem()
		it := b.MapRange()
		for it.Next() {
			kt.SetIterKey(it)
			vb.SetIterValue(it)
			w := a.MapIndex(kt)
			if !w.IsValid() {
				return false
			}
			va.Set(w)
			if !s.equal(pl.elem, va.Addr().UnsafePointer(), vb.Addr().UnsafePointer()) {
				return false
			}
		}
		return true
	}
	return false
}

// resource.Quantity: its value is the integer amount i, the decimal d and the
// Format; s only caches the string form computed from them.
var quantityLayout = func() (l struct{ i, iSize, d, format uintptr }) {
	t := reflect.TypeFor[resource.Quantity]()
	fi, _ := t.FieldByName("i")
	fd, _ := t.FieldByName("d")
	ff, _ := t.FieldByName("Format")
	l.i, l.iSize, l.d, l.format = fi.Offset, fi.Type.Size(), fd.Offset, ff.Offset
	// int64Amount is {value int64; scale int32}: hash and compare the 12
	// bytes that are not padding.
	if fi.Type.Kind() == reflect.Struct && fi.Type.NumField() == 2 {
		last := fi.Type.Field(1)
		l.iSize = last.Offset + last.Type.Size()
	}
	return l
}()

func (s *sharer) hashQuantity(q *resource.Quantity) uint64 {
	p := unsafe.Pointer(q)
	h := maphash.Bytes(s.seed, unsafe.Slice((*byte)(unsafe.Add(p, quantityLayout.i)), quantityLayout.iSize))
	h = mix(h, uint64(uintptr(*(*unsafe.Pointer)(unsafe.Add(p, quantityLayout.d)))))
	return mix(h, s.hashString(string(q.Format)))
}

func quantityEqual(a, b *resource.Quantity) bool {
	pa, pb := unsafe.Pointer(a), unsafe.Pointer(b)
	return rawEqual(unsafe.Add(pa, quantityLayout.i), unsafe.Add(pb, quantityLayout.i), quantityLayout.iSize) &&
		*(*unsafe.Pointer)(unsafe.Add(pa, quantityLayout.d)) == *(*unsafe.Pointer)(unsafe.Add(pb, quantityLayout.d)) &&
		a.Format == b.Format
}

// Plans: how to walk a type, computed once per type.

type kind uint8

const (
	kindRaw     kind = iota // compared and hashed as memory: scalars, pointer-free structs, opaque structs
	kindString              // by content
	kindStruct              // field by field
	kindArray               // element by element
	kindPointer             // a node: the pointer target
	kindSlice               // a node: the backing array
	kindMap                 // a node: the map
	kindIface               // shareable only when nil
	kindOther
)

type mapShape uint8

const (
	mapUnshared mapShape = iota
	mapStrings
	mapQuantities
	mapGeneric
)

type plan struct {
	typ      reflect.Type
	kind     kind
	size     uintptr
	seed     uint64
	fields   []planField // struct
	elem     *plan       // pointer, slice, array, map value
	key      *plan       // map key
	n        int         // array length
	mapShape mapShape

	quantity       bool // the plan is resource.Quantity's
	inlineStrings  bool // strings held inline (not behind a node)
	inlineQuantity bool // quantities held inline
	nodes          bool // holds nodes or interfaces inline
}

type planField struct {
	off uintptr
	pl  *plan
}

var (
	plansMu sync.Mutex
	plans   sync.Map // reflect.Type → *plan
	planSeq atomic.Uint64
)

func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	building := map[reflect.Type]*plan{}
	p := buildPlan(t, building)
	// Complete every new plan before publishing any: a reader that finds a
	// published plan (without plansMu) walks the plans it refers to.
	for _, bp := range building {
		if bp.kind == kindMap {
			bp.mapShape = shapeOf(bp)
		}
	}
	for bt, bp := range building {
		plans.LoadOrStore(bt, bp)
	}
	if stored, ok := plans.Load(t); ok {
		return stored.(*plan)
	}
	return p
}

var quantityType = reflect.TypeFor[resource.Quantity]()

func buildPlan(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := building[t]; ok {
		return p // recursive type: the plan is being filled in
	}
	p := &plan{typ: t, size: t.Size(), seed: mix(planSeq.Add(1), 0x706c616e)}
	building[t] = p
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		p.kind = kindRaw
	case reflect.String:
		p.kind, p.inlineStrings = kindString, true
	case reflect.Pointer:
		p.kind, p.nodes = kindPointer, true
		p.elem = buildPlan(t.Elem(), building)
	case reflect.Slice:
		p.kind, p.nodes = kindSlice, true
		p.elem = buildPlan(t.Elem(), building)
	case reflect.Map:
		p.kind, p.nodes = kindMap, true
		p.key = buildPlan(t.Key(), building)
		p.elem = buildPlan(t.Elem(), building)
		// mapShape is set by planFor once every plan is complete.
	case reflect.Interface:
		p.kind, p.nodes = kindIface, true
	case reflect.Array:
		p.elem = buildPlan(t.Elem(), building)
		p.n = t.Len()
		p.kind = kindArray
		p.inlineStrings, p.inlineQuantity, p.nodes = p.elem.inlineStrings, p.elem.inlineQuantity, p.elem.nodes
		if p.elem.kind == kindRaw {
			p.kind = kindRaw
		} else if p.elem.kind == kindOther {
			p.kind = kindOther
		}
	case reflect.Struct:
		buildStructPlan(p, building)
	default:
		p.kind = kindOther
	}
	return p
}

func buildStructPlan(p *plan, building map[reflect.Type]*plan) {
	t := p.typ
	if t == quantityType {
		// Value in i, d and Format; s is a cache (see hashQuantity).
		f, _ := t.FieldByName("Format")
		p.kind, p.quantity, p.inlineQuantity = kindStruct, true, true
		p.fields = []planField{
			{off: quantityLayout.i, pl: rawPlan(quantityLayout.iSize)},
			{off: quantityLayout.d, pl: rawPlan(unsafe.Sizeof(unsafe.Pointer(nil)))},
			{off: f.Offset, pl: buildPlan(f.Type, building)},
		}
		return
	}
	opaque, pure := false, true
	var fields []planField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			opaque = true
			break
		}
		fp := buildPlan(f.Type, building)
		if fp.kind == kindOther {
			opaque = true
			break
		}
		if fp.kind != kindRaw {
			pure = false
		}
		fields = append(fields, planField{off: f.Offset, pl: fp})
	}
	if opaque || pure {
		// Unexported state (time.Time, for one) or plain scalars: memory
		// equality, pointers compared by identity, is exact.
		p.kind = kindRaw
		return
	}
	p.kind, p.fields = kindStruct, fields
	for _, f := range fields {
		p.inlineStrings = p.inlineStrings || f.pl.inlineStrings
		p.inlineQuantity = p.inlineQuantity || f.pl.inlineQuantity
		p.nodes = p.nodes || f.pl.nodes
	}
}

func shapeOf(p *plan) mapShape {
	k, v := p.typ.Key(), p.typ.Elem()
	switch {
	case k.Kind() == reflect.String && v.Kind() == reflect.String:
		return mapStrings
	case k.Kind() == reflect.String && v == quantityType:
		return mapQuantities
	case (p.key.kind == kindRaw || p.key.kind == kindString) && !p.elem.nodes && p.elem.kind != kindOther && v.Comparable():
		return mapGeneric
	}
	return mapUnshared
}

func rawPlan(size uintptr) *plan {
	return &plan{kind: kindRaw, size: size}
}
