package bench

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Noisy-tenant workload: one tenant's burst in front of fifty tenants with one key each.
const (
	noisyKeys   = 10_000
	quietFlows  = 50
	noisyCost   = 200 * time.Microsecond // a Reconcile's time, spent waiting (an API call)
	noisyWorker = 8
)

// BenchmarkNoisyTenant enqueues noisyKeys keys of one tenant, then one key for each of
// quietFlows other tenants, and serves them with noisyWorker workers whose every item takes
// noisyCost. quiet-p99-ms is the 99th percentile, over every iteration, of the time from a
// quiet key's Add to the Get that hands it out. ctrlkit-flows is ctrlkit's queue with a flow per
// tenant (WithFlows); the others serve in FIFO order (controller-runtime's queue, without
// priorities, too). One op is the whole batch.
func BenchmarkNoisyTenant(b *testing.B) {
	tenant := func(key string) string { t, _, _ := strings.Cut(key, "/"); return t }
	impls := []struct {
		name string
		new  func() Queue
	}{
		{"ctrlkit-flows", func() Queue { return workqueue.New(workqueue.WithFlows(tenant)) }},
		{"ctrlkit", func() Queue { return workqueue.New[string]() }},
		{"clientgo", func() Queue {
			return kworkqueue.NewTypedRateLimitingQueueWithConfig(
				kworkqueue.DefaultTypedControllerRateLimiter[string](),
				kworkqueue.TypedRateLimitingQueueConfig[string]{})
		}},
		{"controllerruntime", func() Queue { return priorityqueue.New[string]("") }},
	}
	noisy := make([]string, noisyKeys)
	for i := range noisy {
		noisy[i] = "noisy/object-" + strconv.Itoa(i)
	}
	quiet := make([]string, quietFlows)
	quietIndex := make(map[string]int, quietFlows)
	for i := range quiet {
		quiet[i] = "quiet-" + strconv.Itoa(i) + "/object"
		quietIndex[quiet[i]] = i
	}
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			var waits []time.Duration
			for b.Loop() {
				waits = append(waits, noisyRound(im.new(), noisy, quiet, quietIndex)...)
			}
			slices.Sort(waits)
			p99 := waits[(len(waits)*99+99)/100-1]
			b.ReportMetric(float64(p99)/float64(time.Millisecond), "quiet-p99-ms")
		})
	}
}

// noisyRound runs one batch through q and returns the quiet keys' waits.
func noisyRound(q Queue, noisy, quiet []string, quietIndex map[string]int) []time.Duration {
	added := make([]time.Time, len(quiet))
	waits := make([]time.Duration, len(quiet))
	var items sync.WaitGroup
	items.Add(len(noisy) + len(quiet))
	var workers sync.WaitGroup
	for range noisyWorker {
		workers.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				if i, ok := quietIndex[k]; ok {
					waits[i] = time.Since(added[i]) // added[i] was written before the Add
				}
				time.Sleep(noisyCost)
				q.Done(k)
				items.Done()
			}
		})
	}
	for _, k := range noisy {
		q.Add(k)
	}
	for i, k := range quiet {
		added[i] = time.Now()
		q.Add(k)
	}
	items.Wait()
	q.ShutDown()
	workers.Wait()
	return waits
}
