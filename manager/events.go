package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
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

// maxReportingInstance is the API server's limit on an Event's
// reportingInstance.
const maxReportingInstance = 128

// eventLogVerbosity is the level events are logged at, besides being written.
const eventLogVerbosity = 4

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
	return &v1Recorder{m: m, name: name}
}

// EventRecorderFor returns a recorder of legacy core/v1 Events (client-go's
// tools/record) whose source component is name. Use EventRecorder instead,
// unless a consumer of the events reads only core/v1 fields that
// events.k8s.io/v1 leaves empty (source.component, count) or an API takes a
// record.EventRecorder (informer.WithEventRecorder, finalizer's
// WithEventRecorder). Its events flow, and are dropped, as EventRecorder's
// do, through a broadcaster of its own, started on its first event.
func (m *Manager) EventRecorderFor(name string) record.EventRecorder {
	return &legacyRecorder{m: m, name: name}
}

// eventPipes holds the Manager's two broadcasters, one per Event API, each
// built on its first event while the Manager runs. Recording happens under
// mu, so stopEvents never shuts a broadcaster down under a recording call.
type eventPipes struct {
	mu      sync.Mutex
	running bool
	ctx     context.Context // the Manager's logger; cancelled by stopEvents
	cancel  context.CancelFunc
	writes  *writeGate // events.k8s.io writes in flight
	logger  klog.Logger
	legacy  *pipe[record.EventRecorderLogger]
	v1      *pipe[events.EventRecorderLogger]
}

// pipe is one started broadcaster and the recorders built on it, by name.
type pipe[R any] struct {
	newRecorder func(name string) R
	stop        func()
	recorders   map[string]R
}

func (p *pipe[R]) recorder(name string) R {
	r, ok := p.recorders[name]
	if !ok {
		r = p.newRecorder(name)
		p.recorders[name] = r
	}
	return r
}

// startEvents lets events flow until stopEvents.
func (m *Manager) startEvents() {
	e := &m.events
	e.mu.Lock()
	defer e.mu.Unlock()
	e.logger = m.log()
	e.ctx, e.cancel = context.WithCancel(klog.NewContext(context.Background(), e.logger))
	e.writes = &writeGate{}
	e.running = true
}

// stopEvents drops every later event, stops the broadcasters started and
// waits for the events.k8s.io writes in flight. Events still queued are
// lost, as they are when a process exits.
func (m *Manager) stopEvents() {
	e := &m.events
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.running {
		return
	}
	e.running = false
	for _, stop := range []func(){pipeStop(e.legacy), pipeStop(e.v1)} {
		if stop != nil {
			stop()
		}
	}
	e.legacy, e.v1 = nil, nil
	e.cancel()
	e.writes.close()
}

func pipeStop[R any](p *pipe[R]) func() {
	if p == nil {
		return nil
	}
	return p.stop
}

// identity is the reportingInstance of the Manager's events.k8s.io Events.
func (m *Manager) identity() string {
	id := ""
	if m.elector != nil {
		id = m.elector.Identity()
	} else {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "unknown"
		}
		id = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	if len(id) > maxReportingInstance {
		id = id[:maxReportingInstance]
	}
	return id
}

// startV1Locked starts the events.k8s.io/v1 broadcaster; e.mu is held.
func (m *Manager) startV1Locked() *pipe[events.EventRecorderLogger] {
	e := &m.events
	sink := &v1Sink{
		sink:     &events.EventSinkImpl{Interface: m.client.EventsV1()},
		instance: m.identity(),
		writes:   e.writes,
	}
	b := events.NewBroadcaster(sink)
	ctx, cancel := context.WithCancel(e.ctx)
	stopLogging := func() {}
	err := b.StartRecordingToSinkWithContext(ctx)
	if err == nil {
		var stop func()
		if stop, err = b.StartLogging(e.logger.V(eventLogVerbosity)); err == nil {
			stopLogging = stop
		}
	}
	if err != nil {
		// Only a broadcaster already shut down fails here; the events are
		// dropped (each is logged) rather than the Manager stopped.
		e.logger.Error(err, "Starting the events.k8s.io/v1 event broadcaster")
	}
	return &pipe[events.EventRecorderLogger]{
		newRecorder: func(name string) events.EventRecorderLogger {
			return b.NewRecorder(m.scheme, name).WithLogger(e.logger)
		},
		stop: func() {
			stopLogging()
			b.Shutdown()
			cancel()
		},
		recorders: map[string]events.EventRecorderLogger{},
	}
}

// startLegacyLocked starts the core/v1 broadcaster; e.mu is held.
func (m *Manager) startLegacyLocked() *pipe[record.EventRecorderLogger] {
	e := &m.events
	// WithContext: the broadcaster logs with the Manager's logger and ends
	// its goroutines with e.ctx too.
	b := record.NewBroadcaster(record.WithContext(e.ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")})
	b.StartStructuredLogging(eventLogVerbosity)
	return &pipe[record.EventRecorderLogger]{
		newRecorder: func(name string) record.EventRecorderLogger {
			return b.NewRecorder(m.scheme, corev1.EventSource{Component: name}).WithLogger(e.logger)
		},
		stop:      b.Shutdown,
		recorders: map[string]record.EventRecorderLogger{},
	}
}

// withV1 runs f with name's events.k8s.io recorder while the Manager runs;
// it reports false, recording nothing, otherwise.
func (m *Manager) withV1(name string, f func(events.EventRecorderLogger)) bool {
	e := &m.events
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.running {
		return false
	}
	if e.v1 == nil {
		e.v1 = m.startV1Locked()
	}
	f(e.v1.recorder(name))
	return true
}

// withLegacy is withV1 for the core/v1 recorder.
func (m *Manager) withLegacy(name string, f func(record.EventRecorderLogger)) bool {
	e := &m.events
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.running {
		return false
	}
	if e.legacy == nil {
		e.legacy = m.startLegacyLocked()
	}
	f(e.legacy.recorder(name))
	return true
}

func (m *Manager) dropped(api, name, reason string) {
	m.log().V(2).Info("Dropping event: the manager is not running", "api", api, "source", name, "reason", reason)
}

// errStopped fails the writes attempted after Start returned; client-go
// then gives the event up, as its context is cancelled.
var errStopped = errors.New("manager: stopped: event not written")

// writeGate counts the writes in flight and refuses new ones once closed.
// The WaitGroup is only added to under mu before close, as its rules ask.
type writeGate struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (g *writeGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

func (g *writeGate) leave() { g.wg.Done() }

// close refuses later writes and waits for those in flight.
func (g *writeGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// v1Sink is client-go's events.k8s.io sink that stamps the Manager's
// identity as reportingInstance (client-go's NewRecorder fixes it to
// "<reportingController>-<hostname>") and is counted in the writeGate, so
// that no write outlives Start.
type v1Sink struct {
	sink     events.EventSink
	instance string
	writes   *writeGate
}

var _ events.EventSink = (*v1Sink)(nil)

// stamp returns a copy of ev with the Manager's identity; ev may be the
// broadcaster's cached copy, which is not ours to change.
func (s *v1Sink) stamp(ev *eventsv1.Event) *eventsv1.Event {
	c := *ev
	c.ReportingInstance = s.instance
	return &c
}

func (s *v1Sink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	if !s.writes.enter() {
		return nil, errStopped
	}
	defer s.writes.leave()
	return s.sink.Create(ctx, s.stamp(ev))
}

func (s *v1Sink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	if !s.writes.enter() {
		return nil, errStopped
	}
	defer s.writes.leave()
	return s.sink.Update(ctx, s.stamp(ev))
}

func (s *v1Sink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	if !s.writes.enter() {
		return nil, errStopped
	}
	defer s.writes.leave()
	return s.sink.Patch(ctx, s.stamp(ev), data)
}

// v1Recorder forwards to the Manager's events.k8s.io broadcaster while it
// runs.
type v1Recorder struct {
	m    *Manager
	name string
}

var _ EventRecorder = (*v1Recorder)(nil)

func (r *v1Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if !r.m.withV1(r.name, func(rec events.EventRecorderLogger) {
		rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}) {
		r.m.dropped("events.k8s.io/v1", r.name, reason)
	}
}

func (r *v1Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	if !r.m.withV1(r.name, func(rec events.EventRecorderLogger) {
		if ar, ok := rec.(events.AnnotatedEventRecorder); ok {
			ar.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, note, args...)
			return
		}
		// client-go's recorder has AnnotatedEventf, but its interface does
		// not promise it: record the event rather than lose it.
		r.m.events.logger.Error(nil, "Event recorder drops annotations", "source", r.name, "reason", reason)
		rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}) {
		r.m.dropped("events.k8s.io/v1", r.name, reason)
	}
}

// legacyRecorder forwards to the Manager's core/v1 broadcaster while it
// runs.
type legacyRecorder struct {
	m    *Manager
	name string
}

var _ record.EventRecorder = (*legacyRecorder)(nil)

func (r *legacyRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	if !r.m.withLegacy(r.name, func(rec record.EventRecorderLogger) {
		rec.Event(object, eventtype, reason, message)
	}) {
		r.m.dropped("core/v1", r.name, reason)
	}
}

func (r *legacyRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if !r.m.withLegacy(r.name, func(rec record.EventRecorderLogger) {
		rec.Eventf(object, eventtype, reason, messageFmt, args...)
	}) {
		r.m.dropped("core/v1", r.name, reason)
	}
}

func (r *legacyRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if !r.m.withLegacy(r.name, func(rec record.EventRecorderLogger) {
		rec.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}) {
		r.m.dropped("core/v1", r.name, reason)
	}
}
