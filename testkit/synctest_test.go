package testkit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The fake cluster, client-go's informers and a ctrlkit controller run inside a testing/synctest
// bubble, on its virtual clock: a key failing its 15 retries (5 ms doubling, 2m44s in all) is
// retried to the end without the test waiting for it, and everything stops within the bubble.
// This is what a deterministic simulator of a user's controller builds on; anything that
// reached for real time or left a goroutine behind would fail it.
func TestControllerRunsInASynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := testkit.NewFake(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
		cms, err := informer.For[*corev1.ConfigMap](env.Factory())
		require.NoError(t, err)
		var attempts atomic.Int32
		c, err := controller.New("bubble", controller.ReconcilerFunc[controller.Key](func(context.Context, controller.Key) (controller.Result, error) {
			if attempts.Add(1) <= 15 {
				return controller.Result{}, errors.New("not yet")
			}
			return controller.Result{}, nil
		}), controller.Options[controller.Key]{})
		require.NoError(t, err)
		require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
		env.Sync()
		start := time.Now() // the bubble's clock
		env.RunController(env.Context(), c)
		for attempts.Load() < 16 {
			time.Sleep(time.Second) // virtual: the bubble's clock jumps to the next timer
		}
		elapsed := time.Since(start)
		// 5 ms × (2^15 − 1) of backoff, plus at most the one-second polls above.
		assert.GreaterOrEqual(t, elapsed, 5*time.Millisecond*(1<<15-1))
		assert.Less(t, elapsed, 5*time.Millisecond*(1<<15-1)+2*time.Second)
		env.WaitForQuiet(time.Minute)
		assert.Equal(t, int32(16), attempts.Load(), "the success ended the retries")
	})
}
