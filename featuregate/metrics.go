package featuregate

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricName is the gauge RegisterMetrics exports, as Kubernetes components export it:
// kubernetes_feature_enabled{name="A",stage="BETA"} 1.
const MetricName = "kubernetes_feature_enabled"

// featureEnabledDesc matches component-base's gauge, help text included (its BETA
// stability level prefixes the help with "[BETA] ").
var featureEnabledDesc = prometheus.NewDesc(MetricName,
	"[BETA] This metric records the data about the stage and enablement of a k8s feature.",
	[]string{"name", "stage"}, nil)

// RegisterMetrics registers on reg a collector exporting kubernetes_feature_enabled for
// the features of gates: one series per feature not PreAlpha at its gate's versions, the
// AllAlpha/AllBeta pseudo gates included (as upstream's AddMetrics), value 1 or 0, label
// stage "ALPHA", "BETA", "" (GA), or "DEPRECATED".
//
// Unlike upstream's AddMetrics, which records the values once, the collector reads each
// gate's current state at every scrape, so values set later (flags parsed after the
// Manager was built, test overrides) show; a scrape does not count as a read of the gate.
// Pass every gate of the process in one call: the collectors of two calls export the same
// metric, so a registry takes only one of them (prometheus.AlreadyRegisteredError).
// A name known to several gates (AllAlpha and AllBeta always are) is exported once, from
// the first gate that knows it (upstream's gauge keeps whichever gate recorded last).
func RegisterMetrics(reg prometheus.Registerer, gates ...*Gate) error {
	return reg.Register(NewMetricsCollector(gates...))
}

// NewMetricsCollector returns the collector RegisterMetrics registers, for callers that
// register collectors themselves.
func NewMetricsCollector(gates ...*Gate) prometheus.Collector {
	return &metricsCollector{gates: slices.Clone(gates)}
}

type metricsCollector struct {
	gates []*Gate
}

// Describe implements prometheus.Collector.
func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- featureEnabledDesc }

// Collect implements prometheus.Collector from each gate's published snapshot, lock-free.
func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	seen := map[Feature]bool{}
	for _, g := range c.gates {
		s := g.load()
		for _, f := range slices.Sorted(maps.Keys(s.known)) {
			if seen[f] {
				continue
			}
			seen[f] = true
			spec := s.specAt(f)
			if spec.PreRelease == PreAlpha {
				continue
			}
			v := 0.0
			if s.enabled[f] {
				v = 1
			}
			m, err := prometheus.NewConstMetric(featureEnabledDesc, prometheus.GaugeValue, v, string(f), string(spec.PreRelease))
			if err != nil {
				m = prometheus.NewInvalidMetric(featureEnabledDesc, err)
			}
			ch <- m
		}
	}
}
