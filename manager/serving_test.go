package manager

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/manager/internal/delegatedauth/delegatedauthtest"
	"github.com/ctrlkit/ctrlkit/manager/internal/serving"
)

func tlsClient(t *testing.T, cfg *tls.Config) *http.Client {
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Secure metrics with a self-signed certificate: /metrics and pprof need a token allowed for
// their path, the probes on their own address stay open, plain HTTP and HTTP/2 are refused.
func TestSecureMetricsServing(t *testing.T) {
	client, rev := delegatedauthtest.NewReviewer()
	m, err := New(Options{Client: client, HealthProbeAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		MetricsServing: MetricsServingOptions{SecureServing: true, EnableProfiling: true}})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startManager(t, ctx, m)
	defer func() { require.NoError(t, stop()) }()
	require.Eventually(t, func() bool { return m.MetricsAddr() != "" }, 10*time.Second, time.Millisecond)
	base := "https://" + m.MetricsAddr()
	c := tlsClient(t, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed on purpose

	resp, body := delegatedauthtest.Get(t, c, base+"/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	assert.Equal(t, "HTTP/1.1", resp.Proto, "no HTTP/2 on the metrics server")
	resp, body = delegatedauthtest.Get(t, c, base+"/metrics", "nobody-token")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	resp, body = delegatedauthtest.Get(t, c, base+"/metrics", "scraper-token")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "go_goroutines")
	leaf := resp.TLS.PeerCertificates[0]
	assert.Contains(t, leaf.DNSNames, "localhost", "self-signed for localhost")

	// pprof, behind its own paths' permissions.
	resp, _ = delegatedauthtest.Get(t, c, base+"/debug/pprof/cmdline", "scraper-token")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a scraper of /metrics may not profile")
	resp, body = delegatedauthtest.Get(t, c, base+"/debug/pprof/goroutine?debug=1", "admin-token")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "goroutine profile:")
	resp, _ = delegatedauthtest.Get(t, c, base+"/debug/pprof/cmdline", "admin-token")
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// Unknown paths are 404 without asking the API server.
	calls := rev.Calls()
	resp, _ = delegatedauthtest.Get(t, c, base+"/nope", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, calls, rev.Calls())

	// The probes are open, on plain HTTP.
	resp, body = delegatedauthtest.Get(t, &http.Client{Timeout: 10 * time.Second}, "http://"+m.HealthProbeAddr()+"/healthz", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	// Plain HTTP to the TLS port is refused by net/http itself.
	resp, _ = delegatedauthtest.Get(t, &http.Client{Timeout: 10 * time.Second}, "http://"+m.MetricsAddr()+"/metrics", "")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	var said bool
	for _, e := range logged(logs) {
		said = said || strings.Contains(e.Message, "self-signed certificate")
	}
	assert.True(t, said, "the log says the certificate is self-signed")
}

// A certificate from CertDir is served and verifies against its CA; a CertDir without the
// files fails Start naming the certificate, before anything runs.
func TestSecureMetricsCertDir(t *testing.T) {
	dir := t.TempDir()
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"metrics.test", "127.0.0.1"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cert.pem"), b.CertPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.pem"), b.KeyPEM, 0o600))
	client, _ := delegatedauthtest.NewReviewer()
	m, err := New(Options{Client: client, MetricsAddr: "127.0.0.1:0",
		MetricsServing: MetricsServingOptions{SecureServing: true, CertDir: dir, CertName: "cert.pem", KeyName: "key.pem"}})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool { return m.MetricsAddr() != "" }, 10*time.Second, time.Millisecond)
	c := tlsClient(t, &tls.Config{RootCAs: b.CertPool(), ServerName: "metrics.test", MinVersion: tls.VersionTLS12})
	resp, body := delegatedauthtest.Get(t, c, "https://"+m.MetricsAddr()+"/metrics", "scraper-token")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	// The watcher's read counter is served next to the Manager's metrics (the initial read).
	assert.Regexp(t, `(?m)^certwatcher_read_certificate_total [1-9]`, body)
	require.NoError(t, stop())

	m, err = New(Options{Client: client, MetricsAddr: "127.0.0.1:0",
		MetricsServing: MetricsServingOptions{SecureServing: true, CertDir: t.TempDir()}})
	require.NoError(t, err)
	err = m.Start(ctx)
	assert.ErrorContains(t, err, "manager: metrics serving certificate")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// The certificate in CertDir is replaced while the server runs: the next tick of the
// watcher's clock serves the new one, and every request meanwhile succeeds.
func TestSecureMetricsCertRotation(t *testing.T) {
	dir := t.TempDir()
	first, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{})
	require.NoError(t, err)
	second, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{})
	require.NoError(t, err)
	require.NoError(t, first.WriteFiles(dir))
	client, _ := delegatedauthtest.NewReviewer()
	m, err := New(Options{Client: client, MetricsAddr: "127.0.0.1:0",
		MetricsServing: MetricsServingOptions{SecureServing: true, CertDir: dir}})
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(time.Now())
	m.certClock = clk
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	defer func() { require.NoError(t, stop()) }()
	require.Eventually(t, func() bool { return m.MetricsAddr() != "" }, 10*time.Second, time.Millisecond)

	pool := first.CertPool()
	pool.AppendCertsFromPEM(second.CAPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true} // a handshake per request
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	served := func() string {
		resp, body := delegatedauthtest.Get(t, c, "https://"+m.MetricsAddr()+"/metrics", "scraper-token")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		return resp.TLS.PeerCertificates[0].SerialNumber.String()
	}
	assert.Equal(t, first.Certificate.Leaf.SerialNumber.String(), served())
	require.NoError(t, second.WriteFiles(dir))
	require.Eventually(t, func() bool {
		clk.Step(certwatcher.DefaultInterval)
		return served() == second.Certificate.Leaf.SerialNumber.String()
	}, 10*time.Second, time.Millisecond)
}

func TestMetricsServingOptionsValidation(t *testing.T) {
	client := fake.NewClientset()
	for field, opts := range map[string]Options{
		"MetricsServing.CertDir":       {MetricsServing: MetricsServingOptions{CertDir: "/certs"}},
		"MetricsServing.AllowCacheTTL": {MetricsServing: MetricsServingOptions{SecureServing: true, AllowCacheTTL: -1}},
		"MetricsServing.DenyCacheTTL":  {MetricsServing: MetricsServingOptions{SecureServing: true, DenyCacheTTL: -1}},
		"MetricsServing.SecureServing": {MetricsAddr: ":8080", HealthProbeAddr: ":8080", MetricsServing: MetricsServingOptions{SecureServing: true}},
	} {
		opts.Client = client
		_, err := New(opts)
		var oe *OptionsError
		require.ErrorAs(t, err, &oe, field)
		assert.Equal(t, "manager.Options."+field, oe.Field)
		assert.ErrorIs(t, err, ErrInvalidOptions)
	}
	m, err := New(Options{Client: client, MetricsAddr: "127.0.0.1:0", HealthProbeAddr: "127.0.0.1:0",
		MetricsServing: MetricsServingOptions{SecureServing: true}})
	require.NoError(t, err, "picked ports are separate servers")
	assert.Equal(t, defaultAllowCacheTTL, m.serving.AllowCacheTTL)
	assert.Equal(t, defaultDenyCacheTTL, m.serving.DenyCacheTTL)
	assert.Equal(t, "tls.crt", m.serving.CertName)
}

// Malformed, oversized and slow requests against every server the Manager starts (a plain
// one serving the probes and pprof, a TLS one with authentication): each gets a 4xx or is cut
// off by a timeout, nothing panics, and no header is read past MaxHeaderBytes.
func TestServersRejectMalformedAndSlowRequests(t *testing.T) {
	client, rev := delegatedauthtest.NewReviewer()
	plain, err := New(Options{Client: client, HealthProbeAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		MetricsServing: MetricsServingOptions{EnableProfiling: true}})
	require.NoError(t, err)
	secure, err := New(Options{Client: client, MetricsAddr: "127.0.0.1:0",
		MetricsServing: MetricsServingOptions{SecureServing: true, EnableProfiling: true}})
	require.NoError(t, err)
	short := serving.DefaultTimeouts
	short.ReadHeader, short.Read, short.Idle = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	plain.timeouts, secure.timeouts = short, short
	ctx, _ := testLogger(t)
	for _, m := range []*Manager{plain, secure} {
		stop := startManager(t, ctx, m)
		defer func() { assert.NoError(t, stop()) }()
		require.Eventually(t, func() bool { return m.MetricsAddr() != "" }, 10*time.Second, time.Millisecond)
	}
	type target struct {
		name string
		addr string
		tls  bool
	}
	targets := []target{
		{"health", plain.HealthProbeAddr(), false},
		{"plain metrics", plain.MetricsAddr(), false},
		{"secure metrics", secure.MetricsAddr(), true},
	}
	dial := func(t *testing.T, tg target) net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", tg.addr, 10*time.Second)
		require.NoError(t, err)
		if tg.tls {
			tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed on purpose
			require.NoError(t, tc.Handshake())
			c = tc
		}
		t.Cleanup(func() { _ = c.Close() })
		// Bounds every read below: a server that never answers fails the test, not hangs it.
		require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
		return c
	}
	// status sends raw and returns the response's status code, 0 when the server closed the
	// connection without one.
	status := func(t *testing.T, tg target, raw string) int {
		t.Helper()
		c := dial(t, tg)
		go func() { _, _ = io.WriteString(c, raw) }() // the server may answer before reading it all
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			require.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err), "%v", err)
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	huge := "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 4<<20) + "\r\n\r\n"
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			calls := rev.Calls()
			assert.Equal(t, http.StatusNotFound, status(t, tg, "GET /no/such/path HTTP/1.1\r\nHost: x\r\n\r\n"))
			assert.Equal(t, http.StatusBadRequest, status(t, tg, "GARBAGE\r\n\r\n"))
			assert.Equal(t, http.StatusBadRequest, status(t, tg, "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n"))
			assert.Equal(t, http.StatusBadRequest, status(t, tg, "GET /metrics HTTP/1.1\r\n\r\n"), "no Host")
			assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, status(t, tg, huge), "a 4 MiB header")
			assert.Equal(t, calls, rev.Calls(), "nothing reached the API server")

			// A slow client trickling header lines is cut off by ReadHeaderTimeout: the
			// server closes the connection although the client keeps sending.
			c := dial(t, tg)
			_, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
			require.NoError(t, err)
			start := time.Now()
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				_, _ = io.Copy(io.Discard, c) // returns when the server closes
			}()
			trickle := time.NewTicker(20 * time.Millisecond)
			defer trickle.Stop()
			for cut := false; !cut; {
				select {
				case <-closed:
					cut = true
				case <-trickle.C:
					_, _ = io.WriteString(c, "X-Slow: 1\r\n")
				}
			}
			assert.Less(t, time.Since(start), 10*time.Second, "cut off by the 300ms ReadHeaderTimeout, not the read deadline")

			// A client that connects and says nothing (on TLS: not even a handshake) too.
			raw, err := net.DialTimeout("tcp", tg.addr, 10*time.Second)
			require.NoError(t, err)
			defer raw.Close()
			require.NoError(t, raw.SetDeadline(time.Now().Add(20*time.Second)))
			start = time.Now()
			_, err = io.Copy(io.Discard, raw)
			assert.True(t, err == nil || isReset(err), "%v", err)
			assert.Less(t, time.Since(start), 10*time.Second)
		})
	}
	// The servers still serve after all that. Polled: on a loaded machine a TLS handshake and
	// request can outlast the 300ms ReadHeaderTimeout, and the server then closes (EOF).
	serves := func(c *http.Client, url string) func() bool {
		return func() bool {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer scraper-token")
			resp, err := c.Do(req)
			if err != nil {
				t.Logf("GET %s: %v", url, err)
				return false
			}
			defer resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
	}
	assert.Eventually(t, serves(&http.Client{Timeout: 10 * time.Second}, "http://"+plain.HealthProbeAddr()+"/healthz"), 30*time.Second, 100*time.Millisecond)
	assert.Eventually(t, serves(tlsClient(t, &tls.Config{InsecureSkipVerify: true}), "https://"+secure.MetricsAddr()+"/metrics"), 30*time.Second, 100*time.Millisecond) //nolint:gosec
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && (strings.Contains(op.Err.Error(), "reset") || strings.Contains(op.Err.Error(), "broken pipe"))
}
