package informer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	kworkqueue "k8s.io/client-go/util/workqueue"
)

var rsGVK = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// ownKey maps an object to its own cache key.
func ownKey[T Object](obj T) []string { return []string{objectKey(obj)} }

// controllerKey maps a Pod to its controlling ReplicaSet's key.
func controllerKey(p *corev1.Pod) []string {
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == rsGVK.Kind && strings.HasPrefix(ref.APIVersion, rsGVK.Group+"/") {
		return []string{p.Namespace + "/" + ref.Name}
	}
	return nil
}

// client-go's own queue fits EnqueueMapped.
var _ interface{ Add(string) } = kworkqueue.NewTyped[string]()

func TestEnqueueMappedOwnKeyThroughAnInformer(t *testing.T) {
	ctx := context.Background()
	client := newClient(pod("a", "p1", nil), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	f := NewFactory(client, Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	nodes, err := For[*corev1.Node](f)
	require.NoError(t, err)
	q := kworkqueue.NewTyped[string]()
	defer q.ShutDown()
	_, err = pods.AddHandler(EnqueueMapped(q, ownKey[*corev1.Pod]))
	require.NoError(t, err)
	_, err = nodes.AddHandler(EnqueueMapped(q, ownKey[*corev1.Node]))
	require.NoError(t, err)
	startFactory(t, f)

	get := func() string {
		t.Helper()
		done := make(chan string, 1)
		go func() {
			k, _ := q.Get()
			q.Done(k)
			done <- k
		}()
		select {
		case k := <-done:
			return k
		case <-time.After(10 * time.Second):
			q.ShutDown()
			t.Fatal("nothing enqueued")
			return ""
		}
	}
	initial := []string{get(), get()}
	assert.ElementsMatch(t, []string{"a/p1", "n1"}, initial)

	_, err = client.CoreV1().Pods("b").Create(ctx, pod("b", "p2", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b/p2", get())
	require.NoError(t, client.CoreV1().Pods("b").Delete(ctx, "p2", metav1.DeleteOptions{}))
	assert.Equal(t, "b/p2", get())
}

func TestEnqueueMappedSeesTombstones(t *testing.T) {
	q := &recorder[string]{}
	h := EnqueueMapped(q, ownKey[*corev1.Pod])
	a := &adapter[*corev1.Pod]{h: h, name: "pods", report: func(err error) { t.Error(err) }}
	a.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/gone"})
	a.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/stale", Obj: pod("a", "stale", nil)})
	assert.Equal(t, []string{"a/gone", "a/stale"}, q.got())

	// Resyncs are enqueued: that is what resync is for.
	p := pod("a", "p", nil)
	q.reset()
	h.HandleUpdate(p, p)
	assert.Equal(t, []string{"a/p"}, q.got())
}

func TestEnqueueMappedControllerOf(t *testing.T) {
	q := &recorder[string]{}
	h := withoutResync(EnqueueMapped(q, controllerKey))
	owned := func(name string, rv string, refs ...metav1.OwnerReference) *corev1.Pod {
		p := pod("a", name, nil, refs...)
		p.ResourceVersion = rv
		return p
	}
	rs1 := controllerRef("apps/v1", "ReplicaSet", "rs1", "u1")
	rs2 := controllerRef("apps/v1", "ReplicaSet", "rs2", "u2")
	oldVersion := controllerRef("extensions/v1beta1", "ReplicaSet", "rs-old-api", "u3")
	otherGroup := controllerRef("example.com/v1", "ReplicaSet", "imposter", "u4")
	otherKind := controllerRef("apps/v1", "StatefulSet", "sts", "u5")
	notController := rs1
	notController.Controller = nil

	for _, tc := range []struct {
		name string
		do   func()
		want []string
	}{
		{"add owned", func() { h.HandleAdd(owned("p", "1", rs1), true) }, []string{"a/rs1"}},
		{"add orphan", func() { h.HandleAdd(owned("p", "1"), false) }, nil},
		{"any version of the group", func() { h.HandleAdd(owned("p", "1", oldVersion), false) }, nil},
		{"other group", func() { h.HandleAdd(owned("p", "1", otherGroup), false) }, nil},
		{"other kind", func() { h.HandleAdd(owned("p", "1", otherKind), false) }, nil},
		{"owner that is not the controller", func() { h.HandleAdd(owned("p", "1", notController), false) }, nil},
		{"update, same controller", func() { h.HandleUpdate(owned("p", "1", rs1), owned("p", "2", rs1)) }, []string{"a/rs1"}},
		{"update, controller changed", func() { h.HandleUpdate(owned("p", "1", rs1), owned("p", "2", rs2)) }, []string{"a/rs2", "a/rs1"}},
		{"update, adopted", func() { h.HandleUpdate(owned("p", "1"), owned("p", "2", rs2)) }, []string{"a/rs2"}},
		{"update, released", func() { h.HandleUpdate(owned("p", "1", rs1), owned("p", "2")) }, []string{"a/rs1"}},
		{"resync is dropped", func() { h.HandleUpdate(owned("p", "1", rs1), owned("p", "1", rs1)) }, nil},
		{"delete", func() { h.HandleDelete(owned("p", "1", rs2), DeleteInfo{Key: "a/p"}) }, []string{"a/rs2"}},
		{"stale tombstone", func() { h.HandleDelete(owned("p", "1", rs2), DeleteInfo{Key: "a/p", FinalStateUnknown: true}) }, []string{"a/rs2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q.reset()
			tc.do()
			assert.Equal(t, tc.want, q.got())
		})
	}

	// extensions/v1beta1 is another group than apps; the same group at
	// another version matches.
	q.reset()
	h.HandleAdd(owned("p", "1", controllerRef("apps/v1beta2", "ReplicaSet", "rs-v1beta2", "u6")), false)
	assert.Equal(t, []string{"a/rs-v1beta2"}, q.got())
}

func TestEnqueueMappedControllerOfThroughAnInformer(t *testing.T) {
	ctx := context.Background()
	client := newClient()
	f := NewFactory(client, Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	q := &recorder[string]{}
	_, err = pods.AddHandler(EnqueueMapped(q, controllerKey))
	require.NoError(t, err)
	startFactory(t, f)

	p, err := client.CoreV1().Pods("a").Create(ctx, pod("a", "child", nil, controllerRef("apps/v1", "ReplicaSet", "parent", "u1")), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(q.got()) == 1 }, 10*time.Second, 5*time.Millisecond)
	p = p.DeepCopy()
	p.OwnerReferences = []metav1.OwnerReference{controllerRef("apps/v1", "ReplicaSet", "new-parent", "u2")}
	_, err = client.CoreV1().Pods("a").Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(q.got()) == 3 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, []string{"a/parent", "a/new-parent", "a/parent"}, q.got())
}

func TestEnqueueMapped(t *testing.T) {
	q := &recorder[string]{}
	// Map a pod to every service name in its "services" label.
	h := EnqueueMapped[*corev1.Pod](q, func(p *corev1.Pod) []string {
		if s := p.Labels["svc"]; s != "" {
			return []string{p.Namespace + "/" + s, p.Namespace + "/all"}
		}
		return nil
	})
	web := pod("a", "p", map[string]string{"svc": "web"})
	web.ResourceVersion = "1"
	db := pod("a", "p", map[string]string{"svc": "db"})
	db.ResourceVersion = "2"

	h.HandleAdd(web, false)
	assert.Equal(t, []string{"a/web", "a/all"}, q.got())
	q.reset()
	h.HandleUpdate(web, db) // both targets, the shared one once
	assert.Equal(t, []string{"a/db", "a/all", "a/web"}, q.got())
	q.reset()
	h.HandleUpdate(db, db) // resync goes through
	assert.Equal(t, []string{"a/db", "a/all"}, q.got())
	q.reset()
	withoutResync(h).HandleUpdate(db, db)
	assert.Empty(t, q.got())
	h.HandleDelete(db, DeleteInfo{Key: "a/p"})
	assert.Equal(t, []string{"a/db", "a/all"}, q.got())
}
