package hashcons

import (
	"errors"
	"fmt"
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// resource.Quantity's value is its integer amount i (an int64 value and an
// int32 scale), its decimal d (a *inf.Dec, nil unless the amount needed one)
// and its Format; its field s only caches the string form computed from them.
// Quantities are hashed and compared through that layout: the bytes of i
// (without padding), d by identity (so equal decimals held apart are merely
// not shared) and Format. The layout is apimachinery's private business, so
// it is checked by reflection at first use; if it ever changes, quantities
// become opaque (see plan.go) and nothing holding one is shared.

// quantityLayout is where the value of a resource.Quantity lies.
type quantityLayout struct {
	ok    bool    // the layout is the one described above
	i     uintptr // offset of the integer amount
	iSize uintptr // its size without trailing padding
	d     uintptr // offset of the *inf.Dec
}

// quantityLayoutOnce reads the layout of resource.Quantity the first time a
// Table is made, and logs once if it is not the expected one.
var quantityLayoutOnce = sync.OnceValue(func() quantityLayout {
	l, err := readQuantityLayout(reflect.TypeFor[resource.Quantity]())
	if err != nil {
		klog.Background().Info("Sharing of resource.Quantity values turned off: its layout is not the one this package knows; objects are still cached, with less memory saved",
			"err", err)
	}
	return l
})

var errQuantityLayout = errors.New("unexpected resource.Quantity layout")

// readQuantityLayout checks that t is laid out as resource.Quantity is in the
// apimachinery this package was written against: names, kinds, sizes and
// non-overlapping offsets of the fields the unsafe code reads.
func readQuantityLayout(t reflect.Type) (quantityLayout, error) {
	bad := func(format string, args ...any) (quantityLayout, error) {
		return quantityLayout{}, fmt.Errorf("%w: %s: %s", errQuantityLayout, t, fmt.Sprintf(format, args...))
	}
	if t.Kind() != reflect.Struct || t.NumField() != 4 {
		return bad("want a struct of 4 fields (i, d, s, Format)")
	}
	fi, fd, fs, ff := t.Field(0), t.Field(1), t.Field(2), t.Field(3)
	if fi.Name != "i" || fd.Name != "d" || fs.Name != "s" || ff.Name != "Format" {
		return bad("fields are %s, %s, %s, %s; want i, d, s, Format", fi.Name, fd.Name, fs.Name, ff.Name)
	}
	it := fi.Type
	if it.Kind() != reflect.Struct || it.NumField() != 2 ||
		it.Field(0).Name != "value" || it.Field(0).Type.Kind() != reflect.Int64 || it.Field(0).Offset != 0 ||
		it.Field(1).Name != "scale" || it.Field(1).Type.Kind() != reflect.Int32 || it.Field(1).Offset != 8 {
		return bad("field i is %s; want struct{value int64; scale int32}", it)
	}
	dt := fd.Type
	ptr := unsafe.Sizeof(unsafe.Pointer(nil))
	if dt.Kind() != reflect.Struct || dt.NumField() != 1 || !dt.Field(0).Anonymous ||
		dt.Field(0).Type.Kind() != reflect.Pointer || dt.Size() != ptr {
		return bad("field d is %s; want struct{*inf.Dec}", dt)
	}
	if fs.Type.Kind() != reflect.String || ff.Type.Kind() != reflect.String {
		return bad("fields s and Format are %s and %s; want strings", fs.Type, ff.Type)
	}
	prevEnd := uintptr(0)
	for _, f := range []reflect.StructField{fi, fd, fs, ff} {
		if f.Offset < prevEnd {
			return bad("field %s at offset %d overlaps the field before it", f.Name, f.Offset)
		}
		prevEnd = f.Offset + f.Type.Size()
	}
	if prevEnd > t.Size() {
		return bad("fields end at %d, past the struct's size %d", prevEnd, t.Size())
	}
	last := it.Field(1)
	return quantityLayout{ok: true, i: fi.Offset, iSize: last.Offset + last.Type.Size(), d: fd.Offset}, nil
}

func (t *Table) hashQuantity(q *resource.Quantity) uint64 {
	l := &t.plans.layout
	p := unsafe.Pointer(q)
	h := maphash.Bytes(t.seed, unsafe.Slice((*byte)(unsafe.Add(p, l.i)), l.iSize))
	h = mix(h, uint64(uintptr(*(*unsafe.Pointer)(unsafe.Add(p, l.d)))))
	return mix(h, t.hashString(string(q.Format)))
}

func (t *Table) quantityEqual(a, b *resource.Quantity) bool {
	l := &t.plans.layout
	pa, pb := unsafe.Pointer(a), unsafe.Pointer(b)
	return rawEqual(unsafe.Add(pa, l.i), unsafe.Add(pb, l.i), l.iSize) &&
		*(*unsafe.Pointer)(unsafe.Add(pa, l.d)) == *(*unsafe.Pointer)(unsafe.Add(pb, l.d)) &&
		a.Format == b.Format
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

// quantityStrings returns the bytes of the cached string forms of the
// resource.Quantity values held inline in the value at p.
func quantityStrings(pl *plan, p unsafe.Pointer) uintptr {
	if !pl.inlineQuantity {
		return 0
	}
	if pl.quantity {
		return quantityStringSize(p)
	}
	var n uintptr
	switch pl.kind {
	case kindStruct:
		for i := range pl.fields {
			f := &pl.fields[i]
			n += quantityStrings(f.pl, unsafe.Add(p, f.off))
		}
	case kindArray:
		for i := range pl.n {
			n += quantityStrings(pl.elem, unsafe.Add(p, uintptr(i)*pl.elem.size))
		}
	}
	return n
}
