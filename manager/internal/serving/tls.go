package serving

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/certwatcher"
)

// TLS is the certificate of an HTTPS site.
type TLS struct {
	// CertDir holds the certificate and key (CertName, KeyName), reloaded
	// when they change on disk. "" means a self-signed certificate made in
	// memory, for localhost and the host name.
	CertDir  string
	CertName string
	KeyName  string
	// Clock is the certificate watcher's. nil means the real clock.
	Clock clock.WithTicker
	// Registerer receives the certificate watcher's certwatcher_* counters. nil registers none.
	Registerer prometheus.Registerer
}

// config is the TLS configuration of the server of a site named name, and
// the certificate watcher to run next to it (nil for a self-signed
// certificate).
func (t *TLS) config(name string, logger klog.Logger) (*tls.Config, *certwatcher.CertWatcher, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CertDir != "" {
		w, err := certwatcher.New(certwatcher.Options{
			CertFile:   filepath.Join(t.CertDir, t.CertName),
			KeyFile:    filepath.Join(t.CertDir, t.KeyName),
			Clock:      t.Clock,
			Registerer: t.Registerer,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s serving certificate: %w", name, err)
		}
		cfg.GetCertificate = w.GetCertificate
		return cfg, w, nil
	}
	hosts := append([]string(nil), certwatcher.DefaultHosts...)
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		hosts = append(hosts, h)
	}
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: hosts})
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed %s certificate: %w", name, err)
	}
	logger.Info("Serving with a self-signed certificate (MetricsServingOptions.CertDir is empty): clients must skip verification",
		"what", name, "hosts", hosts)
	cfg.Certificates = []tls.Certificate{b.Certificate}
	return cfg, nil, nil
}

// runWatcher runs w until the returned stop is called; stop waits for it.
func runWatcher(ctx context.Context, w *certwatcher.CertWatcher) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Start(ctx) // a fresh watcher: ErrAlreadyStarted cannot happen
	}()
	return func() {
		cancel()
		<-done
	}
}

// http1Only is the protocol set of an HTTPS server: HTTP/2's stream multiplexing is what
// the 2023 rapid-reset attacks abused, and a scraper gains nothing from it (kubebuilder's
// scaffolding disables it on metrics servers for the same reason).
func http1Only() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	return p
}
