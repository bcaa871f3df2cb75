package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		// The test binary started as the example's binary (sharding_apiserver_test.go runs
		// several as separate processes): main parses os.Args and exits.
		main()
		return
	}
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}

const quiet = 20 * time.Second // WaitForQuiet's bound: generous for a loaded machine

func TestScaleUpAndDown(t *testing.T) {
	e := newTestEnv(t, envOptions{kubelet: true})
	rs := e.createRS("web", 3)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)
	e.assertEverSeen(3, "three Pods created")

	pods := e.ownedPods(rs)
	p := pods[0]
	assert.Regexp(t, `^web-`, p.Name)
	assert.Equal(t, rs.Spec.Template.Labels, p.Labels)
	ref := metav1.GetControllerOf(&p)
	require.NotNil(t, ref)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: rs.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, *ref)

	assert.Equal(t, int32(3), e.getRS("web").Status.FullyLabeledReplicas)

	e.scale("web", 7)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)
	e.assertEverSeen(7, "no Pod beyond the 7 asked for was ever created")

	e.scale("web", 2)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)
	assert.Len(t, e.podDeletes(), 5)
	_, _, exists := e.rsc.Expectations().Get(controller.Key{Namespace: ns, Name: "web"})
	assert.True(t, exists)
	assert.True(t, e.rsc.Expectations().Satisfied(controller.Key{Namespace: ns, Name: "web"}))
}

func TestStatusIsWrittenOnlyWhenItChanges(t *testing.T) {
	e := newTestEnv(t, envOptions{kubelet: true})
	e.createRS("web", 2)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)
	e.ClearActions()

	// An unrelated change wakes the controller; the status it computes is the same.
	rs := e.getRS("web")
	rs.Annotations = map[string]string{"touched": "yes"}
	_, err := e.Client().AppsV1().ReplicaSets(ns).Update(e.ctx, rs, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.WaitForQuiet(quiet)
	assert.Empty(t, e.actions("update", "replicasets", "status"))
	assert.Empty(t, e.actions("create", "pods", ""))
}

func TestAdoptionAndRelease(t *testing.T) {
	e := newTestEnv(t, envOptions{noStart: true})
	rs := e.createRS("web", 2) // selector app=web
	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "other-uid"}}

	orphan := e.createPod(readyPod("orphan", map[string]string{"app": "web"}, nil))
	strayed := e.createPod(readyPod("strayed", map[string]string{"app": "legacy"}, rs))
	foreign := e.createPod(readyPod("foreign", map[string]string{"app": "web"}, other))
	finished := readyPod("finished", map[string]string{"app": "web"}, nil)
	finished.Status.Phase = corev1.PodSucceeded
	e.createPod(finished)
	e.waitPodsCached()
	e.ClearActions()

	e.RunController(e.ctx, e.rsc)
	e.WaitForQuiet(quiet)

	assert.Equal(t, rs.UID, metav1.GetControllerOf(e.getPod("orphan")).UID, "a matching orphan is adopted")
	assert.Empty(t, e.getPod("strayed").OwnerReferences, "an owned Pod that stopped matching is released")
	assert.Equal(t, types.UID("other-uid"), metav1.GetControllerOf(e.getPod("foreign")).UID, "another owner's Pod is left alone")
	assert.Empty(t, e.getPod("finished").OwnerReferences, "a finished Pod is not adopted")
	e.assertConverged("web", false) // orphan plus one new Pod
	st := e.getRS("web").Status
	assert.Equal(t, int32(1), st.ReadyReplicas, "the orphan is ready, the new Pod not (no kubelet here)")
	assert.Equal(t, int32(1), st.FullyLabeledReplicas, "the orphan lacks the template's tier label")
	assert.Len(t, e.actions("create", "pods", ""), 1, "the adopted orphan counts: only one Pod is created")

	// The claims are UID-preconditioned strategic merge patches, as kube-controller-manager sends.
	patched := map[string]string{}
	for _, a := range e.actions("patch", "pods", "") {
		pa := a.(clienttesting.PatchAction)
		assert.Equal(t, types.StrategicMergePatchType, pa.GetPatchType())
		patched[pa.GetName()] = string(pa.GetPatch())
	}
	assert.Contains(t, patched["orphan"], `"uid":"`+string(orphan.UID)+`"`)
	assert.Contains(t, patched["strayed"], `"$patch":"delete"`)
	assert.Contains(t, patched["strayed"], `"uid":"`+string(strayed.UID)+`"`)
	assert.NotContains(t, patched, foreign.Name)
}

// The cache may not show yet that the owner is being deleted. The first adoption re-reads it
// from the API server, and an owner in deletion adopts nothing.
func TestNoAdoptionByAnOwnerBeingDeleted(t *testing.T) {
	e := newTestEnv(t, envOptions{noStart: true})
	e.createRS("web", 1)
	e.createPod(readyPod("orphan", map[string]string{"app": "web"}, nil))
	e.waitPodsCached()
	e.waitCached("web")
	e.ClearActions()
	e.Cluster().Clientset().PrependReactor("get", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		rs, err := e.Cluster().Tracker().Get(action.GetResource(), action.GetNamespace(), action.(clienttesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		deleting := rs.(*appsv1.ReplicaSet).DeepCopy()
		deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		return true, deleting, nil
	})

	_, err := e.rsc.Reconcile(e.ctx, controller.Key{Namespace: ns, Name: "web"})
	require.Error(t, err)
	assert.ErrorContains(t, err, "owner is being deleted")
	assert.Empty(t, e.getPod("orphan").OwnerReferences)
	assert.Empty(t, e.actions("patch", "pods", ""))
	assert.Empty(t, e.actions("create", "pods", ""), "no Pods are created while the claim failed")
}

// The heart of expectations: the informer has not seen the Pods the controller created (their
// watch events are held back), the controller is woken again and again, and still creates
// nothing more until the cache has caught up.
func TestStaleCacheCausesNoExtraCreates(t *testing.T) {
	var held *heldWatches
	e := newTestEnv(t, envOptions{beforeInformers: func(env *testkit.FakeEnv) { held = holdPodWatches(env) }})
	key := controller.Key{Namespace: ns, Name: "web"}
	e.createRS("web", 4)
	e.WaitForQuiet(quiet)
	require.Len(t, e.actions("create", "pods", ""), 4)
	add, _, _ := e.rsc.Expectations().Get(key)
	assert.Equal(t, int64(4), add, "four creations expected, none observed")

	for i := range 3 {
		rs := e.getRS("web")
		rs.Annotations = map[string]string{"poke": string(rune('a' + i))}
		_, err := e.Client().AppsV1().ReplicaSets(ns).Update(e.ctx, rs, metav1.UpdateOptions{})
		require.NoError(t, err)
		e.WaitForQuiet(quiet)
	}
	assert.Len(t, e.actions("create", "pods", ""), 4, "syncs on a stale cache created nothing")
	assert.Zero(t, e.podsEverSeen(), "the informer really had not seen the Pods")

	held.Release()
	e.WaitForQuiet(quiet)
	assert.Len(t, e.actions("create", "pods", ""), 4)
	e.assertEverSeen(4, "the held events arrived")
	assert.True(t, e.rsc.Expectations().Satisfied(key))
	e.assertConverged("web", false)
}

// With a fifth of all writes failing (the controller's creates, deletes, patches and status
// updates, and the kubelet's), the controller still converges, and never creates a Pod too many.
func TestConvergesThroughWriteFailures(t *testing.T) {
	e := newTestEnv(t, envOptions{kubelet: true})
	e.FailWrites(20)
	e.createRS("web", 12)
	converged := func(replicas int32) func() bool {
		return func() bool {
			rs := e.getRS("web")
			st := rs.Status
			return len(e.ownedPods(rs)) == int(replicas) && st.ObservedGeneration == rs.Generation &&
				st.Replicas == replicas && st.ReadyReplicas == replicas && st.AvailableReplicas == replicas &&
				findCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure) == nil
		}
	}
	// Keys in backoff are no work to WaitForQuiet, so wait for the world.
	require.Eventually(t, converged(12), quiet, 10*time.Millisecond)
	e.assertEverSeen(12, "failed creates were not made up for twice")

	e.scale("web", 3)
	require.Eventually(t, converged(3), quiet, 10*time.Millisecond)
	assert.Greater(t, e.Injected(), 5, "the fake really failed writes")
	e.FailWrites(0)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)
}

func TestDeletingTheReplicaSetStopsWork(t *testing.T) {
	e := newTestEnv(t, envOptions{})
	key := controller.Key{Namespace: ns, Name: "web"}
	old := e.createRS("web", 3)
	e.WaitForQuiet(quiet)
	require.Len(t, e.ownedPods(old), 3)

	require.NoError(t, e.Client().AppsV1().ReplicaSets(ns).Delete(e.ctx, "web", metav1.DeleteOptions{}))
	e.WaitForQuiet(quiet)
	_, _, exists := e.rsc.Expectations().Get(key)
	assert.False(t, exists, "a deleted ReplicaSet's expectations are dropped")
	e.ClearActions()

	// Its Pods' events concern no ReplicaSet any more (no garbage collector runs here).
	pod := e.ownedPods(old)[0]
	require.NoError(t, e.Client().CoreV1().Pods(ns).Delete(e.ctx, pod.Name, metav1.DeleteOptions{}))
	e.WaitForQuiet(quiet)
	for _, a := range e.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" && !(a.GetVerb() == "delete" && a.GetResource().Resource == "pods") {
			t.Errorf("unexpected request after the ReplicaSet was deleted: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	assert.Len(t, e.podDeletes(), 1, "only the test's own delete")

	// A new ReplicaSet of the same name is another owner: the old one's Pods (their controller
	// reference names the old UID) are not its own, and it creates its own.
	fresh := e.createRS("web", 2)
	require.NotEqual(t, old.UID, fresh.UID)
	e.WaitForQuiet(quiet)
	assert.Len(t, e.ownedPods(fresh), 2)
	assert.Len(t, e.ownedPods(old), 2, "the old ReplicaSet's Pods are untouched")
}

func TestBadSelectorsAreTerminal(t *testing.T) {
	e := newTestEnv(t, envOptions{noStart: true})
	bad := replicaSet(ns, "bad", "", 1)
	bad.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Sometimes"}}}
	empty := replicaSet(ns, "empty", "", 1)
	empty.Spec.Selector = &metav1.LabelSelector{}
	for _, rs := range []*appsv1.ReplicaSet{bad, empty} {
		_, err := e.Client().AppsV1().ReplicaSets(ns).Create(e.ctx, rs, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	e.waitCached("bad")
	e.waitCached("empty")
	e.ClearActions()
	for _, name := range []string{"bad", "empty"} {
		_, err := e.rsc.Reconcile(e.ctx, controller.Key{Namespace: ns, Name: name})
		require.Error(t, err, name)
		assert.True(t, controller.IsTerminal(err), "%s: %v", name, err)
		assert.ErrorContains(t, err, "default/"+name)
	}
	assert.Empty(t, e.Actions(), "bad input writes nothing")

	res, err := e.rsc.Reconcile(e.ctx, controller.Key{Namespace: ns, Name: "gone"})
	assert.NoError(t, err, "a deleted ReplicaSet is not an error")
	assert.True(t, res.IsZero())
}

// Slow start: with every create failing, the first sync sends one create, not twenty. With
// the gate off it sends all of them. Either way the expectations are lowered for every Pod
// that was not created, so the next sync is not blocked waiting for events that never come.
func TestSlowStartStopsAtTheFirstFailingBatch(t *testing.T) {
	for _, tc := range []struct {
		gate    string
		creates int
	}{{"ReplicaSetSlowStartBatching=true", 1}, {"ReplicaSetSlowStartBatching=false", 20}} {
		t.Run(tc.gate, func(t *testing.T) {
			gate := newGate(t, tc.gate)
			e := newTestEnv(t, envOptions{noStart: true, opts: Options{FeatureGate: gate}})
			e.createRS("web", 20)
			e.waitCached("web")
			e.FailWrites(100, "create")
			key := controller.Key{Namespace: ns, Name: "web"}

			_, err := e.rsc.Reconcile(e.ctx, key)
			require.ErrorIs(t, err, testkit.ErrInjected)
			assert.Len(t, e.actions("create", "pods", ""), tc.creates)
			assert.True(t, e.rsc.Expectations().Satisfied(key), "expectations lowered for the Pods not created")
			rs := e.getRS("web")
			cond := findCondition(rs.Status.Conditions, appsv1.ReplicaSetReplicaFailure)
			require.NotNil(t, cond, "the failure is reported in status")
			assert.Equal(t, "FailedCreate", cond.Reason)

			e.FailWrites(0)
			e.waitCached("web") // with the failure condition
			_, err = e.rsc.Reconcile(e.ctx, key)
			require.NoError(t, err)
			assert.Len(t, e.actions("create", "pods", ""), tc.creates+20)
			rs = e.getRS("web")
			assert.Nil(t, findCondition(rs.Status.Conditions, appsv1.ReplicaSetReplicaFailure), "cleared by a clean sync")
		})
	}
}

func TestCreatesInANamespaceBeingDeletedAreNoError(t *testing.T) {
	e := newTestEnv(t, envOptions{noStart: true})
	e.createRS("web", 3)
	e.waitCached("web")
	e.Cluster().Clientset().PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(corev1.Resource("pods"), "", nil)
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	key := controller.Key{Namespace: ns, Name: "web"}
	_, err := e.rsc.Reconcile(e.ctx, key)
	require.NoError(t, err)
	assert.True(t, e.rsc.Expectations().Satisfied(key))
}

// Deletes are sent all at once, as kube-controller-manager sends them: with every delete
// failing, one sync still tries all five (slow start would have tried one), lowers the
// expectations for each, and reports the failure in status.
func TestDeletesAreSentInParallelWithoutSlowStart(t *testing.T) {
	e := newTestEnv(t, envOptions{noStart: true})
	rs := e.createRS("web", 6)
	for i := range 6 {
		e.createPod(readyPod(fmt.Sprintf("web-%d", i), map[string]string{"app": "web"}, rs))
	}
	e.scale("web", 1)
	e.waitCached("web")
	e.waitPodsCached()
	e.FailWrites(100, "delete")
	key := controller.Key{Namespace: ns, Name: "web"}

	_, err := e.rsc.Reconcile(e.ctx, key)
	require.ErrorIs(t, err, testkit.ErrInjected)
	assert.Len(t, e.podDeletes(), 5, "every delete was sent")
	assert.True(t, e.rsc.Expectations().Satisfied(key), "expectations lowered for every failed delete")
	cond := findCondition(e.getRS("web").Status.Conditions, appsv1.ReplicaSetReplicaFailure)
	require.NotNil(t, cond, "the failure is reported in status")
	assert.Equal(t, "FailedDelete", cond.Reason)
	assert.Contains(t, cond.Message, "5 of 5 calls failed")

	e.FailWrites(0)
	e.waitCached("web") // with the failure condition
	_, err = e.rsc.Reconcile(e.ctx, key)
	require.NoError(t, err)
	assert.Len(t, e.podDeletes(), 10)
	assert.Len(t, e.ownedPods(rs), 1)
}

// A scale-down deletes first from the nodes crowded by Pods of the ReplicaSets that share its
// controller (a Deployment's), as kube-controller-manager's getIndirectlyRelatedPods ranks
// them; a ReplicaSet without a controller counts its own Pods.
func TestScaleDownThinsOutCrowdedNodes(t *testing.T) {
	e := newTestEnv(t, envOptions{noStart: true})
	deployment := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "deployment-uid", Controller: ptr.To(true)}
	owned := func(name string, replicas int32, owner *metav1.OwnerReference) *appsv1.ReplicaSet {
		rs := replicaSet(ns, name, "", replicas)
		if owner != nil {
			rs.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		created, err := e.Client().AppsV1().ReplicaSets(ns).Create(e.ctx, rs, metav1.CreateOptions{})
		require.NoError(t, err)
		return created
	}
	pod := func(name string, rs *appsv1.ReplicaSet, node string) {
		p := readyPod(name, map[string]string{"app": rs.Name}, rs)
		p.Spec.NodeName = node
		e.createPod(p)
	}
	newRS := owned("new", 2, &deployment)
	oldRS := owned("old", 2, &deployment)
	alone := owned("alone", 3, nil)
	pod("new-1", newRS, "node-1")
	pod("new-2", newRS, "node-2")
	pod("old-1", oldRS, "node-2")
	pod("old-2", oldRS, "node-2")
	pod("alone-x1", alone, "node-x")
	pod("alone-x2", alone, "node-x")
	pod("alone-y", alone, "node-y")
	e.scale("new", 1)
	e.scale("alone", 2)
	for _, name := range []string{"new", "old", "alone"} {
		e.waitCached(name)
	}
	e.waitPodsCached()

	deleted := func() []string {
		var names []string
		for _, a := range e.podDeletes() {
			names = append(names, a.(clienttesting.DeleteAction).GetName())
		}
		return names
	}
	_, err := e.rsc.Reconcile(e.ctx, controller.Key{Namespace: ns, Name: "new"})
	require.NoError(t, err)
	assert.Equal(t, []string{"new-2"}, deleted(), "node-2 has three Pods of the Deployment")

	e.ClearActions()
	_, err = e.rsc.Reconcile(e.ctx, controller.Key{Namespace: ns, Name: "alone"})
	require.NoError(t, err)
	require.Len(t, deleted(), 1)
	assert.Contains(t, []string{"alone-x1", "alone-x2"}, deleted()[0], "node-x has two of its Pods")
}
