package lagwatch_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/lagwatch"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reports records what a Watch reported.
type reports struct {
	mu     sync.Mutex
	lags   []string
	caught []string
}

func (r *reports) report() lagwatch.Report {
	return lagwatch.Report{
		Lags: func(name string, lag time.Duration, detail string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.lags = append(r.lags, name+" "+lag.String()+" "+detail)
		},
		CaughtUp: func(name string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.caught = append(r.caught, name)
		},
	}
}

func (r *reports) get() (lags, caught []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lags...), append([]string(nil), r.caught...)
}

// configMaps is the ConfigMap informer of a fake cluster reached through a connection whose
// reads of ConfigMaps lag from now on, until catchUp, and a write made behind its back.
func configMaps(t *testing.T) (lagwatch.Source, func()) {
	t.Helper()
	c, err := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}})
	require.NoError(t, err)
	conn := c.Connect()
	catchUp := conn.Lag(c.Snapshot(), corev1.SchemeGroupVersion.WithResource("configmaps"))
	_, err = c.Clientset().CoreV1().ConfigMaps("ns").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	f := informer.NewFactory(conn.Clientset(), informer.Options{})
	cms, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))
	return lagwatch.Source{Name: cms.Name(), Take: func(ctx context.Context) (*informer.Version, error) {
		return informer.VersionOf(ctx, cms)
	}}, func() { catchUp() }
}

// A source whose cache has not reached a read older than the bound is reported, with the lag,
// once a second read confirms it; once it catches up, CaughtUp says so and reports stop.
func TestAWatchReportsALaggingSourceAndItsCatchingUp(t *testing.T) {
	src, catchUp := configMaps(t)
	clk := clocktesting.NewFakeClock(time.Now())
	r := &reports{}
	w := lagwatch.New(4*time.Second, clk, klog.Background(), r.report(), []lagwatch.Source{src})
	assert.Equal(t, time.Second, w.Interval())
	ctx := context.Background()

	w.Tick(ctx) // takes the read
	clk.Step(4 * time.Second)
	w.Tick(ctx) // at the bound: not beyond it
	lags, _ := r.get()
	assert.Empty(t, lags)
	clk.Step(time.Second)
	w.Tick(ctx) // beyond: confirmed with a list, reported
	lags, caught := r.get()
	require.Len(t, lags, 1)
	assert.Contains(t, lags[0], "configmaps 5s")
	assert.Empty(t, caught)

	catchUp()
	require.Eventually(t, func() bool {
		w.Tick(ctx)
		_, caught := r.get()
		return len(caught) == 1
	}, 10*time.Second, 10*time.Millisecond)
	lags, _ = r.get()
	clk.Step(10 * time.Second)
	w.Tick(ctx) // a new read, just taken
	after, _ := r.get()
	assert.Equal(t, lags, after, "no report once caught up")
}

// Run ticks until its context ends, and returns then.
func TestRunReturnsWithItsContext(t *testing.T) {
	src, _ := configMaps(t)
	clk := clocktesting.NewFakeClock(time.Now())
	w := lagwatch.New(time.Second, clk, klog.Background(), (&reports{}).report(), []lagwatch.Source{src})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, clk)
	}()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

// Gate returns once the cache reached a read taken when it was called, saying meanwhile which
// informer it waits for; a read that fails is reported and tried again.
func TestGateWaitsForTheCacheToReachTheServer(t *testing.T) {
	src, catchUp := configMaps(t)
	failures := 1
	flaky := lagwatch.Source{Name: src.Name, Take: func(ctx context.Context) (*informer.Version, error) {
		if failures > 0 {
			failures--
			return nil, errors.New("unreachable")
		}
		return src.Take(ctx)
	}}
	clk := clocktesting.NewFakeClock(time.Now())
	var mu sync.Mutex
	var unreadable, waiting []string
	done := make(chan error, 1)
	go func() {
		done <- lagwatch.Gate(context.Background(), clk, klog.Background(), []lagwatch.Source{flaky}, lagwatch.GateReport{
			Unreadable: func(name string, err error, wait time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				unreadable = append(unreadable, name+": "+err.Error()+" "+wait.String())
			},
			Waiting: func(name, lagging string) {
				mu.Lock()
				defer mu.Unlock()
				waiting = append(waiting, name)
			},
		})
	}()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	clk.Step(time.Second) // the retry after the failed read
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(waiting) == 1
	}, 10*time.Second, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Gate returned %v before the cache caught up", err)
	default:
	}
	catchUp()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Gate did not return once the cache caught up")
	}
	assert.Equal(t, []string{"configmaps: unreachable 1s"}, unreadable)
	assert.Equal(t, []string{"configmaps"}, waiting)
}
