package webhook_test

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/ctrlkit/ctrlkit/webhook"
)

// FuzzCreatePatch: for any two JSON objects, the patch applies to the first and gives the
// second; anything else is an error, never a panic.
func FuzzCreatePatch(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":[1,2]}}`), []byte(`{"a":2,"b":{"d":null}}`))
	f.Add([]byte(`{"a/b":{"~":1}}`), []byte(`{"a/b":{"~":2,"~1":3}}`))
	f.Add([]byte(`{}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, from, to []byte) {
		ops, err := webhook.CreatePatch(from, to)
		var a, b map[string]any
		if json.Unmarshal(from, &a) != nil || json.Unmarshal(to, &b) != nil || a == nil || b == nil {
			return // not two objects: an error or a root replacement, checked elsewhere
		}
		if err != nil {
			t.Fatalf("CreatePatch(%s, %s): %v", from, to, err)
		}
		if len(ops) == 0 {
			var x, y any
			_ = json.Unmarshal(from, &x)
			_ = json.Unmarshal(to, &y)
			if !jsonDeepEqual(t, x, y) {
				t.Fatalf("no patch for different documents %s and %s", from, to)
			}
			return
		}
		raw, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		p, err := jsonpatch.DecodePatch(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Apply(from)
		if err != nil {
			t.Fatalf("patch %s on %s: %v", raw, from, err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(to, &w)
		if !jsonDeepEqual(t, g, w) {
			t.Fatalf("patch %s on %s gave %s, want %s", raw, from, got, to)
		}
	})
}

func jsonDeepEqual(t *testing.T, x, y any) bool {
	t.Helper()
	bx, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	by, err := json.Marshal(y)
	if err != nil {
		t.Fatal(err)
	}
	return string(bx) == string(by)
}
