package workqueue_test

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// TestModelConcurrent runs producers, workers and a clock-stepping goroutine against one queue
// and checks what must hold whatever the interleaving:
//   - exclusivity: an item is never held by two workers at once;
//   - no loss: every add is followed by a hand-out of that item (each add bumps the item's
//     version before the call; a worker reads the version after Get; at the end the versions
//     seen must cover every add: all of them in rounds that drain, the adds that returned before
//     ShutDown in rounds that shut down abruptly);
//   - no invention: an item is handed out at most as often as it was added.
//
// The sequential model test checks the exact order; this one checks the locking.
func TestModelConcurrent(t *testing.T) {
	total := modelOps(t)
	const perRound = 2_000
	ran := 0
	for round := 0; ran < total; round++ {
		ran += runConcurrentRound(t, uint64(round), perRound, round%3 == 2)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d operations", ran)
}

type keyStats struct {
	version   atomic.Int64 // bumped before every add call
	seen      atomic.Int64 // the highest version a worker read after getting the item
	immediate atomic.Int64 // the highest version of an immediate add that returned before ShutDown
	adds      atomic.Int64
	handouts  atomic.Int64
	held      atomic.Bool
}

func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

func runConcurrentRound(t *testing.T, seed uint64, ops int, abrupt bool) int {
	const (
		producers = 4
		workers   = 4
		nkeys     = 32
		maxDelay  = 20 * time.Millisecond
	)
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	q := workqueue.New(
		workqueue.WithClock[string](clk),
		workqueue.WithRateLimiter(kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, maxDelay)),
	)
	keys := make([]string, nkeys)
	stats := make([]keyStats, nkeys)
	index := make(map[string]int, nkeys)
	for i := range keys {
		keys[i] = "ns/k" + strconv.Itoa(i)
		index[keys[i]] = i
	}
	var (
		shutdownStarted atomic.Bool
		final           atomic.Bool  // workers stop re-adding
		active          atomic.Int64 // workers between Get and Done
		opCount         atomic.Int64
	)

	// add performs one random add of key i; immediate adds record their version on return.
	add := func(rng *rand.Rand, i int) {
		s := &stats[i]
		v := s.version.Add(1)
		s.adds.Add(1)
		k := keys[i]
		immediate := false
		switch rng.IntN(6) {
		case 0, 1:
			q.Add(k)
			immediate = true
		case 2:
			q.AddWithOpts(workqueue.AddOpts{Priority: rng.IntN(5) - 2}, k)
			immediate = true
		case 3:
			d := time.Duration(rng.IntN(int(maxDelay))) - time.Millisecond
			q.AddAfter(k, d)
			immediate = d <= 0
		case 4:
			q.AddWithOpts(workqueue.AddOpts{Priority: rng.IntN(3), After: time.Duration(rng.IntN(int(maxDelay)))}, k)
		case 5:
			q.AddRateLimited(k)
		}
		if immediate && !shutdownStarted.Load() {
			storeMax(&s.immediate, v)
		}
	}

	var pwg, wwg sync.WaitGroup
	shutdownAt := -1
	if abrupt {
		shutdownAt = int(seed*7919) % (ops / producers)
	}
	for p := range producers {
		pwg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(p)))
			for n := range ops / producers {
				opCount.Add(1)
				i := rng.IntN(nkeys)
				switch r := rng.IntN(10); {
				case p == 0 && n == shutdownAt:
					shutdownStarted.Store(true)
					q.ShutDown()
				case r < 7:
					add(rng, i)
				case r == 7:
					q.Forget(keys[i])
				case r == 8:
					if q.NumRequeues(keys[i]) < 0 {
						t.Errorf("NumRequeues(%s) < 0", keys[i])
					}
				default:
					if q.Len() < 0 {
						t.Error("Len() < 0")
					}
				}
				if n%64 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	for w := range workers {
		wwg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, 100+uint64(w)))
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				opCount.Add(1)
				active.Add(1)
				i, ok := index[item]
				if !ok {
					t.Errorf("Get() = %q, never added", item)
					active.Add(-1)
					return
				}
				s := &stats[i]
				if !s.held.CompareAndSwap(false, true) {
					t.Errorf("%s handed to two workers at once", item)
				}
				storeMax(&s.seen, s.version.Load())
				s.handouts.Add(1)
				if !final.Load() && rng.IntN(4) == 0 {
					add(rng, i) // re-add while processing
				}
				if rng.IntN(3) == 0 {
					q.Forget(item)
				}
				if rng.IntN(8) == 0 {
					runtime.Gosched()
				}
				s.held.Store(false)
				q.Done(item)
				active.Add(-1)
			}
		})
	}
	stepperDone := make(chan struct{})
	stopStepper := make(chan struct{})
	go func() {
		defer close(stepperDone)
		rng := rand.New(rand.NewPCG(seed, 999))
		for {
			select {
			case <-stopStepper:
				return
			default:
			}
			clk.Step(time.Duration(rng.IntN(3)) * time.Millisecond)
			runtime.Gosched()
		}
	}()

	pwg.Wait()
	close(stopStepper)
	<-stepperDone
	if !abrupt {
		// Quiesce: once no worker holds an item after final is set, no add can still be in
		// flight; then every delay is made due and the drain hands out everything.
		final.Store(true)
		for active.Load() != 0 {
			runtime.Gosched()
		}
		clk.Step(2 * maxDelay)
		q.Len()
		q.ShutDownWithDrain()
	}
	wwg.Wait()
	q.ShutDown()

	if n := q.Len(); n != 0 {
		t.Errorf("Len() = %d after the workers quit", n)
	}
	for i := range stats {
		s := &stats[i]
		want := s.version.Load()
		if abrupt {
			want = s.immediate.Load()
		}
		if got := s.seen.Load(); got < want {
			t.Errorf("round %d (abrupt=%v): %s lost: last add version %d, last version handed out %d", seed, abrupt, keys[i], want, got)
		}
		if h, a := s.handouts.Load(), s.adds.Load(); h > a {
			t.Errorf("%s handed out %d times for %d adds", keys[i], h, a)
		}
	}
	return int(opCount.Load())
}
