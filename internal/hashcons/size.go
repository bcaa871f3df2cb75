package hashcons

import (
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Sizes: what an object costs on Go's heap, estimated from its plan. Each
// allocation is rounded up as Go's allocator rounds it (size classes, the
// malloc header of large objects with pointers, the tiny allocator's
// packing of small pointer-free blocks); maps are costed from the layout of
// Go's swiss tables. The estimate is of the bytes an object keeps alive, so
// it never counts an allocation that only the decoder used.

// Sizes is what Share found for one object: Own is what the object alone
// keeps alive (its own struct, the nodes and strings no other object holds),
// Full what it would take with nothing shared.
type Sizes struct {
	Own, Full int64
}

// Account is charged the canonical nodes the objects of one cache brought
// into a Table, for as long as they live: Shared is their bytes. The zero
// value is ready to use.
type Account struct {
	shared atomic.Int64
	nodes  atomic.Int64
}

// Shared returns the bytes of the live canonical nodes charged to a.
func (a *Account) Shared() int64 { return a.shared.Load() }

// Nodes returns how many live canonical nodes are charged to a.
func (a *Account) Nodes() int64 { return a.nodes.Load() }

// Size returns the heap bytes obj (a pointer to a struct, an API object)
// keeps alive, nothing shared: its struct and everything it reaches. Other
// values are sized by reflection.
func Size(obj any) int64 {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem().Kind() != reflect.Struct {
		return valueSize(v)
	}
	pl := plannerFor(quantityLayoutOnce()).planFor(v.Type().Elem())
	return int64(allocSize(pl.size, pl.scan)) + int64(sizeOf(pl, v.UnsafePointer()))
}

// TableBytes returns the bytes of the table's own bookkeeping: its
// admission filter and an entry per canonical node (not the nodes, which the
// accounts are charged).
func (t *Table) TableBytes() int64 {
	const perEntry = 64 + 26 // the entry (size class 64) and its slot in entries
	return t.FixedBytes() + int64(t.len())*perEntry
}

// FixedBytes is the part of TableBytes a table spends from its creation,
// whatever it holds: the admission filter.
func (t *Table) FixedBytes() int64 { return int64(len(t.filter)) * 8 }

// sizeOf returns the bytes reachable from the value at p, of plan pl, outside
// the value itself.
func sizeOf(pl *plan, p unsafe.Pointer) uintptr {
	switch pl.kind {
	case kindString:
		return stringSize(len(*(*string)(p)))
	case kindStruct:
		if pl.quantity {
			return quantityStringSize(p) // its Format is a constant
		}
		var n uintptr
		for i := range pl.sized {
			f := &pl.sized[i]
			n += sizeOf(f.pl, unsafe.Add(p, f.off))
		}
		return n
	case kindArray:
		if !pl.nodes && !pl.inlineStrings {
			return 0
		}
		var n uintptr
		for i := range pl.n {
			n += sizeOf(pl.elem, unsafe.Add(p, uintptr(i)*pl.elem.size))
		}
		return n
	case kindPointer:
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return 0
		}
		return allocSize(pl.elem.size, pl.elem.scan) + sizeOf(pl.elem, q)
	case kindSlice:
		hdr := (*sliceHeader)(p)
		if hdr.data == nil || hdr.cap == 0 {
			return 0
		}
		n := allocSize(uintptr(hdr.cap)*pl.elem.size, pl.elem.scan)
		if pl.elem.nodes || pl.elem.inlineStrings || pl.elem.quantity {
			for i := range hdr.len {
				n += sizeOf(pl.elem, unsafe.Add(hdr.data, uintptr(i)*pl.elem.size))
			}
		}
		return n
	case kindMap:
		return mapSize(pl, p)
	case kindIface, kindOpaque, kindOther:
		return uintptr(valueSize(reflect.NewAt(pl.typ, p).Elem()) - int64(pl.size))
	}
	return 0 // kindRaw
}

// inlineStringBytes is the bytes of the strings held inline in the value at
// p (not inside its nodes), and of its quantities' cached string forms.
func inlineStringBytes(pl *plan, p unsafe.Pointer) uintptr {
	if !pl.inlineStrings {
		return 0
	}
	switch pl.kind {
	case kindString:
		return stringSize(len(*(*string)(p)))
	case kindStruct:
		if pl.quantity {
			return quantityStringSize(p) // its Format is a constant
		}
		var n uintptr
		for i := range pl.fields {
			f := &pl.fields[i]
			n += inlineStringBytes(f.pl, unsafe.Add(p, f.off))
		}
		return n
	case kindArray:
		var n uintptr
		for i := range pl.n {
			n += inlineStringBytes(pl.elem, unsafe.Add(p, uintptr(i)*pl.elem.size))
		}
		return n
	}
	return 0
}

// quantitySOffset is the offset of resource.Quantity's cached string form,
// or -1 when the field is not there (then it is not counted).
var quantitySOffset = func() int {
	f, ok := reflect.TypeFor[resource.Quantity]().FieldByName("s")
	if !ok || f.Type.Kind() != reflect.String {
		return -1
	}
	return int(f.Offset)
}()

func quantityStringSize(p unsafe.Pointer) uintptr {
	if quantitySOffset < 0 {
		return 0
	}
	return stringSize(len(*(*string)(unsafe.Add(p, quantitySOffset))))
}

// mapSize is the bytes of the map at p (its header and groups) and of what
// its keys and values reach.
func mapSize(pl *plan, p unsafe.Pointer) uintptr {
	if *(*unsafe.Pointer)(p) == nil {
		return 0
	}
	switch pl.mapShape {
	case mapStrings:
		m := *(*map[string]string)(p)
		n := mapTableSize(len(m), pl.key.size+pl.elem.size, true)
		for k, v := range m {
			n += stringSize(len(k)) + stringSize(len(v))
		}
		return n
	case mapQuantities:
		m := *(*map[string]resource.Quantity)(p)
		n := mapTableSize(len(m), pl.key.size+pl.elem.size, true)
		for k, q := range m {
			n += stringSize(len(k)) + quantityStringSize(unsafe.Pointer(&q))
		}
		return n
	}
	return uintptr(valueSize(reflect.NewAt(pl.typ, p).Elem()) - int64(pl.size))
}

// mapTableSize estimates a swiss map of n entries of slot bytes each: the
// map header, and its groups of 8 slots and a control word, grown by
// doubling once more than 7/8 of the slots are used (as a map filled by a
// decoder grows).
func mapTableSize(n int, slot uintptr, scan bool) uintptr {
	const header = 48
	if n == 0 {
		return allocSize(header, true)
	}
	slot = (slot + 7) &^ 7
	if n <= 8 {
		return allocSize(header, true) + allocSize(8+8*slot, scan)
	}
	capacity := 16
	for n*8 > capacity*7 {
		capacity *= 2
	}
	const maxTable = 1024
	tables := max(1, capacity/maxTable)
	perTable := capacity / tables
	const tableHeader = 32
	return allocSize(header, true) + allocSize(uintptr(tables)*8, true) +
		uintptr(tables)*(allocSize(tableHeader, true)+allocSize(uintptr(perTable/8)*(8+8*slot), scan))
}

// MapEntryBytes is the average bytes one more entry of slot bytes adds to a
// large swiss map: a slot and its control byte, over the load the map is at
// on average between two doublings (3/4 of 7/8).
func MapEntryBytes(slot uintptr) int64 {
	slot = (slot + 7) &^ 7
	return int64((slot + 1) * 32 / 21)
}

// StringBytes is the heap bytes of a string of n bytes held on its own.
func StringBytes(n int) int64 { return int64(stringSize(n)) }

// stringSize is the heap bytes of a string of n bytes held on its own: the
// tiny allocator packs short ones.
func stringSize(n int) uintptr {
	if n == 0 {
		return 0
	}
	if n < 16 {
		return uintptr(n)
	}
	return allocSize(uintptr(n), false)
}

// sizeClasses are Go's allocation size classes (runtime, internal/runtime/gc).
var sizeClasses = [...]uint16{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// classBy8 maps (n+7)/8, for n up to 1024, to n's size class; classBy128
// maps (n-1024+127)/128 above.
var classBy8, classBy128 = func() ([129]uint16, [249]uint16) {
	var by8 [129]uint16
	var by128 [249]uint16
	c := 0
	for i := range by8 {
		for int(sizeClasses[c]) < i*8 {
			c++
		}
		by8[i] = sizeClasses[c]
	}
	for i := range by128 {
		for int(sizeClasses[c]) < 1024+i*128 {
			c++
		}
		by128[i] = sizeClasses[c]
	}
	return by8, by128
}()

// allocSize is what the allocator hands out for an object of n bytes (with
// pointers when scan).
func allocSize(n uintptr, scan bool) uintptr {
	if n == 0 {
		return 0
	}
	if scan && n > 512 {
		n += 8 // the malloc header
	}
	switch {
	case n <= 1024:
		return uintptr(classBy8[(n+7)>>3])
	case n <= 32768:
		return uintptr(classBy128[(n-1024+127)>>7])
	}
	return (n + 8191) &^ 8191
}

// valueSize sizes a value by reflection: its own bytes and what it reaches.
// It serves what plans do not walk (interfaces: unstructured objects'
// maps of any).
func valueSize(v reflect.Value) int64 {
	if !v.IsValid() {
		return 0
	}
	return int64(v.Type().Size()) + int64(reachable(v))
}

var timeType = reflect.TypeFor[time.Time]()

func reachable(v reflect.Value) uintptr {
	if v.Type() == timeType {
		return 0 // its *Location is shared (UTC, Local)
	}
	switch v.Kind() {
	case reflect.String:
		return stringSize(v.Len())
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		return allocSize(e.Type().Size(), !pointerFree(e.Type())) + reachable(e)
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		n := reachable(e)
		if k := e.Kind(); k != reflect.Pointer && k != reflect.Map && e.Type().Size() > 0 {
			n += allocSize(e.Type().Size(), !pointerFree(e.Type())) // boxed
		}
		return n
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return 0
		}
		et := v.Type().Elem()
		n := allocSize(uintptr(v.Cap())*et.Size(), !pointerFree(et))
		if !pointerFree(et) {
			for i := range v.Len() {
				n += reachable(v.Index(i))
			}
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		t := v.Type()
		n := mapTableSize(v.Len(), t.Key().Size()+t.Elem().Size(), true)
		it := v.MapRange()
		for it.Next() {
			n += reachable(it.Key()) + reachable(it.Value())
		}
		return n
	case reflect.Struct:
		var n uintptr
		for i := range v.NumField() {
			n += reachable(v.Field(i))
		}
		return n
	case reflect.Array:
		var n uintptr
		for i := range v.Len() {
			n += reachable(v.Index(i))
		}
		return n
	}
	return 0
}
