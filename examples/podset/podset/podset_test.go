package podset_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The PodSet cache is typed: listers and handlers of informer.ForResource hand out
// *v1alpha1.PodSet, converted once from what the dynamic client delivers, and the Pod informer
// of the same factory serves the controller's other cache.
func TestTypedListerAndHandlerForTheCRD(t *testing.T) {
	c := newCluster(t)
	c.create(newPodSet("web", 2))
	c.controller(podset.Options{}) // builds the informers and syncs them

	podsets, err := informer.ForResource[*v1alpha1.PodSet](c.factory, v1alpha1.GVR)
	require.NoError(t, err, "the controller's informer, shared")
	got, err := podsets.Lister().Get(metav1.NamespaceDefault, "web")
	require.NoError(t, err)
	assert.Equal(t, int32(2), got.Spec.DesiredReplicas())
	assert.Equal(t, "web", got.Spec.Template.Labels["app"])
	assert.Equal(t, v1alpha1.GVK, got.GroupVersionKind())

	var mu sync.Mutex
	var seen []string
	record := func(s string) { mu.Lock(); defer mu.Unlock(); seen = append(seen, s) }
	_, err = podsets.AddHandler(informer.HandlerFuncs[*v1alpha1.PodSet]{
		OnAdd: func(ps *v1alpha1.PodSet, _ bool) { record("add " + ps.Name) },
		OnUpdate: func(_, ps *v1alpha1.PodSet) {
			record("update " + ps.Name + " " + strings.Repeat("+", int(*ps.Spec.Replicas)))
		},
		OnDelete: func(ps *v1alpha1.PodSet) { record("delete " + ps.Name) },
	})
	require.NoError(t, err)
	c.scale("web", 3)
	require.NoError(t, c.podsets.Delete(c.ctx(), c.env.Namespace(), "web", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 3 }, quiet, 5*time.Millisecond)
	assert.Equal(t, []string{"add web", "update web +++", "delete web"}, seen)

	_, err = podsets.Lister().Get(metav1.NamespaceDefault, "web")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestScaleUpAndDown(t *testing.T) {
	c := newCluster(t)
	ps := c.create(newPodSet("web", 3))
	c.run()

	pods := c.podsOf("web")
	require.Len(t, pods, 3)
	for _, p := range pods {
		assert.True(t, strings.HasPrefix(p.Name, "web-"), p.Name)
		assert.Equal(t, "web", p.Labels["app"])
		assert.Equal(t, "from the template", p.Annotations["note"])
		assert.Equal(t, []metav1.OwnerReference{{
			APIVersion: "examples.ctrlkit.dev/v1alpha1", Kind: "PodSet", Name: "web", UID: ps.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}, p.OwnerReferences)
	}
	got := c.get("web")
	assert.Equal(t, int32(3), got.Status.Replicas)
	assert.Equal(t, int32(0), got.Status.ReadyReplicas)
	assert.Equal(t, metav1.ConditionFalse, condition(got, v1alpha1.ConditionAvailable).Status)

	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	c.markReady(sel)
	c.env.WaitForQuiet(quiet)
	got = c.get("web")
	assert.Equal(t, int32(3), got.Status.ReadyReplicas)
	assert.Equal(t, metav1.ConditionTrue, condition(got, v1alpha1.ConditionAvailable).Status)
	assert.Equal(t, podset.ReasonReplicasReady, condition(got, v1alpha1.ConditionAvailable).Reason)
	assert.Equal(t, 3, countPrefix(c.events(), "Normal SuccessfulCreate Created pod: web-"))

	c.scale("web", 5)
	c.env.WaitForQuiet(quiet)
	assert.Len(t, c.podsOf("web"), 5)
	got = c.get("web")
	assert.Equal(t, int64(2), got.Generation)
	assert.Equal(t, int64(2), got.Status.ObservedGeneration)
	assert.Equal(t, int32(5), got.Status.Replicas)
	assert.Equal(t, int32(3), got.Status.ReadyReplicas, "the two new Pods are not ready")
	assert.Equal(t, int64(2), condition(got, v1alpha1.ConditionAvailable).ObservedGeneration)
	assert.Equal(t, 2, countPrefix(c.events(), "Normal SuccessfulCreate"))

	c.scale("web", 1)
	c.env.WaitForQuiet(quiet)
	left := c.podsOf("web")
	require.Len(t, left, 1)
	assert.Equal(t, corev1.PodRunning, left[0].Status.Phase, "not-ready Pods go first, a ready one stays")
	assert.Equal(t, 4, countPrefix(c.events(), "Normal SuccessfulDelete Deleted pod: web-"))
	got = c.get("web")
	assert.Equal(t, int32(1), got.Status.Replicas)
	assert.Equal(t, int32(1), got.Status.ReadyReplicas)
	assert.Equal(t, int64(3), got.Status.ObservedGeneration)
}

// With the Pod watch held back, the cache never shows the Pods the first Reconcile created.
// Expectations keep every later Reconcile from creating them again; once the watch delivers
// the events, the controller acts on its cache again (and replaces a Pod deleted behind its
// back, once).
func TestStaleCacheDoesNotCreateDuplicates(t *testing.T) {
	c := newCluster(t)
	podWatch := watch.NewFakeWithChanSize(10, false)
	c.env.Cluster().Clientset().PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, podWatch, nil
	})
	c.create(newPodSet("web", 3))
	ctrl := c.controller(podset.Options{})
	creates := func() int { return len(c.podActions("create")) }
	// The controller is not running: observe the Pod events as its Pod watch would.
	pods, err := informer.For[*corev1.Pod](c.factory)
	require.NoError(t, err)
	_, err = pods.AddHandler(ctrl.PodObserver())
	require.NoError(t, err)

	_, err = ctrl.Reconcile(c.ctx(), key("web"))
	require.NoError(t, err)
	require.Equal(t, 3, creates())
	cached, err := pods.Lister().List(labels.Everything())
	require.NoError(t, err)
	require.Empty(t, cached, "the cache is stale: it has seen none of the three")
	for range 5 {
		_, err := ctrl.Reconcile(c.ctx(), key("web"))
		require.NoError(t, err)
	}
	assert.Equal(t, 3, creates(), "a stale cache causes no duplicate creates")

	// The watch catches up; then a Pod is deleted and the controller hears of it.
	// An object sent down a watch is the informer's (its transform may rewrite it,
	// as a decoder's fresh object): send copies, as a real watch would.
	created := c.podsOf("web")
	require.Len(t, created, 3)
	for i := range created {
		podWatch.Add(created[i].DeepCopy())
	}
	victim := &created[0]
	require.NoError(t, c.env.Client().CoreV1().Pods(victim.Namespace).Delete(c.ctx(), victim.Name, metav1.DeleteOptions{}))
	podWatch.Delete(victim.DeepCopy())
	require.Eventually(t, func() bool {
		_, err := ctrl.Reconcile(c.ctx(), key("web"))
		return err == nil && creates() == 4
	}, quiet, 5*time.Millisecond, "the deletion was observed, so the Pod is replaced")
	for range 5 {
		_, err := ctrl.Reconcile(c.ctx(), key("web"))
		require.NoError(t, err)
	}
	assert.Equal(t, 4, creates(), "the replacement is not seen yet either: no duplicates")
	assert.Len(t, c.podsOf("web"), 3)
}

// Claims of Pods by a custom-resource owner: an orphan that matches is adopted, a Pod that
// stopped matching is released, a Pod controlled by someone else is left alone. Each claim is
// one JSON merge patch with the PodSet's group, version and kind, the Pod's resourceVersion and
// UID as preconditions; adoption is preceded by an uncached GET of the PodSet.
func TestClaimsAreMergePatchesNamingTheCustomResource(t *testing.T) {
	c := newCluster(t)
	ps := c.create(newPodSet("web", 2))
	pod := func(name, app string, owner *metav1.OwnerReference) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		got, err := c.env.Client().CoreV1().Pods(p.Namespace).Create(c.ctx(), p, metav1.CreateOptions{})
		require.NoError(t, err)
		return got
	}
	ours := &metav1.OwnerReference{APIVersion: "examples.ctrlkit.dev/v1alpha1", Kind: "PodSet", Name: "web", UID: ps.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	orphan := pod("orphan", "web", nil)
	mismatched := pod("relabelled", "other", ours)
	foreign := pod("foreign", "web", &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true)})
	c.env.ClearActions()

	c.run()

	patches := map[string]clienttesting.PatchActionImpl{}
	for _, a := range c.podActions("patch") {
		p := a.(clienttesting.PatchActionImpl)
		patches[p.GetName()] = p
	}
	require.Len(t, patches, 2, "one adoption and one release, nothing for the foreign Pod")
	adopt, release := patches[orphan.Name], patches[mismatched.Name]
	assert.Equal(t, types.MergePatchType, adopt.GetPatchType())
	assert.JSONEq(t, `{"metadata":{"ownerReferences":[{"apiVersion":"examples.ctrlkit.dev/v1alpha1","kind":"PodSet",`+
		`"name":"web","uid":"`+string(ps.UID)+`","controller":true,"blockOwnerDeletion":true}],`+
		`"resourceVersion":"`+orphan.ResourceVersion+`","uid":"`+string(orphan.UID)+`"}}`, string(adopt.GetPatch()))
	assert.Equal(t, types.MergePatchType, release.GetPatchType())
	assert.JSONEq(t, `{"metadata":{"ownerReferences":null,"resourceVersion":"`+mismatched.ResourceVersion+
		`","uid":"`+string(mismatched.UID)+`"}}`, string(release.GetPatch()))

	gets := c.podSetActions("get")
	require.NotEmpty(t, gets, "adoption re-reads the owner uncached")
	assert.Equal(t, "web", gets[0].(clienttesting.GetAction).GetName())

	owned := c.podsOf("web")
	require.Len(t, owned, 2, "the adopted orphan plus one created")
	names := []string{owned[0].Name, owned[1].Name}
	assert.Contains(t, names, "orphan")
	got, err := c.env.Client().CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx(), mismatched.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.OwnerReferences, "released")
	got, err = c.env.Client().CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx(), foreign.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "rs-uid", string(got.OwnerReferences[0].UID), "not ours, untouched")
}

// An adoption patch that meets a Conflict (the Pod changed after the cache's copy) is not an
// error: Reconcile asks to be run again and, by then, creates nothing the Pod would have
// counted for.
func TestClaimConflictRequeuesQuietly(t *testing.T) {
	c := newCluster(t)
	c.create(newPodSet("web", 1))
	_, err := c.env.Client().CoreV1().Pods(metav1.NamespaceDefault).Create(c.ctx(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "orphan", Labels: map[string]string{"app": "web"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	c.env.ClearActions()
	conflicts := 1
	c.env.Cluster().Clientset().PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(corev1.Resource("pods"), "orphan", errors.New("the object has been modified"))
	})
	ctrl := c.controller(podset.Options{})

	res, err := ctrl.Reconcile(c.ctx(), key("web"))
	require.NoError(t, err)
	assert.True(t, res.Requeue)
	assert.Empty(t, c.podActions("create"), "the orphan may still be ours: nothing created")

	res, err = ctrl.Reconcile(c.ctx(), key("web"))
	require.NoError(t, err)
	assert.False(t, res.Requeue)
	assert.Empty(t, c.podActions("create"), "the orphan was adopted and counts")
	require.Len(t, c.podsOf("web"), 1)
	assert.Equal(t, "orphan", c.podsOf("web")[0].Name)
}

// A PodSet being deleted adopts nothing: the uncached re-read sees the deletionTimestamp that
// the cache may not have yet.
func TestNoAdoptionByAnOwnerBeingDeleted(t *testing.T) {
	c := newCluster(t)
	c.create(newPodSet("web", 0))
	_, err := c.env.Client().CoreV1().Pods(metav1.NamespaceDefault).Create(c.ctx(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "orphan", Labels: map[string]string{"app": "web"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The fresh GET answers with a PodSet in deletion; the cache still shows it alive.
	c.env.Cluster().Clientset().PrependReactor("get", v1alpha1.Plural, func(a clienttesting.Action) (bool, runtime.Object, error) {
		u, err := c.env.Cluster().Tracker().Get(a.GetResource(), a.GetNamespace(), a.(clienttesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		deleting := u.DeepCopyObject()
		m, _ := deleting.(metav1.Object)
		m.SetDeletionTimestamp(ptr.To(metav1.Now()))
		return true, deleting, nil
	})
	ctrl := c.controller(podset.Options{})
	_, err = ctrl.Reconcile(c.ctx(), key("web"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "being deleted")
	assert.Empty(t, c.podActions("patch"))
}

// A PodSet whose spec.replicas is a string is accepted by the fake (and would be by a CRD with
// preserved unknown fields), but cannot be converted to the Go type. The informer reports it by
// key (and, with a recorder, as an event on the object: see the demo and package manager), it
// never reaches the controller's queue, and the other PodSet converges regardless. Fixing the
// object gets it reconciled.
func TestConversionFailureIsReportedNotFatal(t *testing.T) {
	c := newCluster(t)
	c.createUnstructured(map[string]any{
		"metadata": map[string]any{"name": "broken"},
		"spec": map[string]any{
			"replicas": "three",
			"selector": map[string]any{"matchLabels": map[string]any{"app": "broken"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "broken"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}},
			},
		},
	})
	c.create(newPodSet("web", 2))
	c.run()

	assert.Len(t, c.podsOf("web"), 2, "the good PodSet converged")
	assert.Empty(t, c.podsOf("broken"))
	assert.Contains(t, c.reported(), "default/broken", "the informer named the object it could not convert")

	u, err := c.env.Dynamic().Resource(v1alpha1.GVR).Namespace(metav1.NamespaceDefault).Get(c.ctx(), "broken", metav1.GetOptions{})
	require.NoError(t, err)
	u.Object["spec"].(map[string]any)["replicas"] = int64(1)
	_, err = c.env.Dynamic().Resource(v1alpha1.GVR).Namespace(metav1.NamespaceDefault).Update(c.ctx(), u, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.env.WaitForQuiet(quiet)
	assert.Len(t, c.podsOf("broken"), 1, "the fixed version is reconciled")
}

// Status is written through the status subresource only, and only when it changed.
func TestStatusThroughSubresourceOnlyWhenChanged(t *testing.T) {
	c := newCluster(t)
	c.create(newPodSet("web", 2))
	ctrl := c.run()
	c.markReady(labels.SelectorFromSet(labels.Set{"app": "web"}))
	c.env.WaitForQuiet(quiet)

	updates := c.podSetActions("update")
	require.NotEmpty(t, updates)
	for _, a := range updates {
		assert.Equal(t, "status", a.GetSubresource(), "the controller never updates the main resource")
	}
	assert.Empty(t, c.podSetActions("patch"))

	got := c.get("web")
	assert.Equal(t, int32(2), got.Status.Replicas)
	assert.Equal(t, int32(2), got.Status.ReadyReplicas)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
	for _, typ := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionReplicaFailure} {
		cond := condition(got, typ)
		assert.Equal(t, got.Generation, cond.ObservedGeneration, typ)
		assert.False(t, cond.LastTransitionTime.IsZero(), typ)
	}
	assert.Equal(t, metav1.ConditionTrue, condition(got, v1alpha1.ConditionAvailable).Status)
	assert.Equal(t, metav1.ConditionFalse, condition(got, v1alpha1.ConditionReplicaFailure).Status)

	n := len(updates)
	for range 3 {
		ctrl.Enqueue(key("web"))
		c.env.WaitForQuiet(quiet)
	}
	assert.Len(t, c.podSetActions("update"), n, "nothing changed, nothing written")
}

// Failing creates: slow start sends one request, not three; the failure is an event and the
// ReplicaFailure condition; once the API server accepts Pods again the PodSet converges and the
// condition clears.
func TestCreateFailuresAreReportedAndRetried(t *testing.T) {
	c := newCluster(t)
	c.create(newPodSet("web", 3))
	ctrl := c.controller(podset.Options{})
	c.env.FailWrites(100, "create")

	_, err := ctrl.Reconcile(c.ctx(), key("web"))
	require.ErrorIs(t, err, testkit.ErrInjected)
	assert.Len(t, c.podActions("create"), 1, "slow start: the first batch is one Pod")
	assert.Equal(t, 1, countPrefix(c.events(), "Warning "+podset.ReasonFailedCreate+" Error creating"))
	got := c.get("web")
	failure := condition(got, v1alpha1.ConditionReplicaFailure)
	assert.Equal(t, metav1.ConditionTrue, failure.Status)
	assert.Equal(t, podset.ReasonFailedCreate, failure.Reason)
	assert.Contains(t, failure.Message, "injected")

	c.env.FailWrites(0)
	c.env.RunController(c.ctx(), ctrl)
	c.env.WaitForQuiet(quiet)
	assert.Len(t, c.podsOf("web"), 3, "failed creations were not left expected: the controller went on")
	assert.Equal(t, metav1.ConditionFalse, condition(c.get("web"), v1alpha1.ConditionReplicaFailure).Status)
}

// Deletes go out all at once, as kube-controller-manager sends them: with every delete failing,
// one Reconcile still tries all three, each failure lowers its expectation (the next Reconcile
// is not left waiting for events that never come), and the failure is in status.
func TestDeleteFailuresAreReportedAndNotSlowStarted(t *testing.T) {
	c := newCluster(t)
	ps := c.create(newPodSet("web", 4))
	for i := range 4 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("web-%d", i),
				Labels: map[string]string{"app": "web"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind,
					Name: "web", UID: ps.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
		}
		_, err := c.env.Client().CoreV1().Pods(metav1.NamespaceDefault).Create(c.ctx(), pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	c.scale("web", 1)
	ctrl := c.controller(podset.Options{}) // its caches start from the Pods and the scaled PodSet
	c.env.FailWrites(100, "delete")

	_, err := ctrl.Reconcile(c.ctx(), key("web"))
	require.ErrorIs(t, err, testkit.ErrInjected)
	assert.Len(t, c.podActions("delete"), 3, "every delete was sent in the first Reconcile")
	assert.Equal(t, 3, countPrefix(c.events(), "Warning "+podset.ReasonFailedDelete+" Error deleting"))
	failure := condition(c.get("web"), v1alpha1.ConditionReplicaFailure)
	assert.Equal(t, metav1.ConditionTrue, failure.Status)
	assert.Equal(t, podset.ReasonFailedDelete, failure.Reason)
	assert.Contains(t, failure.Message, "3 of 3 calls failed")

	c.env.FailWrites(0)
	_, err = ctrl.Reconcile(c.ctx(), key("web"))
	require.NoError(t, err)
	assert.Len(t, c.podActions("delete"), 6, "the expectations were lowered: the next Reconcile deleted again")
	assert.Len(t, c.podsOf("web"), 1)
}

// Deleting a PodSet: its Pods carry its controller reference, so on a cluster the garbage
// collector deletes them. The fakes have no garbage collector: the Pods stay, and the
// controller stops working on them (nothing is replaced or deleted).
func TestDeletedPodSetStopsWork(t *testing.T) {
	c := newCluster(t)
	c.create(newPodSet("web", 2))
	c.run()
	pods := c.podsOf("web")
	require.Len(t, pods, 2)

	c.env.ClearActions()
	require.NoError(t, c.podsets.Delete(c.ctx(), c.env.Namespace(), "web", metav1.DeleteOptions{}))
	c.env.WaitForQuiet(quiet)
	require.NoError(t, c.env.Client().CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx(), pods[0].Name, metav1.DeleteOptions{}))
	c.env.WaitForQuiet(quiet)

	assert.Len(t, c.podsOf("web"), 1, "the survivor waits for the garbage collector")
	assert.Empty(t, c.podActions("create"), "nothing replaced")
	assert.Len(t, c.podActions("delete"), 1, "only the test's own delete")
}

func TestInvalidSpecIsReportedNotRetried(t *testing.T) {
	for name, mutate := range map[string]func(*v1alpha1.PodSet){
		"selector does not match template": func(ps *v1alpha1.PodSet) { ps.Spec.Template.Labels = map[string]string{"app": "other"} },
		"empty selector":                   func(ps *v1alpha1.PodSet) { ps.Spec.Selector = &metav1.LabelSelector{} },
		"bad operator": func(ps *v1alpha1.PodSet) {
			ps.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Like"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t)
			ps := newPodSet("web", 2)
			mutate(ps)
			c.create(ps)
			ctrl := c.controller(podset.Options{})
			_, err := ctrl.Reconcile(c.ctx(), key("web"))
			require.Error(t, err)
			assert.True(t, controller.IsTerminal(err), "not retried: %v", err)
			assert.Empty(t, c.podActions("create"))
			assert.Equal(t, 1, countPrefix(c.events(), "Warning "+podset.ReasonInvalidSpec))
			failure := condition(c.get("web"), v1alpha1.ConditionReplicaFailure)
			assert.Equal(t, metav1.ConditionTrue, failure.Status)
			assert.Equal(t, podset.ReasonInvalidSpec, failure.Reason)
		})
	}
}

func TestNewNeedsItsClients(t *testing.T) {
	c := newCluster(t)
	_, err := podset.New(nil, c.env.Client(), c.env.Dynamic(), podset.Options{})
	assert.ErrorIs(t, err, podset.ErrInvalidInput)
	_, err = podset.New(c.factory, nil, c.env.Dynamic(), podset.Options{})
	assert.ErrorIs(t, err, podset.ErrInvalidInput)
	_, err = podset.New(c.factory, c.env.Client(), nil, podset.Options{})
	assert.ErrorIs(t, err, podset.ErrInvalidInput)

	noDynamic := informer.NewFactory(c.env.Client(), informer.Options{})
	defer noDynamic.Shutdown()
	_, err = podset.New(noDynamic, c.env.Client(), dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), podset.Options{})
	assert.ErrorIs(t, err, informer.ErrNoClient)
}
