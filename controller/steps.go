package controller

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// pipeline builds the worker pipeline's steps for one Run, in their order:
// admit (Admission), pace (debounce, MinInterval, Limiters), hold (a lagging cache:
// Freshness.MaxLag; write fences), decorate the context (reconcile
// ID, logger, provenance; tracing; timeout). A feature that is off adds no
// step, so it costs the loop nothing.
func (c *Controller[K]) pipeline(ft *fenceTable[K], d *debouncer[K], b *breaker[K]) []step[K] {
	var steps []step[K]
	if c.admission != nil {
		steps = append(steps, admitStep[K]{c: c, a: c.admission})
	}
	if d != nil || c.minInterval > 0 || len(c.limiters) > 0 {
		steps = append(steps, newPaceStep(c, d))
	}
	if b != nil {
		steps = append(steps, staleStep[K]{b: b, carry: c.provenance})
	}
	if ft != nil {
		steps = append(steps, fenceStep[K]{ft: ft, carry: c.provenance})
	}
	steps = append(steps, contextStep[K]{provenance: c.provenance, level: c.provLevel})
	if c.tracing != nil {
		steps = append(steps, tracingStep[K]{t: c.tracing, name: c.name, provenance: c.provenance})
	}
	if c.timeout > 0 {
		steps = append(steps, timeoutStep[K]{cm: c.cm, d: c.timeout})
	}
	return steps
}

// admitStep asks the Admission (SetAdmission) whether the key is reconciled
// here and now, and releases it once its result is handled.
type admitStep[K comparable] struct {
	c *Controller[K]
	a Admission[K]
}

func (s admitStep[K]) enter(w *work[K]) bool {
	if s.a.Admit(w.key) {
		return true
	}
	// Dropped: the admission step queues the key again itself if it should
	// run later, so its retries start over.
	w.q.forget(w.key)
	s.c.retries.clear(w.key)
	return false
}

// exit runs before the key is handed back, so no other worker can take it
// before Release.
func (s admitStep[K]) exit(w *work[K]) { s.a.Release(w.key) }

// fenceStep holds back a key whose last Reconcile's writes the cache does
// not show yet, and records the fences of the Reconcile it lets through.
type fenceStep[K comparable] struct {
	ft    *fenceTable[K]
	carry bool // provenance: a released key's reasons join the next ones
}

func (s fenceStep[K]) enter(w *work[K]) bool {
	if s.carry {
		w.why = s.ft.takeCarry(w.key, w.why)
	}
	if s.ft.hold(w.key, w.why) {
		// The release (an informer event, or the TTL) queues it again.
		w.logger.V(4).Info("Holding the key until the informer shows its last writes", "key", w.key)
		return false
	}
	w.ctx, _ = s.ft.recorder(w.ctx, w.key)
	return true
}

func (s fenceStep[K]) exit(*work[K]) { s.ft.reconciled() }

// contextStep gives the Reconcile its ID, a logger with the controller, key
// and ID, and (with provenance) its reasons, announced on a "Reconciling"
// line.
type contextStep[K comparable] struct {
	provenance bool
	level      int // of the "Reconciling" line; < 0: none
}

func (s contextStep[K]) enter(w *work[K]) bool {
	w.id = newReconcileID()
	logger := w.logger.WithValues("key", w.key, "reconcileID", w.id)
	w.rlog = logger
	ctx := klog.NewContext(w.ctx, logger)
	if !s.provenance {
		w.ctx = withReconcile(ctx, w.id, nil)
		return true
	}
	w.ctx = withReconcile(ctx, w.id, &w.why)
	if l := logger.V(s.level); s.level >= 0 && l.Enabled() {
		l.Info("Reconciling", "reasons", w.why)
	}
	return true
}

func (contextStep[K]) exit(*work[K]) {}

// tracingStep puts each Reconcile in an OpenTelemetry span.
type tracingStep[K comparable] struct {
	t          *tracing[K]
	name       string
	provenance bool
}

func (s tracingStep[K]) enter(w *work[K]) bool {
	var why *provenance.Reasons
	if s.provenance {
		why = &w.why
	}
	w.ctx, w.span = s.t.start(w.ctx, s.name, w.key, string(w.id), why)
	return true
}

func (s tracingStep[K]) exit(w *work[K]) {
	span := w.span
	w.span = nil
	if !w.handled { // a panic passing through
		span.End()
		return
	}
	s.t.end(span, w.key, w.res, w.err, w.requeued)
}

// timeoutStep puts a deadline on each Reconcile and counts the ones that
// ran out of time (not the ones cut short by shutdown).
type timeoutStep[K comparable] struct {
	cm *controllerMetrics
	d  time.Duration
}

func (s timeoutStep[K]) enter(w *work[K]) bool {
	w.ctx, w.cancel = context.WithTimeout(w.ctx, s.d)
	return true
}

func (s timeoutStep[K]) exit(w *work[K]) {
	if w.handled && w.run.Err() == nil && errors.Is(w.ctx.Err(), context.DeadlineExceeded) {
		s.cm.timedOut()
	}
	w.cancel()
	w.cancel = nil
}
