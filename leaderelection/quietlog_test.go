package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// A normal shutdown cancels the engine's request in flight: client-go's "Error retrieving
// lease lock: context canceled" is then not logged as an error (it was, on every SIGTERM).
func TestRunDoesNotLogTheShutdownsCancelledRequestAsAnError(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done() // an API server that does not answer before the shutdown
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, client, Config{Namespace: "ns", Name: "quiet", Identity: "a"}, Callbacks{
			OnStartedLeading: func(ctx context.Context) { <-ctx.Done() }, OnStoppedLeading: func() {},
		})
	}()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the elector did not ask for the Lease")
	}
	cancel()
	require.NoError(t, <-done)

	var seen bool
	for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		assert.NotEqual(t, ktesting.LogError, e.Type, "logged as an error: %s %v", e.Message, e.Err)
		if e.Message == "Error retrieving lease lock" {
			seen = true
		}
	}
	assert.True(t, seen, "client-go's message is still there, at V(4)")
}

// Every other error is logged as it is.
func TestShutdownQuietKeepsOtherErrors(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
	quiet := shutdownQuiet(logger).WithValues("lease", "ns/x").WithName("engine")
	quiet.Error(errors.New("connection refused"), "Error retrieving lease lock")
	quiet.Error(fmt.Errorf("get: %w", context.Canceled), "Error retrieving lease lock")
	data := logger.GetSink().(ktesting.Underlier).GetBuffer().Data()
	require.Len(t, data, 2)
	assert.Equal(t, ktesting.LogError, data[0].Type)
	assert.Equal(t, ktesting.LogInfo, data[1].Type)
	assert.Equal(t, cancelledLevel, data[1].Verbosity)
}
