package manager_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/manager"
)

// hung is a Runnable that ignores its context until unblock is closed.
type hung struct{ unblock chan struct{} }

func (hung) Name() string                { return "exporter" }
func (hung) NeedLeaderElection() bool    { return false }
func (h hung) Run(context.Context) error { <-h.unblock; return nil }

// A Runnable that does not return within GracefulShutdownTimeout after
// Start's context ended is abandoned: Start logs it ("Abandoning a
// controller that did not stop within the graceful shutdown timeout"
// controller="exporter") and returns an error naming it; the binary should
// exit non-zero.
func ExampleShutdownTimeoutError() {
	mgr, _ := manager.New(manager.Options{
		Client:                  fake.NewClientset(),
		GracefulShutdownTimeout: 10 * time.Millisecond,
	})
	h := hung{unblock: make(chan struct{})}
	defer close(h.unblock) // this example's own cleanup; a binary would exit instead
	_ = mgr.Add(h)

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // already asked to stop
	err := mgr.Start(ctx)
	var ste *manager.ShutdownTimeoutError
	if errors.As(err, &ste) {
		fmt.Println("abandoned:", ste.Runnables, errors.Is(err, manager.ErrShutdownTimeout))
	}
	// Output: abandoned: [exporter] true
}

// Every Manager's /metrics carries client-go's own series: its REST
// client's requests by code, host and method (with latencies by verb and
// host), and leader_election_master_status.
func ExampleManager_MetricsHandler_clientGo() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
	}))
	defer api.Close()
	client, _ := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	mgr, _ := manager.New(manager.Options{Client: client})
	_, _ = client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})

	rec := httptest.NewRecorder()
	mgr.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	host := strings.TrimPrefix(api.URL, "http://")
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "rest_client_requests_total{") && strings.Contains(line, host) {
			fmt.Print(strings.ReplaceAll(line, host, "API"))
		}
	}
	// Output: rest_client_requests_total{code="200",host="API",method="GET"} 1
}
