package webhook

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// For random documents: with no round-trip noise (before equals the received document) the
// admission patch turns it into after; with a member only the received document has (a field
// T does not know), that member survives the patch and everything else becomes after.
func TestAdmissionPatchProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		before := randomObject(r, 4)
		after := mutateValue(r, before, 4).(map[string]any)
		raw := marshal(t, before)
		ops, err := admissionPatch(raw, raw, marshal(t, after))
		require.NoError(t, err)
		require.JSONEq(t, string(marshal(t, after)), string(apply(t, raw, ops)), "case %d", i)

		// The received document has a member T drops.
		received := map[string]any{"unknownToT": "kept"}
		for k, v := range before {
			received[k] = v
		}
		delete(after, "unknownToT")
		ops, err = admissionPatch(marshal(t, received), raw, marshal(t, after))
		require.NoError(t, err)
		want := map[string]any{"unknownToT": "kept"}
		for k, v := range after {
			want[k] = v
		}
		require.JSONEq(t, string(marshal(t, want)), string(apply(t, marshal(t, received), ops)), "case %d", i)
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func apply(t *testing.T, doc []byte, ops []PatchOperation) []byte {
	t.Helper()
	if len(ops) == 0 {
		return doc
	}
	p, err := jsonpatch.DecodePatch(marshal(t, ops))
	require.NoError(t, err)
	out, err := p.Apply(doc)
	require.NoError(t, err, "patch %s", marshal(t, ops))
	return out
}

var testKeys = []string{"a", "b", "a/b", "~", "~1", "metadata", "labels", ""}

func randomObject(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(5) {
		m[testKeys[r.IntN(len(testKeys))]] = randomJSON(r, depth-1)
	}
	return m
}

func randomJSON(r *rand.Rand, depth int) any {
	n := r.IntN(7)
	if depth <= 0 {
		n = r.IntN(4)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.IntN(100)
	case 3:
		return "s"
	case 4:
		return []any{randomJSON(r, depth-1)}
	default:
		return randomObject(r, depth)
	}
}

func mutateValue(r *rand.Rand, v any, depth int) any {
	m, ok := v.(map[string]any)
	if !ok {
		if r.IntN(3) == 0 {
			return randomJSON(r, depth)
		}
		return v
	}
	out := map[string]any{}
	for k, x := range m {
		switch r.IntN(6) {
		case 0:
		case 1:
			out[k] = randomJSON(r, depth-1)
		default:
			out[k] = mutateValue(r, x, depth-1)
		}
	}
	for range r.IntN(3) {
		out[testKeys[r.IntN(len(testKeys))]] = randomJSON(r, depth-1)
	}
	return out
}
