package leaderelection_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// On a real API server, the became-leader event is a core/v1 Event on the Lease (its UID
// included), as kubectl describe lease shows kube-controller-manager's.
func TestLeaderElectionEventsAPIServer(t *testing.T) {
	env := testkit.NewAPIServer(t) // its own server: the package's goleak check must not see a shared one
	ctx, ns := env.Context(), env.Namespace()

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Client().CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "events-test"})

	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, logr.Discard()))
	done := make(chan error, 1)
	leading := make(chan struct{})
	go func() {
		done <- leaderelection.Run(runCtx, env.Client(), leaderelection.Config{
			Namespace: ns, Name: "events-test", Identity: "replica-a", EventRecorder: recorder,
			LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
		}, leaderelection.Callbacks{OnStartedLeading: func(context.Context) { close(leading) }})
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("Run did not return")
		}
	}()
	select {
	case <-leading:
	case <-time.After(30 * time.Second):
		t.Fatal("never led")
	}

	lease, err := env.Client().CoordinationV1().Leases(ns).Get(ctx, "events-test", metav1.GetOptions{})
	require.NoError(t, err)
	var got *corev1.Event
	require.Eventually(t, func() bool {
		list, err := env.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=events-test"})
		if err != nil {
			return false
		}
		for i, ev := range list.Items {
			if ev.Reason == leaderelection.EventReasonLeaderElection && ev.Message == "replica-a became leader" {
				got = &list.Items[i]
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the became-leader Event")
	assert.Equal(t, corev1.EventTypeNormal, got.Type)
	assert.Equal(t, "Lease", got.InvolvedObject.Kind)
	assert.Equal(t, "coordination.k8s.io/v1", got.InvolvedObject.APIVersion)
	assert.Equal(t, lease.UID, got.InvolvedObject.UID)
	assert.Equal(t, "events-test", got.Source.Component)
}
