package manager

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ctrlkit/ctrlkit/controller"
)

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
