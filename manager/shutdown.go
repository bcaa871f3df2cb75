package manager

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// defaultGracefulShutdownTimeout is how long Start waits for the Runnables to
// stop when Options.GracefulShutdownTimeout is 0: controller-runtime's
// default.
const defaultGracefulShutdownTimeout = 30 * time.Second

// ErrShutdownTimeout is matched (errors.Is) by the error Start returns when
// Runnables did not stop within Options.GracefulShutdownTimeout; errors.As
// with a *ShutdownTimeoutError names them.
var ErrShutdownTimeout = errors.New("graceful shutdown timeout exceeded")

// ShutdownTimeoutError names the Runnables that had not returned from Run
// when the graceful shutdown timeout expired. Start abandoned them: their
// goroutines (and the leader election's, when one of them needs leader
// election) end only when they do.
type ShutdownTimeoutError struct {
	// Runnables are the names of the abandoned Runnables, sorted.
	Runnables []string
	// Timeout is the graceful shutdown timeout that expired.
	Timeout time.Duration
}

// Error names the abandoned Runnables and the timeout.
func (e *ShutdownTimeoutError) Error() string {
	quoted := make([]string, len(e.Runnables))
	for i, n := range e.Runnables {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf("manager: %v: controllers %s did not stop within %v and were abandoned",
		ErrShutdownTimeout, strings.Join(quoted, ", "), e.Timeout)
}

// Is makes errors.Is(err, ErrShutdownTimeout) true.
func (e *ShutdownTimeoutError) Is(target error) bool { return target == ErrShutdownTimeout }

// gracefulShutdownTimeout maps Options.GracefulShutdownTimeout to the
// deadline Start applies: 0 is the default, a negative value none (< 0).
func gracefulShutdownTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return defaultGracefulShutdownTimeout
	}
	return d
}

// waitForRunnables waits for every Runnable's Run to return, at most the
// graceful shutdown timeout, and returns the ones still running then, after
// logging each as abandoned. The Runnables were told to stop already.
func (m *Manager) waitForRunnables(logger klog.Logger) []Runnable {
	stopped := make(chan struct{})
	// Ends when the last Runnable returns: at once in a clean shutdown, when
	// the abandoned ones return otherwise.
	go func() {
		m.runWG.Wait()
		close(stopped)
	}()
	if m.shutdownTimeout < 0 {
		<-stopped
		return nil
	}
	timer := m.clock.NewTimer(m.shutdownTimeout)
	defer timer.Stop()
	select {
	case <-stopped:
		return nil
	case <-timer.C():
	}

	m.mu.Lock()
	stuck := make([]Runnable, 0, len(m.live))
	for r := range m.live {
		stuck = append(stuck, *r)
	}
	m.mu.Unlock()
	if len(stuck) == 0 {
		// The last one returned just now; it is finishing its bookkeeping.
		<-stopped
		return nil
	}
	slices.SortFunc(stuck, func(a, b Runnable) int { return strings.Compare(a.Name(), b.Name()) })
	for _, r := range stuck {
		logger.Error(nil, "Abandoning a controller that did not stop within the graceful shutdown timeout",
			"controller", r.Name(), "timeout", m.shutdownTimeout)
	}
	return stuck
}

// shutdownTimeoutError is the error naming stuck, nil when it is empty.
func (m *Manager) shutdownTimeoutError(stuck []Runnable) error {
	if len(stuck) == 0 {
		return nil
	}
	names := make([]string, len(stuck))
	for i, r := range stuck {
		names[i] = r.Name()
	}
	return &ShutdownTimeoutError{Runnables: names, Timeout: m.shutdownTimeout}
}

// leaderWorkAbandoned reports whether one of stuck runs only on the leader:
// the election's OnStartedLeading then has not returned, so the elector
// neither releases the Lease nor returns.
func (m *Manager) leaderWorkAbandoned(stuck []Runnable) bool {
	return m.elector != nil && slices.ContainsFunc(stuck, needsLeader)
}
