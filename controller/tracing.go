package controller

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// tracerScope is the instrumentation scope name of the spans a controller starts.
const tracerScope = "github.com/ctrlkit/ctrlkit/controller"

// Span attribute keys of a reconcile's span. The reasons attributes are set only with
// Options.Provenance.
const (
	attrController   = attribute.Key("ctrlkit.controller")
	attrKey          = attribute.Key("ctrlkit.key")
	attrReconcileID  = attribute.Key("ctrlkit.reconcile_id")
	attrReasonsTotal = attribute.Key("ctrlkit.reasons.total")
	attrReasonsFirst = attribute.Key("ctrlkit.reasons.first")
	attrReasonsLast  = attribute.Key("ctrlkit.reasons.last")
	// attrReasonsCountPrefix is followed by a trigger kind ("event", "retry", ...) for the
	// number of triggers of that kind: ctrlkit.reasons.count.event.
	attrReasonsCountPrefix = "ctrlkit.reasons.count."
	// attrResult is "success", "requeue", "requeue_after", "error" or "terminal_error".
	attrResult = attribute.Key("ctrlkit.result")
)

// tracing is a controller's span bookkeeping: the tracer, and the span context of the
// reconcile that put a key back (retry, Requeue, RequeueAfter), so the next reconcile of the
// key links to it.
type tracing[K comparable] struct {
	tracer trace.Tracer
	mu     sync.Mutex
	prev   map[K]trace.SpanContext
}

func newTracing[K comparable](tp trace.TracerProvider) *tracing[K] {
	if tp == nil {
		return nil
	}
	return &tracing[K]{tracer: tp.Tracer(tracerScope), prev: make(map[K]trace.SpanContext)}
}

// start begins the span of one reconcile of key. The span is in the returned context, so API
// requests made with it (through a transport instrumented with OpenTelemetry, for example
// rest.Config.WrapTransport with otelhttp) are its children.
func (t *tracing[K]) start(ctx context.Context, controller string, key K, id string, why *provenance.Reasons) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		attrController.String(controller),
		attrKey.String(fmt.Sprint(key)),
		attrReconcileID.String(id),
	}
	if why != nil {
		attrs = append(attrs, attrReasonsTotal.Int(why.Total))
		if why.Total > 0 {
			attrs = append(attrs, attrReasonsFirst.String(why.First.String()), attrReasonsLast.String(why.Last.String()))
		}
		for k := range provenance.TriggerFence + 1 {
			if n := why.Count(k); n > 0 {
				attrs = append(attrs, attribute.Int(attrReasonsCountPrefix+k.String(), n))
			}
		}
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal)}
	t.mu.Lock()
	if sc, ok := t.prev[key]; ok {
		delete(t.prev, key)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("ctrlkit.link", "requeued_by")}}))
	}
	t.mu.Unlock()
	return t.tracer.Start(ctx, "Reconcile "+controller, opts...)
}

// end records the outcome and, when the key was put back by the loop, remembers the span so
// the next reconcile links to it.
func (t *tracing[K]) end(span trace.Span, key K, res Result, err error, requeued bool) {
	switch {
	case err != nil && IsTerminal(err):
		span.SetAttributes(attrResult.String("terminal_error"))
		span.SetStatus(codes.Error, err.Error())
	case err != nil:
		span.SetAttributes(attrResult.String("error"))
		span.SetStatus(codes.Error, err.Error())
	case res.RequeueAfter > 0:
		span.SetAttributes(attrResult.String("requeue_after"))
	case res.Requeue:
		span.SetAttributes(attrResult.String("requeue"))
	default:
		span.SetAttributes(attrResult.String("success"))
	}
	if requeued {
		t.mu.Lock()
		t.prev[key] = span.SpanContext()
		t.mu.Unlock()
	}
	span.End()
}
