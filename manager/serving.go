package manager

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/manager/internal/serving"
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
	// without asking the API server again. 0 means one minute.
	AllowCacheTTL time.Duration
	// DenyCacheTTL is how long a 401 or 403 is reused. 0 means 30 s. API
	// server errors are never cached.
	DenyCacheTTL time.Duration

	// EnableProfiling serves net/http/pprof's /debug/pprof/ on the metrics server, behind the
	// same authentication and authorization as /metrics when SecureServing (a scraper then
	// needs get on /debug/pprof/* as well). The server's write timeout is then long enough for
	// /debug/pprof/profile's default 30 s (profiles up to just under 2 minutes).
	// false means not served (kube-controller-manager's --profiling defaults to true; a
	// library opts in).
	EnableProfiling bool
}

// Defaults of MetricsServingOptions' cache TTLs: controller-runtime's authorizer defaults for
// denials, and its authenticator's for allowed requests (a revoked token or a removed
// permission keeps working at most this long).
const (
	defaultAllowCacheTTL = time.Minute
	defaultDenyCacheTTL  = 30 * time.Second
)

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
		o.AllowCacheTTL = defaultAllowCacheTTL
	}
	if o.DenyCacheTTL == 0 {
		o.DenyCacheTTL = defaultDenyCacheTTL
	}
	return "", ""
}

// metricsPaths are the handlers of the metrics server: /metrics, DebugInformersPath and, with
// EnableProfiling, /debug/pprof/, each behind the API server's authentication and authorization when
// SecureServing.
func (m *Manager) metricsPaths() map[string]http.Handler {
	paths := map[string]http.Handler{"/metrics": m.MetricsHandler(), DebugInformersPath: m.DebugInformersHandler()}
	if m.serving.EnableProfiling {
		maps.Copy(paths, serving.Pprof())
	}
	if m.auth != nil {
		for p, h := range paths {
			paths[p] = m.auth.Wrap(h)
		}
	}
	return paths
}

// listen starts the HTTP servers the options ask for: the probes on
// HealthProbeAddr, the metrics (and pprof) on MetricsAddr, one server when
// the two are equal.
func (m *Manager) listen(logger klog.Logger) (*serving.Servers, error) {
	metrics := serving.Site{Name: "metrics", Addr: m.metricsAddr, Paths: m.metricsPaths(), Profiling: m.serving.EnableProfiling}
	if m.serving.SecureServing { // validate kept the probes apart
		metrics.TLS = &serving.TLS{CertDir: m.serving.CertDir, CertName: m.serving.CertName, KeyName: m.serving.KeyName, Clock: m.certClock,
			Registerer: m.Registerer()}
	}
	health := serving.Site{Name: "health", Addr: m.healthAddr,
		Paths: map[string]http.Handler{"/healthz": m.HealthzHandler(), "/readyz": m.ReadyzHandler()}}
	servers, err := serving.Start(logger, m.timeouts, health, metrics)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	m.mu.Lock()
	m.servers = servers
	m.mu.Unlock()
	return servers, nil
}

// HealthProbeAddr returns the address /healthz and /readyz are served on
// once Start has listened ("" before, or when not served): with
// HealthProbeAddr "127.0.0.1:0" it names the port picked.
func (m *Manager) HealthProbeAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers.Addr("health")
}

// MetricsAddr returns the address /metrics is served on once Start has
// listened ("" before, or when not served).
func (m *Manager) MetricsAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers.Addr("metrics")
}

// MetricsHandler serves the Manager's Gatherer in the Prometheus text
// format.
func (m *Manager) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// Handler serves /healthz, /readyz and /metrics on one mux.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", m.HealthzHandler())
	mux.Handle("/readyz", m.ReadyzHandler())
	mux.Handle("/metrics", m.MetricsHandler())
	return mux
}
