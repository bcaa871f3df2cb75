package certwatcher_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/certwatcher"
)

func selfSigned(t *testing.T, hosts ...string) *certwatcher.Bundle {
	t.Helper()
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: hosts})
	require.NoError(t, err)
	return b
}

func serialOf(c *tls.Certificate) string { return c.Leaf.SerialNumber.String() }

func watch(t *testing.T, dir string, clk *clocktesting.FakeClock) *certwatcher.CertWatcher {
	t.Helper()
	w, err := certwatcher.New(certwatcher.Options{
		CertFile: filepath.Join(dir, certwatcher.CertFileName),
		KeyFile:  filepath.Join(dir, certwatcher.KeyFileName),
		Interval: time.Minute,
		Clock:    clk,
	})
	require.NoError(t, err)
	return w
}

// countLogs counts the buffered log entries whose message contains msg.
func countLogs(u ktesting.Underlier, msg string) int {
	n := 0
	for _, e := range u.GetBuffer().Data() {
		if strings.Contains(e.Message, msg) {
			n++
		}
	}
	return n
}

// A TLS server on a watched pair keeps handshaking while the pair is rotated under it: every
// handshake succeeds, and the new certificate is served once the ticker fired. A pair written
// half-way (a new certificate next to the old key) is logged once and the old one kept until
// the key follows.
func TestRotationWhileClientsConnect(t *testing.T) {
	dir := t.TempDir()
	first, second, third := selfSigned(t), selfSigned(t), selfSigned(t)
	require.NoError(t, first.WriteFiles(dir))
	clk := clocktesting.NewFakeClock(time.Now())
	w := watch(t, dir, clk)

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	logs := logger.GetSink().(ktesting.Underlier)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { assert.NoError(t, w.Start(ctx)) })
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "Start's ticker")
	assert.ErrorIs(t, w.Start(ctx), certwatcher.ErrAlreadyStarted)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		TLSConfig:         &tls.Config{GetCertificate: w.GetCertificate, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	wg.Go(func() { _ = srv.ServeTLS(ln, "", "") })
	defer srv.Close()

	pool := x509.NewCertPool()
	for _, b := range []*certwatcher.Bundle{first, second, third} {
		pool.AppendCertsFromPEM(b.CAPEM)
	}
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true, // a handshake per request
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	url := "https://" + ln.Addr().String() + "/"
	var (
		served     atomic.Value // serial of the certificate a client saw last
		handshakes atomic.Int64
		failures   atomic.Int64
		firstErr   atomic.Value
	)
	clientCtx, stopClient := context.WithCancel(context.Background())
	defer stopClient()
	var clientWG sync.WaitGroup
	defer clientWG.Wait()
	clientWG.Go(func() {
		for clientCtx.Err() == nil {
			resp, err := client.Get(url)
			if err != nil {
				if failures.Add(1) == 1 {
					firstErr.Store(err.Error())
				}
				continue
			}
			_ = resp.Body.Close()
			served.Store(resp.TLS.PeerCertificates[0].SerialNumber.String())
			handshakes.Add(1)
		}
	})
	// sees ticks until a client was served b (a tick only wakes Start; stepping again while it
	// reads is harmless).
	sees := func(b *certwatcher.Bundle) func() bool {
		return func() bool {
			clk.Step(time.Minute)
			s, _ := served.Load().(string)
			return s == serialOf(&b.Certificate)
		}
	}
	require.Eventually(t, sees(first), 10*time.Second, time.Millisecond)
	require.NoError(t, second.WriteFiles(dir))
	require.Eventually(t, sees(second), 10*time.Second, time.Millisecond, "the rotated pair is served")

	// Half a rotation: the third certificate next to the second key does not load.
	// Each file is replaced whole (write, then rename), as a Secret volume update or
	// WriteFiles does: an in-place write could be read half-done, a third bad pair.
	// (WriteFiles replaces its two files one after the other, so a tick between them may
	// already have logged a mismatched pair: count from here.)
	before := countLogs(logs, "Certificate not reloaded")
	replace(t, filepath.Join(dir, certwatcher.CertFileName), third.CertPEM)
	require.Eventually(t, func() bool {
		clk.Step(time.Minute)
		return countLogs(logs, "Certificate not reloaded") > before
	}, 10*time.Second, time.Millisecond)
	for range 3 { // more ticks on the same bad pair log nothing new
		clk.Step(time.Minute)
	}
	got, err := w.GetCertificate(nil)
	require.NoError(t, err)
	assert.Equal(t, serialOf(&second.Certificate), serialOf(got), "the previous pair is kept")
	assert.Error(t, w.ReadCertificate(), "ReadCertificate reports the bad pair")

	replace(t, filepath.Join(dir, certwatcher.KeyFileName), third.KeyPEM)
	require.Eventually(t, sees(third), 10*time.Second, time.Millisecond, "the completed rotation is served")
	assert.Equal(t, before+1, countLogs(logs, "Certificate not reloaded"), "one bad pair, logged once")

	stopClient()
	clientWG.Wait()
	require.Zero(t, failures.Load(), "failed requests during rotation, first: %v", firstErr.Load())
	assert.Positive(t, handshakes.Load())
}

// New refuses to build a watcher without a loadable pair; ReadCertificate without a ticker
// picks up a change at once.
func TestNewAndReadCertificate(t *testing.T) {
	_, err := certwatcher.New(certwatcher.Options{KeyFile: "k"})
	assert.ErrorIs(t, err, certwatcher.ErrInvalidOptions)
	_, err = certwatcher.New(certwatcher.Options{CertFile: "c"})
	assert.ErrorIs(t, err, certwatcher.ErrInvalidOptions)
	_, err = certwatcher.New(certwatcher.Options{CertFile: "c", KeyFile: "k", Interval: -time.Second})
	assert.ErrorIs(t, err, certwatcher.ErrInvalidOptions)

	dir := t.TempDir()
	_, err = certwatcher.New(certwatcher.Options{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")})
	assert.ErrorIs(t, err, fs.ErrNotExist)

	a, b := selfSigned(t, "a.example"), selfSigned(t, "b.example")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), a.CertPEM, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), b.KeyPEM, 0o600))
	_, err = certwatcher.New(certwatcher.Options{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")})
	assert.ErrorContains(t, err, "tls.crt and ")

	require.NoError(t, a.WriteFiles(dir))
	w := watch(t, dir, clocktesting.NewFakeClock(time.Now()))
	got, _ := w.GetCertificate(nil)
	assert.Equal(t, []string{"a.example"}, got.Leaf.DNSNames)
	require.NoError(t, b.WriteFiles(dir))
	require.NoError(t, w.ReadCertificate())
	got, _ = w.GetCertificate(nil)
	assert.Equal(t, []string{"b.example"}, got.Leaf.DNSNames)

	// A file gone (a Secret volume mid-swap) keeps the pair too.
	require.NoError(t, os.Remove(filepath.Join(dir, "tls.key")))
	assert.ErrorIs(t, w.ReadCertificate(), fs.ErrNotExist)
	got, _ = w.GetCertificate(nil)
	assert.Equal(t, []string{"b.example"}, got.Leaf.DNSNames)
}

// SelfSigned's certificate verifies against its CA for each host, as a DNS or an IP SAN, and
// WriteFiles leaves the key private.
func TestSelfSigned(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Clock: clk, Validity: time.Hour})
	require.NoError(t, err)
	leaf := b.Certificate.Leaf
	assert.Equal(t, []string{"localhost"}, leaf.DNSNames)
	assert.Len(t, leaf.IPAddresses, 2)
	assert.Equal(t, clk.Now().Add(time.Hour), leaf.NotAfter)
	for _, host := range certwatcher.DefaultHosts {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: b.CertPool(), CurrentTime: clk.Now()})
		assert.NoError(t, err, host)
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: b.CertPool(), CurrentTime: clk.Now()})
	assert.Error(t, err, "only the hosts asked for")
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: b.CertPool(), CurrentTime: clk.Now().Add(2 * time.Hour)})
	assert.Error(t, err, "expired after Validity")

	_, err = certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Validity: -time.Hour})
	assert.ErrorIs(t, err, certwatcher.ErrInvalidOptions)

	dir := filepath.Join(t.TempDir(), "certs")
	require.NoError(t, b.WriteFiles(dir))
	st, err := os.Stat(filepath.Join(dir, certwatcher.KeyFileName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	ca, err := os.ReadFile(filepath.Join(dir, certwatcher.CAFileName))
	require.NoError(t, err)
	assert.Equal(t, b.CAPEM, ca)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "no temporary files left")
}

// replace swaps path's content for data in one rename.
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}
