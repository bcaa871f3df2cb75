package directinformer

import (
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
)

// provider is the process's informer metrics provider, the one given to
// cache.SetInformerMetricsProvider (client-go keeps its own unexported).
var provider atomic.Pointer[cache.InformerMetricsProvider]

// SetMetricsProvider makes informers created afterwards with a reserved
// Options.Identifier report to p. The first call wins, as with client-go's
// cache.SetInformerMetricsProvider; call both with the same provider.
func SetMetricsProvider(p cache.InformerMetricsProvider) {
	provider.CompareAndSwap(nil, &p)
}

// metrics are an informer's series: the time its handlers took per change,
// and the queue gauge client-go's informers report, which stays 0 here since
// nothing waits in a queue.
type metrics struct {
	latency cache.HistogramMetric
}

func newMetrics(id cache.InformerNameAndResource) metrics {
	p := provider.Load()
	if p == nil || !id.Reserved() {
		return metrics{}
	}
	(*p).NewQueuedItemMetric(id).Set(0)
	return metrics{latency: (*p).NewProcessingLatencyMetric(id)}
}
