package manager

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

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
// cannot read or write its Lease is not ready (the check "leaderelection"
// names the Lease, the verb and the API server's answer) until it has been
// ready once or led: a new replica that could never lead holds its rollout
// back, while a Lease refused later (a Role edited, an admission policy) takes
// readiness from no replica, since it strikes them all at once and their
// webhooks would lose their Service's endpoints. /readyz?verbose lists every
// check on a line of its own, kube-apiserver's way ("[+]name ok", "[-]name
// failed: why"), and a Lease refusal that does not fail readiness as
// "[+]leaderelection ok, but: <the refusal>".
func (m *Manager) ReadyzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, verbose := r.URL.Query()["verbose"]
		if err := m.ready(); err != nil {
			if verbose {
				writeVerbose(w, http.StatusServiceUnavailable, append([]string{"[-]synced failed: " + err.Error()},
					checkLines(m.checks(&m.readyz), r)...))
				return
			}
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		checks := m.checks(&m.readyz)
		if failed := runChecks(checks, r); len(failed) > 0 {
			if verbose {
				writeVerbose(w, http.StatusServiceUnavailable, append([]string{m.syncedLine()}, checkLines(checks, r)...))
				return
			}
			http.Error(w, strings.Join(failed, "\n"), http.StatusServiceUnavailable)
			return
		}
		if m.elector == nil || m.elector.Leader() != "" {
			// Ready with its Lease read (a holder seen): not in the moment before the first
			// read, which a refusal may yet fail.
			m.beenReady.Store(true)
		}
		if verbose {
			writeVerbose(w, http.StatusOK, append([]string{m.syncedLine()}, checkLines(checks, r)...))
			return
		}
		writeOK(w)
	})
}

// writeVerbose writes /readyz?verbose's lines and kube-apiserver's last line.
func writeVerbose(w http.ResponseWriter, code int, lines []string) {
	last := "readyz check passed"
	if code != http.StatusOK {
		last = "readyz check failed"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(strings.Join(append(lines, last), "\n") + "\n"))
}

// checkLines is one line per check for /readyz?verbose.
func checkLines(checks []namedCheck, req *http.Request) []string {
	lines := make([]string, 0, len(checks))
	for _, c := range checks {
		switch err := c.check(req); {
		case err != nil:
			lines = append(lines, "[-]"+c.name+" failed: "+err.Error())
		case c.note != nil && c.note(req) != nil:
			lines = append(lines, "[+]"+c.name+" ok, but: "+c.note(req).Error())
		default:
			lines = append(lines, "[+]"+c.name+" ok")
		}
	}
	return lines
}

// checks copies a check list under the lock (they are only added before Start, but a probe
// handler may be served by a test before that).
func (m *Manager) checks(list *[]namedCheck) []namedCheck {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(*list)
}

// liveRunnables returns the Runnables running now and not being stopped.
func (m *Manager) liveRunnables() []Runnable {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := make([]Runnable, 0, len(m.live))
	for r, ctx := range m.live {
		// One being stopped (shutdown, a lost Lease, Remove) is not one readiness waits for:
		// its sync state is leaving with it.
		if ctx.Err() == nil {
			live = append(live, *r)
		}
	}
	return live
}

// syncedLine is /readyz?verbose's line for a Manager whose caches synced: with what a
// controller's Options.Freshness holds work for (a cache lagging behind the API server), which
// does not take readiness away: it strikes every replica at once, as a Lease refusal does.
func (m *Manager) syncedLine() string {
	var lagging []string
	for _, r := range m.liveRunnables() {
		if s, ok := r.(interface{ Stats() controller.Stats }); ok {
			if l := s.Stats().Lagging; l != "" {
				lagging = append(lagging, "controller "+r.Name()+": "+l)
			}
		}
		// A multicluster.Fleet's clusters that are not ready: one cluster
		// must not take the others' work, nor the webhooks, away.
		if n, ok := r.(interface{ ReadyNote() string }); ok {
			if note := n.ReadyNote(); note != "" {
				lagging = append(lagging, r.Name()+": "+note)
			}
		}
	}
	if len(lagging) == 0 {
		return "[+]synced ok"
	}
	slices.Sort(lagging)
	return "[+]synced ok, but: " + strings.Join(lagging, "; ")
}

func (m *Manager) ready() error {
	if !m.running.Load() {
		return errors.New("manager not running")
	}
	if !m.cachesSynced.Load() {
		return errors.New("informer caches not synced")
	}
	live := m.liveRunnables()
	var unsynced []string
	for _, r := range live {
		if s, ok := r.(interface{ HasSynced() bool }); ok && !s.HasSynced() {
			name := r.Name()
			waiting := ""
			if w, ok := r.(interface{ waitingFor() string }); ok {
				waiting = w.waitingFor()
			}
			if waiting == "" && m.wasReady.Load() {
				// Once the process was ready, a controller starting again (a leader-only one
				// after a re-election, one added at run time) catches up on warm caches: a
				// Lease won back must not take readiness, and with it the webhooks, away. What
				// it waits for (a CRD deleted) still does.
				continue
			}
			if waiting != "" {
				name += " (" + waiting + ")"
			}
			unsynced = append(unsynced, name)
		}
	}
	if len(unsynced) > 0 {
		slices.Sort(unsynced)
		return fmt.Errorf("controllers not synced: %s", strings.Join(unsynced, ", "))
	}
	m.wasReady.Store(true)
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
	// note, when set, is what /readyz?verbose says about a check that passes
	// despite a problem (nil: none).
	note Checker
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
		return fmt.Errorf("manager: adding %s check %q: %w", endpoint, name, ErrAlreadyStarted)
	case name == "" || check == nil:
		return &OptionsError{Field: "Manager.Add" + strings.ToUpper(endpoint[:1]) + endpoint[1:] + "Check",
			Reason: fmt.Sprintf("needs a name and a check, got name %q", name)}
	case slices.ContainsFunc(*list, func(c namedCheck) bool { return c.name == name }):
		return fmt.Errorf("manager: %s check %q: %w", endpoint, name, ErrDuplicateCheck)
	}
	*list = append(*list, namedCheck{name: name, check: check})
	return nil
}

// addElectionReadyzCheck adds leaseCheck to /readyz, named as the elector's
// /healthz check: a replica that cannot read or write its Lease never leads,
// yet its caches sync and its watchdog passes, so without it both probes said
// ok.
func (m *Manager) addElectionReadyzCheck() error {
	if err := m.AddReadyzCheck(m.elector.Name(), m.leaseCheck); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.readyz[len(m.readyz)-1].note = m.elector.ReadyCheck
	return nil
}

// leaseCheck is the elector's ReadyCheck until this replica has been ready or
// has led; then it passes whatever the Lease's state (ReadyzHandler says why),
// and the refusal shows on /readyz?verbose, in the log and in
// ctrlkit_leader_election_lease_refused.
func (m *Manager) leaseCheck(req *http.Request) error {
	if m.beenReady.Load() {
		return nil
	}
	return m.elector.ReadyCheck(req)
}

// leaseRefusedMetric is the gauge that is 1 while the API server refuses
// this replica a get, create or update of its Lease (a Role without the
// rule, an admission policy), labelled with the Lease as
// leader_election_master_status names it; 0 otherwise.
const leaseRefusedMetric = "ctrlkit_leader_election_lease_refused"

// registerLeaseMetric registers leaseRefusedMetric for the elector's Lease.
func (m *Manager) registerLeaseMetric() error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        leaseRefusedMetric,
		Help:        "1 while the API server refuses this replica a get, create or update of its leader election Lease; 0 otherwise.",
		ConstLabels: prometheus.Labels{"name": m.leaseName()},
	}, func() float64 {
		if m.elector.ReadyCheck(nil) != nil {
			return 1
		}
		return 0
	})
	if err := m.registerer.Register(g); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return fmt.Errorf("manager: %s: %w", leaseRefusedMetric, err)
	}
	return nil
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
