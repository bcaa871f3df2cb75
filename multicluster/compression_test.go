package multicluster_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/multicluster"
)

// The clients a Fleet builds for a cluster do not ask for gzip unless
// ResponseCompression says so: a compressed watch stream holds a
// decompressor for its life, five informers' worth per cluster.
func TestFleetClientsAskForCompressionOnlyWhenTold(t *testing.T) {
	for _, tc := range []struct {
		name        string
		compression bool
		want        string
	}{
		{"default", false, ""},
		{"ResponseCompression", true, "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case got <- r.Header.Get("Accept-Encoding"):
				default:
				}
				http.Error(w, "service unavailable", http.StatusServiceUnavailable)
			}))
			defer srv.Close()
			cfg := &rest.Config{Host: srv.URL}
			fleet, err := multicluster.New(multicluster.Options{
				Provider:            multicluster.NewList(map[string]multicluster.Connection{"c": {Config: cfg}}),
				ProbeInterval:       50 * time.Millisecond,
				ResponseCompression: tc.compression,
			})
			require.NoError(t, err)
			run(t, fleet)
			select {
			case enc := <-got:
				assert.Equal(t, tc.want, enc)
			case <-time.After(wait):
				t.Fatal("the cluster's clients sent no request")
			}
			assert.False(t, cfg.DisableCompression, "the Connection's Config is not modified")
		})
	}
}
