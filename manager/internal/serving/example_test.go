package serving_test

import (
	"fmt"
	"io"
	"net/http"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/manager/internal/serving"
)

// Two sites on ports picked by the system: each gets a server of its own,
// whose address Addr names once Start returned.
func ExampleStart() {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	servers, err := serving.Start(klog.Background(), serving.DefaultTimeouts,
		serving.Site{Name: "health", Addr: "127.0.0.1:0", Paths: map[string]http.Handler{"/healthz": ok}},
		serving.Site{Name: "metrics", Addr: "127.0.0.1:0", Paths: map[string]http.Handler{"/metrics": ok}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := http.Get("http://" + servers.Addr("health") + "/healthz")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body), servers.Addr("health") != servers.Addr("metrics"))
	servers.Shutdown(klog.Background())
	fmt.Printf("%q\n", servers.Addr("health"))
	// Output:
	// 200 ok true
	// ""
}
