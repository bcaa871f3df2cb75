package controller_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// byHand is an informer whose events reach the handlers added through it only when the test
// delivers them (deliver), so the test decides whether the fence table sees a delete before or
// after a fence is recorded. It reads the cache of the informer it wraps. Informer returns nil,
// so the controller keeps its fence handler apart from the wrapped informer's.
type byHand struct {
	cmInformer
	mu       sync.Mutex
	handlers []informer.Handler[*corev1.ConfigMap]
}

type cmInformer = informer.Informer[*corev1.ConfigMap]

func (i *byHand) Name() string                        { return "configmaps-by-hand" }
func (i *byHand) Informer() cache.SharedIndexInformer { return nil }

func (i *byHand) AddHandler(h informer.Handler[*corev1.ConfigMap]) (cache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	i.handlers = append(i.handlers, h)
	i.mu.Unlock()
	return i.cmInformer.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{})
}

// deliver hands every handler the event, on the test's goroutine: when it returns, they have
// seen it.
func (i *byHand) deliver(event func(h informer.Handler[*corev1.ConfigMap])) {
	i.mu.Lock()
	hs := append([]informer.Handler[*corev1.ConfigMap](nil), i.handlers...)
	i.mu.Unlock()
	for _, h := range hs {
		event(h)
	}
}

// The race of issue 28, made deterministic: the informer shows the object deleted before the
// Reconcile that wrote it has recorded its fence (the write's answer came back after the delete
// event). The cache no longer has the object and no event will come, so the fence must not hold
// the key; before the fix it held it for the TTL. The control cases keep a fence that can still
// be released: a write the informer has not shown yet (a create), and a write that recreated
// the object after the delete the informer showed.
func TestFenceRecordedAfterTheDeleteEventDoesNotHoldTheKey(t *testing.T) {
	removed := func(rv string) *corev1.ConfigMap {
		cm := configMap(rv)
		now := metav1.Now()
		cm.DeletionTimestamp, cm.DeletionGracePeriodSeconds = &now, new(int64)
		return cm
	}
	deleteEvent := func(rv string) func(informer.Handler[*corev1.ConfigMap]) {
		return func(h informer.Handler[*corev1.ConfigMap]) {
			h.HandleDelete(configMap(rv), informer.DeleteInfo{Key: "ns/cm"})
		}
	}
	for _, tc := range []struct {
		name    string
		before  func(informer.Handler[*corev1.ConfigMap]) // delivered before the fence is recorded, if any
		written *corev1.ConfigMap                         // what the write returned
		held    bool                                      // the fence holds the key until the "after" event
		after   func(informer.Handler[*corev1.ConfigMap])
	}{{
		name:    "update, then deleted by someone else",
		before:  deleteEvent("3"),
		written: configMap("2"),
	}, {
		// A delete of unknown version cannot tell this write from a re-create after it: the
		// fence holds (in production until the object shows up again or the TTL).
		name: "control: update, then deleted, seen on a relist",
		before: func(h informer.Handler[*corev1.ConfigMap]) {
			h.HandleDelete(configMap("1"), informer.DeleteInfo{Key: "ns/cm", FinalStateUnknown: true})
		},
		written: configMap("2"),
		held:    true,
		after: func(h informer.Handler[*corev1.ConfigMap]) {
			h.HandleAdd(configMap("2"), false)
		},
	}, {
		name:    "the write removed the last finalizer",
		written: removed("2"),
	}, {
		name:    "the write removed the last finalizer, delete seen first",
		before:  deleteEvent("3"),
		written: removed("2"),
	}, {
		name:    "control: a create the informer has not shown yet",
		written: configMap("2"),
		held:    true,
		after: func(h informer.Handler[*corev1.ConfigMap]) {
			h.HandleAdd(configMap("2"), false)
		},
	}, {
		name:    "control: deleted, then recreated by the write",
		before:  deleteEvent("3"),
		written: configMap("4"),
		held:    true,
		after: func(h informer.Handler[*corev1.ConfigMap]) {
			h.HandleAdd(configMap("4"), false)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldCluster(t, configMap("1"))
			hand := &byHand{cmInformer: h.cms}
			started, proceed := make(chan struct{}), make(chan struct{})
			var fenced atomic.Bool
			var r reads
			c, err := controller.New("fenced", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
				cm, err := h.cms.Lister().Get(key.Namespace, key.Name)
				rv := "gone"
				if err == nil {
					rv = cm.ResourceVersion
				} else if !apierrors.IsNotFound(err) {
					return controller.Result{}, err
				}
				if r.add(rv, provenance.Reasons{}) > 1 {
					return controller.Result{}, nil
				}
				// The write is made; its answer comes back only after the test has had the
				// object deleted.
				close(started)
				<-proceed
				fenced.Store(controller.Fence(ctx, hand, tc.written))
				return controller.Result{Requeue: true}, nil
			}), controller.Options[controller.Key]{Fences: &controller.Fences{TTL: time.Hour}})
			require.NoError(t, err)
			require.NoError(t, controller.Watch(c, h.cms, controller.EnqueueObject))
			require.NoError(t, controller.FenceOn(c, hand))
			ctx, cancel := context.WithCancel(context.Background())
			h.f.Start(ctx)
			done := make(chan error)
			go func() { done <- c.Run(ctx) }()
			defer func() {
				cancel()
				require.NoError(t, <-done)
				h.f.Shutdown()
			}()

			<-started
			h.watcher(t).Delete(configMap("3"))
			require.Eventually(t, func() bool {
				_, err := h.cms.Lister().Get("ns", "cm")
				return apierrors.IsNotFound(err)
			}, waitTimeout, time.Millisecond, "the cache drops the object")
			if tc.before != nil {
				hand.deliver(tc.before)
			}
			close(proceed)

			if tc.held {
				require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, waitTimeout, time.Millisecond, "the requeued key is held")
				assert.True(t, fenced.Load(), "the fence is recorded")
				assert.Equal(t, 1, r.n(), "no Reconcile while the write is not in the cache")
				hand.deliver(tc.after)
			}
			require.Eventually(t, func() bool { return r.n() >= 2 && c.Stats().Idle() }, waitTimeout, time.Millisecond,
				"the requeued key is reconciled, not held")
			assert.Equal(t, tc.held, fenced.Load(), "Fence's answer: whether a fence was left open")
			rvs, _ := r.get()
			assert.Equal(t, []string{"1", "gone"}, rvs[:2])
		})
	}
}
