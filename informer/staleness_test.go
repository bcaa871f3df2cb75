package informer_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// On a real API server the staleness check reads the server's current
// resourceVersion: an informer that applied the latest write is not behind,
// and the server's resourceVersion moves on with writes the informer does
// not watch (another resource's).
func TestStalenessCheckOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns, client := env.Context(), env.Namespace(), env.Client()
	f := informer.NewFactory(client, informer.Options{StalenessCheck: 20 * time.Millisecond})
	cms, err := informer.For(f, informer.InNamespaces[*corev1.ConfigMap](ns))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); f.Shutdown() }()
	f.Start(runCtx)
	require.NoError(t, f.WaitForCacheSync(runCtx))

	cm, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stale"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var last []informer.Staleness
	poll := func(ok func(informer.Staleness) bool) informer.Staleness {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			last = f.Staleness()
			return len(last) == 1 && ok(last[0]), nil
		})
		require.NoError(t, err, "last: %+v", last)
		return last[0]
	}
	// Lag 0 holds from the informer's latest event until the server's next write anywhere (the
	// API server's own Lease renewals, other tests'): when one lands first, write again and look
	// for the next quiet window.
	upToDate := func(s informer.Staleness) bool {
		_, err := cms.Lister().Get(ns, cm.Name)
		return err == nil && s.Lag == 0 && s.Err == nil && s.InformerResourceVersion != "" && s.Checked.After(time.Now().Add(-time.Second))
	}
	for attempt := 0; ; attempt++ {
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
			last = f.Staleness()
			return len(last) == 1 && upToDate(last[0]), nil
		})
		if err == nil {
			break
		}
		require.Less(t, attempt, 10, "no quiet window in %d writes; last: %+v", attempt+1, last)
		cm.Annotations = map[string]string{"attempt": strconv.Itoa(attempt)}
		cm, err = client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	s := last[0]
	require.Equal(t, "configmaps", s.Resource)
	require.Equal(t, "namespaces="+ns, s.Scope)

	// Writes elsewhere move the server's resourceVersion past the informer's
	// (until a bookmark tells the informer).
	for i := range 3 {
		_, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	s = poll(func(s informer.Staleness) bool { return s.Lag > 0 })
	server, err := strconv.ParseInt(s.ServerResourceVersion, 10, 64)
	require.NoError(t, err)
	inf, err := strconv.ParseInt(s.InformerResourceVersion, 10, 64)
	require.NoError(t, err)
	require.Equal(t, server-inf, s.Lag)
}

func TestStalenessCheckNeedsARealClient(t *testing.T) {
	f := informer.NewFactory(testkit.NewFake(t).Client(), informer.Options{StalenessCheck: time.Millisecond})
	defer f.Shutdown()
	require.Empty(t, f.Staleness())
}
