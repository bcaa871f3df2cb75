package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// certs writes a fresh self-signed pair for 127.0.0.1 into dir.
func certs(t *testing.T, dir string) *certwatcher.Bundle {
	t.Helper()
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	require.NoError(t, b.WriteFiles(dir))
	return b
}

// running runs s until the test ends and returns its https base URL once it listens.
func running(t *testing.T, s *webhook.Server) string {
	t.Helper()
	_, tctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(tctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		assert.Empty(t, s.Addr())
	})
	var addr string
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		addr = s.Addr()
		return addr != "", nil
	}))
	return "https://" + addr
}

func client(t *testing.T, cas ...*certwatcher.Bundle) *http.Client {
	pool := x509.NewCertPool()
	for _, b := range cas {
		pool.AppendCertsFromPEM(b.CAPEM)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func reviewBody(t *testing.T, obj string) []byte {
	t.Helper()
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  request(t, admissionv1.Create, obj, nil),
	})
	require.NoError(t, err)
	return b
}

func postReview(c *http.Client, url string, body []byte) (*admissionv1.AdmissionReview, int, error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, err
	}
	var out admissionv1.AdmissionReview
	return &out, resp.StatusCode, json.Unmarshal(data, &out)
}

func TestServerServesAndCounts(t *testing.T) {
	dir := t.TempDir()
	ca := certs(t, dir)
	reg := prometheus.NewRegistry()
	s, err := webhook.NewServer(webhook.ServerOptions{Addr: "127.0.0.1:0", CertDir: dir, Registerer: reg})
	require.NoError(t, err)
	d, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	v, err := webhook.NewValidating[*corev1.ConfigMap](configMapGVK, cmValidator{})
	require.NoError(t, err)
	require.NoError(t, s.Register("/default", d))
	require.NoError(t, s.Register("/validate", v))
	require.ErrorIs(t, s.Register("/validate", v), webhook.ErrInvalidOptions)
	require.ErrorIs(t, s.Register("relative", v), webhook.ErrInvalidOptions)
	require.ErrorIs(t, s.Register("/nil", nil), webhook.ErrInvalidOptions)
	require.Error(t, s.ReadyCheck(nil))

	url := running(t, s)
	require.NoError(t, s.ReadyCheck(nil))
	require.ErrorIs(t, s.Register("/late", v), webhook.ErrAlreadyStarted)
	require.ErrorIs(t, s.Run(context.Background()), webhook.ErrAlreadyStarted)
	c := client(t, ca)

	out, code, err := postReview(c, url+"/default", reviewBody(t, `{"metadata":{"name":"cfg"}}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	assert.True(t, out.Response.Allowed)
	assert.NotEmpty(t, out.Response.Patch)

	out, _, err = postReview(c, url+"/validate", reviewBody(t, `{"metadata":{"name":"cfg"},"data":{"mode":"slow"}}`))
	require.NoError(t, err)
	assert.False(t, out.Response.Allowed)
	assert.Equal(t, metav1.StatusReasonInvalid, out.Response.Result.Reason)
	_, code, err = postReview(c, url+"/validate", []byte("{"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, code)
	_, code, err = postReview(c, url+"/unknown", reviewBody(t, `{}`))
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, code)

	assert.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, webhook.MetricRequests, "/default", "200")))
	assert.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, webhook.MetricRequests, "/validate", "200")))
	assert.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, webhook.MetricRequests, "/validate", "400")))
	assert.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, webhook.MetricRejections, "/validate", "422")))
	assert.Equal(t, 0.0, testutil.ToFloat64(counter(t, reg, webhook.MetricRejections, "/default", "422")))
	n, err := testutil.GatherAndCount(reg, webhook.MetricLatency)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "one latency series per webhook")
}

// counter reads the series {webhook, code} of a counter vector from reg.
func counter(t *testing.T, reg *prometheus.Registry, name, webhookName, code string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["webhook"] == webhookName && got["code"] == code {
				c.Add(m.GetCounter().GetValue())
			}
		}
	}
	return c
}

// The pair is replaced while requests keep coming: none fails, and the new certificate is
// served once the reload ticked.
func TestServerReloadsItsCertificateWithoutFailingARequest(t *testing.T) {
	dir := t.TempDir()
	first := certs(t, dir)
	clk := clocktesting.NewFakeClock(time.Now())
	s, err := webhook.NewServer(webhook.ServerOptions{Addr: "127.0.0.1:0", CertDir: dir, Clock: clk, CertReloadInterval: time.Second})
	require.NoError(t, err)
	d, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	require.NoError(t, s.Register("/default", d))
	url := running(t, s)

	second, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	c := client(t, first, second)
	body := reviewBody(t, `{"metadata":{"name":"cfg"}}`)

	var failures atomic.Int32
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				if out, code, err := postReview(c, url+"/default", body); err != nil || code != http.StatusOK || !out.Response.Allowed {
					failures.Add(1)
				}
			}
		})
	}
	require.NoError(t, second.WriteFiles(dir))
	served := func() string {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{RootCAs: c.Transport.(*http.Transport).TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12})
		if err != nil {
			return err.Error()
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		clk.Step(time.Second)
		return served() == second.Certificate.Leaf.SerialNumber.String(), nil
	}))
	stop.Store(true)
	wg.Wait()
	assert.Zero(t, failures.Load())
}

func TestNewServerRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	certs(t, dir)
	for name, opts := range map[string]webhook.ServerOptions{
		"addr":     {Addr: "nowhere", CertDir: dir},
		"bytes":    {CertDir: dir, MaxRequestBytes: -1},
		"timeouts": {CertDir: dir, WriteTimeout: -time.Second},
	} {
		_, err := webhook.NewServer(opts)
		assert.ErrorIs(t, err, webhook.ErrInvalidOptions, name)
	}
	_, err := webhook.NewServer(webhook.ServerOptions{CertDir: t.TempDir()})
	assert.ErrorContains(t, err, "webhook: serving certificate")
}

// AddToManager: the server runs without leader election, its readiness is part of /readyz,
// and its metrics are on the Manager's /metrics.
func TestAddToManager(t *testing.T) {
	dir := t.TempDir()
	certs(t, dir)
	mgr, err := manager.New(manager.Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	s, err := webhook.NewServer(webhook.ServerOptions{Addr: "127.0.0.1:0", CertDir: dir, Registerer: mgr.Registerer()})
	require.NoError(t, err)
	d, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	require.NoError(t, s.Register("/default", d))
	require.NoError(t, webhook.AddToManager(mgr, s))
	assert.False(t, s.NeedLeaderElection())
	second, err := webhook.NewServer(webhook.ServerOptions{Addr: "127.0.0.1:0", CertDir: dir, Registerer: mgr.Registerer()})
	require.NoError(t, err, "a second Server shares the metrics on one registry")
	require.ErrorIs(t, webhook.AddToManager(mgr, second), manager.ErrDuplicateName)

	_, tctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(tctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		mgr.ReadyzHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, _ := readyz()
		return code == http.StatusOK, nil
	}))
	n, err := testutil.GatherAndCount(mgr.Gatherer(), webhook.MetricInFlight)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// ServerOptions.MaxRequestBytes caps every body (413), and a failed conversion counts as a
// rejection.
func TestServerLimitsBodiesAndCountsFailedConversions(t *testing.T) {
	dir := t.TempDir()
	ca := certs(t, dir)
	reg := prometheus.NewRegistry()
	s, err := webhook.NewServer(webhook.ServerOptions{Addr: "127.0.0.1:0", CertDir: dir, Registerer: reg, MaxRequestBytes: 4096})
	require.NoError(t, err)
	d, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	require.NoError(t, s.Register("/default", d))
	require.NoError(t, s.Register("/convert", widgetConversion(t)))
	url := running(t, s)
	c := client(t, ca)

	_, code, err := postReview(c, url+"/default", reviewBody(t, `{"data":{"big":"`+strings.Repeat("x", 5000)+`"}}`))
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)

	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"r1","desiredAPIVersion":"example.com/v9",
		"objects":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"size":1}}]}}`
	resp, err := c.Post(url+"/convert", "application/json", strings.NewReader(review))
	require.NoError(t, err)
	var out webhook.ConversionReview
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, metav1.StatusFailure, out.Response.Result.Status)
	assert.Contains(t, out.Response.Result.Message, `desired apiVersion "example.com/v9"`)

	assert.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, webhook.MetricRequests, "/default", "413")))
	assert.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, webhook.MetricRequests, "/convert", "200")))
	assert.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, webhook.MetricRejections, "/convert", "400")))
}

// CertName and KeyName pick the files; TLSOpts adjust the TLS configuration (here: TLS 1.3
// only, so a TLS 1.2 client is refused).
func TestServerCertNamesAndTLSOpts(t *testing.T) {
	dir := t.TempDir()
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "serving.pem"), b.CertPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "serving-key.pem"), b.KeyPEM, 0o600))
	s, err := webhook.NewServer(webhook.ServerOptions{Addr: "127.0.0.1:0", CertDir: dir, CertName: "serving.pem", KeyName: "serving-key.pem",
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 }}})
	require.NoError(t, err)
	d, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	require.NoError(t, s.Register("/default", d))
	url := running(t, s)

	out, code, err := postReview(client(t, b), url+"/default", reviewBody(t, `{}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	assert.True(t, out.Response.Allowed)

	old := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: b.CertPool(), MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}}
	defer old.CloseIdleConnections()
	_, err = (&http.Client{Transport: old, Timeout: 10 * time.Second}).Post(url+"/default", "application/json", strings.NewReader("{}"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "protocol version")
}
