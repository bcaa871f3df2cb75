package informer

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// BenchmarkInformerEvents is a running informer's cost per watch event: an
// update of one of 1,000 cached Pods (with status), through the factory's
// transform, the store and one handler. It is the steady state of a
// controller, where an informer's every extra listener costs a goroutine hop
// per event. The figure includes the test's DeepCopy of each Pod it sends
// (a cached object must not be sent twice), the same in every variant.
func BenchmarkInformerEvents(b *testing.B) {
	const n = 1000
	pods, err := podList()
	if err != nil {
		b.Fatal(err)
	}
	pods = withRunningStatus(pods[:n])
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"no-accounting", Options{DisableAccounting: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			client := fake.NewClientset()
			w := watch.NewFakeWithChanSize(1024, false)
			client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
			f := NewFactory(client, quiet(tc.opts))
			inf, err := For[*corev1.Pod](f)
			if err != nil {
				b.Fatal(err)
			}
			var seen atomic.Int64
			if _, err := inf.AddHandler(HandlerFuncs[*corev1.Pod]{
				OnAdd:    func(*corev1.Pod, bool) { seen.Add(1) },
				OnUpdate: func(_, _ *corev1.Pod) { seen.Add(1) },
			}); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer f.Shutdown()
			defer cancel()
			f.Start(ctx)
			if err := f.WaitForCacheSync(ctx); err != nil {
				b.Fatal(err)
			}
			rv := 1000
			send := func(i int, t watch.EventType) {
				p := pods[i%n].DeepCopy()
				rv++
				p.ResourceVersion = strconv.Itoa(rv)
				w.Action(t, p)
			}
			for i := range n {
				send(i, watch.Added)
			}
			wait := func(want int64) {
				deadline := time.Now().Add(time.Minute)
				for seen.Load() < want {
					if time.Now().After(deadline) {
						b.Fatalf("saw %d of %d events", seen.Load(), want)
					}
					time.Sleep(50 * time.Microsecond)
				}
			}
			wait(n)
			b.ResetTimer()
			for i := range b.N {
				send(i, watch.Modified)
			}
			wait(int64(n + b.N))
		})
	}
}
