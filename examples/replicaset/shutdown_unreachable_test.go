package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// An operator's SIGTERM to a binary that never reached its API server, black box: the
// kubeconfig points at an address that accepts connections and never answers (an outage proxy
// cut from the start, in front of nothing), the binary runs with the Deployment's flags
// (secure /metrics included, scraped meanwhile as Prometheus would, each scrape waiting on a
// TokenReview that never comes back), and its context is cancelled soon after start and once
// the election has given up twice (about 25 s: each try waits out a TLS handshake), the
// informers' lists and the probe with it.
// Run returns within 5 s each time, well inside the default 30 s grace period. No API server
// needed.
func TestShutdownWhenTheAPIServerWasNeverReached(t *testing.T) {
	for name, state := range map[string]string{
		"soon after start":                 `"Manager started"`,
		"after the election gave up twice": `(?s)"Error retrieving lease lock".*"Error retrieving lease lock"`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			outage := testkit.NewOutage(t, &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "token",
				TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
			outage.Cut() // never restored: nothing ever answers
			path := filepath.Join(t.TempDir(), "kubeconfig")
			require.NoError(t, demo.WriteKubeconfig(path, outage.Config()))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out rbactest.LogBuffer
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{"--kubeconfig=" + path, "--leader-elect-resource-namespace=default",
					"--metrics-addr=127.0.0.1:0", "--health-addr=127.0.0.1:0"}, &out)
			}()
			metrics := regexp.MustCompile(`"Serving" addr="([^"]+)" what=\["metrics"\]`)
			require.Eventually(t, func() bool { return metrics.MatchString(out.String()) }, 30*time.Second, 10*time.Millisecond, "%s", &out)
			scraper := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed serving certificate
			defer scraper.CloseIdleConnections()
			var scrapes sync.WaitGroup
			defer scrapes.Wait()
			scrapeCtx, stopScrapes := context.WithCancel(context.Background())
			defer stopScrapes()
			scrapes.Go(func() {
				url := "https://" + metrics.FindStringSubmatch(out.String())[1] + "/metrics"
				for scrapeCtx.Err() == nil {
					req, _ := http.NewRequestWithContext(scrapeCtx, http.MethodGet, url, nil)
					req.Header.Set("Authorization", "Bearer prometheus")
					if resp, err := scraper.Do(req); err == nil {
						_ = resp.Body.Close()
					} else if ctx.Err() != nil {
						return // the server is gone
					}
				}
			})
			reached := regexp.MustCompile(state)
			require.Eventually(t, func() bool { return reached.MatchString(out.String()) }, time.Minute, 10*time.Millisecond, "%s", &out)
			cancel()
			cancelled := time.Now()
			select {
			case code := <-done:
				took := time.Since(cancelled)
				t.Logf("Run returned %v after the cancel", took.Round(time.Millisecond))
				assert.Equal(t, 0, code, "%s", &out)
				assert.Less(t, took, 5*time.Second, "%s", &out)
			case <-time.After(60 * time.Second):
				t.Fatalf("Run did not return within 60 s of the cancel: %s", &out)
			}
			stopScrapes()
		})
	}
}
