package manager_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/manager"
)

// headers records the Content-Type, Accept and Accept-Encoding of each request it answers
// (with 404).
type headers struct {
	mu                     sync.Mutex
	content, acc, encoding []string
}

func (h *headers) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.content, h.acc = append(h.content, r.Header.Get("Content-Type")), append(h.acc, r.Header.Get("Accept"))
		h.encoding = append(h.encoding, r.Header.Get("Accept-Encoding"))
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"NotFound","code":404}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (h *headers) last() (content, accept string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.content[len(h.content)-1], h.acc[len(h.acc)-1]
}

// The Manager's clientset speaks protobuf in every request, as kube-controller-manager's and
// controller-runtime's clients of built-in types do: also in client-go's hand-written methods,
// which send the config's content type (JSON when unset), among them the one the event recorder
// posts core Events with. A content type the user configured is kept.
func TestManagerClientSendsProtobuf(t *testing.T) {
	const protobuf, json = "application/vnd.kubernetes.protobuf", "application/json"
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}}
	for _, tc := range []struct {
		name          string
		configured    string
		content, want string
	}{
		{"default", "", protobuf, protobuf + "," + json},
		{"configured JSON", json, json, json},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h headers
			cfg := &rest.Config{Host: h.server(t).URL, ContentConfig: rest.ContentConfig{ContentType: tc.configured}}
			if tc.configured != "" {
				cfg.AcceptContentTypes = tc.configured
			}
			mgr, err := manager.New(manager.Options{Config: cfg})
			require.NoError(t, err)
			defer mgr.Factory().Shutdown()

			_, err = mgr.Client().CoreV1().Events("ns").CreateWithEventNamespace(event)
			require.Error(t, err)
			content, accept := h.last()
			assert.Equal(t, tc.content, content, "the event recorder's request body")
			assert.Equal(t, tc.want, accept)

			_, err = mgr.Client().CoreV1().ConfigMaps("ns").Get(context.Background(), "cm", metav1.GetOptions{})
			require.Error(t, err)
			_, accept = h.last()
			assert.Contains(t, accept, tc.content, "a generated method's request")
			assert.Equal(t, tc.configured, cfg.ContentType, "the caller's Config is not modified")
		})
	}
}

// The Manager's clients do not ask the API server to gzip its responses, as
// kube-controller-manager's do not, unless Options.ResponseCompression says so.
func TestManagerClientAsksForCompressionOnlyWhenTold(t *testing.T) {
	for _, tc := range []struct {
		name        string
		compression bool
		want        string
	}{
		{"default", false, ""},
		{"ResponseCompression", true, "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h headers
			cfg := &rest.Config{Host: h.server(t).URL}
			mgr, err := manager.New(manager.Options{Config: cfg, ResponseCompression: tc.compression})
			require.NoError(t, err)
			defer mgr.Factory().Shutdown()
			_, err = mgr.Client().CoreV1().ConfigMaps("ns").Get(context.Background(), "cm", metav1.GetOptions{})
			require.Error(t, err)
			h.mu.Lock()
			defer h.mu.Unlock()
			assert.Equal(t, tc.want, h.encoding[len(h.encoding)-1])
			assert.False(t, cfg.DisableCompression, "the caller's Config is not modified")
		})
	}
}
