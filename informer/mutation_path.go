package informer

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Fingerprints and field paths of cached objects, for the mutation detector.
// Both walk every field by reflection, unexported ones included, except the
// string form that resource.Quantity caches on its first String call: a
// reader calling String changes no value.

const maxDepth = 100 // API objects are trees far shallower than this

var (
	quantityType     = reflect.TypeFor[resource.Quantity]()
	unstructuredType = reflect.TypeFor[unstructured.Unstructured]()
)

// fingerprint hashes the value obj holds.
var locationType = reflect.TypeFor[*time.Location]()

func fingerprint(seed maphash.Seed, obj any) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	hashValue(seed, &h, reflect.ValueOf(obj), 0)
	return h.Sum64()
}

func writeUint(h *maphash.Hash, x uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], x)
	_, _ = h.Write(b[:])
}

func hashValue(seed maphash.Seed, h *maphash.Hash, v reflect.Value, depth int) {
	if depth > maxDepth {
		return
	}
	_ = h.WriteByte(byte(v.Kind()))
	switch v.Kind() {
	case reflect.Invalid:
	case reflect.Bool:
		if v.Bool() {
			_ = h.WriteByte(1)
		} else {
			_ = h.WriteByte(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		writeUint(h, uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		writeUint(h, v.Uint())
	case reflect.Float32, reflect.Float64:
		writeUint(h, math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		writeUint(h, math.Float64bits(real(v.Complex())))
		writeUint(h, math.Float64bits(imag(v.Complex())))
	case reflect.String:
		writeUint(h, uint64(v.Len()))
		_, _ = h.WriteString(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			_ = h.WriteByte(0)
			return
		}
		_ = h.WriteByte(1)
		if v.Type() == locationType {
			// A *time.Location caches zone lookups in its own fields, and
			// time.Local loads itself on first use: hash it by identity, or
			// an untouched timestamp would look changed.
			writeUint(h, uint64(v.Pointer()))
			return
		}
		if v.Kind() == reflect.Interface {
			_, _ = h.WriteString(v.Elem().Type().String())
		}
		hashValue(seed, h, v.Elem(), depth+1)
	case reflect.Slice:
		if v.IsNil() {
			_ = h.WriteByte(0)
			return
		}
		_ = h.WriteByte(1)
		writeUint(h, uint64(v.Len()))
		if v.Type().Elem().Kind() == reflect.Uint8 {
			_, _ = h.Write(v.Bytes())
			return
		}
		for i := range v.Len() {
			hashValue(seed, h, v.Index(i), depth+1)
		}
	case reflect.Array:
		for i := range v.Len() {
			hashValue(seed, h, v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			_ = h.WriteByte(0)
			return
		}
		_ = h.WriteByte(1)
		writeUint(h, uint64(v.Len()))
		// Map order is random: add up the entries' own hashes.
		var sum uint64
		var eh maphash.Hash
		it := v.MapRange()
		for it.Next() {
			eh.SetSeed(seed)
			hashValue(seed, &eh, it.Key(), depth+1)
			hashValue(seed, &eh, it.Value(), depth+1)
			sum += eh.Sum64()
		}
		writeUint(h, sum)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t == quantityType && t.Field(i).Name == "s" {
				continue
			}
			hashValue(seed, h, v.Field(i), depth+1)
		}
	default: // chan, func, unsafe.Pointer: identity
		writeUint(h, uint64(v.Pointer()))
	}
}

// firstDifference finds the first field where before and after differ and
// returns its path (from path) with both values described.
func firstDifference(before, after reflect.Value, path string) (string, string, string, bool) {
	return diffValue(before, after, path, false, 0)
}

func diffValue(a, b reflect.Value, path string, jsonObject bool, depth int) (string, string, string, bool) {
	if depth > maxDepth {
		return "", "", "", false
	}
	if a.Kind() != b.Kind() || (a.IsValid() && a.Type() != b.Type()) {
		return leaf(path), describeValue(a), describeValue(b), true
	}
	switch a.Kind() {
	case reflect.Invalid:
		return "", "", "", false
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() == b.IsNil() {
				return "", "", "", false
			}
			return leaf(path), describeValue(a), describeValue(b), true
		}
		if a.Kind() == reflect.Interface && a.Elem().Type() != b.Elem().Type() {
			return leaf(path), describeValue(a.Elem()), describeValue(b.Elem()), true
		}
		return diffValue(a.Elem(), b.Elem(), path, jsonObject, depth+1)
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && (a.IsNil() != b.IsNil() || a.Len() != b.Len()) {
			return leaf(path), describeValue(a), describeValue(b), true
		}
		for i := range a.Len() {
			if p, x, y, ok := diffValue(a.Index(i), b.Index(i), path+"["+strconv.Itoa(i)+"]", false, depth+1); ok {
				return p, x, y, true
			}
		}
		return "", "", "", false
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			return leaf(path), describeValue(a), describeValue(b), true
		}
		// An unstructured object's maps are JSON objects: their keys are
		// fields. A typed map's keys are data.
		fields := a.Type().Key().Kind() == reflect.String && a.Type().Elem().Kind() == reflect.Interface
		keys := append(a.MapKeys(), b.MapKeys()...)
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
		for _, k := range slices.CompactFunc(keys, func(x, y reflect.Value) bool { return fmt.Sprint(x) == fmt.Sprint(y) }) {
			sub := path + "[" + strconv.Quote(fmt.Sprint(k)) + "]"
			if fields {
				sub = join(path, fmt.Sprint(k))
			}
			x, y := a.MapIndex(k), b.MapIndex(k)
			if !x.IsValid() || !y.IsValid() {
				if x.IsValid() != y.IsValid() {
					return sub, describeValue(x), describeValue(y), true
				}
				continue
			}
			if p, xs, ys, ok := diffValue(x, y, sub, false, depth+1); ok {
				return p, xs, ys, true
			}
		}
		return "", "", "", false
	case reflect.Struct:
		t := a.Type()
		if t == quantityType || !hasExportedField(t) {
			// A value as a whole (time.Time), or Quantity, whose cached
			// string form is no part of its value.
			var ha, hb maphash.Hash
			seed := maphash.MakeSeed()
			ha.SetSeed(seed)
			hb.SetSeed(seed)
			hashValue(seed, &ha, a, depth)
			hashValue(seed, &hb, b, depth)
			if ha.Sum64() == hb.Sum64() {
				return "", "", "", false
			}
			return leaf(path), describeValue(a), describeValue(b), true
		}
		for i := range t.NumField() {
			f := t.Field(i)
			sub := path
			if name, inline := fieldName(f); !inline && (t != unstructuredType) {
				sub = join(path, name)
			}
			if p, x, y, ok := diffValue(a.Field(i), b.Field(i), sub, false, depth+1); ok {
				return p, x, y, true
			}
		}
		return "", "", "", false
	}
	if scalarEqual(a, b) {
		return "", "", "", false
	}
	return leaf(path), describeValue(a), describeValue(b), true
}

func hasExportedField(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

// fieldName is a struct field's JSON name, or inline for embedded structs
// without one and for unexported fields (a part of their parent's value).
func fieldName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", true
	}
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		if f.Anonymous || strings.Contains(opts, "inline") {
			return "", true
		}
		return f.Name, false
	}
	return name, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func leaf(path string) string {
	if path == "" {
		return "(object)"
	}
	return path
}

func scalarEqual(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.String:
		return a.String() == b.String()
	}
	return a.Pointer() == b.Pointer() // chan, func, unsafe.Pointer
}

// describeValue says briefly what a value is, readable for scalars.
func describeValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Invalid:
		return "absent"
	case reflect.String:
		s := v.String()
		if len(s) > 60 {
			s = s[:60] + "..."
		}
		return strconv.Quote(s)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		return describeValue(v.Elem())
	case reflect.Slice, reflect.Map:
		if v.IsNil() {
			return "nil"
		}
		return fmt.Sprintf("%d items", v.Len())
	case reflect.Struct:
		if v.Type() == quantityType && v.CanInterface() {
			q := v.Interface().(resource.Quantity) // a copy: String caches in it
			return q.String()
		}
		if v.CanInterface() {
			if s, ok := v.Interface().(fmt.Stringer); ok {
				return s.String()
			}
		}
		return v.Type().String()
	}
	return v.Type().String()
}
