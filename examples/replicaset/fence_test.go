package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// laggingWatch delivers each of inner's events lag after it happened, in order: an informer
// that trails the API server, as a loaded one does.
type laggingWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newLaggingWatch(inner watch.Interface, lag time.Duration) *laggingWatch {
	w := &laggingWatch{out: make(chan watch.Event), stop: make(chan struct{})}
	type timed struct {
		ev watch.Event
		at time.Time
	}
	queue := make(chan timed, 1000)
	go func() { // stamps events as they happen
		defer close(queue)
		for ev := range inner.ResultChan() {
			select {
			case queue <- timed{ev, time.Now().Add(lag)}:
			case <-w.stop:
				return
			}
		}
	}()
	go func() { // hands each out once its time has come
		defer close(w.out)
		defer inner.Stop()
		for {
			var te timed
			select {
			case next, ok := <-queue:
				if !ok {
					return
				}
				te = next
			case <-w.stop:
				return
			}
			t := time.NewTimer(time.Until(te.at))
			select {
			case <-t.C:
			case <-w.stop:
				t.Stop()
				return
			}
			select {
			case w.out <- te.ev:
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *laggingWatch) ResultChan() <-chan watch.Event { return w.out }
func (w *laggingWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }

// The informer of ReplicaSets lags 30 ms behind the cluster, so a sync that follows the
// previous one's status write closely would read the old status and write over it (a
// Conflict). The fence on each status write makes the next sync wait for the write instead:
// a scale-up with its many status changes never conflicts.
func TestStatusWritesNeverConflictWithALaggingInformer(t *testing.T) {
	e := newTestEnv(t, envOptions{kubelet: true, noStart: true, beforeInformers: func(env *testkit.FakeEnv) {
		tracker := env.Cluster().Tracker()
		env.Cluster().Clientset().PrependWatchReactor("replicasets", func(action clienttesting.Action) (bool, watch.Interface, error) {
			var opts metav1.ListOptions
			if w, ok := action.(clienttesting.WatchActionImpl); ok {
				opts = w.ListOptions
			}
			inner, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
			if err != nil {
				return true, nil, err
			}
			return true, newLaggingWatch(inner, 30*time.Millisecond), nil
		})
	}})
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	e.RunController(ctx, e.rsc)
	e.createRS("web", 8)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)

	var statusWrites, conflicts int
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		switch entry.Message {
		case "Updated status":
			statusWrites++
		case "Status write conflicted; retrying on a fresh copy":
			conflicts++
		}
	}
	require.GreaterOrEqual(t, statusWrites, 2, "the scale-up wrote status more than once (fenced syncs batch the Pod events between writes)")
	assert.Zero(t, conflicts, "no status write conflicted with the controller's own previous one")
}
