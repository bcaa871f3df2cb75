package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// recorded returns the events rec holds now, in order. Events are recorded inside Reconcile, so
// after WaitForQuiet (or a direct Reconcile) they are all there.
func recorded(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case ev := <-rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func podNames(pods []corev1.Pod) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return names
}

// Every Pod the controller creates or deletes is reported on its ReplicaSet with
// kube-controller-manager's reasons and messages: "Normal SuccessfulCreate Created pod: <name>",
// "Normal SuccessfulDelete Deleted pod: <name>".
func TestEventsReportCreatesAndDeletes(t *testing.T) {
	rec := record.NewFakeRecorder(1000)
	e := newTestEnv(t, envOptions{kubelet: true, opts: Options{Recorder: rec}})
	rs := e.createRS("web", 3)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)
	before := podNames(e.ownedPods(rs))
	var want []string
	for _, name := range before {
		want = append(want, "Normal SuccessfulCreate Created pod: "+name)
	}
	assert.ElementsMatch(t, want, recorded(rec))

	e.scale("web", 1)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)
	after := podNames(e.ownedPods(rs))
	want = nil
	for _, name := range before {
		if !slices.Contains(after, name) {
			want = append(want, "Normal SuccessfulDelete Deleted pod: "+name)
		}
	}
	require.Len(t, want, 2)
	assert.ElementsMatch(t, want, recorded(rec))
}

// A refused create or delete is a Warning on the ReplicaSet with the API server's error:
// "Error creating: <err>" (one per create sent: slow start sends one, then stops), "Error
// deleting: <err>" (one per Pod). A create refused because the namespace is being deleted is
// no event, as upstream.
func TestEventsReportFailedCreatesAndDeletes(t *testing.T) {
	rec := record.NewFakeRecorder(1000)
	e := newTestEnv(t, envOptions{noStart: true, opts: Options{Recorder: rec}})
	rs := e.createRS("web", 3)
	e.waitCached("web")
	key := controller.Key{Namespace: ns, Name: "web"}

	e.FailWrites(100, "create")
	_, err := e.rsc.Reconcile(e.ctx, key)
	require.ErrorIs(t, err, testkit.ErrInjected)
	events := recorded(rec)
	require.Len(t, events, 1, "slow start sent one create")
	assert.True(t, strings.HasPrefix(events[0], "Warning FailedCreate Error creating: "), events[0])
	assert.Contains(t, events[0], testkit.ErrInjected.Error())

	e.FailWrites(0)
	e.waitCached("web") // with the failure condition
	_, err = e.rsc.Reconcile(e.ctx, key)
	require.NoError(t, err)
	events = recorded(rec)
	require.Len(t, events, 3)
	for _, ev := range events {
		assert.True(t, strings.HasPrefix(ev, "Normal SuccessfulCreate Created pod: web-"), ev)
	}

	e.scale("web", 0)
	e.waitCached("web")
	e.waitPodsCached()
	// The controller is not running, so its Pod watch did not count the creations: count
	// them as its observer would, or the next sync waits for them.
	for range 3 {
		e.rsc.Expectations().CreationObserved(key)
	}
	e.FailWrites(100, "delete")
	_, err = e.rsc.Reconcile(e.ctx, key)
	require.ErrorIs(t, err, testkit.ErrInjected)
	events = recorded(rec)
	require.Len(t, events, 3, "one per Pod")
	for _, ev := range events {
		assert.True(t, strings.HasPrefix(ev, "Warning FailedDelete Error deleting: "), ev)
		assert.Contains(t, ev, testkit.ErrInjected.Error())
	}
	assert.Len(t, e.ownedPods(rs), 3)

	e.FailWrites(0)
	e.Cluster().Clientset().PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(corev1.Resource("pods"), "", fmt.Errorf("namespace %s is being terminated", ns))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	e.scale("web", 4)
	e.waitCached("web")
	_, err = e.rsc.Reconcile(e.ctx, key)
	require.NoError(t, err)
	assert.Empty(t, recorded(rec), "no event for a namespace being deleted")
}
