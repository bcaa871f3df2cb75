package multicluster

import "github.com/prometheus/client_golang/prometheus"

var (
	clustersDesc = prometheus.NewDesc("ctrlkit_multicluster_clusters",
		"Clusters engaged by the Fleet.", nil, nil)
	readyDesc = prometheus.NewDesc("ctrlkit_multicluster_cluster_ready",
		"1 when the engaged cluster answers its probe and its caches synced, else 0 (its reason is on /readyz?verbose).",
		[]string{"cluster"}, nil)
	cacheDesc = prometheus.NewDesc("ctrlkit_multicluster_cache_bytes",
		"Bytes the engaged cluster's informer caches hold, as its Factory accounts them (informer.Factory.CacheMemory).",
		[]string{"cluster"}, nil)
)

// collector reads the Fleet at each scrape: a disengaged cluster's series
// goes with it, with no bookkeeping on the engage path.
type collector struct{ f *Fleet }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- clustersDesc
	ch <- readyDesc
	ch <- cacheDesc
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	engaged := *c.f.engaged.Load()
	ch <- prometheus.MustNewConstMetric(clustersDesc, prometheus.GaugeValue, float64(len(engaged)))
	for name, cl := range engaged {
		v := 1.0
		if cl.Err() != nil {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, v, name)
		ch <- prometheus.MustNewConstMetric(cacheDesc, prometheus.GaugeValue, float64(cl.Factory.CacheMemory().Bytes), name)
	}
}
