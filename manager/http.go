package manager

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
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
