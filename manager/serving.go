package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/certwatcher"
)

// MetricsServingOptions configure the server of Options.MetricsAddr. The zero value serves
// /metrics over plain HTTP to anyone, as before; SecureServing is what a production binary
// sets (the examples do by default). Field names follow controller-runtime's
// metricsserver.Options, whose SecureServing plus filters.WithAuthenticationAndAuthorization
// this is.
type MetricsServingOptions struct {
	// SecureServing serves MetricsAddr over HTTPS (HTTP/1.1 only, TLS 1.2 or later) and lets
	// a request through only when the API server authenticates its bearer token
	// (authentication.k8s.io/v1 TokenReview) and authorizes its user for the path
	// (authorization.k8s.io/v1 SubjectAccessReview on the non-resource URL, e.g. verb get on
	// /metrics): 401 without a valid token, 403 without the permission, 500 when the API
	// server cannot answer. Options.Client makes both reviews, so its identity needs create on
	// tokenreviews and subjectaccessreviews (the ClusterRole system:auth-delegator), and a
	// scraper needs a ClusterRole with nonResourceURLs ["/metrics"], verbs ["get"].
	//
	// The probes stay open: they are served on HealthProbeAddr, which must then differ from
	// MetricsAddr (a kubelet probes without a token). false means plain HTTP, no
	// authentication.
	SecureServing bool

	// CertDir holds the serving certificate and key (CertName, KeyName), reloaded when they
	// change on disk (certwatcher). "" means a self-signed certificate made in memory at
	// Start, for localhost and the host name: a scraper then skips verification. Only with
	// SecureServing.
	CertDir string
	// CertName is the certificate's file in CertDir. "" means "tls.crt".
	CertName string
	// KeyName is the key's file in CertDir. "" means "tls.key".
	KeyName string

	// AllowCacheTTL is how long an allowed decision (per token, verb and path) is reused
	// without asking the API server again. 0 means DefaultAllowCacheTTL.
	AllowCacheTTL time.Duration
	// DenyCacheTTL is how long a 401 or 403 is reused. 0 means DefaultDenyCacheTTL. API
	// server errors are never cached.
	DenyCacheTTL time.Duration

	// EnableProfiling serves net/http/pprof's /debug/pprof/ on the metrics server, behind the
	// same authentication and authorization as /metrics when SecureServing (a scraper then
	// needs get on /debug/pprof/* as well). The server's write timeout is then long enough for
	// /debug/pprof/profile's default 30 s (profiles up to just under profilingWriteTimeout).
	// false means not served (kube-controller-manager's --profiling defaults to true; a
	// library opts in).
	EnableProfiling bool
}

// validate checks o and fills its defaults.
func (o *MetricsServingOptions) validate(metricsAddr, healthAddr string) (field, reason string) {
	switch {
	case !o.SecureServing && (o.CertDir != "" || o.CertName != "" || o.KeyName != ""):
		return "CertDir", "a certificate is set but SecureServing is false"
	case o.AllowCacheTTL < 0:
		return "AllowCacheTTL", fmt.Sprintf("%v is negative", o.AllowCacheTTL)
	case o.DenyCacheTTL < 0:
		return "DenyCacheTTL", fmt.Sprintf("%v is negative", o.DenyCacheTTL)
	case o.SecureServing && metricsAddr != "" && metricsAddr == healthAddr && !strings.HasSuffix(metricsAddr, ":0"):
		return "SecureServing", fmt.Sprintf("MetricsAddr and HealthProbeAddr are both %q: probes carry no token, so secure metrics need an address of their own", metricsAddr)
	}
	if o.CertName == "" {
		o.CertName = certwatcher.CertFileName
	}
	if o.KeyName == "" {
		o.KeyName = certwatcher.KeyFileName
	}
	if o.AllowCacheTTL == 0 {
		o.AllowCacheTTL = DefaultAllowCacheTTL
	}
	if o.DenyCacheTTL == 0 {
		o.DenyCacheTTL = DefaultDenyCacheTTL
	}
	return "", ""
}

// serverTimeouts bound what one client can hold of a server: every server the Manager starts
// has all of them, so a slow or hostile client is cut off instead of holding a goroutine and
// its buffers forever.
type serverTimeouts struct {
	readHeader     time.Duration // headers (and a TLS handshake) must arrive within this
	read           time.Duration // the whole request
	write          time.Duration // from the end of the headers to the end of the response
	idle           time.Duration // a kept-alive connection between requests
	maxHeaderBytes int
}

var defaultServerTimeouts = serverTimeouts{
	readHeader: 10 * time.Second,
	read:       30 * time.Second,
	write:      30 * time.Second,
	// Longer than a Prometheus scrape interval, so a scraper's connection is reused.
	idle: 2 * time.Minute,
	// Far above a service-account token (about 1 KiB), far below Go's 1 MiB default.
	maxHeaderBytes: 64 << 10,
}

// profilingWriteTimeout replaces the write timeout of a server with pprof: pprof refuses a
// profile whose duration reaches the write timeout.
const profilingWriteTimeout = 2 * time.Minute

func (t serverTimeouts) apply(s *http.Server) {
	s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout = t.readHeader, t.read, t.write, t.idle
	s.MaxHeaderBytes = t.maxHeaderBytes
}

// metricsPaths are the handlers of the metrics server: /metrics and, with EnableProfiling,
// /debug/pprof/, each behind the API server's authentication and authorization when
// SecureServing.
func (m *Manager) metricsPaths() map[string]http.Handler {
	paths := map[string]http.Handler{"/metrics": m.MetricsHandler()}
	if m.serving.EnableProfiling {
		// pprof.Index serves the named profiles (heap, goroutine, ...) under the prefix.
		paths["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		paths["/debug/pprof/cmdline"] = http.HandlerFunc(pprof.Cmdline)
		paths["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		paths["/debug/pprof/symbol"] = http.HandlerFunc(pprof.Symbol)
		paths["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
	}
	if m.auth != nil {
		for p, h := range paths {
			paths[p] = m.auth.wrap(h)
		}
	}
	return paths
}

// metricsTLS is the TLS configuration of the secure metrics server, and the certificate
// watcher to run next to it (nil for a self-signed certificate).
func (m *Manager) metricsTLS(logger klog.Logger) (*tls.Config, *certwatcher.CertWatcher, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if dir := m.serving.CertDir; dir != "" {
		w, err := certwatcher.New(certwatcher.Options{
			CertFile: filepath.Join(dir, m.serving.CertName),
			KeyFile:  filepath.Join(dir, m.serving.KeyName),
			Clock:    m.certClock,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("manager: metrics serving certificate: %w", err)
		}
		cfg.GetCertificate = w.GetCertificate
		return cfg, w, nil
	}
	hosts := append([]string(nil), certwatcher.DefaultHosts...)
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		hosts = append(hosts, h)
	}
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: hosts})
	if err != nil {
		return nil, nil, fmt.Errorf("manager: self-signed metrics certificate: %w", err)
	}
	logger.Info("Serving metrics with a self-signed certificate (MetricsServingOptions.CertDir is empty): scrapers must skip verification", "hosts", hosts)
	cfg.Certificates = []tls.Certificate{b.Certificate}
	return cfg, nil, nil
}

// runWatcher runs w until the returned stop is called; stop waits for it.
func runWatcher(ctx context.Context, w *certwatcher.CertWatcher) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Start(ctx) // a fresh watcher: ErrAlreadyStarted cannot happen
	}()
	return func() {
		cancel()
		<-done
	}
}

// http1Only is the protocol set of the secure metrics server: HTTP/2's stream multiplexing
// is what the 2023 rapid-reset attacks abused, and a scraper gains nothing from it
// (kubebuilder's scaffolding disables it on metrics servers for the same reason).
func http1Only() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	return p
}

// httpErrorLog routes net/http's own complaints (TLS handshake errors, bad requests it
// rejects before a handler runs) to the Manager's logger at V(4) instead of the process's
// stderr: a port scanner must not fill the log.
func httpErrorLog(logger klog.Logger) *log.Logger {
	return log.New(errorLogWriter{logger.V(4)}, "", 0)
}

type errorLogWriter struct{ logger klog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	w.logger.Info("HTTP server", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
