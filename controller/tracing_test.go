package controller_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/controller"
)

// One span per Reconcile, in the Reconcile's context, carrying the reasons; a retry's span
// links to the span of the call that failed.
func TestReconcileSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	var calls atomic.Int32
	var inCtx atomic.Bool
	c, err := controller.New("traced", controller.ReconcilerFunc[string](func(ctx context.Context, _ string) (controller.Result, error) {
		inCtx.Store(trace.SpanFromContext(ctx).SpanContext().IsValid())
		if calls.Add(1) == 1 {
			return controller.Result{}, errors.New("boom")
		}
		return controller.Result{}, nil
	}), controller.Options[string]{
		Provenance:     &controller.Provenance{LogLevel: -1},
		TracerProvider: tp,
		RateLimiter:    kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Enqueue("k")
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool { return len(rec.Ended()) == 2 }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	assert.True(t, inCtx.Load(), "the span is in the Reconcile's context")
	spans := rec.Ended()
	first, second := spans[0], spans[1]
	assert.Equal(t, "Reconcile traced", first.Name())
	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value
		}
		return m
	}
	a1, a2 := attrs(first), attrs(second)
	assert.Equal(t, "traced", a1[attribute.Key("ctrlkit.controller")].AsString())
	assert.Equal(t, "k", a1[attribute.Key("ctrlkit.key")].AsString())
	assert.NotEmpty(t, a1[attribute.Key("ctrlkit.reconcile_id")].AsString())
	assert.Equal(t, "manual", a1[attribute.Key("ctrlkit.reasons.first")].AsString())
	assert.Equal(t, int64(1), a1[attribute.Key("ctrlkit.reasons.count.manual")].AsInt64())
	assert.Equal(t, "error", a1[attribute.Key("ctrlkit.result")].AsString())
	assert.Equal(t, codes.Error, first.Status().Code)
	assert.Equal(t, "retry#1", a2[attribute.Key("ctrlkit.reasons.first")].AsString())
	assert.Equal(t, "success", a2[attribute.Key("ctrlkit.result")].AsString())
	require.Len(t, second.Links(), 1, "the retry links to the failed call")
	assert.Equal(t, first.SpanContext().SpanID(), second.Links()[0].SpanContext.SpanID())
	assert.Empty(t, first.Links())
}

// The span is in the context Reconcile passes to client-go, and client-go hands that context
// to the HTTP transport: a transport instrumented with OpenTelemetry (rest.Config.WrapTransport,
// here a minimal one) makes each API request a child of the reconcile's span.
func TestReconcileSpanReachesTheTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":"cm","resourceVersion":"7"}}`))
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			ctx, span := tp.Tracer("http").Start(req.Context(), "HTTP "+req.Method)
			defer span.End()
			return rt.RoundTrip(req.WithContext(ctx))
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	done := make(chan struct{})
	c, err := controller.New("traced", controller.ReconcilerFunc[string](func(ctx context.Context, _ string) (controller.Result, error) {
		defer close(done)
		_, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, "cm", metav1.GetOptions{})
		return controller.Result{}, err
	}), controller.Options[string]{TracerProvider: tp})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Enqueue("k")
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-done
	cancel()
	require.NoError(t, <-stopped)

	var reconcile, request sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "Reconcile traced":
			reconcile = s
		case "HTTP GET":
			request = s
		}
	}
	require.NotNil(t, reconcile)
	require.NotNil(t, request, "the request made a span")
	assert.Equal(t, reconcile.SpanContext().SpanID(), request.Parent().SpanID(), "the request is a child of the reconcile")
	assert.Equal(t, reconcile.SpanContext().TraceID(), request.SpanContext().TraceID())
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// With a TracerProvider every Reconcile runs in its own span, with the reasons (here an
// Enqueue, then the retry of a failed call) as attributes; the retry's span links to the span
// of the call that failed.
func ExampleOptions_tracerProvider() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	var calls atomic.Int32
	done := make(chan struct{})
	c, _ := controller.New("traced", controller.ReconcilerFunc[string](func(ctx context.Context, _ string) (controller.Result, error) {
		if calls.Add(1) == 1 {
			return controller.Result{}, errors.New("try again")
		}
		close(done)
		return controller.Result{}, nil
	}), controller.Options[string]{
		TracerProvider: tp,
		Provenance:     &controller.Provenance{},
		RateLimiter:    kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond),
	})
	c.Enqueue("k")
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-done
	cancel()
	<-stopped

	for _, s := range rec.Ended() {
		attrs := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value.Emit()
		}
		fmt.Println(s.Name(), "key:", attrs[attribute.Key("ctrlkit.key")], "reasons:", attrs[attribute.Key("ctrlkit.reasons.first")],
			"result:", attrs[attribute.Key("ctrlkit.result")], "links:", len(s.Links()))
	}
	// Output:
	// Reconcile traced key: k reasons: manual result: error links: 0
	// Reconcile traced key: k reasons: retry#1 result: success links: 1
}
