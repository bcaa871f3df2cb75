package podset_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// With Options.Records every PodSet gets a record outside the cluster and the finalizer that
// guards it; deleting the PodSet removes the record once, then the PodSet goes.
func TestFinalizerRemovesTheRecordOnce(t *testing.T) {
	c := newCluster(t)
	records := podset.NewMemoryRecords()
	ps := c.create(newPodSet("web", 2))
	c.env.RunController(c.ctx(), c.controller(podset.Options{Records: records}))
	c.env.WaitForQuiet(quiet)

	assert.True(t, records.Has(ps.UID), "the record is kept")
	assert.Contains(t, c.get("web").Finalizers, podset.FinalizerRecord)
	assert.Len(t, c.podsOf("web"), 2, "the PodSet is reconciled as ever")

	require.NoError(t, c.podsets.Delete(c.ctx(), c.env.Namespace(), "web", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := c.podsets.Get(c.ctx(), c.env.Namespace(), "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, quiet, time.Millisecond, "the PodSet goes once its finalizer is removed")
	c.env.WaitForQuiet(quiet)
	assert.False(t, records.Has(ps.UID))
	assert.Equal(t, 1, records.Removals(ps.UID), "the cleanup ran once")
}

// A failing cleanup keeps the PodSet (deletionTimestamp set, finalizer present), is retried
// with backoff and recorded as an event; when it succeeds, the PodSet goes.
func TestFailingCleanupKeepsThePodSet(t *testing.T) {
	c := newCluster(t)
	records := podset.NewMemoryRecords()
	ps := c.create(newPodSet("web", 1))
	c.env.RunController(c.ctx(), c.controller(podset.Options{Records: records}))
	c.env.WaitForQuiet(quiet)
	records.FailRemovals(errors.New("inventory unavailable"))

	require.NoError(t, c.podsets.Delete(c.ctx(), c.env.Namespace(), "web", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return records.Removals(ps.UID) >= 3 }, quiet, time.Millisecond, "retried")
	stuck := c.get("web")
	assert.NotNil(t, stuck.DeletionTimestamp)
	assert.Contains(t, stuck.Finalizers, podset.FinalizerRecord)
	assert.True(t, records.Has(ps.UID))
	assert.Positive(t, countPrefix(c.events(), "Warning "+finalizer.ReasonFinalizeFailed), "the failure is an event on the PodSet")

	records.FailRemovals(nil)
	require.Eventually(t, func() bool {
		_, err := c.podsets.Get(c.ctx(), c.env.Namespace(), "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, quiet, time.Millisecond, "the PodSet goes once the cleanup succeeds")
	assert.False(t, records.Has(ps.UID))
}

// The same on a real kube-apiserver, whose finalizer and deletion rules are the ones that
// count: the PodSet stays while the cleanup fails and goes once it succeeded, the cleanup
// having run exactly once successfully.
func TestFinalizerAgainstARealAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx := env.Context()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1alpha1.CRDManifest))
	factory := informer.NewFactory(env.Client(), informer.Options{DynamicClient: env.Dynamic(), Namespace: env.Namespace(), Logger: klog.FromContext(ctx)})
	t.Cleanup(factory.Shutdown)
	records := podset.NewMemoryRecords()
	recorder := record.NewFakeRecorder(1000)
	ctrl, err := podset.New(factory, env.Client(), env.Dynamic(), podset.Options{Records: records, Recorder: recorder, Logger: klog.FromContext(ctx)})
	require.NoError(t, err)
	factory.Start(ctx)
	env.RunController(ctx, ctrl)
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	ps := newPodSet("web", 1)
	ps.Namespace = env.Namespace()
	ps, err = podsets.Create(ctx, ps, metav1.CreateOptions{})
	require.NoError(t, err)

	get := func() (*v1alpha1.PodSet, error) { return podsets.Get(ctx, env.Namespace(), "web", metav1.GetOptions{}) }
	require.Eventually(t, func() bool {
		got, err := get()
		return err == nil && records.Has(ps.UID) && slices.Contains(got.Finalizers, podset.FinalizerRecord)
	}, 30*time.Second, 10*time.Millisecond, "record kept and finalizer added")

	records.FailRemovals(errors.New("inventory unavailable"))
	require.NoError(t, podsets.Delete(ctx, env.Namespace(), "web", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return records.Removals(ps.UID) >= 2 }, 30*time.Second, 10*time.Millisecond, "retried")
	stuck, err := get()
	require.NoError(t, err, "the API server keeps a PodSet whose finalizer is still there")
	assert.NotNil(t, stuck.DeletionTimestamp)
	assert.Positive(t, len(recorder.Events))

	failures := records.Removals(ps.UID)
	records.FailRemovals(nil)
	require.Eventually(t, func() bool {
		_, err := get()
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 10*time.Millisecond, "the PodSet goes once the cleanup succeeded")
	assert.False(t, records.Has(ps.UID))
	assert.Equal(t, failures+1, records.Removals(ps.UID), "one successful cleanup after the failures")
}
