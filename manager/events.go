package manager

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	eventpipes "github.com/ctrlkit/ctrlkit/manager/internal/events"
)

// EventRecorder records events.k8s.io/v1 Events: client-go's
// events.EventRecorder plus AnnotatedEventf, the pair controller-runtime's
// recorder.EventRecorder also combines. It is assignable to
// events.EventRecorder, which is what code that records events should
// accept.
type EventRecorder interface {
	events.EventRecorder
	events.AnnotatedEventRecorder
}

var _ EventRecorder = (*eventpipes.Recorder)(nil)

// EventRecorder returns the recorder of a controller's events.k8s.io/v1
// Events (client-go's tools/events): reportingController is name (use the
// controller's name), reportingInstance the Manager's identity — the leader
// election identity with Options.LeaderElection, else "<hostname>_<pid>" —
// so an event names the replica that recorded it. This is the recorder to
// use; kubectl describe and kubectl events show its events, since the API
// server serves every Event through both events.k8s.io/v1 and core/v1.
// The API server rejects (and the Manager logs) an event without an action
// or a reason; regarding and related are resolved through Options.Scheme.
//
// Events flow while the Manager runs, from Start until Start returns; events
// recorded before or after are dropped and logged at V(2). The Manager's
// events.k8s.io broadcaster starts on the first such event, so a Manager
// that records none runs no event goroutine; Start's return stops it and
// waits for the writes in flight.
//
// It is controller-runtime's Manager.GetEventRecorder; EventRecorderFor is
// its GetEventRecorderFor.
func (m *Manager) EventRecorder(name string) EventRecorder {
	return m.events.For(name)
}

// EventRecorderFor returns a recorder of legacy core/v1 Events (client-go's
// tools/record) whose source component is name. Use EventRecorder instead,
// unless a consumer of the events reads only core/v1 fields that
// events.k8s.io/v1 leaves empty (source.component, count) or an API takes a
// record.EventRecorder (informer.Options.EventRecorder, finalizer's
// WithEventRecorder). Its events flow, and are dropped, as EventRecorder's
// do, through a broadcaster of its own, started on its first event.
func (m *Manager) EventRecorderFor(name string) record.EventRecorder {
	return m.events.LegacyFor(name)
}

// identity is the reportingInstance of the Manager's events.k8s.io Events.
func (m *Manager) identity() string {
	id := ""
	if m.elector != nil {
		id = m.elector.Identity()
	}
	return eventpipes.Instance(id)
}

// leaseEvents records the leader elector's events (client-go's resourcelock.EventRecorder)
// as events.k8s.io/v1 Events, with the reason as their action.
type leaseEvents struct{ rec EventRecorder }

func (l leaseEvents) Eventf(obj runtime.Object, eventType, reason, message string, args ...any) {
	l.rec.Eventf(obj, nil, eventType, reason, reason, message, args...)
}
