package manager_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// On a real API server, an event recorded through EventRecorder is an
// events.k8s.io/v1 Event that core/v1 readers (kubectl describe) see too,
// and a legacy EventRecorderFor event reads back through events.k8s.io/v1:
// the server serves one Event resource through both APIs.
func TestEventRecorderAPIServer(t *testing.T) {
	// A server of its own, as in TestManagerLeaderElectionAPIServer: the
	// package's goleak checks must not see a shared server's goroutines.
	env := testkit.NewAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	cm, err := env.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4)))
	mgr, err := manager.New(manager.Options{
		Client: env.Client(),
		Logger: logger,
		// Its identity is the events' reportingInstance.
		LeaderElection: &leaderelection.Config{Enabled: true, Namespace: ns, Name: "events-test", Identity: "replica-a"},
	})
	require.NoError(t, err)
	running := make(chan struct{})
	require.NoError(t, mgr.Add(recordOnRun{name: "record", run: func() {
		mgr.EventRecorder("config-audit").Eventf(cm, nil, corev1.EventTypeWarning, "TooManyKeys", "Auditing", "%d keys, limit %d", 3, 2)
		mgr.EventRecorderFor("config-legacy").Event(cm, corev1.EventTypeNormal, "Audited", "core/v1 event")
		close(running)
	}}))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	<-running

	byReason := func(reason string) (v1 *eventsv1.Event, core *corev1.Event) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, apiWait, true, func(ctx context.Context) (bool, error) {
			list, err := env.Client().EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for i := range list.Items {
				if list.Items[i].Reason == reason {
					v1 = &list.Items[i]
					return true, nil
				}
			}
			return false, nil
		}), "events.k8s.io/v1 Event with reason %s", reason)
		core, err := env.Client().CoreV1().Events(ns).Get(ctx, v1.Name, metav1.GetOptions{})
		require.NoError(t, err, "the same Event through core/v1")
		return v1, core
	}

	v1, core := byReason("TooManyKeys")
	assert.Equal(t, "Auditing", v1.Action)
	assert.Equal(t, "3 keys, limit 2", v1.Note)
	assert.Equal(t, "config-audit", v1.ReportingController)
	assert.Equal(t, "replica-a", v1.ReportingInstance)
	assert.Equal(t, cm.UID, v1.Regarding.UID)
	assert.Equal(t, "ConfigMap", v1.Regarding.Kind)
	assert.Equal(t, "TooManyKeys", core.Reason)
	assert.Equal(t, "3 keys, limit 2", core.Message)
	assert.Equal(t, "Auditing", core.Action)
	assert.Equal(t, corev1.EventTypeWarning, core.Type)
	assert.Equal(t, "config-audit", core.ReportingController)
	assert.Equal(t, "replica-a", core.ReportingInstance)
	assert.Equal(t, cm.UID, core.InvolvedObject.UID)

	v1, core = byReason("Audited")
	assert.Equal(t, "core/v1 event", v1.Note)
	assert.Equal(t, "config-legacy", v1.DeprecatedSource.Component)
	assert.Equal(t, "config-legacy", core.Source.Component)

	// The elector records client-go's event on the Lease, as kube-controller-manager's does,
	// so `kubectl describe lease events-test` names the leader.
	require.Eventually(t, mgr.Elector().IsLeader, apiWait, 10*time.Millisecond)
	v1, core = byReason(leaderelection.EventReasonLeaderElection)
	assert.Equal(t, "Lease", core.InvolvedObject.Kind)
	assert.Equal(t, "events-test", core.InvolvedObject.Name)
	assert.Regexp(t, `^replica-a.* became leader$`, core.Message)
	assert.Equal(t, "events-test", v1.ReportingController, "the recorder is named after the Lease")
	assert.Equal(t, "replica-a", v1.ReportingInstance)
}

// recordOnRun is a Runnable that calls run once the Manager runs it, then
// waits for the end.
type recordOnRun struct {
	name string
	run  func()
}

func (r recordOnRun) Name() string             { return r.name }
func (r recordOnRun) NeedLeaderElection() bool { return false }
func (r recordOnRun) Run(ctx context.Context) error {
	r.run()
	<-ctx.Done()
	return nil
}
