package manager_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"runtime"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/manager"
)

// Secure metrics: HTTPS, and only a bearer token whose user may get /metrics (asked of the API
// server with a TokenReview and a SubjectAccessReview) gets them. The fake clientset plays the
// API server: the token "prometheus" belongs to a user allowed to get /metrics.
func ExampleMetricsServingOptions() {
	client := fake.NewClientset()
	client.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, kruntime.Object, error) {
		tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		tr.Status.Authenticated = tr.Spec.Token == "prometheus"
		tr.Status.User.Username = "system:serviceaccount:monitoring:prometheus"
		return true, tr, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, kruntime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = sar.Spec.NonResourceAttributes.Path == "/metrics"
		return true, sar, nil
	})
	mgr, err := manager.New(manager.Options{
		Client:          client,
		MetricsAddr:     "127.0.0.1:0",
		HealthProbeAddr: "127.0.0.1:0", // probes stay open, on their own address
		MetricsServing: manager.MetricsServingOptions{
			SecureServing: true, // CertDir "" : a self-signed certificate
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	for mgr.MetricsAddr() == "" {
		select {
		case err := <-done:
			fmt.Println(err)
			return
		default:
			runtime.Gosched()
		}
	}

	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // self-signed
	defer transport.CloseIdleConnections()
	for _, token := range []string{"", "stolen", "prometheus"} {
		req, _ := http.NewRequest(http.MethodGet, "https://"+mgr.MetricsAddr()+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := transport.RoundTrip(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("token %q: %d\n", token, resp.StatusCode)
	}
	// Output:
	// token "": 401
	// token "stolen": 401
	// token "prometheus": 200
}
