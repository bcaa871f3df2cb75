package manager

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventRecorderFor returns an event recorder whose events carry name as
// their source component (use the controller's name). Events are written
// through ManagerOptions.Client while the Manager runs (its broadcaster lives
// from Start until Start returns, so it leaves no goroutine behind); events
// recorded before Start or after it returned are dropped and logged at V(2).
func (m *Manager) EventRecorderFor(name string) record.EventRecorder {
	return &managerRecorder{m: m, name: name}
}

func (m *Manager) startEvents() {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")})
	b.StartStructuredLogging(4)
	m.mu.Lock()
	m.events = b
	m.mu.Unlock()
}

func (m *Manager) stopEvents() {
	m.mu.Lock()
	b := m.events
	m.events = nil
	clear(m.recorders)
	m.mu.Unlock()
	if b != nil {
		b.Shutdown()
	}
}

// recorder returns the live recorder for name, nil when not running.
func (m *Manager) recorder(name string) record.EventRecorder {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		return nil
	}
	r := m.recorders[name]
	if r == nil {
		r = m.events.NewRecorder(m.scheme, corev1.EventSource{Component: name})
		m.recorders[name] = r
	}
	return r
}

// managerRecorder forwards to the Manager's broadcaster while it runs.
type managerRecorder struct {
	m    *Manager
	name string
}

var _ record.EventRecorder = (*managerRecorder)(nil)

func (r *managerRecorder) dropped(reason string) {
	r.m.log().V(2).Info("Dropping event: the manager is not running", "source", r.name, "reason", reason)
}

func (r *managerRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	if rec := r.m.recorder(r.name); rec != nil {
		rec.Event(object, eventtype, reason, message)
		return
	}
	r.dropped(reason)
}

func (r *managerRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if rec := r.m.recorder(r.name); rec != nil {
		rec.Eventf(object, eventtype, reason, messageFmt, args...)
		return
	}
	r.dropped(reason)
}

func (r *managerRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if rec := r.m.recorder(r.name); rec != nil {
		rec.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
		return
	}
	r.dropped(reason)
}
