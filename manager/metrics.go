package manager

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/internal/clientgometrics"
)

// setUpMetrics makes the Manager's registry (Options.Registerer, or a
// private one with the Go and process collectors) and registers its series
// on it: the controllers', client-go's, and the feature gate's.
func (m *Manager) setUpMetrics(opts Options) error {
	reg, gath := opts.Registerer, opts.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
		if gath == nil {
			gath = r
		}
	}
	if gath == nil {
		g, ok := reg.(prometheus.Gatherer)
		if !ok {
			return &OptionsError{Field: "manager.Options.Gatherer", Reason: fmt.Sprintf("nil, and Registerer %T is not a prometheus.Gatherer", reg)}
		}
		gath = g
	}
	metrics, err := controller.NewMetrics(reg)
	if err != nil {
		return err
	}
	if err := clientgometrics.Register(reg); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if g, ok := opts.FeatureGate.(*featuregate.Gate); ok && g != nil {
		// kubernetes_feature_enabled{name,stage}, as every Kubernetes component exports it.
		// Registered already (by the caller, on a shared registry) is what we want.
		if err := featuregate.RegisterMetrics(reg, g); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return fmt.Errorf("manager: feature gate metrics: %w", err)
		}
	}
	// The caches' memory, lag and budgets (ctrlkit_informer_*); one factory per registry.
	if err := reg.Register(cacheCollector{f: m.factory}); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return fmt.Errorf("manager: informer cache metrics: %w", err)
	}
	m.metrics, m.gatherer = metrics, gath
	m.registerer = reg
	return nil
}

// managerSeq numbers the factories Managers build, for their names.
var managerSeq atomic.Int64

// managerInformerName is the informer name of the next factory a Manager
// builds: "ctrlkit-manager-1" for the first of the process, so a binary
// with one Manager always exports the same name.
func managerInformerName() string {
	return fmt.Sprintf("ctrlkit-manager-%d", managerSeq.Add(1))
}
