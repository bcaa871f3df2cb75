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

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultInterval is how often Start re-reads the files when Options.Interval is 0.
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
	// Interval is how often Start re-reads both files. 0 means DefaultInterval.
	Interval time.Duration
	// Clock drives Start's ticker. nil means the real clock.
	Clock clock.WithTicker
}

// CertWatcher serves the certificate of a cert/key file pair and reloads it when the files
// change (see the package doc). Build it with New; it is safe for concurrent use.
type CertWatcher struct {
	certFile, keyFile string
	interval          time.Duration
	clock             clock.WithTicker

	cert    atomic.Pointer[tls.Certificate]
	started atomic.Bool

	mu              sync.Mutex // serializes reads; guards the fields below
	certPEM, keyPEM []byte     // the served pair's file content
	badCert, badKey []byte     // the last content that did not load, so it is logged once
	readErr         string     // the last error reading the files, for the same reason
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
	w := &CertWatcher{certFile: opts.CertFile, keyFile: opts.KeyFile, interval: opts.Interval, clock: opts.Clock}
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

// Start re-reads the files every Options.Interval until ctx ends, then returns nil. A pair
// that does not load is logged (through ctx's klog logger) once per distinct content and the
// previous one stays; a reloaded pair is logged at V(1). A CertWatcher starts once
// (ErrAlreadyStarted).
func (w *CertWatcher) Start(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	logger := klog.FromContext(ctx).WithValues("certFile", w.certFile, "keyFile", w.keyFile)
	t := w.clock.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
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
}

// reload reads both files and swaps in their pair when their content differs from the served
// one. repeated reports an error about the same content as the previous error, so that Start
// logs each bad pair once, not once per tick.
func (w *CertWatcher) reload() (changed, repeated bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	certPEM, err := os.ReadFile(w.certFile)
	if err == nil {
		var keyPEM []byte
		if keyPEM, err = os.ReadFile(w.keyFile); err == nil {
			w.readErr = ""
			return w.loadLocked(certPEM, keyPEM)
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
