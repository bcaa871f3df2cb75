package events

import (
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// logGate passes the broadcasters' log lines to the Manager's logger until
// it is closed. client-go's broadcasters log from goroutines of their own (a
// write that failed as Stop cancelled it, an event being logged), which Stop
// cannot wait for: once the gate is closed they log nothing, so no line is
// written after Stop returned.
type logGate struct {
	mu     sync.RWMutex
	closed bool
}

// logger returns l behind the gate.
func (g *logGate) logger(l klog.Logger) klog.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l // discards already
	}
	// One more frame (the gate's) between the caller and sink: a copy of
	// sink that knows it, so the line names the caller's file and line.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return logr.New(&gatedSink{g: g, sink: sink})
}

// close stops every later line and waits for those being written.
func (g *logGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// gatedSink is a logr.LogSink behind a logGate.
type gatedSink struct {
	g    *logGate
	sink logr.LogSink
}

var _ logr.CallDepthLogSink = (*gatedSink)(nil)

// Init does nothing: sink was initialised by the logger it came from.
func (s *gatedSink) Init(logr.RuntimeInfo) {}

func (s *gatedSink) Enabled(level int) bool { return s.sink.Enabled(level) }

func (s *gatedSink) Info(level int, msg string, kv ...any) {
	s.g.mu.RLock()
	defer s.g.mu.RUnlock()
	if !s.g.closed {
		s.sink.Info(level, msg, kv...)
	}
}

func (s *gatedSink) Error(err error, msg string, kv ...any) {
	s.g.mu.RLock()
	defer s.g.mu.RUnlock()
	if !s.g.closed {
		s.sink.Error(err, msg, kv...)
	}
}

func (s *gatedSink) WithValues(kv ...any) logr.LogSink {
	return &gatedSink{g: s.g, sink: s.sink.WithValues(kv...)}
}

func (s *gatedSink) WithName(name string) logr.LogSink {
	return &gatedSink{g: s.g, sink: s.sink.WithName(name)}
}

// WithCallDepth keeps the caller's file and line right through the gate.
func (s *gatedSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.sink.(logr.CallDepthLogSink); ok {
		return &gatedSink{g: s.g, sink: cd.WithCallDepth(depth)}
	}
	return s
}
