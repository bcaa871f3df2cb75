package manager_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/manager"
)

// The API server's warnings reach klog's warning severity (a W line), once per message, where
// client-go's default handler logs each at info level.
func TestAPIServerWarningsAreLoggedAsWarnings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Warning", `299 - "widgets.v1beta1 is deprecated; use v1"`)
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`))
	}))
	defer srv.Close()
	var out syncBuffer
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard) // klog copies a warning into the info stream too
	klog.SetOutputBySeverity("WARNING", &out)
	defer func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	}()

	mgr, err := manager.New(manager.Options{Config: &rest.Config{Host: srv.URL}})
	require.NoError(t, err)
	defer mgr.Factory().Shutdown()
	for range 3 {
		_, err := mgr.Client().CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
		require.NoError(t, err)
	}
	klog.Flush()
	lines := regexp.MustCompile(`(?m)^W\d{4} .*Warning from the API server: widgets.v1beta1 is deprecated; use v1$`).FindAllString(out.String(), -1)
	assert.Len(t, lines, 1, "one warning line, at warning level:\n%s", out.String())
}

// Flags.Options' Config carries the handler too, for clients built from it.
func TestFlagsOptionsConfigHasTheWarningHandler(t *testing.T) {
	kubeconfigFor(t, "https://cluster.example:6443")
	var f manager.Flags
	require.NoError(t, parseFlags(t, &f))
	opts, err := f.Options()
	require.NoError(t, err)
	assert.NotNil(t, opts.Config.WarningHandlerWithContext)
}
