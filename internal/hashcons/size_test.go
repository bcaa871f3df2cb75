package hashcons

import (
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAllocSizeFollowsSizeClasses(t *testing.T) {
	for _, tc := range []struct {
		n    uintptr
		scan bool
		want uintptr
	}{
		{1, false, 8}, {8, false, 8}, {9, false, 16}, {33, false, 48}, {513, false, 576},
		{505, true, 512}, {509, true, 512}, {1016, true, 1024}, {1017, true, 1152}, {1025, false, 1152}, {32768, false, 32768}, {32769, false, 40960},
	} {
		if got := allocSize(tc.n, tc.scan); got != tc.want {
			t.Errorf("allocSize(%d, scan %v) = %d, want %d", tc.n, tc.scan, got, tc.want)
		}
	}
}

func TestSizeCountsWhatAnObjectReaches(t *testing.T) {
	empty := Size(&corev1.Pod{})
	if want := int64(allocSize(unsafe.Sizeof(corev1.Pod{}), true)); empty != want {
		t.Fatalf("empty Pod: %d, want its struct's %d", empty, want)
	}
	name := "a-name-of-twenty-b" // 18 bytes: a 24-byte allocation
	withName := Size(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if got := withName - empty; got != 24 {
		t.Errorf("a name of %d bytes adds %d, want 24", len(name), got)
	}
	labels := Size(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}})
	// A map of one entry: its header and one group of 8 slots of two strings.
	if got, want := labels-empty, int64(allocSize(48, true)+allocSize(8+8*32, true)+2); got != want {
		t.Errorf("one label adds %d, want %d", got, want)
	}
	containers := Size(&corev1.Pod{Spec: corev1.PodSpec{Containers: make([]corev1.Container, 1, 2)}})
	if got, want := containers-empty, int64(allocSize(2*unsafe.Sizeof(corev1.Container{}), true)); got != want {
		t.Errorf("a container slice of capacity 2 adds %d, want %d", got, want)
	}
}

func TestShareSizesOwnAndShared(t *testing.T) {
	tbl := New()
	var acct Account
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web", "tier": "frontend-with-a-long-name"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1.2.3"}}}}
	}
	first := tbl.Share(pod("web-1"), &acct)
	if first.Own != first.Full {
		t.Errorf("the first object shares nothing yet: own %d, full %d", first.Own, first.Full)
	}
	second := tbl.Share(pod("web-2"), &acct)
	if second.Full != first.Full {
		t.Errorf("equal objects: full %d and %d", first.Full, second.Full)
	}
	if second.Own >= second.Full || acct.Shared() == 0 || acct.Nodes() == 0 {
		t.Errorf("the second object's labels and containers are shared: own %d, full %d, shared %d in %d nodes",
			second.Own, second.Full, acct.Shared(), acct.Nodes())
	}
	third := tbl.Share(pod("web-3"), &acct)
	if third.Own > second.Own {
		t.Errorf("a third equal object owns %d, more than the second's %d", third.Own, second.Own)
	}
	if got := Size(pod("x")); got != first.Full-int64(stringSize(len("web-1")))+int64(stringSize(1)) {
		t.Errorf("Size %d disagrees with Share's full %d", got, first.Full)
	}
}

// opaque values (a non-nil interface) are never shared: the nodes holding
// them stay the object's own, all of it counted.
type withOpaque struct {
	P     *opaqueInner
	Items []opaqueInner
}

type opaqueInner struct {
	V any
	S string
}

func TestShareSizesOpaqueNodesAsOwn(t *testing.T) {
	obj := func() *withOpaque {
		return &withOpaque{
			P:     &opaqueInner{V: int64(7), S: "a string of some length"},
			Items: []opaqueInner{{V: "boxed", S: "another string, longer than that"}, {S: "x"}},
		}
	}
	tbl := New()
	for range 3 { // seen again and again: still nothing shareable
		sz := tbl.Share(obj(), nil)
		if want := Size(obj()); sz.Own != want || sz.Full != want {
			t.Fatalf("own %d, full %d; want both %d (Size)", sz.Own, sz.Full, want)
		}
	}
}
