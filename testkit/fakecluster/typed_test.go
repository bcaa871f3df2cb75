package fakecluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newCluster(t *testing.T) *fake.Clientset {
	t.Helper()
	c, err := fakecluster.New()
	require.NoError(t, err)
	return c.Clientset()
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

func TestCreateStampsWhatTheServerAssigns(t *testing.T) {
	ctx := context.Background()
	cs := newCluster(t)
	p := pod("")
	p.GenerateName = "web-"
	p.Status.Phase = corev1.PodRunning // a client cannot create a running pod

	a, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)
	b, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)

	for _, got := range []*corev1.Pod{a, b} {
		assert.Regexp(t, `^web-[a-z0-9]{5}$`, got.Name)
		assert.NotEmpty(t, got.UID)
		assert.False(t, got.CreationTimestamp.IsZero())
		assert.Equal(t, int64(1), got.Generation)
		assert.NotEmpty(t, got.ResourceVersion)
		assert.Equal(t, corev1.PodPending, got.Status.Phase)
	}
	assert.NotEqual(t, a.Name, b.Name)
	assert.NotEqual(t, a.UID, b.UID)
	assert.NotEqual(t, a.ResourceVersion, b.ResourceVersion)

	stored, err := cs.CoreV1().Pods("default").Get(ctx, a.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, a.UID, stored.UID)
}

func TestCreateRejectsWhatTheServerWould(t *testing.T) {
	ctx := context.Background()
	cs := newCluster(t)
	_, err := cs.CoreV1().Pods("default").Create(ctx, pod(""), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "no name and no generateName: %v", err)

	p := pod("stale")
	p.ResourceVersion = "7"
	_, err = cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	var st apierrors.APIStatus
	require.ErrorAs(t, err, &st)
	assert.Equal(t, int32(500), st.Status().Code, "resourceVersion on create: a 500, as kube-apiserver's storage answers it: %v", err)

	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("twice"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("twice"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)
}

func TestUpdateEnforcesOptimisticConcurrency(t *testing.T) {
	ctx := context.Background()
	cs := newCluster(t)
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod("p"), metav1.CreateOptions{})
	require.NoError(t, err)

	first := created.DeepCopy()
	first.Labels["v"] = "1"
	updated, err := cs.CoreV1().Pods("default").Update(ctx, first, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, created.ResourceVersion, updated.ResourceVersion)

	stale := created.DeepCopy() // still carries the first resourceVersion
	stale.Labels["v"] = "2"
	_, err = cs.CoreV1().Pods("default").Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "stale update: %v", err)

	unconditional := created.DeepCopy()
	unconditional.ResourceVersion = ""
	unconditional.Labels["v"] = "3"
	_, err = cs.CoreV1().Pods("default").Update(ctx, unconditional, metav1.UpdateOptions{})
	assert.NoError(t, err, "an update without resourceVersion is unconditional")

	wrongUID := updated.DeepCopy()
	wrongUID.ResourceVersion = ""
	wrongUID.UID = "someone-else"
	_, err = cs.CoreV1().Pods("default").Update(ctx, wrongUID, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "UID precondition: %v", err)

	_, err = cs.CoreV1().Pods("default").Update(ctx, pod("missing"), metav1.UpdateOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestStatusAndMainUpdatesAreSeparate(t *testing.T) {
	ctx := context.Background()
	cs := newCluster(t)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1)},
	}
	created, err := cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)

	// A status update changes the status only, and not the generation.
	st := created.DeepCopy()
	st.Status.Replicas = 1
	st.Spec.Replicas = ptr.To[int32](9)
	st.Labels = map[string]string{"sneaky": "true"}
	afterStatus, err := cs.AppsV1().ReplicaSets("default").UpdateStatus(ctx, st, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), afterStatus.Status.Replicas)
	assert.Equal(t, int32(1), *afterStatus.Spec.Replicas)
	assert.Empty(t, afterStatus.Labels)
	assert.Equal(t, int64(1), afterStatus.Generation)

	// A main update keeps the status and bumps the generation on a spec change only.
	spec := afterStatus.DeepCopy()
	spec.Spec.Replicas = ptr.To[int32](3)
	spec.Status.Replicas = 42
	afterSpec, err := cs.AppsV1().ReplicaSets("default").Update(ctx, spec, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *afterSpec.Spec.Replicas)
	assert.Equal(t, int32(1), afterSpec.Status.Replicas)
	assert.Equal(t, int64(2), afterSpec.Generation)
	assert.Equal(t, created.UID, afterSpec.UID)

	labels := afterSpec.DeepCopy()
	labels.Labels = map[string]string{"team": "a"}
	afterLabels, err := cs.AppsV1().ReplicaSets("default").Update(ctx, labels, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), afterLabels.Generation, "metadata changes do not bump the generation")
}

func TestPatchPreconditions(t *testing.T) {
	ctx := context.Background()
	cs := newCluster(t)
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod("p"), metav1.CreateOptions{})
	require.NoError(t, err)

	adopt := `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs-1","controller":true,"blockOwnerDeletion":true}],"uid":"` + string(created.UID) + `"}}`
	patched, err := cs.CoreV1().Pods("default").Patch(ctx, "p", types.StrategicMergePatchType, []byte(adopt), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Len(t, patched.OwnerReferences, 1)
	assert.NotEqual(t, created.ResourceVersion, patched.ResourceVersion)

	wrongUID := `{"metadata":{"labels":{"x":"y"},"uid":"not-this-pod"}}`
	_, err = cs.CoreV1().Pods("default").Patch(ctx, "p", types.StrategicMergePatchType, []byte(wrongUID), metav1.PatchOptions{})
	assert.True(t, apierrors.IsConflict(err), "UID precondition: %v", err)

	staleRV := `{"metadata":{"labels":{"x":"y"},"resourceVersion":"` + created.ResourceVersion + `"}}`
	_, err = cs.CoreV1().Pods("default").Patch(ctx, "p", types.MergePatchType, []byte(staleRV), metav1.PatchOptions{})
	assert.True(t, apierrors.IsConflict(err), "resourceVersion precondition: %v", err)

	release := `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"rs-1"}],"uid":"` + string(created.UID) + `"}}`
	released, err := cs.CoreV1().Pods("default").Patch(ctx, "p", types.StrategicMergePatchType, []byte(release), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Empty(t, released.OwnerReferences)

	jsonPatch := `[{"op":"add","path":"/metadata/labels/j","value":"1"}]`
	jp, err := cs.CoreV1().Pods("default").Patch(ctx, "p", types.JSONPatchType, []byte(jsonPatch), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", jp.Labels["j"])

	_, err = cs.CoreV1().Pods("default").Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestBindingAssignsOnce(t *testing.T) {
	ctx := context.Background()
	cs := newCluster(t)
	_, err := cs.CoreV1().Pods("default").Create(ctx, pod("p"), metav1.CreateOptions{})
	require.NoError(t, err)
	bind := func(node string) error {
		return cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
	}
	require.NoError(t, bind("node-a"))
	got, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "node-a", got.Spec.NodeName)
	require.Len(t, got.Status.Conditions, 1)
	assert.Equal(t, corev1.PodScheduled, got.Status.Conditions[0].Type)

	assert.True(t, apierrors.IsConflict(bind("node-b")))
}

func TestWatchersSeeEveryWriteAsAChange(t *testing.T) {
	ctx := context.Background()
	cs := newCluster(t)
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	created, err := cs.CoreV1().Pods("default").Create(ctx, pod("p"), metav1.CreateOptions{})
	require.NoError(t, err)
	st := created.DeepCopy()
	st.Status.Phase = corev1.PodRunning
	_, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, st, metav1.UpdateOptions{})
	require.NoError(t, err)

	var rvs []string
	for range 2 {
		ev := <-w.ResultChan()
		rvs = append(rvs, ev.Object.(*corev1.Pod).ResourceVersion)
		if len(rvs) == 2 {
			assert.Equal(t, watch.Modified, ev.Type)
			assert.Equal(t, corev1.PodRunning, ev.Object.(*corev1.Pod).Status.Phase)
		}
	}
	assert.NotEqual(t, rvs[0], rvs[1], "an informer would treat equal resourceVersions as a resync")
}

func TestNewStampsSeeds(t *testing.T) {
	ctx := context.Background()
	seeded := pod("seed")
	seeded.UID = "kept"
	c, err := fakecluster.New(seeded, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
	require.NoError(t, err)
	cs := c.Clientset()
	got, err := cs.CoreV1().Pods("default").Get(ctx, "seed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, types.UID("kept"), got.UID)
	assert.NotEmpty(t, got.ResourceVersion)
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, ns.UID)
	assert.Empty(t, seeded.ResourceVersion, "the caller's object is not modified")

	_, err = fakecluster.New(nil)
	assert.ErrorContains(t, err, "seed object 0 is nil")
	_, err = fakecluster.New(pod("dup"), pod("dup"))
	assert.ErrorContains(t, err, "Pod default/dup")
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)
}

// Reactors prepended on the clientset decide before the cluster, for typed and dynamic requests
// alike.
func TestPrependedReactorsDecideFirst(t *testing.T) {
	c, err := fakecluster.New()
	require.NoError(t, err)
	calls := 0
	c.Clientset().PrependReactor("create", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		calls++
		return true, nil, apierrors.NewInternalError(assert.AnError)
	})
	ctx := context.Background()
	_, err = c.Clientset().CoreV1().Pods("default").Create(ctx, pod("p"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInternalError(err), "%v", err)
	_, err = c.Dynamic().Resource(podsGVR).Namespace("default").Create(ctx, unstructuredPod("q"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInternalError(err), "%v", err)
	assert.Equal(t, 2, calls)
	assert.Len(t, c.Actions(), 2, "both front ends record their requests in one place")
	c.ClearActions()
	assert.Empty(t, c.Actions())
}
