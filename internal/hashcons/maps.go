package hashcons

import (
	"reflect"
	"unique"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Maps. map[~string]~string (labels, annotations, selectors) and
// map[~string]resource.Quantity (resource lists) have fast paths; other maps
// whose values hold no nodes go through reflection; the rest are not shared.

// Map values hold no nodes (see shapeOf), so a map is always fixed once
// hashed.
func (w *walk) mapNode(pl *plan, fp unsafe.Pointer) (uint64, state) {
	m := *(*unsafe.Pointer)(fp)
	if m == nil {
		return tagNil, fixed
	}
	var h uint64
	n := reflect.NewAt(pl.typ, fp).Elem().Len()
	if n == 0 {
		return tagEmpty, fixed
	}
	if pl.mapShape == mapUnshared {
		sz := mapSize(pl, fp)
		w.own += sz
		w.full += sz
		return 0, opaque
	}
	sz := mapSize(pl, fp)
	full := w.full
	switch pl.mapShape {
	case mapStrings:
		for k, v := range *(*map[string]string)(fp) {
			h += mix(w.hashString(k), w.hashString(v))
		}
	case mapQuantities:
		for k, q := range *(*map[string]resource.Quantity)(fp) {
			h += mix(w.hashString(k), w.hashQuantity(&q))
		}
	case mapGeneric:
		mv := reflect.NewAt(pl.typ, fp).Elem()
		kt, vt := reflect.New(pl.key.typ).Elem(), reflect.New(pl.elem.typ).Elem()
		it := mv.MapRange()
		for it.Next() {
			kt.SetIterKey(it)
			vt.SetIterValue(it)
			kh, _ := w.visit(pl.key, kt.Addr().UnsafePointer())
			vh, _ := w.visit(pl.elem, vt.Addr().UnsafePointer())
			h += mix(kh, vh)
		}
	}
	w.full = full + sz // the keys and values visited are counted in sz
	h = mix(mix(pl.seed, uint64(n)), h)
	if c := w.lookup(h, pl, 0, m); c != nil {
		if c != m {
			*(*unsafe.Pointer)(fp) = c
		}
		return h, fixed
	}
	if !w.seen(h) {
		w.own += sz
		return h, loose
	}
	c := w.copyMap(pl, fp, n)
	w.register(h, pl, 0, c, mapSize(pl, unsafe.Pointer(&c)))
	*(*unsafe.Pointer)(fp) = c
	return h, fixed
}

// copyMap returns the map header of a fresh copy of the map at fp, its
// strings interned and its quantities' strings cached.
func (w *walk) copyMap(pl *plan, fp unsafe.Pointer, n int) unsafe.Pointer {
	out := reflect.MakeMapWithSize(pl.typ, n)
	c := out.UnsafePointer()
	switch pl.mapShape {
	case mapStrings:
		dst := *(*map[string]string)(unsafe.Pointer(&c))
		for k, v := range *(*map[string]string)(fp) {
			v, _ = w.intern(v)
			dst[unique.Make(k).Value()] = v
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
			w.internInline(pl.key, kt.Addr().UnsafePointer())
			w.internInline(pl.elem, vt.Addr().UnsafePointer())
			cacheQuantities(pl.elem, vt.Addr().UnsafePointer())
			out.SetMapIndex(kt, vt)
		}
	}
	return c
}

func (t *Table) mapEqual(pl *plan, c, cand unsafe.Pointer) bool {
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
			if !ok || !t.quantityEqual(&w, &v) {
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
			if !t.equal(pl.elem, va.Addr().UnsafePointer(), vb.Addr().UnsafePointer()) {
				return false
			}
		}
		return true
	}
	return false
}
