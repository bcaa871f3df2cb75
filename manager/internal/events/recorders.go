package events

import (
	"context"
	"fmt"
	"os"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	kevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// maxReportingInstance is the API server's limit on an Event's
// reportingInstance.
const maxReportingInstance = 128

// logVerbosity is the level events are logged at, besides being written.
const logVerbosity = 4

// Recorders holds a Manager's two broadcasters, one per Event API, each
// built on its first event between Start and Stop, and hands out the
// recorders that forward to them. Recording happens under mu, so Stop never
// shuts a broadcaster down under a recording call.
type Recorders struct {
	client kubernetes.Interface
	scheme *runtime.Scheme
	log    func() klog.Logger // the Manager's logger, for the events dropped

	mu       sync.Mutex
	running  bool
	ctx      context.Context // the Manager's logger; cancelled by Stop
	cancel   context.CancelFunc
	writes   *writeGate  // events.k8s.io writes in flight
	logs     *logGate    // the broadcasters' logger, closed by Stop
	logger   klog.Logger // behind logs
	instance string
	legacy   *pipe[record.EventRecorderLogger]
	v1       *pipe[kevents.EventRecorderLogger]
}

// New returns the Recorders of a Manager: events are written through client,
// their objects' kinds resolved through scheme, and the events dropped while
// not running logged through log's logger.
func New(client kubernetes.Interface, scheme *runtime.Scheme, log func() klog.Logger) *Recorders {
	return &Recorders{client: client, scheme: scheme, log: log}
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

// Start lets events flow until Stop: they are logged through logger and
// written with instance (Instance) as their reportingInstance.
func (r *Recorders) Start(logger klog.Logger, instance string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = &logGate{}
	logger = r.logs.logger(logger)
	r.logger, r.instance = logger, instance
	r.ctx, r.cancel = context.WithCancel(klog.NewContext(context.Background(), logger))
	r.writes = &writeGate{}
	r.running = true
}

// Stop drops every later event, stops the broadcasters started and waits
// for the events.k8s.io writes in flight. Events still queued are lost, as
// they are when a process exits, and so are the broadcasters' log lines
// from then on (a write failing as it is cancelled would log one after Stop).
func (r *Recorders) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return
	}
	r.running = false
	r.logs.close()
	if r.legacy != nil {
		r.legacy.stop()
	}
	if r.v1 != nil {
		r.v1.stop()
	}
	r.legacy, r.v1 = nil, nil
	r.cancel()
	r.writes.close()
}

// Instance is the reportingInstance of a Manager's events.k8s.io Events:
// its leader election identity, or "<hostname>_<pid>" without one (""),
// cut to the API server's limit.
func Instance(electionIdentity string) string {
	id := electionIdentity
	if id == "" {
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

// startV1Locked starts the events.k8s.io/v1 broadcaster; r.mu is held.
func (r *Recorders) startV1Locked() *pipe[kevents.EventRecorderLogger] {
	sink := &v1Sink{
		sink:     &kevents.EventSinkImpl{Interface: r.client.EventsV1()},
		instance: r.instance,
		writes:   r.writes,
	}
	b := kevents.NewBroadcaster(sink)
	ctx, cancel := context.WithCancel(r.ctx)
	stopLogging := func() {}
	err := b.StartRecordingToSinkWithContext(ctx)
	if err == nil {
		var stop func()
		if stop, err = b.StartLogging(r.logger.V(logVerbosity)); err == nil {
			stopLogging = stop
		}
	}
	if err != nil {
		// Only a broadcaster already shut down fails here; the events are
		// dropped (each is logged) rather than the Manager stopped.
		r.logger.Error(err, "Starting the events.k8s.io/v1 event broadcaster")
	}
	logger := r.logger
	return &pipe[kevents.EventRecorderLogger]{
		newRecorder: func(name string) kevents.EventRecorderLogger {
			return b.NewRecorder(r.scheme, name).WithLogger(logger)
		},
		stop: func() {
			stopLogging()
			b.Shutdown()
			cancel()
		},
		recorders: map[string]kevents.EventRecorderLogger{},
	}
}

// startLegacyLocked starts the core/v1 broadcaster; r.mu is held.
func (r *Recorders) startLegacyLocked() *pipe[record.EventRecorderLogger] {
	// WithContext: the broadcaster logs with the Manager's logger and ends
	// its goroutines with r.ctx too.
	b := record.NewBroadcaster(record.WithContext(r.ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.client.CoreV1().Events("")})
	b.StartStructuredLogging(logVerbosity)
	logger := r.logger
	return &pipe[record.EventRecorderLogger]{
		newRecorder: func(name string) record.EventRecorderLogger {
			return b.NewRecorder(r.scheme, corev1.EventSource{Component: name}).WithLogger(logger)
		},
		stop:      b.Shutdown,
		recorders: map[string]record.EventRecorderLogger{},
	}
}

// recordTo runs f with name's recorder of the pipe *p (started by start if it
// is not yet) while events flow; otherwise it records nothing and logs the
// event (api, reason) as dropped.
func recordTo[R any](r *Recorders, p **pipe[R], start func() *pipe[R], api, name, reason string, f func(R)) {
	r.mu.Lock()
	if r.running {
		defer r.mu.Unlock()
		if *p == nil {
			*p = start()
		}
		f((*p).recorder(name))
		return
	}
	r.mu.Unlock()
	r.log().V(2).Info("Dropping event: the manager is not running", "api", api, "source", name, "reason", reason)
}

func (r *Recorders) recordV1(name, reason string, f func(kevents.EventRecorderLogger)) {
	recordTo(r, &r.v1, r.startV1Locked, "events.k8s.io/v1", name, reason, f)
}

func (r *Recorders) recordLegacy(name, reason string, f func(record.EventRecorderLogger)) {
	recordTo(r, &r.legacy, r.startLegacyLocked, "core/v1", name, reason, f)
}
