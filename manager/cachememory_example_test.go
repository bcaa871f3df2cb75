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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
)

// scrape returns the lines of h's answer to GET path that start with prefix.
func scrape(h http.Handler, path, prefix string) (int, []string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var out []string
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, prefix) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return rec.Code, out
}

// The informer caches' memory on /metrics (ctrlkit_informer_objects and
// ctrlkit_informer_bytes per informer) and on /debug/informers; with a
// memory budget of policy BudgetFailReadiness, /readyz fails while the
// caches are over it.
func ExampleManager_DebugInformersHandler() {
	var pods []runtime.Object
	for i := range 3 {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("web-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}})
	}
	mgr, err := manager.New(manager.Options{
		Client: fake.NewClientset(pods...),
		Cache:  informer.Options{MemoryBudget: 1000, BudgetPolicy: informer.BudgetFailReadiness},
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
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, lines := scrape(mgr.MetricsHandler(), "/metrics", "ctrlkit_informer_objects{")
		return len(lines) == 1 && strings.HasSuffix(lines[0], " 3"), nil
	})

	_, lines := scrape(mgr.MetricsHandler(), "/metrics", "ctrlkit_informer_objects{")
	fmt.Println(lines[0])
	_, lines = scrape(mgr.DebugInformersHandler(), manager.DebugInformersPath, "pods ")
	fmt.Println(strings.Fields(lines[0])[:3])
	code, lines := scrape(mgr.ReadyzHandler(), "/readyz", "")
	fmt.Println(code, strings.Contains(lines[0], "over their memory budget of 1000 B"))

	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	// Output:
	// ctrlkit_informer_objects{resource="pods",scope="cluster"} 3
	// [pods cluster 3]
	// 503 true
}
