package discard

import "github.com/go-logr/logr"

// Logger returns a Logger whose sink drops everything: never the zero Logger.
func Logger() logr.Logger { return logr.New(sink{}) }

// sink is a logr.LogSink that is never enabled and drops errors too.
type sink struct{}

func (sink) Init(logr.RuntimeInfo)            {}
func (sink) Enabled(int) bool                 { return false }
func (sink) Info(int, string, ...any)         {}
func (sink) Error(error, string, ...any)      {}
func (s sink) WithValues(...any) logr.LogSink { return s }
func (s sink) WithName(string) logr.LogSink   { return s }
