package manager

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ctrlkit/ctrlkit/controller"
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
			name := r.Name()
			if w, ok := r.(interface{ waitingFor() string }); ok && w.waitingFor() != "" {
				name += " (" + w.waitingFor() + ")"
			}
			unsynced = append(unsynced, name)
		}
	}
	if len(unsynced) > 0 {
		slices.Sort(unsynced)
		return fmt.Errorf("controllers not synced: %s", strings.Join(unsynced, ", "))
	}
	return nil
}

func writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

// Checker is a health or readiness check: nil means healthy (ready). It gets the probe's
// request and must answer quickly; a kubelet times probes out after one second by default.
// The type is controller-runtime's healthz.Checker.
type Checker func(req *http.Request) error

// ErrDuplicateCheck is returned by AddHealthzCheck and AddReadyzCheck for a name already used.
var ErrDuplicateCheck = errors.New("duplicate check name")

// namedCheck is one user check.
type namedCheck struct {
	name  string
	check Checker
}

// AddHealthzCheck adds a check to /healthz, next to the leader elector's. A failing check
// makes /healthz answer 500 naming it, so a kubelet restarts the process: use it for states
// only a restart cures. Names must be unique per endpoint; checks are added before Start.
func (m *Manager) AddHealthzCheck(name string, check Checker) error {
	return m.addCheck(&m.healthz, "healthz", name, check)
}

// AddReadyzCheck adds a check to /readyz, next to the cache and controller checks. A failing
// check makes /readyz answer 503 naming it, so the process gets no traffic until it passes.
func (m *Manager) AddReadyzCheck(name string, check Checker) error {
	return m.addCheck(&m.readyz, "readyz", name, check)
}

func (m *Manager) addCheck(list *[]namedCheck, endpoint, name string, check Checker) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.started:
		return fmt.Errorf("manager: adding %s check %q: %w", endpoint, name, controller.ErrAlreadyStarted)
	case name == "" || check == nil:
		return &OptionsError{Field: "Manager.Add" + strings.ToUpper(endpoint[:1]) + endpoint[1:] + "Check",
			Reason: fmt.Sprintf("needs a name and a check, got name %q", name)}
	case slices.ContainsFunc(*list, func(c namedCheck) bool { return c.name == name }):
		return fmt.Errorf("manager: %s check %q: %w", endpoint, name, ErrDuplicateCheck)
	}
	*list = append(*list, namedCheck{name: name, check: check})
	return nil
}

// addElectionReadyzCheck adds the elector's ReadyCheck to /readyz, named as the elector's
// /healthz check: a replica that cannot read or write its Lease never leads, yet its caches
// sync and its watchdog passes, so without it both probes said ok.
func (m *Manager) addElectionReadyzCheck() error {
	return m.AddReadyzCheck(m.elector.Name(), m.elector.ReadyCheck)
}

// runChecks returns the failures of checks, one "name: error" each, in the order added.
func runChecks(checks []namedCheck, req *http.Request) []string {
	var failed []string
	for _, c := range checks {
		if err := c.check(req); err != nil {
			failed = append(failed, c.name+": "+err.Error())
		}
	}
	return failed
}
