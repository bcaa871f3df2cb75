package certwatcher

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultInterval is how often Start re-reads the files when Options.Interval is 0. File-system
// notifications usually pick a change up at once; the interval bounds the delay when they do not.
const DefaultInterval = 10 * time.Second

var (
	// ErrInvalidOptions is matched by the errors of New about its Options.
	ErrInvalidOptions = errors.New("certwatcher: invalid options")
	// ErrAlreadyStarted is returned by a second Start of one CertWatcher.
	ErrAlreadyStarted = errors.New("certwatcher: already started")
)

// Options configure a CertWatcher.
type Options struct {
	// CertFile is the PEM certificate (chain, leaf first). Required.
	CertFile string
	// KeyFile is the PEM private key of CertFile's leaf. Required.
	KeyFile string
	// Interval is how often Start re-reads both files, whatever the notifications say. 0 means
	// DefaultInterval.
	Interval time.Duration
	// Clock drives Start's ticker. nil means the real clock.
	Clock clock.WithTicker
	// Registerer receives the read metrics (MetricReadCertificateTotal and
	// MetricReadCertificateErrorsTotal). nil means they are not registered anywhere. Watchers
	// on one registry share the counters, as controller-runtime's process-wide ones are.
	Registerer prometheus.Registerer
}

// CertWatcher serves the certificate of a cert/key file pair and reloads it when the files
// change (see the package doc). Build it with New; it is safe for concurrent use.
type CertWatcher struct {
	certFile, keyFile string
	interval          time.Duration
	clock             clock.WithTicker

	cert    atomic.Pointer[tls.Certificate]
	started atomic.Bool

	metrics metrics

	mu              sync.Mutex // serializes reads and callbacks; guards the fields below
	callback        func(tls.Certificate)
	certPEM, keyPEM []byte // the served pair's file content
	badCert, badKey []byte // the last content that did not load, so it is logged once
	readErr         string // the last error reading the files, for the same reason
}

// New checks opts and loads the pair: an error matches ErrInvalidOptions, or names the files
// and wraps why they did not load (fs.ErrNotExist for a missing one).
func New(opts Options) (*CertWatcher, error) {
	switch {
	case opts.CertFile == "":
		return nil, fmt.Errorf("%w: CertFile is empty", ErrInvalidOptions)
	case opts.KeyFile == "":
		return nil, fmt.Errorf("%w: KeyFile is empty", ErrInvalidOptions)
	case opts.Interval < 0:
		return nil, fmt.Errorf("%w: Interval %v is negative", ErrInvalidOptions, opts.Interval)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	w := &CertWatcher{certFile: opts.CertFile, keyFile: opts.KeyFile, interval: opts.Interval, clock: opts.Clock, metrics: m}
	if w.interval == 0 {
		w.interval = DefaultInterval
	}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	if _, _, err := w.reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// GetCertificate returns the pair loaded last; it is tls.Config.GetCertificate. It never fails:
// New does not return a CertWatcher without a pair.
func (w *CertWatcher) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return w.cert.Load(), nil
}

// ReadCertificate re-reads both files now and serves their pair when it changed. On an error
// the previous pair keeps being served.
func (w *CertWatcher) ReadCertificate() error {
	_, _, err := w.reload()
	return err
}

// RegisterCallback sets the function called with the new pair after each reload that changed
// it (controller-runtime's name and rule: a later call replaces the callback, and the served
// pair is handed to it at once). Calls are serialized with reloads, in reload order; the
// callback must not call ReadCertificate or RegisterCallback, which would wait for it.
func (w *CertWatcher) RegisterCallback(callback func(tls.Certificate)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.callback = callback
	if callback != nil {
		callback(*w.cert.Load())
	}
}

// Start watches the files until ctx ends, then returns nil: it re-reads them on every
// file-system notification about them (see the package doc) and every Options.Interval. A pair
// that does not load is logged (through ctx's klog logger) once per distinct content and the
// previous one stays; a reloaded pair is logged at V(1). A CertWatcher starts once
// (ErrAlreadyStarted).
func (w *CertWatcher) Start(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	logger := klog.FromContext(ctx).WithValues("certFile", w.certFile, "keyFile", w.keyFile)
	n := w.notify(logger)
	defer n.close(logger)
	// A change between New and the watches being in place has no notification.
	w.readAndLog(logger)
	t := w.clock.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case ev, ok := <-n.events():
			if !ok {
				n.closed(true)
				continue
			}
			if !n.concerns(ev) {
				continue
			}
		case err, ok := <-n.errors():
			if !ok {
				n.closed(false)
				continue
			}
			// An overflow means events were lost: read now rather than wait for the tick.
			logger.V(1).Info("File-system notification error; re-reading the files", "err", err)
		}
		w.readAndLog(logger)
	}
}

// Run is Start, for manager.Runnable.
func (w *CertWatcher) Run(ctx context.Context) error { return w.Start(ctx) }

// Name names the watcher after its certificate file, so that a Manager can run several.
func (w *CertWatcher) Name() string { return "certwatcher:" + w.certFile }

// NeedLeaderElection is false: every replica serves TLS, leader or not.
func (w *CertWatcher) NeedLeaderElection() bool { return false }

// readAndLog reloads the pair and logs the outcome as Start documents.
func (w *CertWatcher) readAndLog(logger klog.Logger) {
	changed, repeated, err := w.reload()
	switch {
	case err != nil && !repeated:
		logger.Error(err, "Certificate not reloaded; serving the previous one")
	case changed:
		if leaf := w.cert.Load().Leaf; leaf != nil {
			logger.V(1).Info("Certificate reloaded", "subject", leaf.Subject.String(),
				"serial", leaf.SerialNumber.String(), "notAfter", leaf.NotAfter)
		}
	}
}

// reload reads both files and swaps in their pair when their content differs from the served
// one, then calls the callback. repeated reports an error about the same content as the
// previous error, so that Start logs each bad pair once, not once per tick or event.
func (w *CertWatcher) reload() (changed, repeated bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.metrics.reads.Inc()
	defer func() {
		if err != nil {
			w.metrics.errors.Inc()
		}
	}()
	certPEM, err := os.ReadFile(w.certFile)
	if err == nil {
		var keyPEM []byte
		if keyPEM, err = os.ReadFile(w.keyFile); err == nil {
			w.readErr = ""
			changed, repeated, err = w.loadLocked(certPEM, keyPEM)
			if changed && w.callback != nil {
				w.callback(*w.cert.Load())
			}
			return changed, repeated, err
		}
	}
	err = fmt.Errorf("certwatcher: reading the pair: %w", err)
	repeated = err.Error() == w.readErr
	w.readErr = err.Error()
	return false, repeated, err
}

// loadLocked serves the pair of the files' content, unless it is the served one already.
func (w *CertWatcher) loadLocked(certPEM, keyPEM []byte) (changed, repeated bool, err error) {
	if bytes.Equal(certPEM, w.certPEM) && bytes.Equal(keyPEM, w.keyPEM) {
		return false, false, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// A rotation that wrote one file and not yet the other lands here, and is retried.
		repeated := w.badCert != nil && bytes.Equal(certPEM, w.badCert) && bytes.Equal(keyPEM, w.badKey)
		w.badCert, w.badKey = certPEM, keyPEM
		return false, repeated, fmt.Errorf("certwatcher: loading %s and %s: %w", w.certFile, w.keyFile, err)
	}
	w.certPEM, w.keyPEM, w.badCert, w.badKey = certPEM, keyPEM, nil, nil
	w.cert.Store(&pair)
	return true, false, nil
}
