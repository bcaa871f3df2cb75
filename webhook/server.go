package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Defaults of ServerOptions, controller-runtime's where it has one.
const (
	// DefaultPort is the port a Server listens on when ServerOptions.Addr is empty.
	DefaultPort = 9443
	// DefaultReadTimeout bounds reading one request, headers and body.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds answering one request. The API server gives up on a webhook
	// after the configuration's timeoutSeconds (10 s by default, 30 s at most).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection that carried no request this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultShutdownTimeout bounds how long Run waits for requests in flight once its
	// context ended.
	DefaultShutdownTimeout = 10 * time.Second
	// ServerName is the Name of every Server: the Manager's runnable name and /readyz check.
	ServerName = "webhook-server"
)

// DefaultCertDir is where a Server reads tls.crt and tls.key when ServerOptions.CertDir is
// empty (controller-runtime's default).
var DefaultCertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")

// ServerOptions configure a Server. The zero value is valid when DefaultCertDir holds a pair.
type ServerOptions struct {
	// Addr is host:port to listen on. "" means ":9443" (DefaultPort); "127.0.0.1:0" picks a
	// free port (Server.Addr then names it).
	Addr string
	// CertDir holds the serving certificate and key (a mounted kubernetes.io/tls Secret).
	// "" means DefaultCertDir.
	CertDir string
	// CertName and KeyName are the file names in CertDir. "" means tls.crt and tls.key.
	CertName, KeyName string
	// CertReloadInterval is how often the pair is re-read (see package certwatcher). 0 means
	// certwatcher.DefaultInterval.
	CertReloadInterval time.Duration
	// TLSOpts adjust the TLS configuration after the defaults (TLS 1.2 at least, the
	// certificate from CertDir), for example to require client certificates.
	TLSOpts []func(*tls.Config)

	// Registerer receives the request, latency, in-flight and rejection metrics of every
	// webhook. nil means a private registry nobody reads; pass the Manager's
	// (manager.Manager.Registerer) to serve them on its /metrics.
	Registerer prometheus.Registerer

	// MaxRequestBytes is the largest request body read. 0 means DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// ReadTimeout, WriteTimeout and IdleTimeout are the http.Server's. 0 means
	// DefaultReadTimeout, DefaultWriteTimeout and DefaultIdleTimeout.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits for requests in flight after its context
	// ended. 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// Clock drives the certificate reloads and the latency metric. nil means the real clock.
	Clock clock.WithTicker
}

// Server serves webhooks over HTTPS with a certificate reloaded from disk when it changes
// (no restart): the admission and conversion handlers of this package, or any http.Handler.
// It is a manager.Runnable that runs on every replica, leader or not (the API server calls
// whichever replica the Service picks); AddToManager adds it with a /readyz check. Build it
// with NewServer, Register the handlers, then Run.
type Server struct {
	opts    ServerOptions
	certs   *certwatcher.CertWatcher
	metrics *metrics
	clock   clock.WithTicker

	mu      sync.Mutex
	mux     *http.ServeMux
	paths   []string
	started bool
	addr    string

	serving atomic.Bool
}

// NewServer checks opts and loads the certificate pair: a server must not start without one.
// Errors match ErrInvalidOptions, or say why the pair did not load.
func NewServer(opts ServerOptions) (*Server, error) {
	bad := func(format string, args ...any) (*Server, error) {
		return nil, fmt.Errorf("%w: ServerOptions.%s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case opts.MaxRequestBytes < 0:
		return bad("MaxRequestBytes %d is negative", opts.MaxRequestBytes)
	case opts.ReadTimeout < 0 || opts.WriteTimeout < 0 || opts.IdleTimeout < 0 || opts.ShutdownTimeout < 0:
		return bad("timeouts must not be negative")
	}
	if opts.Addr == "" {
		opts.Addr = fmt.Sprintf(":%d", DefaultPort)
	}
	if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
		return bad("Addr %q: %v", opts.Addr, err)
	}
	if opts.CertDir == "" {
		opts.CertDir = DefaultCertDir
	}
	if opts.CertName == "" {
		opts.CertName = certwatcher.CertFileName
	}
	if opts.KeyName == "" {
		opts.KeyName = certwatcher.KeyFileName
	}
	if opts.MaxRequestBytes == 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	opts.ReadTimeout = orDefault(opts.ReadTimeout, DefaultReadTimeout)
	opts.WriteTimeout = orDefault(opts.WriteTimeout, DefaultWriteTimeout)
	opts.IdleTimeout = orDefault(opts.IdleTimeout, DefaultIdleTimeout)
	opts.ShutdownTimeout = orDefault(opts.ShutdownTimeout, DefaultShutdownTimeout)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("webhook: registering metrics: %w", err)
	}
	certs, err := certwatcher.New(certwatcher.Options{
		CertFile:   filepath.Join(opts.CertDir, opts.CertName),
		KeyFile:    filepath.Join(opts.CertDir, opts.KeyName),
		Interval:   opts.CertReloadInterval,
		Clock:      opts.Clock,
		Registerer: reg, // controller-runtime's certwatcher_* counters, next to the webhook's
	})
	if err != nil {
		return nil, fmt.Errorf("webhook: serving certificate: %w", err)
	}
	return &Server{opts: opts, certs: certs, metrics: m, clock: opts.Clock, mux: http.NewServeMux()}, nil
}

// logWriter writes the http.Server's error log lines to a klog logger at V(1).
type logWriter struct{ logger klog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.logger.V(1).Info("HTTP server error", "msg", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Register serves h at path (an absolute path such as "/validate-podset", the
// clientConfig.service.path or url path of the webhook configuration), counted in the
// metrics under that path. Paths are unique; handlers are registered before Run.
func (s *Server) Register(path string, h http.Handler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.started:
		return fmt.Errorf("registering %q: %w", path, ErrAlreadyStarted)
	case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " {}"):
		return fmt.Errorf("%w: path %q must be absolute and literal", ErrInvalidOptions, path)
	case object.IsNil(h):
		return fmt.Errorf("%w: nil handler for %q", ErrInvalidOptions, path)
	}
	for _, p := range s.paths {
		if p == path {
			return fmt.Errorf("%w: path %q registered twice", ErrInvalidOptions, path)
		}
	}
	s.paths = append(s.paths, path)
	maxBytes := s.opts.MaxRequestBytes
	inner := s.metrics.instrument(path, h, s.clock)
	s.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
		logger := klog.FromContext(r.Context()).WithValues("webhook", path)
		inner.ServeHTTP(w, r.WithContext(klog.NewContext(r.Context(), logger)))
	}))
	return nil
}

// Name is ServerName; it makes the Server a manager.Runnable.
func (s *Server) Name() string { return ServerName }

// NeedLeaderElection is false: webhooks are served by every replica.
func (s *Server) NeedLeaderElection() bool { return false }

// Addr returns the address the Server listens on once Run has listened, "" before and after.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// ReadyCheck is the Server's /readyz check (a manager.Checker): nil while it serves.
func (s *Server) ReadyCheck(*http.Request) error {
	if !s.serving.Load() {
		return errors.New("webhook server is not serving")
	}
	return nil
}

// Run listens, serves until ctx ends, then stops taking connections, waits up to
// ShutdownTimeout for the requests in flight and returns nil; it reloads the certificate
// meanwhile. It fails when it cannot listen. A Server runs once (ErrAlreadyStarted).
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return ErrAlreadyStarted
	}
	s.started = true
	s.mu.Unlock()

	logger := klog.FromContext(ctx).WithName("webhook")
	ctx = klog.NewContext(ctx, logger)
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}
	for _, o := range s.opts.TLSOpts {
		o(tlsCfg)
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("webhook: listening on %q: %w", s.opts.Addr, err)
	}
	srv := &http.Server{
		Handler:           s.mux,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: s.opts.ReadTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		// TLS handshake failures (a scanner, a client that does not trust the CA) and other
		// connection errors go to the Run context's logger, not to the standard log.
		ErrorLog: log.New(logWriter{logger}, "", 0),
	}

	var wg sync.WaitGroup
	watchCtx, stopWatch := context.WithCancel(ctx)
	wg.Go(func() { _ = s.certs.Start(watchCtx) }) // only fails when started twice; it is ours
	served := make(chan error, 1)
	wg.Go(func() { served <- srv.Serve(tls.NewListener(ln, tlsCfg)) })
	s.mu.Lock()
	s.addr = ln.Addr().String()
	paths := append([]string(nil), s.paths...)
	s.mu.Unlock()
	s.serving.Store(true)
	logger.Info("Serving webhooks", "addr", ln.Addr().String(), "paths", paths)

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-served:
		runErr = fmt.Errorf("webhook: serving on %s: %w", ln.Addr(), err)
	}
	s.serving.Store(false)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Error(err, "Webhook requests still in flight at shutdown; closing their connections")
		_ = srv.Close()
	}
	cancel()
	stopWatch()
	wg.Wait()
	s.mu.Lock()
	s.addr = ""
	s.mu.Unlock()
	logger.Info("Webhook server stopped")
	return runErr
}
