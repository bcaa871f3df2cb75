package leaderelection

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// shutdownQuiet returns logger for client-go's engine, whose "Error retrieving lease lock"
// (and "Failed to update lease") carry context.Canceled on every normal shutdown: the request
// in flight ends with Run's ctx. Those are logged at V(4) as info, not as errors; every other
// error is logged as it is.
func shutdownQuiet(logger klog.Logger) klog.Logger {
	sink := logger.GetSink()
	if sink == nil {
		return logger
	}
	// WithSink, not logr.New: New would Init the shared sink again, a write other
	// goroutines race with. The wrapper's frame is skipped through the sink's call depth.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return logger.WithSink(quietSink{sink})
}

// quietSink demotes errors caused by a cancelled context (see shutdownQuiet).
type quietSink struct{ logr.LogSink }

// cancelledLevel is the verbosity of an error a cancelled context caused.
const cancelledLevel = 4

// Init does nothing: the wrapped sink was initialized when its logger was made.
func (quietSink) Init(logr.RuntimeInfo) {}

func (s quietSink) Error(err error, msg string, kv ...any) {
	if errors.Is(err, context.Canceled) {
		if s.LogSink.Enabled(cancelledLevel) {
			s.LogSink.Info(cancelledLevel, msg, append(kv, "err", err)...)
		}
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s quietSink) WithValues(kv ...any) logr.LogSink { return quietSink{s.LogSink.WithValues(kv...)} }
func (s quietSink) WithName(name string) logr.LogSink { return quietSink{s.LogSink.WithName(name)} }

func (s quietSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return quietSink{cd.WithCallDepth(depth)}
	}
	return s
}
