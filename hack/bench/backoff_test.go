package bench

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/internal/discard"
)

// The backoff workload, kubernetes#132805: one key's Reconcile fails for a minute (an admission
// webhook unreachable) while events for the key come 10 times a second (its Pods turning ready
// and unready), then succeeds; no event comes after the fault. Each implementation runs in a
// testing/synctest bubble, so the minutes its backoff takes pass in virtual time and the
// figures are exact: the Reconciles during the fault, and how long after the fault the first
// success came. Every implementation uses its defaults.
//
//	go test -run TestBackoffUnderEvents -v ./hack/bench
func TestBackoffUnderEvents(t *testing.T) {
	const fault = time.Minute
	impls := []struct {
		name  string
		start backoffImpl
		// The bounds of an implementation that keeps events from inflating its backoff; zero
		// for one that should reproduce kubernetes#132805.
		maxCalls int
		maxAfter time.Duration
	}{
		// The backoff's own 14 Reconciles, and one woken by the events every 5 s
		// (BackoffEventWait) once the delay passed 5 s.
		{"ctrlkit", ctrlkitBackoff(controller.Options[string]{}), 26, 5 * time.Second},
		// Events wait for the retry: the backoff's own schedule only.
		{"ctrlkit-BackoffEventWait=-1", ctrlkitBackoff(controller.Options[string]{BackoffEventWait: -1}), 14, fault},
		{"ctrlkit-EventsBypassBackoff", ctrlkitBackoff(controller.Options[string]{EventsBypassBackoff: true}), 0, 0},
		{"client-go", clientGoBackoff, 0, 0},
		{"controller-runtime", controllerRuntimeBackoff(true), 0, 0},
		{"controller-runtime-legacy-queue", controllerRuntimeBackoff(false), 0, 0},
	}
	for _, impl := range impls {
		t.Run("impl="+impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls, after := runFault(t, impl.start, fault)
				t.Logf("%-32s Reconciles during the fault: %4d; first success %v after it", impl.name, calls, after)
				switch {
				case impl.maxCalls > 0 && (calls > impl.maxCalls || after > impl.maxAfter):
					t.Errorf("events inflated the backoff: %d Reconciles (at most %d), success %v after the fault (at most %v)", calls, impl.maxCalls, after, impl.maxAfter)
				case impl.maxCalls == 0 && (calls < 500 || after < 4*time.Minute):
					t.Errorf("kubernetes#132805 did not reproduce: %d Reconciles, success %v after the fault", calls, after)
				}
			})
		})
	}
}

// backoffImpl starts a controller of one key over reconcile, and returns how to enqueue the
// key (an event) and how to stop the controller and wait for it.
type backoffImpl func(t *testing.T, reconcile func() error) (enqueue func(), stop func())

// runFault runs the workload over impl and returns the Reconciles during the fault and the
// time from the fault's end to the first success.
func runFault(t *testing.T, impl backoffImpl, fault time.Duration) (calls int, after time.Duration) {
	var mu sync.Mutex
	start := time.Now()
	fixedAt := start.Add(fault)
	var okAt time.Time
	enqueue, stop := impl(t, func() error {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Before(fixedAt) {
			calls++
			return errors.New("admission webhook unreachable")
		} else if okAt.IsZero() {
			okAt = now
		}
		return nil
	})
	defer stop()
	enqueue()
	for {
		time.Sleep(100 * time.Millisecond)
		if time.Since(start) >= fault {
			break
		}
		enqueue()
	}
	for {
		mu.Lock()
		ok := !okAt.IsZero()
		mu.Unlock()
		if ok {
			break
		}
		if time.Since(start) > 2*time.Hour {
			t.Fatal("no success within two hours")
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	return calls, okAt.Sub(fixedAt)
}

var quiet = discard.Logger()

func ctrlkitBackoff(opts controller.Options[string]) backoffImpl {
	return func(t *testing.T, reconcile func() error) (func(), func()) {
		opts.Logger = quiet
		c, err := controller.New("backoff", controller.ReconcilerFunc[string](func(context.Context, string) (controller.Result, error) {
			return controller.Result{}, reconcile()
		}), opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		return func() { c.Enqueue("rs") }, func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
}

// clientGoBackoff is kube-controller-manager's worker loop over client-go's rate-limited queue
// with its default controller rate limiter.
func clientGoBackoff(t *testing.T, reconcile func() error) (func(), func()) {
	q := kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[string]())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			key, shutdown := q.Get()
			if shutdown {
				return
			}
			if err := reconcile(); err != nil {
				q.AddRateLimited(key)
			} else {
				q.Forget(key)
			}
			q.Done(key)
		}
	})
	return func() { q.Add("rs") }, func() {
		q.ShutDown()
		wg.Wait()
	}
}

// controllerRuntimeBackoff is a controller-runtime controller, with its default priority queue
// or the client-go queue it used before.
func controllerRuntimeBackoff(priorityQueue bool) backoffImpl {
	return func(t *testing.T, reconcile func() error) (func(), func()) {
		var mu sync.Mutex
		var queue kworkqueue.TypedRateLimitingInterface[crreconcile.Request]
		ready := make(chan struct{})
		c, err := crcontroller.NewTypedUnmanaged("backoff", crcontroller.TypedOptions[crreconcile.Request]{
			Logger:             quiet,
			SkipNameValidation: ptr.To(true),
			UsePriorityQueue:   ptr.To(priorityQueue),
			Reconciler: crreconcile.Func(func(context.Context, crreconcile.Request) (crreconcile.Result, error) {
				return crreconcile.Result{}, reconcile()
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Watch(crsource.TypedFunc[crreconcile.Request](func(_ context.Context, q kworkqueue.TypedRateLimitingInterface[crreconcile.Request]) error {
			mu.Lock()
			defer mu.Unlock()
			queue = q
			close(ready)
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		<-ready
		req := crreconcile.Request{}
		req.Namespace, req.Name = "default", "rs"
		return func() {
				mu.Lock()
				defer mu.Unlock()
				queue.Add(req)
			}, func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}
	}
}
