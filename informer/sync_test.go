package informer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// A fake whose ConfigMap list always fails never syncs that informer; the
// error names it and only it.
func TestWaitForCacheSyncNamesTheUnsynced(t *testing.T) {
	client := newClient(pod("a", "p", nil))
	client.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is having a bad day")
	})
	f := NewFactory(client, Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	cms, err := For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(context.Background())
	f.Start(runCtx)
	defer func() { stop(); f.Shutdown() }()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = WaitForCacheSync(ctx, pods, cms)
	require.ErrorIs(t, err, ErrCacheSyncTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var syncErr *CacheSyncError
	require.ErrorAs(t, err, &syncErr)
	assert.Equal(t, []string{"configmaps"}, syncErr.Unsynced)
	assert.Equal(t, "caches not synced: configmaps: context deadline exceeded", err.Error())
	assert.True(t, pods.HasSynced())

	// The factory-level wait reports the same.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	err = f.WaitForCacheSync(ctx2)
	require.ErrorAs(t, err, &syncErr)
	assert.Equal(t, []string{"configmaps"}, syncErr.Unsynced)
}

type flag struct{ synced atomic.Bool }

func (f *flag) HasSynced() bool { return f.synced.Load() }

type namedFlag struct {
	flag
	name string
}

func (n *namedFlag) Name() string { return n.name }

type stringerFlag struct{ flag }

func (*stringerFlag) String() string { return "stringer" }

// Values that offer only HasSynced are polled and named by Name, String or
// their Go type.
func TestWaitForCacheSyncForeignValues(t *testing.T) {
	plain, named, stringer := &flag{}, &namedFlag{name: "my-cache"}, &stringerFlag{}
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	err := WaitForCacheSync(ctx, plain, named, stringer)
	var syncErr *CacheSyncError
	require.ErrorAs(t, err, &syncErr)
	assert.Equal(t, []string{"*informer.flag", "my-cache", "stringer"}, syncErr.Unsynced)
	require.ErrorIs(t, err, cause)

	// They sync while we wait: no error.
	plain2 := &flag{}
	go plain2.synced.Store(true)
	ctx3, cancel3 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel3()
	require.NoError(t, WaitForCacheSync(ctx3, plain2))

	// Already synced and an ended context: still no error.
	done := &flag{}
	done.synced.Store(true)
	require.NoError(t, WaitForCacheSync(ctx, done))
	require.NoError(t, WaitForCacheSync(ctx))

	require.ErrorContains(t, WaitForCacheSync(ctx3, done, nil), "argument 1 is nil")
}

// An informer that was never started is named too.
func TestFactoryWaitForCacheSyncWithoutStart(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	_, err := For[*corev1.Secret](f)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = f.WaitForCacheSync(ctx)
	require.ErrorIs(t, err, ErrCacheSyncTimeout)
	assert.Contains(t, err.Error(), "secrets")
}
