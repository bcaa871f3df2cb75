package hashcons

import (
	"hash/maphash"
	"reflect"
	"sync/atomic"
	"unique"
	"unsafe"
)

// walk is one Share call: the table, a serial number of the object, the
// account charged the canonical nodes it brings, and the object's sizes so
// far (see Sizes).
type walk struct {
	*Table
	obj       uint64
	acct      *Account
	own, full uintptr
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

func (t *Table) hashString(str string) uint64 { return maphash.String(t.seed, str) }

func (t *Table) hashRaw(p unsafe.Pointer, size uintptr) uint64 {
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
	return maphash.Bytes(t.seed, unsafe.Slice((*byte)(p), size))
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
func (w *walk) visit(pl *plan, p unsafe.Pointer) (h uint64, st state) {
	switch pl.kind {
	case kindRaw:
		return w.hashRaw(p, pl.size), fixed
	case kindString:
		str := *(*string)(p)
		w.full += stringSize(len(str))
		return w.hashString(str), fixed
	case kindStruct:
		h, st = pl.seed, fixed
		full := w.full
		for i := range pl.fields {
			f := &pl.fields[i]
			fh, fst := w.visit(f.pl, unsafe.Add(p, f.off))
			h = mix(h, fh)
			st = min(st, fst)
		}
		if pl.quantity {
			// Its Format is a constant; its cached string form is its own.
			w.full = full + quantityStringSize(p)
		}
		return h, st
	case kindArray:
		h, st = pl.seed, fixed
		for i := range pl.n {
			eh, est := w.visit(pl.elem, unsafe.Add(p, uintptr(i)*pl.elem.size))
			h = mix(h, eh)
			st = min(st, est)
		}
		return h, st
	case kindPointer:
		return w.pointerNode(pl, p)
	case kindSlice:
		return w.sliceNode(pl, p)
	case kindMap:
		return w.mapNode(pl, p)
	case kindIface:
		if *(*[2]unsafe.Pointer)(p) == [2]unsafe.Pointer{} {
			return tagIface, fixed
		}
	}
	// A non-nil interface, kindOpaque; chan, func, unsafe.Pointer: never in
	// API types. Never shared: the object's own.
	sz := sizeOf(pl, p)
	w.own += sz
	w.full += sz
	return 0, opaque
}

// equal compares two values of plan pl whose nodes are canonical: scalars
// and strings by content, nodes by identity. It may answer false for equal
// content (then nothing is shared), never true for different content.
func (t *Table) equal(pl *plan, a, b unsafe.Pointer) bool {
	switch pl.kind {
	case kindRaw:
		return rawEqual(a, b, pl.size)
	case kindString:
		return *(*string)(a) == *(*string)(b)
	case kindStruct:
		for i := range pl.fields {
			f := &pl.fields[i]
			if !t.equal(f.pl, unsafe.Add(a, f.off), unsafe.Add(b, f.off)) {
				return false
			}
		}
		return true
	case kindArray:
		for i := range pl.n {
			off := uintptr(i) * pl.elem.size
			if !t.equal(pl.elem, unsafe.Add(a, off), unsafe.Add(b, off)) {
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
func (t *Table) nodeEqual(pl *plan, n int, c, cand unsafe.Pointer) bool {
	switch pl.kind {
	case kindPointer:
		return t.equal(pl.elem, c, cand)
	case kindSlice:
		if pl.elem.kind == kindRaw {
			return rawEqual(c, cand, uintptr(n)*pl.elem.size)
		}
		for i := range n {
			off := uintptr(i) * pl.elem.size
			if !t.equal(pl.elem, unsafe.Add(c, off), unsafe.Add(cand, off)) {
				return false
			}
		}
		return true
	case kindMap:
		return t.mapEqual(pl, c, cand)
	}
	return false
}

// internInline interns, on their second sighting, the strings held inline in
// the value at p (not those inside its nodes, which have their own turn),
// and returns the bytes of those it did not intern: the value's own.
func (w *walk) internInline(pl *plan, p unsafe.Pointer) uintptr {
	if !pl.inlineStrings {
		return 0
	}
	var own uintptr
	switch pl.kind {
	case kindString:
		sp := (*string)(p)
		if len(*sp) == 0 {
			return 0
		}
		if u, interned := w.intern(*sp); interned {
			if unsafe.StringData(u) != unsafe.StringData(*sp) {
				*sp = u
			}
		} else {
			own += stringSize(len(*sp))
		}
	case kindStruct:
		for i := range pl.fields {
			f := &pl.fields[i]
			own += w.internInline(f.pl, unsafe.Add(p, f.off))
		}
		if pl.quantity {
			// Its Format is a constant; its cached string form is its own.
			own = quantityStringSize(p)
		}
	case kindArray:
		for i := range pl.n {
			own += w.internInline(pl.elem, unsafe.Add(p, uintptr(i)*pl.elem.size))
		}
	}
	return own
}

// intern returns the interned copy of str, and true, if str was seen before
// in another object. (A string repeated within one object only, such as the
// name of a Pod's token volume in the volume and its mount, would cost more
// in the interning table than it saves.)
func (w *walk) intern(str string) (string, bool) {
	const objBits = 0xff
	h := (w.hashString(str) ^ 0x737472) & w.mask
	i := (h >> w.shift) &^ 1
	recent, older := &w.filter[i], &w.filter[i+1]
	mine := h&^objBits | w.obj&objBits
	for _, slot := range []*atomic.Uint64{recent, older} {
		if old := slot.Load(); old&^objBits == h&^objBits {
			if old == mine {
				return str, false // seen, but only in this object
			}
			return unique.Make(str).Value(), true
		}
	}
	older.Store(recent.Load())
	recent.Store(mine)
	return str, false
}

// A node is looked up only when every node inside it is canonical (fixed),
// and admitted only then: a canonical node holds only canonical nodes, so
// equality by identity finds it again.

func (w *walk) pointerNode(pl *plan, fp unsafe.Pointer) (uint64, state) {
	p := *(*unsafe.Pointer)(fp)
	if p == nil {
		return tagNil, fixed
	}
	ep := pl.elem
	h, st := w.visit(ep, p)
	if st == opaque {
		// Never shared: the node and its strings stay the object's own.
		sz := allocSize(ep.size, ep.scan)
		w.own += sz + inlineStringBytes(ep, p)
		w.full += sz
		return 0, opaque
	}
	h = mix(h, pl.seed)
	if ep.size == 0 {
		return h, fixed
	}
	sz := allocSize(ep.size, ep.scan)
	w.full += sz
	if st == fixed {
		if c := w.lookup(h, pl, 0, p); c != nil {
			if c != p {
				*(*unsafe.Pointer)(fp) = c
			}
			return h, fixed
		}
	}
	strs := w.internInline(ep, p)
	if !w.seen(h) || st != fixed {
		w.own += sz + strs
		return h, loose
	}
	c := allocNode(ep.typ, ep.size, 1)
	reflect.NewAt(ep.typ, c).Elem().Set(reflect.NewAt(ep.typ, p).Elem())
	cacheQuantities(ep, c)
	w.register(h, pl, 0, c, nodeSize(ep.typ, ep.size, 1, ep.scan)+strs+quantityStrings(ep, c))
	*(*unsafe.Pointer)(fp) = c
	return h, fixed
}

func (w *walk) sliceNode(pl *plan, fp unsafe.Pointer) (uint64, state) {
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
		h = mix(h, maphash.Bytes(w.seed, unsafe.Slice((*byte)(hdr.data), uintptr(n)*ep.size)))
	} else {
		for i := range n {
			eh, est := w.visit(ep, unsafe.Add(hdr.data, uintptr(i)*ep.size))
			h = mix(h, eh)
			st = min(st, est)
		}
	}
	if st == opaque {
		// Never shared: the array and its strings stay the object's own.
		sz := allocSize(uintptr(hdr.cap)*ep.size, ep.scan)
		w.own += sz
		w.full += sz
		for i := range n {
			w.own += inlineStringBytes(ep, unsafe.Add(hdr.data, uintptr(i)*ep.size))
		}
		return 0, opaque
	}
	if ep.size == 0 {
		return h, fixed
	}
	sz := allocSize(uintptr(hdr.cap)*ep.size, ep.scan)
	w.full += sz
	if st == fixed {
		if c := w.lookup(h, pl, n, hdr.data); c != nil {
			if c != hdr.data || hdr.cap != n {
				*hdr = sliceHeader{data: c, len: n, cap: n}
			}
			return h, fixed
		}
	}
	var strs uintptr
	for i := range n {
		strs += w.internInline(ep, unsafe.Add(hdr.data, uintptr(i)*ep.size))
	}
	if !w.seen(h) || st != fixed {
		w.own += sz + strs
		return h, loose
	}
	c := allocNode(ep.typ, ep.size, n)
	dst := reflect.SliceAt(ep.typ, c, n)
	reflect.Copy(dst, reflect.NewAt(pl.typ, fp).Elem())
	var qs uintptr
	for i := range n {
		cacheQuantities(ep, unsafe.Add(c, uintptr(i)*ep.size))
		qs += quantityStrings(ep, unsafe.Add(c, uintptr(i)*ep.size))
	}
	w.register(h, pl, n, c, nodeSize(ep.typ, ep.size, n, ep.scan)+strs+qs)
	*hdr = sliceHeader{data: c, len: n, cap: n}
	return h, fixed
}
