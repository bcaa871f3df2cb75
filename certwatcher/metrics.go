package certwatcher

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The read metrics, controller-runtime's names (see Options.Registerer).
const (
	// MetricReadCertificateTotal counts reads of the pair: New's, every tick's, every
	// notification's and every ReadCertificate.
	MetricReadCertificateTotal = "certwatcher_read_certificate_total"
	// MetricReadCertificateErrorsTotal counts the reads that failed (a file missing, a pair that
	// does not load), each time, though each distinct bad pair is logged once.
	MetricReadCertificateErrorsTotal = "certwatcher_read_certificate_errors_total"
)

type metrics struct {
	reads, errors prometheus.Counter
}

// newMetrics registers the counters on reg, sharing those another watcher registered there
// already. A nil reg gives counters nobody reads.
func newMetrics(reg prometheus.Registerer) (metrics, error) {
	m := metrics{
		reads: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricReadCertificateTotal,
			Help: "Total number of certificate reads"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricReadCertificateErrorsTotal,
			Help: "Total number of certificate read errors"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.reads, err = register(reg, m.reads); err != nil {
		return m, err
	}
	m.errors, err = register(reg, m.errors)
	return m, err
}

func register(reg prometheus.Registerer, c prometheus.Counter) (prometheus.Counter, error) {
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(prometheus.Counter); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("certwatcher: registering metrics: %w", err)
	}
	return c, nil
}
