package manager_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/sharding"
)

// syncBuffer is a log sink safe for the Manager's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func bufferLogger(out *syncBuffer) klog.Logger {
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(2)))
}

// outsideAPod makes leaderelection.DefaultLeaseNamespace fall back to "ctrlkit-system".
func outsideAPod(t *testing.T) {
	t.Setenv(leaderelection.PodNamespaceEnv, "")
	require.Equal(t, leaderelection.DefaultNamespace, leaderelection.DefaultLeaseNamespace(), "this test runs in a Pod")
}

// Outside a Pod, an election whose Lease namespace was left to its default fails at Start
// when the namespace does not exist, naming the option, the flag and the namespace, instead
// of retrying `namespaces "ctrlkit-system" not found` for ever.
func TestStartFailsWhenTheDefaultedLeaseNamespaceIsMissing(t *testing.T) {
	outsideAPod(t)
	mgr, err := manager.New(manager.Options{Client: fake.NewClientset(),
		LeaderElection: &leaderelection.Config{Enabled: true, Name: "my-controller"}})
	require.NoError(t, err)
	err = mgr.Start(context.Background())
	require.ErrorIs(t, err, manager.ErrInvalidOptions)
	for _, want := range []string{"manager.Options.LeaderElection.Namespace", "--leader-elect-resource-namespace", `"ctrlkit-system"`} {
		assert.Contains(t, err.Error(), want)
	}
}

// The namespace exists, or this identity may not read namespaces (Forbidden: it cannot tell),
// or it was set explicitly: the Manager starts and leads.
func TestStartGoesOnWithTheLeaseNamespace(t *testing.T) {
	outsideAPod(t)
	forbidden := fake.NewClientset()
	forbidden.PrependReactor("get", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "ctrlkit-system", nil)
	})
	for name, tc := range map[string]struct {
		client    *fake.Clientset
		namespace string
	}{
		"exists":    {fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaderelection.DefaultNamespace}}), ""},
		"forbidden": {forbidden, ""},
		"explicit":  {fake.NewClientset(), "elsewhere"},
	} {
		t.Run(name, func(t *testing.T) {
			mgr, err := manager.New(manager.Options{Client: tc.client, LeaderElection: &leaderelection.Config{
				Enabled: true, Name: "my-controller", Namespace: tc.namespace, RetryPeriod: 100 * time.Millisecond,
				RenewDeadline: time.Second, LeaseDuration: 2 * time.Second,
			}})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			require.Eventually(t, mgr.Elector().IsLeader, 10*time.Second, 5*time.Millisecond, "it leads")
			cancel()
			require.NoError(t, <-done)
		})
	}
}

// With the API server unreachable, a sharded Manager waits at Start (its ring's checks ask the
// API server first), as the informers and the election of an unsharded one do, instead of
// exiting; its context's end stops the wait and Start returns nil.
func TestStartWaitsForAnUnreachableAPIServer(t *testing.T) {
	outsideAPod(t)
	for name, opts := range map[string]manager.Options{
		"election": {LeaderElection: &leaderelection.Config{Enabled: true, Name: "my-controller"}},
		"sharded": {Sharding: &manager.ShardingOptions{
			Config:  sharding.Config{Ring: "things", Identity: "replica-1"},
			Sharder: sharding.SharderOptions{Resource: corev1.SchemeGroupVersion.WithResource("configmaps")},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			var out syncBuffer
			opts.Config = &rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second} // nothing listens there
			opts.Logger = bufferLogger(&out)
			opts.APIServerProbeInterval = -1
			mgr, err := manager.New(opts)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			require.Eventually(t, func() bool {
				return bytes.Contains([]byte(out.String()), []byte(`"Waiting for the API server before starting"`))
			},
				10*time.Second, 5*time.Millisecond, "it waits: %s", &out)
			select {
			case err := <-done:
				t.Fatalf("Start returned while the API server was unreachable: %v", err)
			default:
			}
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("Start did not return after its context ended")
			}
		})
	}
}
