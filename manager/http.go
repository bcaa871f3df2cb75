package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// HealthzHandler serves /healthz: 200 "ok", or 500 naming the failure when
// the leader elector's watchdog (leaderelection.Elector.Check) fails — the
// lease was lost or not renewed and not released, and a restart is due — or a
// check added with AddHealthzCheck fails.
func (m *Manager) HealthzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.elector != nil {
			if err := m.elector.Check(r); err != nil {
				http.Error(w, "leaderelection: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		if failed := runChecks(m.checks(&m.healthz), r); len(failed) > 0 {
			http.Error(w, strings.Join(failed, "\n"), http.StatusInternalServerError)
			return
		}
		writeOK(w)
	})
}

// ReadyzHandler serves /readyz: 200 "ok" once the Manager has started, every
// cache synced (the factory's, and the watches of each running Runnable that
// has HasSynced) and every AddReadyzCheck check passes, else 503 naming what
// is not ready. Standbys are ready: their caches are warm, and the controllers
// they do not run yet are not waited for. With leader election, a replica that
// cannot read or write its Lease is not (the check "leaderelection" names the
// Lease, the verb and the API server's answer): it could never lead.
func (m *Manager) ReadyzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := m.ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if failed := runChecks(m.checks(&m.readyz), r); len(failed) > 0 {
			http.Error(w, strings.Join(failed, "\n"), http.StatusServiceUnavailable)
			return
		}
		writeOK(w)
	})
}

// checks copies a check list under the lock (they are only added before Start, but a probe
// handler may be served by a test before that).
func (m *Manager) checks(list *[]namedCheck) []namedCheck {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(*list)
}

func (m *Manager) ready() error {
	if !m.running.Load() {
		return errors.New("manager not running")
	}
	if !m.cachesSynced.Load() {
		return errors.New("informer caches not synced")
	}
	m.mu.Lock()
	live := make([]Runnable, 0, len(m.live))
	for r := range m.live {
		live = append(live, *r)
	}
	m.mu.Unlock()
	var unsynced []string
	for _, r := range live {
		if s, ok := r.(interface{ HasSynced() bool }); ok && !s.HasSynced() {
			unsynced = append(unsynced, r.Name())
		}
	}
	if len(unsynced) > 0 {
		slices.Sort(unsynced)
		return fmt.Errorf("controllers not synced: %s", strings.Join(unsynced, ", "))
	}
	return nil
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

func writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

// server is one listening HTTP server.
type server struct {
	srv       *http.Server
	done      chan struct{}
	stopWatch func() // stops the certificate watcher of a TLS server; nil without one
}

// listen starts the HTTP servers the options ask for.
func (m *Manager) listen(logger klog.Logger) ([]server, error) {
	type want struct {
		addr    string
		mux     *http.ServeMux
		kind    []string
		metrics bool
	}
	var wants []*want
	add := func(addr, kind string, paths map[string]http.Handler) {
		if addr == "" {
			return
		}
		var w *want
		for _, x := range wants {
			// One server for equal addresses, unless the port is to be
			// picked (":0"): then each gets its own.
			if x.addr == addr && !strings.HasSuffix(addr, ":0") {
				w = x
			}
		}
		if w == nil {
			w = &want{addr: addr, mux: http.NewServeMux()}
			wants = append(wants, w)
		}
		w.kind = append(w.kind, kind)
		w.metrics = w.metrics || kind == "metrics"
		for p, h := range paths {
			w.mux.Handle(p, h)
		}
	}
	add(m.healthAddr, "health", map[string]http.Handler{"/healthz": m.HealthzHandler(), "/readyz": m.ReadyzHandler()})
	add(m.metricsAddr, "metrics", m.metricsPaths())

	var servers []server
	for _, w := range wants {
		s := server{srv: &http.Server{Handler: w.mux, ErrorLog: httpErrorLog(logger)}, done: make(chan struct{})}
		t := m.timeouts
		if w.metrics && m.serving.EnableProfiling {
			t.write = max(t.write, profilingWriteTimeout)
		}
		t.apply(s.srv)
		if w.metrics && m.serving.SecureServing { // validate kept the probes apart
			cfg, watcher, err := m.metricsTLS(logger)
			if err != nil {
				m.shutdownServers(servers, logger)
				return nil, err
			}
			s.srv.TLSConfig, s.srv.Protocols = cfg, http1Only()
			if watcher != nil {
				s.stopWatch = runWatcher(klog.NewContext(context.Background(), logger), watcher)
			}
		}
		ln, err := net.Listen("tcp", w.addr)
		if err != nil {
			if s.stopWatch != nil {
				s.stopWatch()
			}
			m.shutdownServers(servers, logger)
			return nil, fmt.Errorf("manager: serving %s on %q: %w", strings.Join(w.kind, " and "), w.addr, err)
		}
		https := s.srv.TLSConfig != nil // read before Serve, which writes the server's fields
		go func() {
			defer close(s.done)
			var err error
			if https {
				err = s.srv.ServeTLS(ln, "", "")
			} else {
				err = s.srv.Serve(ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "HTTP server failed", "addr", ln.Addr().String())
			}
		}()
		m.mu.Lock()
		for _, k := range w.kind {
			m.boundAddrs[k] = ln.Addr().String()
		}
		m.mu.Unlock()
		logger.Info("Serving", "addr", ln.Addr().String(), "what", w.kind, "https", https)
		if w.metrics && m.serving.EnableProfiling && !https {
			logger.Info("Serving /debug/pprof/ to anyone: MetricsServing.SecureServing is false", "addr", ln.Addr().String())
		}
		servers = append(servers, s)
	}
	return servers, nil
}

func (m *Manager) shutdownServers(servers []server, logger klog.Logger) {
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.srv.Shutdown(ctx); err != nil {
			logger.Error(err, "HTTP server shutdown")
			_ = s.srv.Close()
		}
		cancel()
		<-s.done
		if s.stopWatch != nil {
			s.stopWatch()
		}
	}
	m.mu.Lock()
	clear(m.boundAddrs)
	m.mu.Unlock()
}
