package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// WithInitialListPriority and WithResyncPriority queue the initial list's
// adds and the resync updates at their priorities, so a live event's key
// (priority 0) is handed out first; without them everything is 0, FIFO.
func TestWatchPriorities(t *testing.T) {
	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	order := func(opts ...WatchOption[*corev1.ConfigMap]) []string {
		q := workqueue.New[Key]()
		defer q.ShutDown()
		var cfg watchConfig[*corev1.ConfigMap]
		for _, o := range opts {
			o.applyToWatch(&cfg)
		}
		h := enqueueMapped(adaptQueue[Key](q, false), EnqueueObject[*corev1.ConfigMap], "configmaps", false)
		h.initial, h.resync = cfg.initialPriority, cfg.resyncPriority
		h.HandleAdd(cm("listed", "1"), true)
		h.HandleUpdate(cm("resynced", "2"), cm("resynced", "2"))
		h.HandleAdd(cm("live", "3"), false)
		var got []string
		for q.Len() > 0 {
			k, _ := q.Get()
			got = append(got, k.Name)
			q.Done(k)
		}
		return got
	}
	assert.Equal(t, []string{"listed", "resynced", "live"}, order(), "default: one priority, FIFO")
	assert.Equal(t, []string{"resynced", "live", "listed"}, order(WithInitialListPriority[*corev1.ConfigMap](-100)))
	assert.Equal(t, []string{"live", "resynced", "listed"},
		order(WithInitialListPriority[*corev1.ConfigMap](-100), WithResyncPriority[*corev1.ConfigMap](-10)))
	assert.Equal(t, []string{"listed", "live", "resynced"}, order(WithResyncPriority[*corev1.ConfigMap](-10)))
}
