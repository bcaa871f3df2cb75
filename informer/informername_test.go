package informer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/internal/directinformer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// metricsRecorder is the informer metrics provider of this test binary: it
// keeps what client-go hands it per informer name and resource.
type metricsRecorder struct {
	mu     sync.Mutex
	stores map[string][]*recordedGauge // by informerKey
	queues map[string][]*recordedGauge
	// latencies by informerKey
	latencies map[string]*countingHistogram
}

type recordedGauge struct {
	id    cache.InformerNameAndResource
	value atomic.Value // float64; unset until client-go set it
}

func (g *recordedGauge) Set(v float64) { g.value.Store(v) }

func (g *recordedGauge) get() (float64, bool) {
	v, ok := g.value.Load().(float64)
	return v, ok
}

// countingHistogram counts observations.
type countingHistogram struct{ n atomic.Int64 }

func (h *countingHistogram) Observe(float64) { h.n.Add(1) }

var metricsRec = &metricsRecorder{
	stores:    map[string][]*recordedGauge{},
	queues:    map[string][]*recordedGauge{},
	latencies: map[string]*countingHistogram{},
}

// init registers the recorder as clientgometrics.Install registers
// manager's provider: with client-go and with ctrlkit's own informers.
func init() {
	cache.SetInformerMetricsProvider(metricsRec)
	directinformer.SetMetricsProvider(metricsRec)
}

func informerKey(name string, gvr schema.GroupVersionResource) string {
	return name + "|" + gvr.String()
}

func (r *metricsRecorder) NewQueuedItemMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return r.add(r.queues, id)
}

func (r *metricsRecorder) NewProcessingLatencyMetric(id cache.InformerNameAndResource) cache.HistogramMetric {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := &countingHistogram{}
	r.latencies[informerKey(id.Name(), id.GroupVersionResource())] = h
	return h
}

func (r *metricsRecorder) latency(name string, gvr schema.GroupVersionResource) *countingHistogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latencies[informerKey(name, gvr)]
}

func (r *metricsRecorder) NewStoreResourceVersionMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return r.add(r.stores, id)
}

func (r *metricsRecorder) add(m map[string][]*recordedGauge, id cache.InformerNameAndResource) *recordedGauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := &recordedGauge{id: id}
	k := informerKey(id.Name(), id.GroupVersionResource())
	m[k] = append(m[k], g)
	return g
}

func (r *metricsRecorder) storeGauges(name string, gvr schema.GroupVersionResource) []*recordedGauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*recordedGauge(nil), r.stores[informerKey(name, gvr)]...)
}

func (r *metricsRecorder) queueGauges(name string, gvr schema.GroupVersionResource) []*recordedGauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*recordedGauge(nil), r.queues[informerKey(name, gvr)]...)
}

var nameSeq atomic.Int64

// uniqueName is an informer name of its own per test run: names are
// process-wide, and -count runs a test again in the same process.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1))
}

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// A named factory's typed informers report client-go's informer metrics
// under the name and their resource; Shutdown releases the name, which a new
// factory can then take.
func TestInformerNameReportsTypedInformers(t *testing.T) {
	name := uniqueName("typed")
	f := NewFactory(newClient(pod("a", "p1", nil)), Options{InformerName: name})
	assert.Equal(t, name, f.InformerName())
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))

	stores := metricsRec.storeGauges(name, podsGVR)
	require.Len(t, stores, 1, "one store reports for pods")
	require.Eventually(t, func() bool {
		v, ok := stores[0].get()
		return ok && v > 0
	}, 10*time.Second, time.Millisecond, "the store's resourceVersion is reported")
	queues := metricsRec.queueGauges(name, podsGVR)
	require.Len(t, queues, 1, "the informer reports its queue")
	v, _ := queues[0].get()
	assert.Zero(t, v, "nothing waits in a queue: handlers are called as changes are applied")
	lat := metricsRec.latency(name, podsGVR)
	require.NotNil(t, lat, "the informer reports its processing latency")
	assert.Positive(t, lat.n.Load(), "the initial list was observed")
	assert.True(t, stores[0].id.Reserved())

	f.Shutdown()
	assert.False(t, stores[0].id.Reserved(), "released by Shutdown")
	assert.Empty(t, f.InformerName())

	again := NewFactory(newClient(), Options{InformerName: name})
	defer again.Shutdown()
	assert.Equal(t, name, again.InformerName(), "the name is free again after Shutdown")
}

// A name may belong to one factory at a time. The second factory is told
// through its error handler and runs without metrics; a second Shutdown of
// the first factory does not free the name a third factory took meanwhile.
func TestInformerNameInUse(t *testing.T) {
	name := uniqueName("in-use")
	first := NewFactory(newClient(), Options{InformerName: name})

	var sink errorSink
	second := NewFactory(newClient(), Options{InformerName: name, ErrorHandler: sink.handle})
	defer second.Shutdown()
	assert.Empty(t, second.InformerName())
	errs := sink.all()
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], ErrInformerNameInUse)
	assert.ErrorContains(t, errs[0], name)

	first.Shutdown()
	third := NewFactory(newClient(), Options{InformerName: name})
	defer third.Shutdown()
	assert.Equal(t, name, third.InformerName())
	first.Shutdown()

	var sink4 errorSink
	fourth := NewFactory(newClient(), Options{InformerName: name, ErrorHandler: sink4.handle})
	defer fourth.Shutdown()
	assert.Empty(t, fourth.InformerName(), "the third factory still holds the name")
	require.Len(t, sink4.all(), 1)
	assert.ErrorIs(t, sink4.all()[0], ErrInformerNameInUse)
}

// Without Options.InformerName nothing is reserved and nothing reports.
func TestNoInformerName(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	defer f.Shutdown()
	assert.Empty(t, f.InformerName())
	assert.Empty(t, metricsRec.storeGauges("", podsGVR), "unnamed informers do not report")
}

// A scoped informer runs one client-go informer per namespace; client-go
// reports the first of them built under the name only.
func TestInformerNameScopedReportsOnce(t *testing.T) {
	name := uniqueName("scoped")
	f := NewFactory(newClient(pod("a", "p1", nil), pod("b", "p2", nil)), Options{InformerName: name})
	defer f.Shutdown()
	_, err := For(f, InNamespaces[*corev1.Pod]("a", "b"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))
	assert.Len(t, metricsRec.storeGauges(name, podsGVR), 1)
}
