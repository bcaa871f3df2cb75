package webhook_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/ctrlkit/ctrlkit/webhook"
)

func TestCreatePatchCases(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"equal", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, `[]`},
		{"add member", `{"a":1}`, `{"a":1,"b":{"c":null}}`, `[{"op":"add","path":"/b","value":{"c":null}}]`},
		{"null is a value", `{"a":1}`, `{"a":null}`, `[{"op":"replace","path":"/a","value":null}]`},
		{"remove member", `{"a":1,"b":2}`, `{"a":1}`, `[{"op":"remove","path":"/b"}]`},
		{"nested", `{"m":{"x":"1","y":"2"}}`, `{"m":{"x":"1","y":"3"}}`, `[{"op":"replace","path":"/m/y","value":"3"}]`},
		{"array replaced whole", `{"l":[1,2,3]}`, `{"l":[1,2]}`, `[{"op":"replace","path":"/l","value":[1,2]}]`},
		{"type change", `{"a":{"b":1}}`, `{"a":[1]}`, `[{"op":"replace","path":"/a","value":[1]}]`},
		{"escaping", `{}`, `{"a/b":1,"c~d":2,"~1":3}`,
			`[{"op":"add","path":"/a~1b","value":1},{"op":"add","path":"/c~0d","value":2},{"op":"add","path":"/~01","value":3}]`},
		{"root", `[1]`, `{"a":1}`, `[{"op":"replace","path":"","value":{"a":1}}]`},
		{"big integers stay exact", `{"n":9007199254740993}`, `{"n":9007199254740992}`, `[{"op":"replace","path":"/n","value":9007199254740992}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := webhook.CreatePatch([]byte(tc.from), []byte(tc.to))
			require.NoError(t, err)
			if ops == nil {
				ops = []webhook.PatchOperation{}
			}
			got, err := json.Marshal(ops)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
			requireApplies(t, tc.from, tc.to, got)
		})
	}
}

func TestCreatePatchRejectsNonJSON(t *testing.T) {
	_, err := webhook.CreatePatch([]byte(`{`), []byte(`{}`))
	require.ErrorContains(t, err, "patch source")
	_, err = webhook.CreatePatch([]byte(`{}`), []byte(`{} {}`))
	require.ErrorContains(t, err, "patch target")
}

// TestCreatePatchProperty: for random documents and random edits of them, applying the
// patch (with evanphx/json-patch, the library the API server applies admission patches with)
// to the first gives the second.
func TestCreatePatchProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		from := randomValue(r, 4)
		to := mutate(r, from, 4)
		fromJSON, err := json.Marshal(from)
		require.NoError(t, err)
		toJSON, err := json.Marshal(to)
		require.NoError(t, err)
		ops, err := webhook.CreatePatch(fromJSON, toJSON)
		require.NoError(t, err, "case %d", i)
		patch, err := json.Marshal(ops)
		require.NoError(t, err)
		if string(fromJSON) == string(toJSON) {
			require.Empty(t, ops, "case %d: equal documents", i)
		}
		requireApplies(t, string(fromJSON), string(toJSON), patch)
	}
}

func requireApplies(t *testing.T, from, to string, patch []byte) {
	t.Helper()
	if string(patch) == "null" || string(patch) == "[]" {
		require.JSONEq(t, from, to)
		return
	}
	p, err := jsonpatch.DecodePatch(patch)
	require.NoError(t, err, "patch %s", patch)
	if from[0] != '{' {
		// evanphx/json-patch applies to objects only; a root replacement is checked by value.
		var ops []webhook.PatchOperation
		require.NoError(t, json.Unmarshal(patch, &ops))
		require.Len(t, ops, 1)
		require.JSONEq(t, to, string(ops[0].Value))
		return
	}
	got, err := p.Apply([]byte(from))
	require.NoError(t, err, "patch %s on %s", patch, from)
	require.JSONEq(t, to, string(got), "patch %s on %s", patch, from)
}

// keys include the characters RFC 6901 escapes.
var keys = []string{"a", "b", "c", "a/b", "~", "~1", "x~0y", "", "metadata", "labels"}

func randomValue(r *rand.Rand, depth int) any {
	n := r.IntN(8)
	if depth == 0 && n >= 5 {
		n = r.IntN(5)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.IntN(100)
	case 3:
		return fmt.Sprintf("s%d", r.IntN(5))
	case 4:
		return r.Float64()
	case 5:
		l := make([]any, r.IntN(3))
		for i := range l {
			l[i] = randomValue(r, depth-1)
		}
		return l
	default:
		m := map[string]any{}
		for range r.IntN(5) {
			m[keys[r.IntN(len(keys))]] = randomValue(r, depth-1)
		}
		return m
	}
}

// mutate returns a copy of v with random members added, removed and changed at any depth.
func mutate(r *rand.Rand, v any, depth int) any {
	m, ok := v.(map[string]any)
	if !ok {
		if r.IntN(3) == 0 {
			return randomValue(r, depth)
		}
		return v
	}
	out := map[string]any{}
	for k, x := range m {
		switch r.IntN(6) {
		case 0: // removed
		case 1:
			out[k] = randomValue(r, depth-1)
		default:
			out[k] = mutate(r, x, depth-1)
		}
	}
	for range r.IntN(3) {
		out[keys[r.IntN(len(keys))]] = randomValue(r, depth-1)
	}
	return out
}
