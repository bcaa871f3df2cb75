package controller

import (
	"strconv"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// BenchmarkFence is the bookkeeping of one fenced key, without the informer: recording the
// fence after a write (Fence), the worker finding the key held (hold), and the event that
// releases it (observe) queueing it again.
//   - record+release: Fence, then the event.
//   - record+hold+release: Fence, the key taken from the queue and held, then the event.
//   - event/no-fence: an informer event while no fence is open (every event pays this).
//   - event/other-open: an event of another object while 1000 fences are open.
func BenchmarkFence(b *testing.B) {
	newTable := func() (*fenceTable[Key], *fenceTarget) {
		ft := newFenceTable[Key](&Fences{}, clock.RealClock{})
		ft.logger = klog.Background()
		ft.requeue = func(Key, provenance.Trigger) {}
		t := &fenceTarget{
			name:   "configmaps",
			lookup: func(string, string) (string, bool, bool) { return "", false, false }, // not cached yet
			register: func(func(string, string, string, bool, bool)) (func() error, error) {
				return func() error { return nil }, nil
			},
		}
		return ft, t
	}
	keys := make([]Key, 1024)
	for i := range keys {
		keys[i] = Key{Namespace: "ns", Name: "obj-" + strconv.Itoa(i)}
	}
	b.Run("record+release", func(b *testing.B) {
		ft, t := newTable()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			k := keys[i&1023]
			ft.add(k, t, k.Namespace, k.Name, "12345", versionFence)
			ft.observe(objRef{t: t, namespace: k.Namespace, name: k.Name}, "12345", false, false)
		}
	})
	b.Run("record+hold+release", func(b *testing.B) {
		ft, t := newTable()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			k := keys[i&1023]
			ft.add(k, t, k.Namespace, k.Name, "12345", versionFence)
			ft.hold(k, provenance.Reasons{})
			ft.observe(objRef{t: t, namespace: k.Namespace, name: k.Name}, "12345", false, false)
		}
	})
	b.Run("event/no-fence", func(b *testing.B) {
		ft, t := newTable()
		ref := objRef{t: t, namespace: "ns", name: "x"}
		b.ReportAllocs()
		for b.Loop() {
			ft.observe(ref, "12345", false, false)
		}
	})
	b.Run("event/other-open", func(b *testing.B) {
		ft, t := newTable()
		for _, k := range keys[:1000] {
			ft.add(k, t, k.Namespace, k.Name, "12345", versionFence)
		}
		ref := objRef{t: t, namespace: "ns", name: "x"}
		b.ReportAllocs()
		for b.Loop() {
			ft.observe(ref, "12346", false, false)
		}
	})
}
