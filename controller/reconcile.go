package controller

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// Reconciler drives the world towards the state a key describes. Reconcile
// reads what it needs (usually from informer listers), writes through a
// client, and reports what should happen to the key next.
//
// Reconcile must be idempotent: the same key can be handed to it again at any
// time (a new event, a resync, a retry), but never to two workers at once.
type Reconciler[K comparable] interface {
	Reconcile(ctx context.Context, key K) (Result, error)
}

// ReconcilerFunc adapts a function to a Reconciler.
type ReconcilerFunc[K comparable] func(ctx context.Context, key K) (Result, error)

// Reconcile calls f(ctx, key).
func (f ReconcilerFunc[K]) Reconcile(ctx context.Context, key K) (Result, error) {
	return f(ctx, key)
}

// Result tells the worker loop what to do with a key after a Reconcile that
// returned a nil error. The zero Result means "done until the next event".
//
// With a non-nil error the Result is ignored except for Priority: the error
// policy (Options.Retry; Terminal errors are never retried) decides.
type Result struct {
	// Requeue asks for another pass through the rate limiter. The pass
	// succeeded, so the key's failure history is forgotten first: the delay
	// is the limiter's first step (5 ms with the default limiter, which also
	// applies its overall 10 qps / 100 burst bucket).
	Requeue bool

	// RequeueAfter, when > 0, adds the key back after this delay (it wins
	// over Requeue). Use it for work that must be re-checked at a known time,
	// such as an expiry. Returned together with an error it is ignored, and
	// the log says so.
	RequeueAfter time.Duration

	// Priority, when non-nil, is the queue priority of the requeue (retry,
	// Requeue or RequeueAfter). Higher is handed out first. It is honoured
	// only when the controller's queue supports priorities (the default
	// ctrlkit queue does); nil means the queue's default priority (0).
	Priority *int
}

// IsZero reports whether r asks for nothing: no requeue, no delay, no
// priority.
func (r Result) IsZero() bool {
	return !r.Requeue && r.RequeueAfter <= 0 && r.Priority == nil
}

// reconcileKey keys the one context value a Reconcile's context gets: its *reconcileInfo.
type reconcileKey struct{}

// reconcileInfo is what a Reconcile's context carries, in one value (one allocation).
type reconcileInfo struct {
	id  types.UID
	why *provenance.Reasons // nil without provenance
}

// reconcileInfoWithReasons holds the info and the reasons it points to in one allocation.
type reconcileInfoWithReasons struct {
	reconcileInfo
	why provenance.Reasons
}

// ReconcileIDFrom returns the ID of the Reconcile call ctx belongs to: a UUID new for every
// call, also on the call's log lines as reconcileID (controller-runtime's name), so the lines
// and API requests of one reconcile can be told from the next one's. It is "" outside a
// Reconcile.
func ReconcileIDFrom(ctx context.Context) types.UID {
	info, _ := ctx.Value(reconcileKey{}).(*reconcileInfo)
	if info == nil {
		return ""
	}
	return info.id
}

// withReconcile puts the reconcile's ID and, when why is not nil, a copy of its reasons into
// ctx.
func withReconcile(ctx context.Context, id types.UID, why *provenance.Reasons) context.Context {
	if why == nil {
		return context.WithValue(ctx, reconcileKey{}, &reconcileInfo{id: id})
	}
	v := &reconcileInfoWithReasons{reconcileInfo: reconcileInfo{id: id}, why: *why}
	v.reconcileInfo.why = &v.why
	return context.WithValue(ctx, reconcileKey{}, &v.reconcileInfo)
}

// newReconcileID returns a random (version 4) UUID for one Reconcile. Its bits come from
// math/rand/v2's generator (ChaCha8, seeded by the runtime, one state per thread: no lock, no
// system call) instead of crypto/rand, which k8s.io/apimachinery's uuid.NewUUID reads with a
// system call per ID: an ID correlates one Reconcile's log lines and requests and guards
// nothing, so it needs uniqueness (122 random bits), not secrecy.
func newReconcileID() types.UID {
	const hex = "0123456789abcdef"
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	var s [36]byte
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hex[c>>4], hex[c&0x0f]
		j += 2
	}
	return types.UID(s[:])
}
