package expectations_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/expectations"
)

// The model: the plainest possible statement of the rules in doc.go (kube-controller-manager's
// expectations, as kubernetes' pkg/controller implements them). Each op of a program is three
// bytes (op, key, argument), so the same interpreter serves the seeded random test and the fuzz
// target.

const (
	modelTTL  = time.Minute
	modelKeys = 4
	modelStep = 10 * time.Second // a multiple of modelTTL, so "exactly at the TTL" is reached
)

type modelRecord struct {
	add, del int64
	stamp    time.Time
}

type model struct {
	now     time.Time
	records map[string]*modelRecord
	uids    map[string]sets.Set[types.UID]
}

func newModel() *model {
	return &model{now: epoch, records: map[string]*modelRecord{}, uids: map[string]sets.Set[types.UID]{}}
}

func (m *model) set(k string, add, del int) {
	m.records[k] = &modelRecord{add: int64(add), del: int64(del), stamp: m.now}
}

func (m *model) adjust(k string, add, del int) {
	if r := m.records[k]; r != nil {
		r.add += int64(add)
		r.del += int64(del)
	}
}

func (m *model) satisfied(k string) bool {
	r := m.records[k]
	return r == nil || (r.add <= 0 && r.del <= 0) || m.now.Sub(r.stamp) > modelTTL
}

func keyOf(b byte) string { return fmt.Sprintf("ns/k%d", b%modelKeys) }

// small maps a byte onto -1..4, so negative and zero expectations occur.
func small(b byte) int { return int(b%6) - 1 }

// store is what the counting and the UID-tracking stores share.
type store interface {
	ExpectCreations(k string, n int)
	CreationObserved(k string)
	LowerExpectations(k string, add, del int)
	RaiseExpectations(k string, add, del int)
	DeleteExpectations(k string)
	Get(k string) (add, del int64, exists bool)
	Satisfied(k string) bool
	Len() int
}

// checkAll compares every key of the store with the model.
func checkAll(t *testing.T, trace []string, m *model, s store) {
	t.Helper()
	for i := range modelKeys {
		k := keyOf(byte(i))
		add, del, ok := s.Get(k)
		r := m.records[k]
		if ok != (r != nil) || (r != nil && (add != r.add || del != r.del)) {
			t.Fatalf("Get(%s) = (%d, %d, %v), model %+v\nops:\n%v", k, add, del, ok, r, trace)
		}
		if got, want := s.Satisfied(k), m.satisfied(k); got != want {
			t.Fatalf("Satisfied(%s) = %v, model says %v (record %+v, now %v)\nops:\n%v", k, got, want, r, m.now.Sub(epoch), trace)
		}
	}
}

// modelOp is one operation of a program: it applies argument a to key k, on the store and on
// the model, and says what it did.
type modelOp func(k string, a byte) string

// runProgram interprets prog, three bytes an op (op, key, argument), with ops numbered by
// their index, runs check after each op with the trace so far, and returns the trace.
func runProgram(prog []byte, ops []modelOp, check func(trace []string)) []string {
	var trace []string
	for i := 0; i+2 < len(prog); i += 3 {
		op := ops[int(prog[i])%len(ops)]
		trace = append(trace, op(keyOf(prog[i+1]), prog[i+2]))
		check(trace)
	}
	return trace
}

// The ops both stores have. lower and raise take a deletion count from the argument only
// when deletions says so (the UID-tracking store counts deletions by UID).

func expectCreationsOp(s store, m *model) modelOp {
	return func(k string, a byte) string {
		n := small(a)
		s.ExpectCreations(k, n)
		m.set(k, n, 0)
		return fmt.Sprintf("ExpectCreations(%s, %d)", k, n)
	}
}

func creationObservedOp(s store, m *model) modelOp {
	return func(k string, _ byte) string {
		s.CreationObserved(k)
		m.adjust(k, -1, 0)
		return fmt.Sprintf("CreationObserved(%s)", k)
	}
}

func lowerOp(s store, m *model, deletions bool) modelOp {
	return func(k string, a byte) string {
		add, del := int(a%4), 0
		if deletions {
			del = int(a / 4 % 4)
		}
		s.LowerExpectations(k, add, del)
		m.adjust(k, -add, -del)
		return fmt.Sprintf("LowerExpectations(%s, %d, %d)", k, add, del)
	}
}

func raiseOp(s store, m *model, deletions bool) modelOp {
	return func(k string, a byte) string {
		add, del := int(a%4), 0
		if deletions {
			del = int(a / 4 % 4)
		}
		s.RaiseExpectations(k, add, del)
		m.adjust(k, add, del)
		return fmt.Sprintf("RaiseExpectations(%s, %d, %d)", k, add, del)
	}
}

func deleteOp(s store, m *model) modelOp {
	return func(k string, _ byte) string {
		s.DeleteExpectations(k)
		delete(m.records, k)
		delete(m.uids, k)
		return fmt.Sprintf("DeleteExpectations(%s)", k)
	}
}

func stepOp(clk *testingclock.FakePassiveClock, m *model) modelOp {
	return func(_ string, a byte) string {
		d := time.Duration(a%16) * modelStep
		clk.SetTime(clk.Now().Add(d))
		m.now = m.now.Add(d)
		return fmt.Sprintf("Step(%v)", d)
	}
}

func checkOp(string, byte) string { return "Check" }

func runExpectationsProgram(t *testing.T, prog []byte) {
	clk := testingclock.NewFakePassiveClock(epoch)
	e := expectations.New[string](expectations.WithClock(clk), expectations.WithTTL(modelTTL))
	m := newModel()
	ops := []modelOp{
		expectCreationsOp(e, m),
		func(k string, a byte) string {
			n := small(a)
			e.ExpectDeletions(k, n)
			m.set(k, 0, n)
			return fmt.Sprintf("ExpectDeletions(%s, %d)", k, n)
		},
		func(k string, a byte) string {
			add, del := small(a), small(a/6)
			e.SetExpectations(k, add, del)
			m.set(k, add, del)
			return fmt.Sprintf("SetExpectations(%s, %d, %d)", k, add, del)
		},
		creationObservedOp(e, m),
		func(k string, _ byte) string {
			e.DeletionObserved(k)
			m.adjust(k, 0, -1)
			return fmt.Sprintf("DeletionObserved(%s)", k)
		},
		lowerOp(e, m, true),
		raiseOp(e, m, true),
		deleteOp(e, m),
		stepOp(clk, m),
		checkOp,
	}
	trace := runProgram(prog, ops, func(trace []string) { checkAll(t, trace, m, e) })
	if e.Len() != len(m.records) {
		t.Fatalf("Len() = %d, model has %d\nops:\n%v", e.Len(), len(m.records), trace)
	}
}

func uidOf(b byte) types.UID { return types.UID(fmt.Sprintf("uid-%d", b%7)) }

func runUIDProgram(t *testing.T, prog []byte) {
	clk := testingclock.NewFakePassiveClock(epoch)
	u := expectations.NewUIDTracking[string](expectations.WithClock(clk), expectations.WithTTL(modelTTL))
	m := newModel()
	ops := []modelOp{
		expectCreationsOp(u, m),
		func(k string, a byte) string {
			// The low six bits pick from uid-0..uid-5 (uid-6 is never expected); bit 7
			// repeats the first pick, to exercise duplicates.
			var uids []types.UID
			for bit := range 6 {
				if a&(1<<bit) != 0 {
					uids = append(uids, uidOf(byte(bit)))
				}
			}
			if a&0x80 != 0 && len(uids) > 0 {
				uids = append(uids, uids[0])
			}
			u.ExpectDeletions(k, uids)
			set := sets.New(uids...)
			m.uids[k] = set
			m.set(k, 0, set.Len())
			return fmt.Sprintf("ExpectDeletions(%s, %v)", k, uids)
		},
		creationObservedOp(u, m),
		func(k string, a byte) string {
			uid := uidOf(a)
			u.DeletionObserved(k, uid)
			if m.uids[k].Has(uid) {
				m.uids[k].Delete(uid)
				m.adjust(k, 0, -1)
			}
			return fmt.Sprintf("DeletionObserved(%s, %s)", k, uid)
		},
		lowerOp(u, m, false),
		raiseOp(u, m, false),
		deleteOp(u, m),
		stepOp(clk, m),
		checkOp,
	}
	runProgram(prog, ops, func(trace []string) {
		checkAll(t, trace, m, u)
		for j := range modelKeys {
			k := keyOf(byte(j))
			got, want := u.GetUIDs(k), m.uids[k]
			if (got == nil) != (want == nil) || !got.Equal(want) {
				t.Fatalf("GetUIDs(%s) = %v, model %v\nops:\n%v", k, sets.List(got), sets.List(want), trace)
			}
		}
	})
}

func randomPrograms(t *testing.T, run func(*testing.T, []byte)) {
	programs, length := 400, 300
	if testing.Short() {
		programs = 50
	}
	for i := range programs {
		r := rand.New(rand.NewPCG(20260102, uint64(i)))
		prog := make([]byte, 3*length)
		for j := range prog {
			prog[j] = byte(r.UintN(256))
		}
		run(t, prog)
	}
}

// TestModelExpectations: for random interleavings of every operation and clock steps,
// Get and Satisfied agree with the model after each step.
func TestModelExpectations(t *testing.T) { randomPrograms(t, runExpectationsProgram) }

// TestModelUIDTracking: the same for the UID-tracking store, including its UID sets.
func TestModelUIDTracking(t *testing.T) { randomPrograms(t, runUIDProgram) }

func FuzzExpectationsModel(f *testing.F) {
	f.Add([]byte{0, 0, 3, 3, 0, 0, 9, 0, 0, 8, 0, 6, 9, 0, 0, 8, 0, 1, 9, 0, 0})
	f.Add([]byte{2, 1, 20, 3, 1, 0, 4, 1, 0, 5, 1, 5, 6, 1, 9, 7, 1, 0})
	f.Fuzz(runExpectationsProgram)
}

func FuzzUIDTrackingModel(f *testing.F) {
	f.Add([]byte{1, 0, 0x83, 3, 0, 0, 3, 0, 0, 3, 0, 1, 7, 0, 7, 6, 0, 0})
	f.Add([]byte{0, 2, 3, 1, 2, 0x3f, 2, 2, 0, 3, 2, 6, 7, 2, 15, 8, 2, 0})
	f.Fuzz(runUIDProgram)
}
