package fakecluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validator validates values against a structural schema. Its messages name a field relative
// to the validated root (trim is the root's path and a dot: "status." for a status update),
// as the server's do.
type validator struct{ trim string }

func (vd validator) name(path *field.Path) string {
	return strings.TrimPrefix(path.String(), vd.trim)
}

// validateValue validates v at path against s. old is the stored value at the same place on an
// update (hasOld): a value equal to it is not validated again (ratcheting).
func (vd validator) validateValue(path *field.Path, v any, s *structural, old any, hasOld bool) field.ErrorList {
	if hasOld && reflect.DeepEqual(v, old) {
		return nil
	}
	name := vd.name(path)
	if v == nil {
		if s.nullable || (s.typ == "" && !s.intOrString) {
			return nil
		}
		typ := s.typ
		if s.intOrString {
			typ = "integer,string"
		}
		return field.ErrorList{field.TypeInvalid(path, "", fmt.Sprintf("%s in body must be of type %s: %q", name, typ, "null"))}
	}
	kind := jsonType(v)
	var errs field.ErrorList
	typeOK := true
	switch {
	case s.intOrString:
		if kind != "integer" && kind != "string" {
			typeOK = false
			errs = append(errs, field.TypeInvalid(path, kind, fmt.Sprintf("%s in body must be of type integer,string: %q", name, kind)))
		}
	case s.typ == "":
	case s.typ == kind, s.typ == "number" && kind == "integer":
	default:
		typeOK = false
		want, got := s.typ, kind
		switch v.(type) {
		case float64, int64, bool:
			if s.format != "" {
				// The server's validator names the format and the decoded Go type then.
				want, got = s.format, fmt.Sprintf("%T", v)
			}
		}
		errs = append(errs, field.TypeInvalid(path, got, fmt.Sprintf("%s in body must be of type %s: %q", name, want, got)))
	}
	if len(s.enum) > 0 && !slices.ContainsFunc(s.enum, func(e any) bool { return jsonEqual(e, v) }) {
		values := make([]string, 0, len(s.enum))
		for _, e := range s.enum {
			if es, ok := e.(string); ok {
				values = append(values, es)
			} else {
				b, _ := json.Marshal(e)
				values = append(values, string(b))
			}
		}
		errs = append(errs, field.NotSupported(path, v, values))
	}
	if !typeOK {
		// As the server's validator, which checks the type and then whatever else applies to
		// the value: its enum, and number bounds.
		if _, isNum := toFloat(v); isNum {
			errs = append(errs, vd.validateNumber(path, v, s)...)
		}
		return errs
	}
	switch x := v.(type) {
	case string:
		errs = append(errs, vd.validateString(path, x, s)...)
	case int64, float64, json.Number:
		errs = append(errs, vd.validateNumber(path, v, s)...)
	case []any:
		errs = append(errs, vd.validateArray(path, x, s, old, hasOld)...)
	case map[string]any:
		errs = append(errs, vd.validateObject(path, x, s, old, hasOld)...)
	}
	return errs
}

func (vd validator) validateString(path *field.Path, x string, s *structural) field.ErrorList {
	var errs field.ErrorList
	name := vd.name(path)
	n := int64(utf8.RuneCountInString(x))
	// Length and pattern report the first failure only, as the server's validator does.
	switch {
	case s.maxLength != nil && n > *s.maxLength:
		errs = append(errs, field.TooLong(path, "", int(*s.maxLength)))
	case s.minLength != nil && n < *s.minLength:
		errs = append(errs, field.Invalid(path, x, fmt.Sprintf("%s in body should be at least %d chars long", name, *s.minLength)))
	case s.pattern != nil && !s.pattern.MatchString(x):
		errs = append(errs, field.Invalid(path, x, fmt.Sprintf("%s in body should match '%s'", name, s.patternText)))
	}
	if s.format != "" && !validFormat(s.format, x) {
		errs = append(errs, field.TypeInvalid(path, x, fmt.Sprintf("%s in body must be of type %s: %q", name, s.format, x)))
	}
	return errs
}

func (vd validator) validateNumber(path *field.Path, v any, s *structural) field.ErrorList {
	f, ok := toFloat(v)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	name := vd.name(path)
	if s.typ == "integer" && (s.maximum != nil || s.minimum != nil || s.multipleOf != nil) && !inIntegerRange(f, s.format) {
		// The server's range check, which reports no field path.
		format := "(default format)"
		if s.format != "" {
			format = "with format " + s.format
		}
		errs = append(errs, field.Invalid(nil, "", fmt.Sprintf("Checked value must be of type integer %s in %s", format, name)))
	}
	if m := s.maximum; m != nil {
		if s.exclusiveMaximum && f >= *m {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be less than %v", name, *m)))
		} else if !s.exclusiveMaximum && f > *m {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be less than or equal to %v", name, *m)))
		}
	}
	if m := s.minimum; m != nil {
		if s.exclusiveMinimum && f <= *m {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be greater than %v", name, *m)))
		} else if !s.exclusiveMinimum && f < *m {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be greater than or equal to %v", name, *m)))
		}
	}
	if m := s.multipleOf; m != nil && *m > 0 {
		if q := f / *m; q != math.Trunc(q) {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be a multiple of %v", name, *m)))
		}
	}
	return errs
}

func (vd validator) validateArray(path *field.Path, x []any, s *structural, old any, hasOld bool) field.ErrorList {
	var errs field.ErrorList
	name := vd.name(path)
	n := int64(len(x))
	if s.maxItems != nil && n > *s.maxItems {
		errs = append(errs, field.TooMany(path, int(n), int(*s.maxItems)))
	}
	if s.minItems != nil && n < *s.minItems {
		errs = append(errs, field.Invalid(path, n, fmt.Sprintf("%s in body should have at least %d items", name, *s.minItems)))
	}
	if s.items == nil {
		return errs
	}
	oldList, _ := old.([]any)
	for i, e := range x {
		// Correlate an item with its old self where the list type allows it (sets by value,
		// maps by key), as ratcheting does; atomic lists are not correlated.
		var oe any
		found := false
		switch s.listType {
		case "set":
			found = hasOld && slices.ContainsFunc(oldList, func(o any) bool { return reflect.DeepEqual(o, e) })
			oe = e
		case "map":
			if hasOld {
				oe, found = findByKeys(oldList, e, s.listMapKeys)
			}
		}
		errs = append(errs, vd.validateValue(path.Index(i), e, s.items, oe, found)...)
	}
	errs = append(errs, vd.validateListType(path, x, s, oldList, hasOld)...)
	return errs
}

// validateListType reports duplicates in a set or a map list, unless the old list had them
// too.
func (vd validator) validateListType(path *field.Path, x []any, s *structural, old []any, hasOld bool) field.ErrorList {
	dups := func(list []any) field.ErrorList {
		var errs field.ErrorList
		switch s.listType {
		case "set":
			for i := range list {
				if slices.ContainsFunc(list[:i], func(o any) bool { return jsonEqual(o, list[i]) }) {
					errs = append(errs, field.Duplicate(path.Index(i), list[i]))
				}
			}
		case "map":
			for i := range list {
				k := mapKeys(list[i], s.listMapKeys)
				if slices.ContainsFunc(list[:i], func(o any) bool { return jsonEqual(mapKeys(o, s.listMapKeys), k) }) {
					errs = append(errs, field.Duplicate(path.Index(i), k))
				}
			}
		}
		return errs
	}
	errs := dups(x)
	if len(errs) > 0 && hasOld && len(dups(old)) > 0 {
		return nil
	}
	return errs
}

func mapKeys(item any, keys []string) map[string]any {
	m, _ := item.(map[string]any)
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func findByKeys(list []any, item any, keys []string) (any, bool) {
	k := mapKeys(item, keys)
	for _, o := range list {
		if jsonEqual(mapKeys(o, keys), k) {
			return o, true
		}
	}
	return nil, false
}

func (vd validator) validateObject(path *field.Path, x map[string]any, s *structural, old any, hasOld bool) field.ErrorList {
	var errs field.ErrorList
	name := vd.name(path)
	n := int64(len(x))
	if s.maxProperties != nil && n > *s.maxProperties {
		errs = append(errs, field.TooMany(path, int(n), int(*s.maxProperties)))
	}
	if s.minProperties != nil && n < *s.minProperties {
		errs = append(errs, field.Invalid(path, n, fmt.Sprintf("%s in body should have at least %d properties", name, *s.minProperties)))
	}
	oldMap, _ := old.(map[string]any)
	for _, k := range sortedKeys(x) {
		ps := s.properties[k]
		if ps == nil {
			ps = s.additional
		}
		if ps == nil {
			continue
		}
		if path == nil && (k == "metadata" || k == "apiVersion" || k == "kind") {
			continue // the server's own rules, not the schema's
		}
		oe, found := oldMap[k]
		errs = append(errs, vd.validateValue(path.Child(k), x[k], ps, oe, found && hasOld)...)
	}
	for _, k := range s.required {
		if _, ok := x[k]; !ok {
			errs = append(errs, field.Required(path.Child(k), ""))
		}
	}
	if s.embedded {
		for _, k := range []string{"apiVersion", "kind"} {
			switch v, found := x[k]; {
			case !found:
				errs = append(errs, field.Required(path.Child(k), ""))
			case v == "":
				errs = append(errs, field.Invalid(path.Child(k), v, "must not be empty"))
			}
		}
	}
	return errs
}

// jsonType is the JSON schema type of a decoded JSON value; a float without a fraction is an
// integer, as the server's decoder would have made it.
func jsonType(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// inIntegerRange reports whether f is an integer that format (int32, uint32, uint64, or int64
// by default) holds.
func inIntegerRange(f float64, format string) bool {
	if f != math.Trunc(f) {
		return false
	}
	switch format {
	case "int32":
		return f >= math.MinInt32 && f <= math.MaxInt32
	case "uint32":
		return f >= 0 && f <= math.MaxUint32
	case "uint64":
		return f >= 0 && f < 1<<64
	}
	return f >= math.MinInt64 && f < 1<<63
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// jsonEqual compares decoded JSON values, numbers by value (int64 1 equals float64 1).
func jsonEqual(a, b any) bool {
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

var (
	uuidPattern     = regexp.MustCompile(`^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)
	hostnamePattern = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$`)
)

// validFormat checks the string formats that are cheap to check; other formats pass.
func validFormat(format, x string) bool {
	switch format {
	case "date-time", "datetime":
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05"} {
			if _, err := time.Parse(layout, x); err == nil {
				return true
			}
		}
		return false
	case "date":
		_, err := time.Parse("2006-01-02", x)
		return err == nil
	case "byte":
		_, err := base64.StdEncoding.DecodeString(x)
		return err == nil
	case "uuid":
		return uuidPattern.MatchString(x)
	case "ipv4":
		a, err := netip.ParseAddr(x)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(x)
		return err == nil && a.Is6()
	case "cidr":
		_, _, err := net.ParseCIDR(x)
		return err == nil
	case "hostname":
		return len(x) <= 255 && hostnamePattern.MatchString(x)
	}
	return true
}
