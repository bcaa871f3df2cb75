package events

import (
	"k8s.io/apimachinery/pkg/runtime"
	kevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// Recorder records events.k8s.io/v1 Events with reportingController name
// through its Recorders while they run.
type Recorder struct {
	r    *Recorders
	name string
}

// For returns the events.k8s.io/v1 recorder of reportingController name.
func (r *Recorders) For(name string) *Recorder { return &Recorder{r: r, name: name} }

var (
	_ kevents.EventRecorder          = (*Recorder)(nil)
	_ kevents.AnnotatedEventRecorder = (*Recorder)(nil)
)

// Eventf records an event about regarding (and related, which may be nil).
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.r.recordV1(r.name, reason, func(rec kevents.EventRecorderLogger) {
		rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
	})
}

// AnnotatedEventf is Eventf with annotations on the Event.
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	r.r.recordV1(r.name, reason, func(rec kevents.EventRecorderLogger) {
		if ar, ok := rec.(kevents.AnnotatedEventRecorder); ok {
			ar.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, note, args...)
			return
		}
		// client-go's recorder has AnnotatedEventf, but its interface does
		// not promise it: record the event rather than lose it.
		r.r.logger.Error(nil, "Event recorder drops annotations", "source", r.name, "reason", reason)
		rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
	})
}

// LegacyRecorder records core/v1 Events with source component name through
// its Recorders while they run.
type LegacyRecorder struct {
	r    *Recorders
	name string
}

// LegacyFor returns the core/v1 recorder of source component name.
func (r *Recorders) LegacyFor(name string) *LegacyRecorder { return &LegacyRecorder{r: r, name: name} }

var _ record.EventRecorder = (*LegacyRecorder)(nil)

// Event records an event about object.
func (r *LegacyRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.r.recordLegacy(r.name, reason, func(rec record.EventRecorderLogger) {
		rec.Event(object, eventtype, reason, message)
	})
}

// Eventf is Event with a message format and its arguments.
func (r *LegacyRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.r.recordLegacy(r.name, reason, func(rec record.EventRecorderLogger) {
		rec.Eventf(object, eventtype, reason, messageFmt, args...)
	})
}

// AnnotatedEventf is Eventf with annotations on the Event.
func (r *LegacyRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.r.recordLegacy(r.name, reason, func(rec record.EventRecorderLogger) {
		rec.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	})
}
