package clientgometrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
)

// client-go asks the informer metrics provider only for the informers of a
// factory given a process-unique name (informer.Options.InformerName); the
// factory a Manager builds gets one of its own.

// informerLatencyBuckets are kube's (component-base's clientgo/fifo) for
// informer_processing_latency_seconds.
var informerLatencyBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// informerLabels identify an informer: its factory's name and its resource.
var informerLabels = []string{"name", "group", "version", "resource"}

// informerSeries is client-go's informer metrics provider and the collector
// of the three series kube-controller-manager exports, with kube's names, labels
// and help.
var informerSeries = &informerCollector{
	queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "informer_queued_items",
		Help: "Number of items currently queued in the FIFO.",
	}, informerLabels),
	latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "informer_processing_latency_seconds",
		Help:    "Time taken to process events after popping from the queue.",
		Buckets: informerLatencyBuckets,
	}, informerLabels),
	storeRV: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "informer_store_resource_version",
		Help: "The 15 least significant digits of the resource version of the store.",
	}, informerLabels),
	ids: map[[4]string]cache.InformerNameAndResource{},
}

// informerCollector is client-go's informer metrics provider and the
// collector of what it is told. An informer's series live while its
// factory holds its name: client-go tells the provider nothing when a
// factory releases the name at Shutdown, so Collect deletes the series of
// released informers before it collects. Without that a stopped factory's
// last queue length and resourceVersion would be exported for ever.
type informerCollector struct {
	queued  *prometheus.GaugeVec
	latency *prometheus.HistogramVec
	storeRV *prometheus.GaugeVec

	// mu orders the creation of series (the provider's methods) with their
	// deletion (Collect): a series deleted while being handed to a new
	// informer of the same name and resource would leave that informer
	// updating a series no registry exports.
	mu sync.Mutex
	// ids holds, by label values, the identity of the newest informer
	// reporting under them.
	ids map[[4]string]cache.InformerNameAndResource
}

var _ cache.InformerMetricsProvider = (*informerCollector)(nil)

func labelValues(id cache.InformerNameAndResource) [4]string {
	gvr := id.GroupVersionResource()
	return [4]string{id.Name(), gvr.Group, gvr.Version, gvr.Resource}
}

// track records id as the newest informer under its labels and returns the
// labels. Called with c.mu held.
func (c *informerCollector) track(id cache.InformerNameAndResource) []string {
	lv := labelValues(id)
	c.ids[lv] = id
	return lv[:]
}

// NewQueuedItemMetric implements cache.InformerMetricsProvider.
func (c *informerCollector) NewQueuedItemMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	c.mu.Lock()
	defer c.mu.Unlock()
	return reservedGauge{id, c.queued.WithLabelValues(c.track(id)...)}
}

// NewProcessingLatencyMetric implements cache.InformerMetricsProvider.
func (c *informerCollector) NewProcessingLatencyMetric(id cache.InformerNameAndResource) cache.HistogramMetric {
	c.mu.Lock()
	defer c.mu.Unlock()
	return reservedObserver{id, c.latency.WithLabelValues(c.track(id)...)}
}

// NewStoreResourceVersionMetric implements cache.InformerMetricsProvider.
func (c *informerCollector) NewStoreResourceVersionMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	c.mu.Lock()
	defer c.mu.Unlock()
	return reservedGauge{id, c.storeRV.WithLabelValues(c.track(id)...)}
}

// Describe implements prometheus.Collector.
func (c *informerCollector) Describe(ch chan<- *prometheus.Desc) {
	c.queued.Describe(ch)
	c.latency.Describe(ch)
	c.storeRV.Describe(ch)
}

// Collect implements prometheus.Collector: it deletes the series of
// informers whose name was released, then collects the rest.
func (c *informerCollector) Collect(ch chan<- prometheus.Metric) {
	c.pruneReleased()
	c.queued.Collect(ch)
	c.latency.Collect(ch)
	c.storeRV.Collect(ch)
}

func (c *informerCollector) pruneReleased() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for lv, id := range c.ids {
		if id.Reserved() {
			continue
		}
		c.queued.DeleteLabelValues(lv[:]...)
		c.latency.DeleteLabelValues(lv[:]...)
		c.storeRV.DeleteLabelValues(lv[:]...)
		delete(c.ids, lv)
	}
}

// reservedGauge and reservedObserver update their series only while their
// informer's factory holds its name: after Shutdown, a name another factory
// has taken since must not receive a stopped informer's values.
type reservedGauge struct {
	id cache.InformerNameAndResource
	g  prometheus.Gauge
}

func (r reservedGauge) Set(v float64) {
	if r.id.Reserved() {
		r.g.Set(v)
	}
}

type reservedObserver struct {
	id cache.InformerNameAndResource
	o  prometheus.Observer
}

func (r reservedObserver) Observe(v float64) {
	if r.id.Reserved() {
		r.o.Observe(v)
	}
}
