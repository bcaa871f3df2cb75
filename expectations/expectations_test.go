package expectations_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/expectations"
)

func TestMain(m *testing.M) {
	// The stores start no goroutines; this keeps it that way.
	goleak.VerifyTestMain(m)
}

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// assertRecord checks what s says of key k: its counts, whether it holds a record, and whether
// k is satisfied.
func assertRecord(t *testing.T, s store, k string, add, del int64, exists, satisfied bool) {
	t.Helper()
	gotAdd, gotDel, gotExists := s.Get(k)
	assert.Equal(t, add, gotAdd, "add")
	assert.Equal(t, del, gotDel, "del")
	assert.Equal(t, exists, gotExists, "exists")
	assert.Equal(t, satisfied, s.Satisfied(k), "satisfied")
}

type env struct {
	e   *expectations.Expectations[string]
	clk *testingclock.FakePassiveClock
}

// TestTransitions walks every method through its transitions on one key and checks the
// record and Satisfied after the last step.
func TestTransitions(t *testing.T) {
	const k = "ns/rs"
	ttl := expectations.DefaultTTL
	cases := []struct {
		name        string
		steps       []func(env)
		add, del    int64
		exists      bool
		satisfied   bool
		otherKeyHas bool // whether "ns/other" has a record afterwards
	}{
		{name: "no record", satisfied: true},
		{
			name:  "expect creations",
			steps: []func(env){func(v env) { v.e.ExpectCreations(k, 2) }},
			add:   2, exists: true,
		},
		{
			name: "creation observed once of two",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 2) },
				func(v env) { v.e.CreationObserved(k) },
			},
			add: 1, exists: true,
		},
		{
			name: "all creations observed",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 2) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.CreationObserved(k) },
			},
			exists: true, satisfied: true,
		},
		{
			name: "more creations observed than expected",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 1) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.CreationObserved(k) },
			},
			add: -2, exists: true, satisfied: true,
		},
		{
			name: "over-observation does not eat the next round",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 1) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.ExpectCreations(k, 1) },
			},
			add: 1, exists: true,
		},
		{
			name:  "expect deletions",
			steps: []func(env){func(v env) { v.e.ExpectDeletions(k, 3) }},
			del:   3, exists: true,
		},
		{
			name: "all deletions observed",
			steps: []func(env){
				func(v env) { v.e.ExpectDeletions(k, 2) },
				func(v env) { v.e.DeletionObserved(k) },
				func(v env) { v.e.DeletionObserved(k) },
			},
			exists: true, satisfied: true,
		},
		{
			name: "expect deletions replaces pending creations",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 2) },
				func(v env) { v.e.ExpectDeletions(k, 1) },
			},
			del: 1, exists: true,
		},
		{
			name:  "set both",
			steps: []func(env){func(v env) { v.e.SetExpectations(k, 1, 1) }},
			add:   1, del: 1, exists: true,
		},
		{
			name: "set both, creation observed: still waits for the deletion",
			steps: []func(env){
				func(v env) { v.e.SetExpectations(k, 1, 1) },
				func(v env) { v.e.CreationObserved(k) },
			},
			del: 1, exists: true,
		},
		{
			name: "set both, deletion observed: still waits for the creation",
			steps: []func(env){
				func(v env) { v.e.SetExpectations(k, 1, 1) },
				func(v env) { v.e.DeletionObserved(k) },
			},
			add: 1, exists: true,
		},
		{
			name: "set both, both observed",
			steps: []func(env){
				func(v env) { v.e.SetExpectations(k, 1, 1) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.DeletionObserved(k) },
			},
			exists: true, satisfied: true,
		},
		{
			name:  "negative expectation is already met",
			steps: []func(env){func(v env) { v.e.ExpectCreations(k, -1) }},
			add:   -1, exists: true, satisfied: true,
		},
		{
			name:   "zero expectation is already met",
			steps:  []func(env){func(v env) { v.e.SetExpectations(k, 0, 0) }},
			exists: true, satisfied: true,
		},
		{
			name: "observe without record creates nothing",
			steps: []func(env){
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.DeletionObserved(k) },
			},
			satisfied: true,
		},
		{
			name: "lower and raise without record do nothing",
			steps: []func(env){
				func(v env) { v.e.LowerExpectations(k, 1, 1) },
				func(v env) { v.e.RaiseExpectations(k, 3, 3) },
			},
			satisfied: true,
		},
		{
			name: "lower for failed creations",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 5) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.LowerExpectations(k, 4, 0) },
			},
			exists: true, satisfied: true,
		},
		{
			name: "lower both",
			steps: []func(env){
				func(v env) { v.e.SetExpectations(k, 2, 3) },
				func(v env) { v.e.LowerExpectations(k, 1, 1) },
			},
			add: 1, del: 2, exists: true,
		},
		{
			name: "raise after satisfied waits again",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 1) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.RaiseExpectations(k, 1, 2) },
			},
			add: 1, del: 2, exists: true,
		},
		{
			name: "delete expectations",
			steps: []func(env){
				func(v env) { v.e.SetExpectations(k, 4, 4) },
				func(v env) { v.e.DeleteExpectations(k) },
			},
			satisfied: true,
		},
		{
			name: "delete of a missing key is a no-op",
			steps: []func(env){
				func(v env) { v.e.DeleteExpectations(k) },
			},
			satisfied: true,
		},
		{
			name: "keys are independent",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations("ns/other", 1) },
				func(v env) { v.e.CreationObserved(k) },
				func(v env) { v.e.DeleteExpectations(k) },
			},
			satisfied: true, otherKeyHas: true,
		},
		{
			name: "exactly at the TTL still waits",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 1) },
				func(v env) { v.clk.SetTime(epoch.Add(ttl)) },
			},
			add: 1, exists: true,
		},
		{
			name: "past the TTL is satisfied and the record is kept",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 1) },
				func(v env) { v.clk.SetTime(epoch.Add(ttl + time.Nanosecond)) },
			},
			add: 1, exists: true, satisfied: true,
		},
		{
			name: "set restamps an expired record",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 1) },
				func(v env) { v.clk.SetTime(epoch.Add(2 * ttl)) },
				func(v env) { v.e.ExpectCreations(k, 1) },
				func(v env) { v.clk.SetTime(epoch.Add(2*ttl + time.Minute)) },
			},
			add: 1, exists: true,
		},
		{
			name: "raise and lower do not restamp",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 1) },
				func(v env) { v.clk.SetTime(epoch.Add(ttl - time.Second)) },
				func(v env) { v.e.RaiseExpectations(k, 1, 0) },
				func(v env) { v.e.LowerExpectations(k, 1, 0) },
				func(v env) { v.clk.SetTime(epoch.Add(ttl + time.Second)) },
			},
			add: 1, exists: true, satisfied: true,
		},
		{
			name: "observing after expiry still counts",
			steps: []func(env){
				func(v env) { v.e.ExpectCreations(k, 2) },
				func(v env) { v.clk.SetTime(epoch.Add(ttl + time.Second)) },
				func(v env) { v.e.CreationObserved(k) },
			},
			add: 1, exists: true, satisfied: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(epoch)
			v := env{e: expectations.New[string](expectations.WithClock(clk)), clk: clk}
			for _, s := range tc.steps {
				s(v)
			}
			assertRecord(t, v.e, k, tc.add, tc.del, tc.exists, tc.satisfied)
			_, _, other := v.e.Get("ns/other")
			assert.Equal(t, tc.otherKeyHas, other, "other key has a record")
			wantLen := 0
			if tc.exists {
				wantLen++
			}
			if tc.otherKeyHas {
				wantLen++
			}
			assert.Equal(t, wantLen, v.e.Len(), "Len")
		})
	}
}

func TestTTLOption(t *testing.T) {
	cases := []struct {
		name string
		opt  time.Duration
		want time.Duration
	}{
		{"custom", time.Minute, time.Minute},
		{"zero keeps default", 0, expectations.DefaultTTL},
		{"negative keeps default", -time.Second, expectations.DefaultTTL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(epoch)
			e := expectations.New[string](expectations.WithTTL(tc.opt), expectations.WithClock(clk))
			require.Equal(t, tc.want, e.TTL())
			e.ExpectCreations("k", 1)
			clk.SetTime(epoch.Add(tc.want))
			assert.False(t, e.Satisfied("k"), "at the TTL")
			clk.SetTime(epoch.Add(tc.want + time.Millisecond))
			assert.True(t, e.Satisfied("k"), "past the TTL")
		})
	}
}

func TestDefaultsWithoutOptions(t *testing.T) {
	// Real clock, default TTL, nil options ignored: a fresh record is not expired.
	e := expectations.New[int](nil, expectations.WithClock(nil))
	assert.Equal(t, expectations.DefaultTTL, e.TTL())
	e.ExpectCreations(7, 1)
	assert.False(t, e.Satisfied(7))
	e.CreationObserved(7)
	assert.True(t, e.Satisfied(7))
}

type nsName struct{ Namespace, Name string }

func TestStructKeys(t *testing.T) {
	e := expectations.New[nsName]()
	a, b := nsName{"ns", "a"}, nsName{"ns", "b"}
	e.ExpectCreations(a, 1)
	e.ExpectDeletions(b, 1)
	e.CreationObserved(a)
	assert.True(t, e.Satisfied(a))
	assert.False(t, e.Satisfied(b))
	add, del, ok := e.Get(b)
	assert.Equal(t, []any{int64(0), int64(1), true}, []any{add, del, ok})
}

// TestLogging checks the V(4) trace names the key for every kind of transition.
func TestLogging(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4), ktesting.BufferLogs(true)))
	clk := testingclock.NewFakePassiveClock(epoch)
	e := expectations.New[string](expectations.WithClock(clk), expectations.WithLogger(logger))

	e.Satisfied("none")
	e.ExpectCreations("ns/a", 2)
	e.CreationObserved("ns/a")
	e.Satisfied("ns/a")
	e.CreationObserved("ns/a")
	e.Satisfied("ns/a")
	e.ExpectDeletions("ns/b", 1)
	clk.SetTime(epoch.Add(expectations.DefaultTTL + time.Second))
	e.Satisfied("ns/b")
	e.DeleteExpectations("ns/b")

	type entry struct{ msg, key string }
	var got []entry
	for _, le := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		assert.Equal(t, 4, le.Verbosity, le.Message)
		var key string
		for i := 0; i+1 < len(le.ParameterKVList); i += 2 {
			if le.ParameterKVList[i] == "key" {
				key, _ = le.ParameterKVList[i+1].(string)
			}
		}
		got = append(got, entry{le.Message, key})
	}
	assert.Equal(t, []entry{
		{"No expectations recorded", "none"},
		{"Setting expectations", "ns/a"},
		{"Observed creation", "ns/a"},
		{"Still waiting on expectations", "ns/a"},
		{"Observed creation", "ns/a"},
		{"Expectations satisfied", "ns/a"},
		{"Setting expectations", "ns/b"},
		{"Expectations expired", "ns/b"},
		{"Deleted expectations", "ns/b"},
	}, got)
}

// TestNoLogsBelowV4 checks that a logger at a lower verbosity gets nothing.
func TestNoLogsBelowV4(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(3), ktesting.BufferLogs(true)))
	e := expectations.New[string](expectations.WithLogger(logger))
	e.ExpectCreations("k", 1)
	e.CreationObserved("k")
	e.Satisfied("k")
	assert.Empty(t, logger.GetSink().(ktesting.Underlier).GetBuffer().Data())
}
