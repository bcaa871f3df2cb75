package expectations_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/expectations"
)

func TestUIDTrackingTransitions(t *testing.T) {
	const k = "ns/rs"
	type uenv struct {
		u   *expectations.UIDTracking[string]
		clk *testingclock.FakePassiveClock
	}
	cases := []struct {
		name      string
		steps     []func(uenv)
		add, del  int64
		exists    bool
		satisfied bool
		uids      []types.UID // nil: no UID set
	}{
		{name: "no record", satisfied: true},
		{
			name:  "expect deletions by uid",
			steps: []func(uenv){func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a", "b"}) }},
			del:   2, exists: true, uids: []types.UID{"a", "b"},
		},
		{
			name:  "duplicate uids count once",
			steps: []func(uenv){func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a", "a", "b"}) }},
			del:   2, exists: true, uids: []types.UID{"a", "b"},
		},
		{
			name: "event and tombstone for one uid count once",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a", "b"}) },
				func(v uenv) { v.u.DeletionObserved(k, "a") },
				func(v uenv) { v.u.DeletionObserved(k, "a") },
			},
			del: 1, exists: true, uids: []types.UID{"b"},
		},
		{
			name: "every uid observed",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a", "b"}) },
				func(v uenv) { v.u.DeletionObserved(k, "b") },
				func(v uenv) { v.u.DeletionObserved(k, "a") },
				func(v uenv) { v.u.DeletionObserved(k, "b") },
			},
			exists: true, satisfied: true, uids: []types.UID{},
		},
		{
			name: "unexpected uid changes nothing",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a"}) },
				func(v uenv) { v.u.DeletionObserved(k, "zzz") },
			},
			del: 1, exists: true, uids: []types.UID{"a"},
		},
		{
			name: "uid observed without record changes nothing",
			steps: []func(uenv){
				func(v uenv) { v.u.DeletionObserved(k, "a") },
			},
			satisfied: true,
		},
		{
			name: "new round replaces pending uids",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a", "b"}) },
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"c"}) },
				func(v uenv) { v.u.DeletionObserved(k, "a") },
			},
			del: 1, exists: true, uids: []types.UID{"c"},
		},
		{
			name: "delete expectations drops counts and uids",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a"}) },
				func(v uenv) { v.u.DeleteExpectations(k) },
				func(v uenv) { v.u.DeletionObserved(k, "a") },
			},
			satisfied: true,
		},
		{
			name: "creations are counted",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectCreations(k, 3) },
				func(v uenv) { v.u.CreationObserved(k) },
				func(v uenv) { v.u.LowerExpectations(k, 1, 0) },
				func(v uenv) { v.u.RaiseExpectations(k, 2, 0) },
			},
			add: 3, exists: true,
		},
		{
			name: "expect deletions resets pending creations",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectCreations(k, 3) },
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a"}) },
			},
			del: 1, exists: true, uids: []types.UID{"a"},
		},
		{
			name: "expect creations keeps the uid set; a late uid goes below zero",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a"}) },
				func(v uenv) { v.u.ExpectCreations(k, 1) },
				func(v uenv) { v.u.DeletionObserved(k, "a") },
			},
			add: 1, del: -1, exists: true, uids: []types.UID{},
		},
		{
			name: "expired uid expectations are satisfied",
			steps: []func(uenv){
				func(v uenv) { v.u.ExpectDeletions(k, []types.UID{"a"}) },
				func(v uenv) { v.clk.SetTime(epoch.Add(expectations.DefaultTTL + time.Second)) },
			},
			del: 1, exists: true, satisfied: true, uids: []types.UID{"a"},
		},
		{
			name:   "empty uid list is already met",
			steps:  []func(uenv){func(v uenv) { v.u.ExpectDeletions(k, nil) }},
			exists: true, satisfied: true, uids: []types.UID{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(epoch)
			v := uenv{u: expectations.NewUIDTracking[string](expectations.WithClock(clk)), clk: clk}
			for _, s := range tc.steps {
				s(v)
			}
			assertRecord(t, v.u, k, tc.add, tc.del, tc.exists, tc.satisfied)
			got := v.u.GetUIDs(k)
			if tc.uids == nil {
				assert.Nil(t, got, "uid set")
			} else {
				assert.Equal(t, sets.New(tc.uids...), got, "uid set")
			}
			if tc.exists {
				assert.Equal(t, 1, v.u.Len())
			} else {
				assert.Equal(t, 0, v.u.Len())
			}
		})
	}
}

func TestGetUIDsReturnsACopy(t *testing.T) {
	u := expectations.NewUIDTracking[string]()
	u.ExpectDeletions("k", []types.UID{"a", "b"})
	got := u.GetUIDs("k")
	got.Delete("a")
	got.Insert("z")
	assert.Equal(t, sets.New[types.UID]("a", "b"), u.GetUIDs("k"))
	u.DeletionObserved("k", "a")
	_, del, _ := u.Get("k")
	assert.Equal(t, int64(1), del, "the caller's copy does not change what is expected")
}
