package ownerref_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func TestMain(m *testing.M) {
	// Claims start no goroutines; the fake clientset's watchers are never started here. The
	// shared API server is stopped before goleak looks.
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}

func selectorOf(t *testing.T, rs *appsv1.ReplicaSet) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	require.NoError(t, err)
	return sel
}

// newPodClaimer builds the claimer a ReplicaSet controller would: the cached owner, a fresh
// GET through the clientset as canAdopt, and Pods patched through the clientset.
func newPodClaimer(t *testing.T, client *fake.Clientset, cached *appsv1.ReplicaSet, opts ownerref.ClaimerOptions) *ownerref.Claimer[*corev1.Pod] {
	t.Helper()
	canAdopt := ownerref.RecheckOwner(cached, ownerref.GetFresh(client.AppsV1().ReplicaSets(cached.Namespace).Get, cached.Name))
	return ownerref.NewClaimerWithOptions[*corev1.Pod](cached, rsGVK, selectorOf(t, cached), canAdopt, ownerref.PodsPatcher(client), opts)
}

// refsJSON renders a list for comparison; empty and nil lists are the same to the API.
func refsJSON(t *testing.T, refs []metav1.OwnerReference) string {
	t.Helper()
	if len(refs) == 0 {
		return "[]"
	}
	b, err := json.Marshal(refs)
	require.NoError(t, err)
	return string(b)
}

// The patch bodies kube-controller-manager sends, spelled out by hand.
func smpAdoptBody(childUID types.UID) string {
	return fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":%q,"controller":true,"blockOwnerDeletion":true}],"uid":%q}}`, ownerUID, childUID)
}

func smpReleaseBody(childUID types.UID) string {
	return fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, ownerUID, childUID)
}

var ourRef = metav1.OwnerReference{
	APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: ownerUID,
	Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
}

func cmRef(uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm-" + string(uid), UID: uid}
}

// TestClaimRules walks ClaimObject's decision order one object at a time against a fake
// clientset, checking the answer, the exact patch sent, the uncached owner GETs and the
// object the fake stored afterwards.
func TestClaimRules(t *testing.T) {
	notWeb := map[string]string{"app": "other"}
	cases := []struct {
		name string
		// cachedOwner is what the controller's informer shows; freshOwner is what the
		// API server has (nil: same as cached).
		cachedOwner, freshOwner *appsv1.ReplicaSet
		pod                     *corev1.Pod
		filters                 []func(*corev1.Pod) bool
		wantClaimed             bool
		wantPatch               string // "" for no patch
		wantGets                int
		wantErr                 error
		wantRefs                []metav1.OwnerReference // the stored pod's afterwards
	}{
		{
			name:        "orphan that matches is adopted",
			pod:         newPod("orphan", webLabels()),
			wantClaimed: true, wantPatch: smpAdoptBody("orphan-uid"), wantGets: 1,
			wantRefs: []metav1.OwnerReference{ourRef},
		},
		{
			// Strategic merge puts the patch's entries first (the fake applies the same
			// strategicpatch code as the API server).
			name:        "orphan keeps its other, non-controller references",
			pod:         newPod("orphan", webLabels(), refTo("cm1")),
			wantClaimed: true, wantPatch: smpAdoptBody("orphan-uid"), wantGets: 1,
			wantRefs: []metav1.OwnerReference{ourRef, cmRef("cm1")},
		},
		{
			name: "non-controller reference to the owner becomes the controller reference",
			pod: newPod("orphan", webLabels(), func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: ownerUID}}
			}),
			wantClaimed: true, wantPatch: smpAdoptBody("orphan-uid"), wantGets: 1,
			wantRefs: []metav1.OwnerReference{ourRef},
		},
		{
			name:     "orphan that does not match is left alone",
			pod:      newPod("orphan", notWeb),
			wantRefs: nil,
		},
		{
			name:     "orphan rejected by a filter is left alone",
			pod:      newPod("orphan", webLabels()),
			filters:  []func(*corev1.Pod) bool{func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }},
			wantRefs: nil,
		},
		{
			name: "orphan being deleted is not adopted",
			pod:  newPod("orphan", webLabels(), podDeleting),
		},
		{
			name: "orphan in another namespace is not adopted by a namespaced owner",
			pod:  newPod("orphan", webLabels(), inNamespace("other")),
		},
		{
			name:        "owner being deleted (cached) adopts nothing and does not GET",
			cachedOwner: newOwner(deleting),
			pod:         newPod("orphan", webLabels()),
		},
		{
			name:        "owner being deleted (fresh GET) adopts nothing",
			cachedOwner: newOwner(), freshOwner: newOwner(deleting),
			pod:      newPod("orphan", webLabels()),
			wantGets: 1, wantErr: ownerref.ErrOwnerBeingDeleted,
		},
		{
			name:        "owner replaced under its name (fresh GET) adopts nothing",
			cachedOwner: newOwner(), freshOwner: newOwner(func(rs *appsv1.ReplicaSet) { rs.UID = "new-rs-uid" }),
			pod:      newPod("orphan", webLabels()),
			wantGets: 1, wantErr: ownerref.ErrOwnerReplaced,
		},
		{
			name:        "owned and matching is kept without a write",
			pod:         newPod("mine", webLabels(), controlledBy(ownerUID)),
			wantClaimed: true,
			wantRefs:    []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner-of-rs-uid", UID: ownerUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		{
			name:        "owned and matching is kept while the owner is being deleted",
			cachedOwner: newOwner(deleting),
			pod:         newPod("mine", webLabels(), controlledBy(ownerUID)),
			wantClaimed: true,
			wantRefs:    []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner-of-rs-uid", UID: ownerUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		{
			name:      "owned and no longer matching is released",
			pod:       newPod("mine", notWeb, controlledBy(ownerUID)),
			wantPatch: smpReleaseBody("mine-uid"),
		},
		{
			name:      "release keeps the other references",
			pod:       newPod("mine", notWeb, refTo("cm1"), controlledBy(ownerUID), refTo("cm2")),
			wantPatch: smpReleaseBody("mine-uid"),
			wantRefs:  []metav1.OwnerReference{cmRef("cm1"), cmRef("cm2")},
		},
		{
			name:      "owned and rejected by a filter is released",
			pod:       newPod("mine", webLabels(), controlledBy(ownerUID)),
			filters:   []func(*corev1.Pod) bool{func(*corev1.Pod) bool { return false }},
			wantPatch: smpReleaseBody("mine-uid"),
		},
		{
			name:        "owned, not matching, owner being deleted: left alone",
			cachedOwner: newOwner(deleting),
			pod:         newPod("mine", notWeb, controlledBy(ownerUID)),
			wantRefs:    []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner-of-rs-uid", UID: ownerUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		{
			name:     "controlled by another owner and matching is ignored",
			pod:      newPod("foreign", webLabels(), controlledBy(foreignUID)),
			wantRefs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner-of-other-rs-uid", UID: foreignUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		{
			name:     "controlled by another owner and not matching is ignored",
			pod:      newPod("foreign", notWeb, controlledBy(foreignUID)),
			wantRefs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner-of-other-rs-uid", UID: foreignUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cached := tc.cachedOwner
			if cached == nil {
				cached = newOwner()
			}
			fresh := tc.freshOwner
			if fresh == nil {
				fresh = cached
			}
			client := fake.NewClientset(fresh, tc.pod)
			enforcePreconditions(client, "pods")
			c := newPodClaimer(t, client, cached, ownerref.ClaimerOptions{})

			claimed, err := c.ClaimObjects(context.Background(), []*corev1.Pod{tc.pod}, tc.filters...)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				var ce *ownerref.ClaimError
				require.ErrorAs(t, err.(utilerrors.Aggregate).Errors()[0], &ce)
				assert.Equal(t, ownerref.OpAdopt, ce.Op)
			} else {
				require.NoError(t, err)
			}
			if tc.wantClaimed {
				assert.Equal(t, []*corev1.Pod{tc.pod}, claimed)
			} else {
				assert.Empty(t, claimed)
			}
			patches := patchActions(client)
			if tc.wantPatch == "" {
				assert.Empty(t, patches)
			} else {
				require.Len(t, patches, 1)
				assert.Equal(t, types.StrategicMergePatchType, patches[0].GetPatchType())
				assert.Equal(t, tc.pod.Namespace, patches[0].GetNamespace())
				assert.Equal(t, tc.pod.Name, patches[0].GetName())
				assert.JSONEq(t, tc.wantPatch, string(patches[0].GetPatch()))
			}
			assert.Equal(t, tc.wantGets, countActions(client, "get", "replicasets"), "uncached owner GETs")

			obj, err := client.Tracker().Get(podsGVR, tc.pod.Namespace, tc.pod.Name)
			require.NoError(t, err)
			assert.Equal(t, refsJSON(t, tc.wantRefs), refsJSON(t, obj.(*corev1.Pod).OwnerReferences), "stored ownerReferences")
		})
	}
}

// TestClaimObjectsMixed claims a realistic list in one call: order of the result, one GET,
// and the patches in input order.
func TestClaimObjectsMixed(t *testing.T) {
	owner := newOwner()
	pods := []*corev1.Pod{
		newPod("a-mine", webLabels(), controlledBy(ownerUID)),
		newPod("b-orphan", webLabels()),
		newPod("c-foreign", webLabels(), controlledBy(foreignUID)),
		newPod("d-mine-stale", map[string]string{"app": "old"}, controlledBy(ownerUID)),
		newPod("e-orphan", webLabels()),
		newPod("f-unrelated", map[string]string{"app": "db"}),
	}
	objs := []runtime.Object{owner}
	for _, p := range pods {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	enforcePreconditions(client, "pods")
	c := newPodClaimer(t, client, owner, ownerref.ClaimerOptions{})

	claimed, err := c.ClaimObjects(context.Background(), pods)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-mine", "b-orphan", "e-orphan"}, names(claimed))
	assert.Equal(t, 1, countActions(client, "get", "replicasets"), "canAdopt ran once for two adoptions")

	patches := patchActions(client)
	require.Len(t, patches, 3)
	assert.Equal(t, "b-orphan", patches[0].GetName())
	assert.JSONEq(t, smpAdoptBody("b-orphan-uid"), string(patches[0].GetPatch()))
	assert.Equal(t, "d-mine-stale", patches[1].GetName())
	assert.JSONEq(t, smpReleaseBody("d-mine-stale-uid"), string(patches[1].GetPatch()))
	assert.Equal(t, "e-orphan", patches[2].GetName())

	for _, name := range []string{"a-mine", "b-orphan", "e-orphan"} {
		assert.True(t, ownerref.IsControlledBy(storedPod(t, client, name), owner), name)
	}
	assert.Empty(t, storedPod(t, client, "d-mine-stale").OwnerReferences)
	assert.False(t, ownerref.IsControlledBy(storedPod(t, client, "c-foreign"), owner))
	assert.Nil(t, ownerref.ControllerOf(storedPod(t, client, "f-unrelated")))
}

// TestFreshOwnerDeletingCheckedOnce: with many orphans and an owner whose deletion only the
// API server knows about, the owner is fetched once, nothing is adopted, and every refused
// adoption is reported.
func TestFreshOwnerDeletingCheckedOnce(t *testing.T) {
	cached := newOwner()
	objs := []runtime.Object{newOwner(deleting)}
	var pods []*corev1.Pod
	for i := range 5 {
		p := newPod(fmt.Sprintf("orphan-%d", i), webLabels())
		pods = append(pods, p)
		objs = append(objs, p)
	}
	mine := newPod("mine", webLabels(), controlledBy(ownerUID))
	pods = append(pods, mine)
	objs = append(objs, mine)
	client := fake.NewClientset(objs...)
	c := newPodClaimer(t, client, cached, ownerref.ClaimerOptions{})

	claimed, err := c.ClaimObjects(context.Background(), pods)
	assert.Equal(t, []string{"mine"}, names(claimed), "what it already owns is kept")
	require.ErrorIs(t, err, ownerref.ErrOwnerBeingDeleted)
	agg := err.(utilerrors.Aggregate)
	require.Len(t, agg.Errors(), 5)
	for i, e := range agg.Errors() {
		var ce *ownerref.ClaimError
		require.ErrorAs(t, e, &ce)
		assert.Equal(t, fmt.Sprintf("orphan-%d", i), ce.Object.Name)
		assert.Contains(t, e.Error(), "cannot adopt default/orphan-")
		assert.Contains(t, e.Error(), "owner is being deleted: default/web has deletionTimestamp")
	}
	assert.Equal(t, 1, countActions(client, "get", "replicasets"))
	assert.Empty(t, patchActions(client))

	// The answer is remembered for the Claimer's life: a second pass does not GET again.
	_, err = c.ClaimObjects(context.Background(), pods)
	require.ErrorIs(t, err, ownerref.ErrOwnerBeingDeleted)
	assert.Equal(t, 1, countActions(client, "get", "replicasets"))

	// A new Claimer (the next sync) checks again.
	_, _ = newPodClaimer(t, client, cached, ownerref.ClaimerOptions{}).ClaimObjects(context.Background(), pods)
	assert.Equal(t, 2, countActions(client, "get", "replicasets"))
}

func TestCanAdoptRunsOnlyWhenAdopting(t *testing.T) {
	owner := newOwner()
	var calls atomic.Int32
	canAdopt := func(context.Context) error { calls.Add(1); return nil }
	pods := []*corev1.Pod{
		newPod("mine", webLabels(), controlledBy(ownerUID)),
		newPod("stale", nil, controlledBy(ownerUID)),
		newPod("foreign", webLabels(), controlledBy(foreignUID)),
		newPod("dying", webLabels(), podDeleting),
	}
	client := fake.NewClientset(pods[0], pods[1], pods[2], pods[3])
	c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, selectorOf(t, owner), canAdopt, ownerref.PodsPatcher(client))
	_, err := c.ClaimObjects(context.Background(), pods)
	require.NoError(t, err)
	assert.Zero(t, calls.Load(), "no orphan to adopt, no recheck")
}

// TestCanAdoptOnceConcurrently: one Claimer used by several goroutines still rechecks once.
func TestCanAdoptOnceConcurrently(t *testing.T) {
	owner := newOwner()
	var calls atomic.Int32
	canAdopt := func(context.Context) error { calls.Add(1); return nil }
	var objs []runtime.Object
	var pods []*corev1.Pod
	for i := range 8 {
		p := newPod(fmt.Sprintf("orphan-%d", i), webLabels())
		pods = append(pods, p)
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, selectorOf(t, owner), canAdopt, ownerref.PodsPatcher(client))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			claimed, err := c.ClaimObjects(context.Background(), pods[2*i:2*i+2])
			assert.NoError(t, err)
			assert.Len(t, claimed, 2)
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), calls.Load())
}

// TestUIDPreconditionRejectsReplacedObject: the cache still shows an old Pod while the API
// server has a new one under the same name. The uid in the patch makes the server refuse
// (422), so the new Pod is neither adopted nor released.
func TestUIDPreconditionRejectsReplacedObject(t *testing.T) {
	owner := newOwner()
	cachedOrphan := newPod("orphan", webLabels(), func(p *corev1.Pod) { p.UID = "old-orphan-uid" })
	storedOrphan := newPod("orphan", webLabels(), func(p *corev1.Pod) { p.UID = "new-orphan-uid" })
	cachedMine := newPod("mine", nil, controlledBy(ownerUID), func(p *corev1.Pod) { p.UID = "old-mine-uid" })
	storedMine := newPod("mine", nil, controlledBy(ownerUID), func(p *corev1.Pod) { p.UID = "new-mine-uid" })
	client := fake.NewClientset(owner, storedOrphan, storedMine)
	enforcePreconditions(client, "pods")
	c := newPodClaimer(t, client, owner, ownerref.ClaimerOptions{})

	claimed, err := c.ClaimObjects(context.Background(), []*corev1.Pod{cachedOrphan, cachedMine})
	assert.Empty(t, claimed)
	// The failed adoption is an error to retry after the cache catches up; the failed
	// release is not (the object we meant to release is gone either way).
	require.Error(t, err)
	agg := err.(utilerrors.Aggregate)
	require.Len(t, agg.Errors(), 1)
	assert.True(t, apierrors.IsInvalid(agg.Errors()[0]), "%v", agg.Errors()[0])
	var ce *ownerref.ClaimError
	require.ErrorAs(t, agg.Errors()[0], &ce)
	assert.Equal(t, ownerref.ClaimError{Op: ownerref.OpAdopt, Object: types.NamespacedName{Namespace: "default", Name: "orphan"},
		UID: "old-orphan-uid", OwnerKind: "ReplicaSet", Owner: types.NamespacedName{Namespace: "default", Name: "web"}, Err: ce.Err}, *ce)

	patches := patchActions(client)
	require.Len(t, patches, 2)
	assert.JSONEq(t, smpAdoptBody("old-orphan-uid"), string(patches[0].GetPatch()))
	assert.JSONEq(t, smpReleaseBody("old-mine-uid"), string(patches[1].GetPatch()))

	got := storedPod(t, client, "orphan")
	assert.Equal(t, types.UID("new-orphan-uid"), got.UID)
	assert.Empty(t, got.OwnerReferences, "the new object was not adopted")
	got = storedPod(t, client, "mine")
	assert.Equal(t, types.UID("new-mine-uid"), got.UID)
	assert.True(t, ownerref.IsControlledBy(got, owner), "the new object was not released")
}

// TestNotFoundIsNotOurs: objects deleted since the cache saw them are neither claimed nor
// errors.
func TestNotFoundIsNotOurs(t *testing.T) {
	owner := newOwner()
	client := fake.NewClientset(owner) // neither Pod exists any more
	c := newPodClaimer(t, client, owner, ownerref.ClaimerOptions{})
	claimed, err := c.ClaimObjects(context.Background(), []*corev1.Pod{
		newPod("gone-orphan", webLabels()),
		newPod("gone-mine", nil, controlledBy(ownerUID)),
	})
	require.NoError(t, err)
	assert.Empty(t, claimed)
	assert.Len(t, patchActions(client), 2, "both were attempted")

	// Release called directly reports what ClaimObjects swallows.
	err = c.Release(context.Background(), newPod("gone-mine", nil, controlledBy(ownerUID)))
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// TestPatchFailuresAggregated: a failing patch does not stop the others; each failure is
// reported once, with the object it was about.
func TestPatchFailuresAggregated(t *testing.T) {
	owner := newOwner()
	pods := []*corev1.Pod{
		newPod("ok-1", webLabels()),
		newPod("fail-1", webLabels()),
		newPod("ok-2", webLabels()),
		newPod("fail-2", webLabels()),
		newPod("fail-3", nil, controlledBy(ownerUID)), // a release that fails
		newPod("ok-3", nil, controlledBy(ownerUID)),   // a release that works
	}
	objs := []runtime.Object{owner}
	for _, p := range pods {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	client.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if name := a.(clienttesting.PatchAction).GetName(); strings.HasPrefix(name, "fail-") {
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd timeout for %s", name))
		}
		return false, nil, nil
	})
	c := newPodClaimer(t, client, owner, ownerref.ClaimerOptions{})

	claimed, err := c.ClaimObjects(context.Background(), pods)
	assert.Equal(t, []string{"ok-1", "ok-2"}, names(claimed))
	require.Error(t, err)
	agg, ok := err.(utilerrors.Aggregate)
	require.True(t, ok, "%T", err)
	var got []string
	for _, e := range agg.Errors() {
		var ce *ownerref.ClaimError
		require.ErrorAs(t, e, &ce)
		assert.True(t, apierrors.IsInternalError(e))
		got = append(got, string(ce.Op)+" "+ce.Object.Name)
	}
	assert.Equal(t, []string{"adopt fail-1", "adopt fail-2", "release fail-3"}, got)
	assert.Len(t, patchActions(client), 6, "every object was attempted")
	assert.True(t, ownerref.IsControlledBy(storedPod(t, client, "ok-2"), owner))
	assert.Empty(t, storedPod(t, client, "ok-3").OwnerReferences)
	assert.Empty(t, storedPod(t, client, "fail-1").OwnerReferences)
}

// TestMergePatch: the JSON merge patch option writes the whole new list with the object's
// resourceVersion and uid, and a stale object gets a Conflict instead of clobbering.
func TestMergePatch(t *testing.T) {
	owner := newOwner()
	orphan := newPod("orphan", webLabels(), refTo("cm1"))
	mine := newPod("mine", nil, refTo("cm1"), controlledBy(ownerUID))
	onlyMine := newPod("only-mine", nil, controlledBy(ownerUID))
	// The cache saw resourceVersion 5; the server has 6 (someone added a reference).
	stale := newPod("stale", webLabels())
	storedStale := newPod("stale", webLabels(), refTo("cm9"), func(p *corev1.Pod) { p.ResourceVersion = "6" })

	client := fake.NewClientset(owner, orphan, mine, onlyMine, storedStale)
	enforcePreconditions(client, "pods")
	c := newPodClaimer(t, client, owner, ownerref.ClaimerOptions{PatchType: types.MergePatchType})

	claimed, err := c.ClaimObjects(context.Background(), []*corev1.Pod{orphan, mine, onlyMine, stale})
	assert.Equal(t, []string{"orphan"}, names(claimed))
	require.Error(t, err)
	agg := err.(utilerrors.Aggregate)
	require.Len(t, agg.Errors(), 1)
	assert.True(t, apierrors.IsConflict(agg.Errors()[0]), "%v", agg.Errors()[0])

	patches := patchActions(client)
	require.Len(t, patches, 4)
	for _, p := range patches {
		assert.Equal(t, types.MergePatchType, p.GetPatchType())
	}
	cm1 := `{"apiVersion":"v1","kind":"ConfigMap","name":"cm-cm1","uid":"cm1"}`
	ctrl := `{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs-uid","controller":true,"blockOwnerDeletion":true}`
	assert.JSONEq(t, `{"metadata":{"ownerReferences":[`+cm1+`,`+ctrl+`],"resourceVersion":"5","uid":"orphan-uid"}}`, string(patches[0].GetPatch()))
	assert.JSONEq(t, `{"metadata":{"ownerReferences":[`+cm1+`],"resourceVersion":"5","uid":"mine-uid"}}`, string(patches[1].GetPatch()))
	assert.JSONEq(t, `{"metadata":{"ownerReferences":null,"resourceVersion":"5","uid":"only-mine-uid"}}`, string(patches[2].GetPatch()))
	assert.JSONEq(t, `{"metadata":{"ownerReferences":[`+ctrl+`],"resourceVersion":"5","uid":"stale-uid"}}`, string(patches[3].GetPatch()))

	assert.Equal(t, []metav1.OwnerReference{cmRef("cm1"), ourRef}, storedPod(t, client, "orphan").OwnerReferences)
	assert.Equal(t, []metav1.OwnerReference{cmRef("cm1")}, storedPod(t, client, "mine").OwnerReferences)
	assert.Empty(t, storedPod(t, client, "only-mine").OwnerReferences)
	assert.Equal(t, []metav1.OwnerReference{cmRef("cm9")}, storedPod(t, client, "stale").OwnerReferences, "the newer reference survived")
}

// TestClientPatcherReplicaSets: the generic helper over another typed client (a Deployment
// claiming ReplicaSets), with T inferred from the client.
func TestClientPatcherReplicaSets(t *testing.T) {
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "deploy-uid"}}
	rs := newOwner(func(rs *appsv1.ReplicaSet) { rs.Name = "web-abc"; rs.UID = "rs-abc"; rs.Labels = webLabels() })
	client := fake.NewClientset(deploy, rs)
	patcher := ownerref.ClientPatcher(client.AppsV1().ReplicaSets)
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	c := ownerref.NewClaimer[*appsv1.ReplicaSet](deploy, gvk, labels.SelectorFromSet(webLabels()), nil, patcher)

	claimed, err := c.ClaimObjects(context.Background(), []*appsv1.ReplicaSet{rs})
	require.NoError(t, err)
	assert.Len(t, claimed, 1)
	obj, err := client.Tracker().Get(rsGVR, "default", "web-abc")
	require.NoError(t, err)
	got := obj.(*appsv1.ReplicaSet)
	assert.Equal(t, []metav1.OwnerReference{*ownerref.NewControllerRef(deploy, gvk)}, got.OwnerReferences)
	patches := patchActions(client)
	require.Len(t, patches, 1)
	assert.Equal(t, "replicasets", patches[0].GetResource().Resource)
}

func TestPatcherFunc(t *testing.T) {
	owner := newOwner()
	var got []string
	p := ownerref.PatcherFunc[*corev1.Pod](func(_ context.Context, ns, name string, pt types.PatchType, data []byte) error {
		got = append(got, fmt.Sprintf("%s/%s %s %s", ns, name, pt, data))
		return nil
	})
	c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, selectorOf(t, owner), nil, p)
	claimed, err := c.ClaimObjects(context.Background(), []*corev1.Pod{newPod("orphan", webLabels())})
	require.NoError(t, err)
	assert.Len(t, claimed, 1)
	require.Len(t, got, 1)
	assert.Equal(t, "default/orphan application/strategic-merge-patch+json "+smpAdoptBody("orphan-uid"), got[0])
}

func TestClusterScopedOwnerAdoptsAcrossNamespaces(t *testing.T) {
	owner := newOwner(func(rs *appsv1.ReplicaSet) { rs.Namespace = "" })
	pod := newPod("orphan", webLabels(), inNamespace("team-a"))
	var got []string
	p := ownerref.PatcherFunc[*corev1.Pod](func(_ context.Context, ns, name string, _ types.PatchType, _ []byte) error {
		got = append(got, ns+"/"+name)
		return nil
	})
	c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, labels.Everything(), nil, p)
	claimed, err := c.ClaimObjects(context.Background(), []*corev1.Pod{pod})
	require.NoError(t, err)
	assert.Len(t, claimed, 1)
	assert.Equal(t, []string{"team-a/orphan"}, got)
}

func TestNilSelectorMatchesNothing(t *testing.T) {
	owner := newOwner()
	client := fake.NewClientset()
	c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, nil, nil, ownerref.PodsPatcher(client))
	claimed, err := c.ClaimObjects(context.Background(), []*corev1.Pod{
		newPod("orphan", webLabels()),
		newPod("mine", webLabels(), controlledBy(ownerUID)),
	})
	assert.Empty(t, claimed)
	// What it controls no longer matches and is released (here: not found, so no error).
	require.NoError(t, err)
	require.Len(t, patchActions(client), 1)
	assert.Equal(t, "mine", patchActions(client)[0].GetName())
}

func TestInvalidInput(t *testing.T) {
	owner := newOwner()
	client := fake.NewClientset()
	sel := labels.Everything()
	pods := []*corev1.Pod{newPod("orphan", webLabels())}
	ctx := context.Background()

	cases := map[string]*ownerref.Claimer[*corev1.Pod]{
		"nil owner":       ownerref.NewClaimer[*corev1.Pod](nil, rsGVK, sel, nil, ownerref.PodsPatcher(client)),
		"typed nil owner": ownerref.NewClaimer[*corev1.Pod]((*appsv1.ReplicaSet)(nil), rsGVK, sel, nil, ownerref.PodsPatcher(client)),
		"nil patcher":     ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, sel, nil, nil),
		"json patch":      ownerref.NewClaimerWithOptions[*corev1.Pod](owner, rsGVK, sel, nil, ownerref.PodsPatcher(client), ownerref.ClaimerOptions{PatchType: types.JSONPatchType}),
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			claimed, err := c.ClaimObjects(ctx, pods)
			assert.ErrorIs(t, err, ownerref.ErrInvalidClaimer)
			assert.Nil(t, claimed)
			_, err = c.ClaimObject(ctx, pods[0])
			assert.ErrorIs(t, err, ownerref.ErrInvalidClaimer)
			assert.ErrorIs(t, c.Adopt(ctx, pods[0]), ownerref.ErrInvalidClaimer)
			assert.ErrorIs(t, c.Release(ctx, pods[0]), ownerref.ErrInvalidClaimer)
		})
	}
	assert.Empty(t, client.Actions())

	t.Run("nil objects are reported, the rest claimed", func(t *testing.T) {
		client := fake.NewClientset(pods[0])
		c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, sel, nil, ownerref.PodsPatcher(client))
		claimed, err := c.ClaimObjects(ctx, []*corev1.Pod{nil, pods[0]})
		assert.ErrorIs(t, err, ownerref.ErrNilObject)
		assert.Contains(t, err.Error(), "nil object at index 0 of the objects claimed by ReplicaSet default/web")
		assert.Equal(t, pods, claimed)
		_, err = c.ClaimObject(ctx, nil)
		assert.ErrorIs(t, err, ownerref.ErrNilObject)
		assert.ErrorIs(t, c.Adopt(ctx, nil), ownerref.ErrNilObject)
		assert.ErrorIs(t, c.Release(ctx, nil), ownerref.ErrNilObject)
	})

	t.Run("nil clientset and getter", func(t *testing.T) {
		err := ownerref.PodsPatcher(nil).Patch(ctx, "default", "x", types.MergePatchType, []byte("{}"))
		assert.ErrorIs(t, err, ownerref.ErrInvalidClaimer)
		err = ownerref.ClientPatcher[*corev1.Pod, clientPods](nil).Patch(ctx, "default", "x", types.MergePatchType, []byte("{}"))
		assert.ErrorIs(t, err, ownerref.ErrInvalidClaimer)
	})
}

// TestEmptyUIDs: an owner without a UID claims nothing, not even children whose controller
// reference has no UID either, and a child without a UID is neither adopted nor released (its
// patch would carry no UID precondition). Nothing is written.
func TestEmptyUIDs(t *testing.T) {
	ctx := context.Background()
	noUIDPod := func(p *corev1.Pod) { p.UID = "" }

	t.Run("owner without uid", func(t *testing.T) {
		owner := newOwner(func(rs *appsv1.ReplicaSet) { rs.UID = "" })
		pods := []*corev1.Pod{newPod("orphan", webLabels()), newPod("empty-ref", webLabels(), controlledBy(""))}
		client := fake.NewClientset(pods[0], pods[1])
		c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, selectorOf(t, owner), nil, ownerref.PodsPatcher(client))

		claimed, err := c.ClaimObjects(ctx, pods)
		assert.Nil(t, claimed)
		require.ErrorIs(t, err, ownerref.ErrInvalidClaimer)
		require.ErrorIs(t, err, ownerref.ErrMissingUID)
		assert.EqualError(t, err, "invalid claimer: owner ReplicaSet default/web: missing uid")
		ok, err := c.ClaimObject(ctx, pods[1])
		assert.False(t, ok, "a controller reference without a UID is not this owner's")
		assert.ErrorIs(t, err, ownerref.ErrMissingUID)
		assert.ErrorIs(t, c.Adopt(ctx, pods[0]), ownerref.ErrMissingUID)
		assert.ErrorIs(t, c.Release(ctx, pods[1]), ownerref.ErrMissingUID)
		assert.Empty(t, client.Actions())
	})

	t.Run("child without uid", func(t *testing.T) {
		owner := newOwner()
		orphan := newPod("orphan", webLabels(), noUIDPod)
		mine := newPod("mine", map[string]string{"app": "old"}, controlledBy(ownerUID), noUIDPod)
		client := fake.NewClientset(owner, orphan, mine)
		var canAdoptCalls int
		c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, selectorOf(t, owner),
			func(context.Context) error { canAdoptCalls++; return nil }, ownerref.PodsPatcher(client))

		claimed, err := c.ClaimObjects(ctx, []*corev1.Pod{orphan, mine})
		assert.Empty(t, claimed)
		require.ErrorIs(t, err, ownerref.ErrMissingUID)
		agg := err.(utilerrors.Aggregate)
		require.Len(t, agg.Errors(), 2)
		for i, op := range []ownerref.Op{ownerref.OpAdopt, ownerref.OpRelease} {
			var ce *ownerref.ClaimError
			require.ErrorAs(t, agg.Errors()[i], &ce)
			assert.Equal(t, op, ce.Op)
		}
		assert.Contains(t, agg.Errors()[0].Error(), "cannot adopt default/orphan (uid ) for ReplicaSet default/web: missing uid")
		assert.ErrorIs(t, c.Adopt(ctx, orphan), ownerref.ErrMissingUID)
		assert.ErrorIs(t, c.Release(ctx, mine), ownerref.ErrMissingUID)
		assert.Zero(t, canAdoptCalls, "refused before canAdopt")
		assert.Empty(t, patchActions(client))
	})
}

// clientPods names the typed client interface for the nil-getter case above.
type clientPods = interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
}

func TestClaimObjectSingle(t *testing.T) {
	owner := newOwner()
	pod := newPod("orphan", webLabels())
	client := fake.NewClientset(owner, pod)
	c := newPodClaimer(t, client, owner, ownerref.ClaimerOptions{})
	ok, err := c.ClaimObject(context.Background(), pod)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = c.ClaimObject(context.Background(), newPod("other", nil))
	require.NoError(t, err)
	assert.False(t, ok)
}

// TestLogsReleaseAndAdopt: adoptions and releases are logged at V(2) with the object and
// owner, through the context's logger.
func TestLogsReleaseAndAdopt(t *testing.T) {
	owner := newOwner()
	pods := []*corev1.Pod{newPod("orphan", webLabels()), newPod("mine", nil, controlledBy(ownerUID))}
	client := fake.NewClientset(pods[0], pods[1])
	buf := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2), ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), buf)
	c := ownerref.NewClaimer[*corev1.Pod](owner, rsGVK, selectorOf(t, owner), nil, ownerref.PodsPatcher(client))
	_, err := c.ClaimObjects(ctx, pods)
	require.NoError(t, err)
	var msgs []string
	for _, e := range buf.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		msgs = append(msgs, fmt.Sprintf("%s %v", e.Message, e.ParameterKVList[:2]))
	}
	assert.Equal(t, []string{
		"Adopting object [object default/orphan]",
		"Releasing object: removing its controller reference [object default/mine]",
	}, msgs)
}

func TestClaimErrorMessage(t *testing.T) {
	e := &ownerref.ClaimError{
		Op: ownerref.OpRelease, Object: types.NamespacedName{Namespace: "ns", Name: "p"}, UID: "u",
		OwnerKind: "ReplicaSet", Owner: types.NamespacedName{Namespace: "ns", Name: "rs"}, Err: errors.New("boom"),
	}
	assert.Equal(t, "cannot release ns/p (uid u) for ReplicaSet ns/rs: boom", e.Error())
	assert.Equal(t, "boom", errors.Unwrap(e).Error())
}
