package serving_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/manager/internal/serving"
)

// A request in flight when Shutdown begins sees its context end, so a handler waiting on
// something that never answers (a TokenReview to an unreachable API server) returns at once
// instead of holding the shutdown until its deadline.
func TestShutdownEndsTheRequestsInFlight(t *testing.T) {
	entered, ended := make(chan struct{}), make(chan error, 1)
	wait := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
		ended <- r.Context().Err()
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	servers, err := serving.Start(klog.Background(), serving.DefaultTimeouts,
		serving.Site{Name: "metrics", Addr: "127.0.0.1:0", Paths: map[string]http.Handler{"/metrics": wait}})
	require.NoError(t, err)
	client := &http.Client{}
	defer client.CloseIdleConnections()
	asked := make(chan error, 1)
	go func() {
		resp, err := client.Get("http://" + servers.Addr("metrics") + "/metrics")
		if err == nil {
			_ = resp.Body.Close()
		}
		asked <- err
	}()
	<-entered
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	servers.Shutdown(logger)
	assert.True(t, errors.Is(<-ended, context.Canceled), "the handler's context ended")
	<-asked
	assert.NotContains(t, logger.GetSink().(ktesting.Underlier).GetBuffer().String(), "HTTP server shutdown",
		"the server shut down cleanly, not at its deadline")
}
