package unstructuredconv

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// FieldError is a value of an unstructured object that does not fit the Go
// field it converts to.
type FieldError struct {
	// Path is the field's path in the object, as in spec.replicas or
	// spec.template.spec.containers[0].resources.limits["cpu"].
	Path string
	// Expected is what the field takes: a Go kind for scalars (int32,
	// string, bool), "object" or "array" for structs, maps and slices, the Go
	// type for types with their own JSON decoding (resource.Quantity).
	Expected string
	// Got describes the value found, e.g. `string "three"`.
	Got string
	// Err is the converter's own error, which says less.
	Err error
	// detail is what a type with its own JSON decoding said of the value
	// (resource.Quantity's parse error), shown in the message.
	detail error
}

func (e *FieldError) Error() string {
	msg := e.Path + ": expected " + e.Expected + ", got " + e.Got
	if e.detail != nil {
		msg += ": " + e.detail.Error()
	}
	return msg
}

func (e *FieldError) Unwrap() error { return e.Err }

// locate walks obj against the struct type t with the converter's rules and
// returns the first value that does not fit, or nil if it finds none (the
// caller then reports the converter's error as it is).
func locate(obj map[string]any, t reflect.Type) (fe *FieldError) {
	defer func() {
		if recover() != nil {
			fe = nil // a panicking UnmarshalJSON: the caller's recover reports it
		}
	}()
	return walk(reflect.ValueOf(obj), t, "")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func walk(sv reflect.Value, dt reflect.Type, path string) *FieldError {
	for sv.Kind() == reflect.Interface {
		sv = sv.Elem()
	}
	if !sv.IsValid() {
		return nil // null: the field's zero value
	}
	st := sv.Type()
	switch dt.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Struct, reflect.Interface:
	default:
		if scalarFits(sv, dt) {
			return nil
		}
		return mismatch(path, dt.Kind().String(), sv)
	}
	if reflect.PointerTo(dt).Implements(unmarshalerType) {
		// The converter hands such types their value as JSON.
		data, err := json.Marshal(sv.Interface())
		if err == nil {
			err = reflect.New(dt).Interface().(json.Unmarshaler).UnmarshalJSON(data)
		}
		if err != nil {
			fe := mismatch(path, dt.String(), sv)
			fe.detail = err
			return fe
		}
		return nil
	}
	switch dt.Kind() {
	case reflect.Map:
		if st.Kind() != reflect.Map || (!st.Key().AssignableTo(dt.Key()) && !st.Key().ConvertibleTo(dt.Key())) {
			return mismatch(path, "object", sv)
		}
		keys := sv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			if fe := walk(sv.MapIndex(k), dt.Elem(), path+"["+strconv.Quote(fmt.Sprint(k))+"]"); fe != nil {
				return fe
			}
		}
	case reflect.Slice:
		if st.Kind() == reflect.String && dt.Elem().Kind() == reflect.Uint8 {
			var b []byte
			data, _ := json.Marshal(sv.Interface())
			if err := json.Unmarshal(data, &b); err != nil {
				fe := mismatch(path, "base64 string", sv)
				fe.detail = err
				return fe
			}
			return nil
		}
		if st.Kind() != reflect.Slice {
			return mismatch(path, "array", sv)
		}
		for i := range sv.Len() {
			if fe := walk(sv.Index(i), dt.Elem(), path+"["+strconv.Itoa(i)+"]"); fe != nil {
				return fe
			}
		}
	case reflect.Pointer:
		if st.Kind() == reflect.Pointer {
			if sv.IsNil() {
				return nil
			}
			sv = sv.Elem()
		}
		return walk(sv, dt.Elem(), path)
	case reflect.Struct:
		if st.Kind() != reflect.Map || st.Key().Kind() != reflect.String {
			return mismatch(path, "object", sv)
		}
		for i := range dt.NumField() {
			f := dt.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			name, inline := jsonName(f)
			if name == "-" {
				continue
			}
			if inline {
				if fe := walk(sv, f.Type, path); fe != nil {
					return fe
				}
				continue
			}
			v := sv.MapIndex(reflect.ValueOf(name).Convert(st.Key()))
			if !v.IsValid() {
				continue
			}
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			if fe := walk(v, f.Type, sub); fe != nil {
				return fe
			}
		}
	}
	return nil
}

// jsonName is the converter's reading of a field's json tag: its key, or
// inline for an embedded struct without a name.
func jsonName(f reflect.StructField) (name string, inline bool) {
	tag, ok := f.Tag.Lookup("json")
	name, opts, _ := strings.Cut(tag, ",")
	if !ok || name == "" {
		if f.Anonymous || slices.Contains(strings.Split(opts, ","), "inline") {
			return "", true
		}
		return f.Name, false
	}
	return name, false
}

// scalarFits mirrors the converter: JSON does not convert between bools,
// numbers and strings, and a float fits an integer only when integral.
func scalarFits(sv reflect.Value, dt reflect.Type) bool {
	st := sv.Type()
	if st.AssignableTo(dt) {
		return true
	}
	if !st.ConvertibleTo(dt) {
		return false
	}
	sk, dk := kindClass(st.Kind()), kindClass(dt.Kind())
	switch {
	case sk == dk:
		return sk != classOther
	case sk == classInt && dk == classFloat:
		return true
	case sk == classFloat && dk == classInt:
		f := sv.Float()
		return f == math.Trunc(f)
	}
	return false
}

type class int

const (
	classOther class = iota
	classString
	classBool
	classInt
	classFloat
)

func kindClass(k reflect.Kind) class {
	switch k {
	case reflect.String:
		return classString
	case reflect.Bool:
		return classBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return classInt
	case reflect.Float32, reflect.Float64:
		return classFloat
	}
	return classOther
}

func mismatch(path, expected string, sv reflect.Value) *FieldError {
	if path == "" {
		path = "(object)"
	}
	return &FieldError{Path: path, Expected: expected, Got: describe(sv)}
}

// describe says what a value is, in JSON's terms where it is a JSON value.
func describe(v reflect.Value) string {
	switch kindClass(v.Kind()) {
	case classString:
		s := v.String()
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return "string " + strconv.Quote(s)
	case classBool, classInt, classFloat:
		return fmt.Sprintf("%s %v", v.Kind(), v)
	}
	switch v.Kind() {
	case reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "Go value of type " + v.Type().String()
}
