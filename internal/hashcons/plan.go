package hashcons

import (
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

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
	kindOpaque              // never compared: it and every node holding it are not shared
	kindOther               // chan, func, unsafe.Pointer: its struct is compared as memory
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
	sized    []planField // struct: the fields that reach other memory (see sizeOf)
	elem     *plan       // pointer, slice, array, map value
	key      *plan       // map key
	n        int         // array length
	mapShape mapShape

	quantity       bool // the plan is resource.Quantity's
	inlineStrings  bool // strings held inline (not behind a node)
	inlineQuantity bool // quantities held inline
	nodes          bool // holds nodes, interfaces or opaque values inline
	scan           bool // holds pointers (the allocator's "scan" objects)
}

type planField struct {
	off uintptr
	pl  *plan
}

// planner holds the plans made under one resource.Quantity layout.
type planner struct {
	layout quantityLayout
	mu     sync.Mutex
	plans  sync.Map // reflect.Type → *plan
}

var (
	planSeq atomic.Uint64
	// Plans are per process, as types are; the fallback planner serves
	// tables made when the quantity layout is not the known one.
	knownLayoutPlanner = sync.OnceValue(func() *planner { return &planner{layout: quantityLayoutOnce()} })
	fallbackPlanner    = &planner{}
)

func plannerFor(layout quantityLayout) *planner {
	if layout.ok && layout == quantityLayoutOnce() {
		return knownLayoutPlanner()
	}
	return fallbackPlanner
}

func (pr *planner) planFor(t reflect.Type) *plan {
	if p, ok := pr.plans.Load(t); ok {
		return p.(*plan)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	building := map[reflect.Type]*plan{}
	p := pr.build(t, building)
	// Complete every new plan before publishing any: a reader that finds a
	// published plan (without mu) walks the plans it refers to.
	for _, bp := range building {
		if bp.kind == kindMap {
			bp.mapShape = pr.shapeOf(bp)
		}
	}
	for bt, bp := range building {
		pr.plans.LoadOrStore(bt, bp)
	}
	if stored, ok := pr.plans.Load(t); ok {
		return stored.(*plan)
	}
	return p
}

var quantityType = reflect.TypeFor[resource.Quantity]()

func (pr *planner) build(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := pr.plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := building[t]; ok {
		return p // recursive type: the plan is being filled in
	}
	p := &plan{typ: t, size: t.Size(), seed: mix(planSeq.Add(1), 0x706c616e), scan: !pointerFree(t)}
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
		p.elem = pr.build(t.Elem(), building)
	case reflect.Slice:
		p.kind, p.nodes = kindSlice, true
		p.elem = pr.build(t.Elem(), building)
	case reflect.Map:
		p.kind, p.nodes = kindMap, true
		p.key = pr.build(t.Key(), building)
		p.elem = pr.build(t.Elem(), building)
		// mapShape is set by planFor once every plan is complete.
	case reflect.Interface:
		p.kind, p.nodes = kindIface, true
	case reflect.Array:
		p.elem = pr.build(t.Elem(), building)
		p.n = t.Len()
		p.kind = kindArray
		p.inlineStrings, p.inlineQuantity, p.nodes = p.elem.inlineStrings, p.elem.inlineQuantity, p.elem.nodes
		if p.elem.kind == kindRaw {
			p.kind = kindRaw
		} else if p.elem.kind == kindOther {
			p.kind = kindOther
		}
	case reflect.Struct:
		pr.buildStruct(p, building)
	default:
		p.kind = kindOther
	}
	return p
}

func (pr *planner) buildStruct(p *plan, building map[reflect.Type]*plan) {
	t := p.typ
	if t == quantityType {
		if !pr.layout.ok {
			p.kind, p.nodes = kindOpaque, true
			return
		}
		// Value in i, d and Format; s is a cache (see quantity.go).
		f, _ := t.FieldByName("Format")
		p.kind, p.quantity, p.inlineQuantity = kindStruct, true, true
		p.fields = []planField{
			{off: pr.layout.i, pl: rawPlan(pr.layout.iSize)},
			{off: pr.layout.d, pl: rawPlan(unsafe.Sizeof(unsafe.Pointer(nil)))},
			{off: f.Offset, pl: pr.build(f.Type, building)},
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
		fp := pr.build(f.Type, building)
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
		if f.pl.kind != kindRaw {
			p.sized = append(p.sized, f)
		}
		p.inlineStrings = p.inlineStrings || f.pl.inlineStrings
		p.inlineQuantity = p.inlineQuantity || f.pl.inlineQuantity
		p.nodes = p.nodes || f.pl.nodes
	}
}

func (pr *planner) shapeOf(p *plan) mapShape {
	k, v := p.typ.Key(), p.typ.Elem()
	switch {
	case k.Kind() == reflect.String && v.Kind() == reflect.String:
		return mapStrings
	case k.Kind() == reflect.String && v == quantityType:
		if pr.layout.ok {
			return mapQuantities
		}
		return mapUnshared
	case (p.key.kind == kindRaw || p.key.kind == kindString) && !p.elem.nodes &&
		p.elem.kind != kindOther && p.elem.kind != kindOpaque && v.Comparable():
		return mapGeneric
	}
	return mapUnshared
}

func rawPlan(size uintptr) *plan {
	return &plan{kind: kindRaw, size: size}
}
