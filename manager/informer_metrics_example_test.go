package manager_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
)

// informerSeries returns the informer_* lines of h's /metrics for the
// factory named name, without their values.
func informerSeries(h http.Handler, name string) []string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var out []string
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "informer_") && !strings.Contains(line, "_bucket{") &&
			strings.Contains(line, fmt.Sprintf("name=%q", name)) {
			series, _, _ := strings.Cut(line, " ")
			out = append(out, series)
		}
	}
	return out
}

// The typed informers of the factory a Manager builds report client-go's
// informer series, labelled with the factory's name and the resource: here
// the name is set with informer.Options.InformerName (the default is
// "ctrlkit-manager-<n>"). Once the Manager stopped, its factory released the
// name and the series are gone.
func ExampleManager_MetricsHandler_informers() {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	mgr, err := manager.New(manager.Options{
		Client: client,
		Cache:  informer.Options{InformerName: "example-informers"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := informer.For[*corev1.Pod](mgr.Factory()); err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var series []string
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		series = informerSeries(mgr.MetricsHandler(), "example-informers")
		return len(series) == 4, nil // three series, the histogram as _sum and _count
	})
	if err != nil {
		fmt.Println("no informer series:", series)
	}
	for _, s := range series {
		fmt.Println(s)
	}

	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	fmt.Println("after Stop:", len(informerSeries(mgr.MetricsHandler(), "example-informers")))
	// Output:
	// informer_processing_latency_seconds_sum{group="",name="example-informers",resource="pods",version="v1"}
	// informer_processing_latency_seconds_count{group="",name="example-informers",resource="pods",version="v1"}
	// informer_queued_items{group="",name="example-informers",resource="pods",version="v1"}
	// informer_store_resource_version{group="",name="example-informers",resource="pods",version="v1"}
	// after Stop: 0
}
