package informer

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

func webPod(name string) *corev1.Pod {
	p := pod("default", name, map[string]string{"app": "web"})
	p.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx:1"}}
	return p
}

func mutationErrors(t *testing.T, err error) []*MutationError {
	t.Helper()
	if err == nil {
		return nil
	}
	var out []*MutationError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var me *MutationError
		require.ErrorAs(t, e, &me)
		out = append(out, me)
	}
	return out
}

func TestMutationDetectorNamesObjectAndField(t *testing.T) {
	got := &errorSink{}
	clk := testingclock.NewFakeClock(time.Now())
	f := NewFactory(newClient(webPod("a"), webPod("b"), webPod("c")), Options{MutationDetector: true, MutationReport: got.add, Clock: clk})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)
	require.NoError(t, f.CheckMutations(), "nothing changed yet")

	a, err := pods.Lister().Get("default", "a")
	require.NoError(t, err)
	a.Spec.Containers[0].Image = "nginx:2" // breaks the read-only contract
	errs := mutationErrors(t, f.CheckMutations())
	require.NotEmpty(t, errs)
	assert.Equal(t, &MutationError{Informer: "pods", Kind: "Pod", Namespace: "default", Name: "a",
		Path: "spec.containers[0].image", Before: `"nginx:1"`, After: `"nginx:2"`}, errs[0])
	assert.Equal(t, `informer pods: cached Pod "default/a" was changed in place at spec.containers[0].image ("nginx:1" -> "nginx:2"); cached objects are read-only: DeepCopy before changing one`,
		errs[0].Error())
	assert.NoError(t, f.CheckMutations(), "a change is reported once")

	// With sharing, one write changes every object holding the shared part:
	// each is reported. (Sharing starts at the second sighting: b and c
	// share their labels, a holds its own.) The periodic check finds it on
	// the factory's clock.
	b, err := pods.Lister().Get("default", "b")
	require.NoError(t, err)
	b.Labels["app"] = "db"
	require.Eventually(t, func() bool { return clk.HasWaiters() }, 10*time.Second, time.Millisecond)
	clk.Step(mutationCheckInterval)
	require.Eventually(t, func() bool { return len(got.all()) == 2 }, 10*time.Second, time.Millisecond)
	for i, err := range got.all() {
		var me *MutationError
		require.ErrorAs(t, err, &me)
		assert.Equal(t, string(rune('b'+i)), me.Name)
		assert.Equal(t, `metadata.labels["app"]`, me.Path)
		assert.Equal(t, `"web"`, me.Before)
		assert.Equal(t, `"db"`, me.After)
	}
}

// Replaced and deleted objects are no longer tracked: changing them is not
// reported, and the detector does not keep them.
func TestMutationDetectorForgetsReplacedAndDeletedObjects(t *testing.T) {
	ctx := context.Background()
	client := newClient(webPod("a"), webPod("b"))
	f := NewFactory(client, Options{MutationDetector: true, MutationReport: func(err error) { t.Errorf("reported: %v", err) }})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)
	require.Equal(t, 2, f.detector.tracked())

	old, err := pods.Lister().Get("default", "a")
	require.NoError(t, err)
	update := old.DeepCopy()
	update.Spec.NodeName = "node-1"
	_, err = client.CoreV1().Pods("default").Update(ctx, update, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := pods.Lister().Get("default", "a")
		return err == nil && p.Spec.NodeName == "node-1"
	}, 10*time.Second, time.Millisecond)
	old.Spec.NodeName = "changed after it was replaced" // the object's own struct: shared with nothing
	assert.NoError(t, f.CheckMutations())
	assert.Equal(t, 2, f.detector.tracked())

	gone, err := pods.Lister().Get("default", "b")
	require.NoError(t, err)
	require.NoError(t, client.CoreV1().Pods("default").Delete(ctx, "b", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return f.detector.tracked() == 1 }, 10*time.Second, time.Millisecond)
	gone.Spec.NodeName = "changed after it was deleted"
	assert.NoError(t, f.CheckMutations())
}

func TestMutationDetectorTombstonesAndNewerVersions(t *testing.T) {
	d := newMutationDetector(func(error) {}, testingclock.NewFakeClock(time.Now()))
	key := registryKey{source: sourceTyped, typ: reflect.TypeFor[*corev1.Pod]()}
	d.watched[key] = watchedInformer{name: "pods", kind: "Pod"}
	v1, v2 := webPod("a"), webPod("a")
	d.track(registryKey{source: sourceTyped}, v1)
	d.track(registryKey{source: sourceTyped}, v2)
	require.Equal(t, 1, d.tracked(), "a newer version replaces the record")
	d.forget(key, v1)
	require.Equal(t, 1, d.tracked(), "the delete of an older version keeps the newer one")
	d.forget(key, cache.DeletedFinalStateUnknown{Key: "default/a", Obj: v2})
	require.Equal(t, 0, d.tracked(), "a tombstone untracks its object")
	// Objects of informers the factory did not hand out are not tracked.
	d.track(registryKey{source: sourceTyped}, &corev1.ConfigMap{})
	require.Equal(t, 0, d.tracked())
}

func TestMutationDetectorCustomResources(t *testing.T) {
	f := NewFactory(newClient(), Options{
		DynamicClient:    newDynamic(unstructuredWidget("a", "w", int64(1))),
		MutationDetector: true,
		MutationReport:   func(error) {},
	})
	typed, err := ForResource[*widget](f, widgetsGVR)
	require.NoError(t, err)
	startFactory(t, f)

	w, err := typed.Lister().Get("a", "w")
	require.NoError(t, err)
	w.Spec.Size = 2
	errs := mutationErrors(t, f.CheckMutations())
	require.Len(t, errs, 1)
	assert.Equal(t, "widgets.example.com", errs[0].Informer)
	assert.Equal(t, "Widget", errs[0].Kind, "from the object when the scheme does not know the kind")
	assert.Equal(t, "spec.size", errs[0].Path)
	assert.Equal(t, "1", errs[0].Before)
	assert.Equal(t, "2", errs[0].After)

	// An unstructured object's path reads the same.
	f2 := NewFactory(newClient(), Options{
		DynamicClient:    newDynamic(unstructuredWidget("a", "w", int64(1))),
		MutationDetector: true,
		MutationReport:   func(error) {},
	})
	raw, err := ForResource[*unstructured.Unstructured](f2, widgetsGVR)
	require.NoError(t, err)
	startFactory(t, f2)
	u, err := raw.Lister().Get("a", "w")
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(u.Object, int64(3), "spec", "size"))
	errs = mutationErrors(t, f2.CheckMutations())
	require.Len(t, errs, 1)
	assert.Equal(t, "Widget", errs[0].Kind)
	assert.Equal(t, "spec.size", errs[0].Path)
	assert.Equal(t, "1", errs[0].Before)
	assert.Equal(t, "3", errs[0].After)
}

func TestFirstDifference(t *testing.T) {
	base := func() *corev1.Pod {
		p := webPod("a")
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Args: []string{"-v"}})
		p.Spec.Tolerations = []corev1.Toleration{{Key: "k", TolerationSeconds: new(int64(300))}}
		p.CreationTimestamp = metav1.Date(2026, 11, 30, 9, 41, 7, 0, time.UTC)
		return p
	}
	cases := []struct {
		change              func(*corev1.Pod)
		path, before, after string
	}{
		{func(p *corev1.Pod) { p.Spec.Containers[1].Args[0] = "-vv" }, "spec.containers[1].args[0]", `"-v"`, `"-vv"`},
		{func(p *corev1.Pod) { p.Spec.Containers[1].Args = nil }, "spec.containers[1].args", "1 items", "nil"},
		{func(p *corev1.Pod) { delete(p.Labels, "app") }, `metadata.labels["app"]`, `"web"`, "absent"},
		{func(p *corev1.Pod) { p.Labels["tier"] = "front" }, `metadata.labels["tier"]`, "absent", `"front"`},
		{func(p *corev1.Pod) { *p.Spec.Tolerations[0].TolerationSeconds = 1 }, "spec.tolerations[0].tolerationSeconds", "300", "1"},
		{func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = nil }, "spec.tolerations[0].tolerationSeconds", "300", "nil"},
		{func(p *corev1.Pod) { p.CreationTimestamp = metav1.Unix(5, 0) }, "metadata.creationTimestamp", "2026-11-30 09:41:07 +0000 UTC", "1970-01-01 00:00:05 +0000 UTC"},
		{func(p *corev1.Pod) { p.Name = "b" }, "metadata.name", `"a"`, `"b"`},
	}
	for _, tc := range cases {
		a, b := base(), base()
		tc.change(b)
		path, before, after, ok := firstDifference(reflect.ValueOf(a), reflect.ValueOf(b), "")
		require.True(t, ok, tc.path)
		assert.Equal(t, []string{tc.path, tc.before, tc.after}, []string{path, before, after})
	}
	_, _, _, ok := firstDifference(reflect.ValueOf(base()), reflect.ValueOf(base()), "")
	assert.False(t, ok)
}

// Reading a quantity's string form caches it in the quantity: that is no
// change of the object.
func TestFingerprintIgnoresQuantityStringCache(t *testing.T) {
	d := newMutationDetector(func(error) {}, nil)
	p := webPod("a")
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	before := fingerprint(d.seed, p)
	q := p.Spec.Overhead[corev1.ResourceCPU]
	_ = q.String()
	p.Spec.Overhead[corev1.ResourceCPU] = q
	assert.Equal(t, before, fingerprint(d.seed, p))
	p.Spec.Overhead[corev1.ResourceCPU] = resource.MustParse("300m")
	assert.NotEqual(t, before, fingerprint(d.seed, p))
}

// Without Options.MutationDetector the factory keeps nothing and does nothing
// for it: the transform of a Pod allocates nothing.
func TestMutationDetectorOffCostsNothing(t *testing.T) {
	f := NewFactory(newClient(), Options{DisableSharing: true})
	require.Nil(t, f.detector)
	require.NoError(t, f.CheckMutations())
	p := webPod("a")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := f.transform(p); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)

	on := NewFactory(newClient(), Options{DisableSharing: true, MutationDetector: true})
	_, err := For[*corev1.Pod](on)
	require.NoError(t, err)
	// Each run transforms a new object (the same object again is left alone: see
	// TestTransformTwiceLeavesATrackedObjectAlone); the copy for the input is counted on both.
	off := testing.AllocsPerRun(10, func() { _, _ = f.transform(p.DeepCopy()) })
	assert.Greater(t, testing.AllocsPerRun(10, func() { _, _ = on.transform(p.DeepCopy()) }), off, "the detector keeps a copy")
}

// client-go's watch-list hands the factory's transform the same object twice (its temporary
// store transforms it, then its FIFO's Replace does). The second pass must leave the object
// alone: the detector tracks it from the first and its check may be reading it (a data race
// under -race otherwise), and the object stays as the first pass made it.
func TestTransformTwiceLeavesATrackedObjectAlone(t *testing.T) {
	f := NewFactory(newClient(), Options{MutationDetector: true, MutationReport: func(err error) { t.Error(err) }})
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	p := webPod("a")
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	out, err := f.transform(p)
	require.NoError(t, err)
	require.Same(t, p, out)
	require.Nil(t, p.ManagedFields, "stripped on the first pass")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			assert.Empty(t, f.detector.check())
		}
	}()
	for range 100 {
		again, err := f.transform(p)
		require.NoError(t, err)
		require.Same(t, p, again)
	}
	<-done
	assert.NoError(t, f.CheckMutations())
}
