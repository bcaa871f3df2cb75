package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// PatchOperation is one RFC 6902 JSON patch operation, as CreatePatch returns it.
type PatchOperation struct {
	// Op is "add", "remove" or "replace" (the only three CreatePatch uses).
	Op string `json:"op"`
	// Path is an RFC 6901 JSON pointer ("/metadata/labels/app.kubernetes.io~1name").
	Path string `json:"path"`
	// Value is the JSON value added or put in place; nil for "remove". A JSON null is the
	// four bytes "null", so it is kept on the wire.
	Value json.RawMessage `json:"value,omitempty"`
}

// CreatePatch returns the JSON patch that turns the JSON document from into to: objects are
// compared member by member, recursively; any other value that differs (a number, a string,
// an array, a change of type) is replaced whole. Arrays are not diffed element by element: an
// index-based patch of a list that another writer changed in between would edit the wrong
// element, a whole replacement cannot. Operations come in a deterministic order (removals and
// changes of existing members in key order, then additions in key order). Equal documents
// give an empty patch. An error says which document is not JSON.
func CreatePatch(from, to []byte) ([]PatchOperation, error) {
	a, err := decodeJSON(from)
	if err != nil {
		return nil, fmt.Errorf("webhook: patch source: %w", err)
	}
	b, err := decodeJSON(to)
	if err != nil {
		return nil, fmt.Errorf("webhook: patch target: %w", err)
	}
	return diffValues(a, b)
}

// diffValues is CreatePatch on decoded documents.
func diffValues(a, b any) ([]PatchOperation, error) {
	var ops []PatchOperation
	if err := diff(a, b, "", &ops); err != nil {
		return nil, err
	}
	return ops, nil
}

// decodeJSON decodes one JSON document keeping numbers as written (json.Number), so that
// 64-bit integers survive and "1" and "1.0" count as different values, as they are to a
// strict decoder.
func decodeJSON(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON document")
	}
	return v, nil
}

// diff appends the operations turning a into b at path.
func diff(a, b any, path string, ops *[]PatchOperation) error {
	am, aObj := a.(map[string]any)
	bm, bObj := b.(map[string]any)
	if !aObj || !bObj {
		if jsonEqual(a, b) {
			return nil
		}
		return appendOp(ops, "replace", path, b)
	}
	for _, k := range slices.Sorted(maps.Keys(am)) {
		p := path + "/" + escapePointer(k)
		bv, ok := bm[k]
		if !ok {
			*ops = append(*ops, PatchOperation{Op: "remove", Path: p})
			continue
		}
		if err := diff(am[k], bv, p, ops); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(bm)) {
		if _, ok := am[k]; !ok {
			if err := appendOp(ops, "add", path+"/"+escapePointer(k), bm[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendOp(ops *[]PatchOperation, op, path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil { // cannot happen for decoded JSON; reported rather than trusted
		return fmt.Errorf("webhook: encoding the value at %q: %w", path, err)
	}
	*ops = append(*ops, PatchOperation{Op: op, Path: path, Value: raw})
	return nil
}

// pointerEscaper is RFC 6901's escaping. A Replacer works in one pass, so the "~1" made for a
// "/" is not escaped again.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return pointerEscaper.Replace(key)
}
