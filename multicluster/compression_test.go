package multicluster_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
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

// Disengaging a cluster closes its idle connections, also when the
// Connection's Config dials for itself and client-go wraps the transport
// (here for the user agent): http.Client.CloseIdleConnections does not see
// through client-go's round trippers, so each idle connection stayed open,
// with its goroutines and buffers, until client-go's idle timeout.
func TestDisengageClosesIdleConnections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	defer srv.Close()
	var dialed, closed atomic.Int32
	cfg := &rest.Config{Host: srv.URL, UserAgent: "disengage-test", Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dialed.Add(1)
		return &countingConn{Conn: c, closed: &closed}, nil
	}}
	list := multicluster.NewList(map[string]multicluster.Connection{"c": {Config: cfg}})
	fleet, err := multicluster.New(multicluster.Options{Provider: list, ProbeInterval: time.Hour})
	require.NoError(t, err)
	run(t, fleet)
	var cl *multicluster.Cluster
	require.Eventually(t, func() bool { cl, err = fleet.Get("c"); return err == nil }, wait, 10*time.Millisecond)
	// When a request returns, its connection is back in the pool, idle.
	_, err = cl.Client.Discovery().ServerVersion()
	require.NoError(t, err)
	require.Positive(t, dialed.Load())

	list.Remove("c")
	require.Eventually(t, func() bool { return closed.Load() == dialed.Load() }, wait, 10*time.Millisecond,
		"every connection the disengaged cluster dialed is closed")
}

type countingConn struct {
	net.Conn
	once   sync.Once
	closed *atomic.Int32
}

func (c *countingConn) Close() error {
	c.once.Do(func() { c.closed.Add(1) })
	return c.Conn.Close()
}
