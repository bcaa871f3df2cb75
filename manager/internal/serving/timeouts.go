package serving

import (
	"log"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Timeouts bound what one client can hold of a server: every server Start
// starts has all of them.
type Timeouts struct {
	ReadHeader     time.Duration // headers (and a TLS handshake) must arrive within this
	Read           time.Duration // the whole request
	Write          time.Duration // from the end of the headers to the end of the response
	Idle           time.Duration // a kept-alive connection between requests
	MaxHeaderBytes int
}

// DefaultTimeouts are the Manager's.
var DefaultTimeouts = Timeouts{
	ReadHeader: 10 * time.Second,
	Read:       30 * time.Second,
	Write:      30 * time.Second,
	// Longer than a Prometheus scrape interval, so a scraper's connection is reused.
	Idle: 2 * time.Minute,
	// Far above a service-account token (about 1 KiB), far below Go's 1 MiB default.
	MaxHeaderBytes: 64 << 10,
}

// ProfilingWriteTimeout replaces the write timeout of a server with pprof (Site.Profiling):
// pprof refuses a profile whose duration reaches the write timeout, and
// /debug/pprof/profile's default is 30 s.
const ProfilingWriteTimeout = 2 * time.Minute

func (t Timeouts) apply(s *http.Server) {
	s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout = t.ReadHeader, t.Read, t.Write, t.Idle
	s.MaxHeaderBytes = t.MaxHeaderBytes
}

// Pprof returns net/http/pprof's handlers by path, under /debug/pprof/.
func Pprof() map[string]http.Handler {
	return map[string]http.Handler{
		// pprof.Index serves the named profiles (heap, goroutine, ...) under the prefix.
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// httpErrorLog routes net/http's own complaints (TLS handshake errors, bad requests it
// rejects before a handler runs) to the Manager's logger at V(4) instead of the process's
// stderr: a port scanner must not fill the log.
func httpErrorLog(logger klog.Logger) *log.Logger {
	return log.New(errorLogWriter{logger.V(4)}, "", 0)
}

type errorLogWriter struct{ logger klog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	w.logger.Info("HTTP server", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
