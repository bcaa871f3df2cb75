package hashcons

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The apimachinery this module builds with has the layout the unsafe code
// reads; if this fails after an upgrade, sharing still works but saves less
// (quantities and their containers are no longer shared).
func TestQuantityLayoutIsKnown(t *testing.T) {
	l := quantityLayoutOnce()
	if !l.ok {
		_, err := readQuantityLayout(reflect.TypeFor[resource.Quantity]())
		t.Fatalf("resource.Quantity layout not recognised: %v", err)
	}
	if New().plans != knownLayoutPlanner() {
		t.Fatal("New does not use the plans of the known layout")
	}
}

type dec struct{ unscaled int64 }

func TestReadQuantityLayoutRefusesOtherLayouts(t *testing.T) {
	type amount struct {
		value int64
		scale int32
	}
	type wideAmount struct {
		value int64
		scale int64
	}
	type decAmount struct{ *dec }
	type format string
	lookalikes := map[string]reflect.Type{
		"not a struct": reflect.TypeFor[string](),
		"fields reordered": reflect.TypeFor[struct {
			d      decAmount
			i      amount
			s      string
			Format format
		}](),
		"wider scale": reflect.TypeFor[struct {
			i      wideAmount
			d      decAmount
			s      string
			Format format
		}](),
		"decimal by value": reflect.TypeFor[struct {
			i      amount
			d      struct{ dec }
			s      string
			Format format
		}](),
		"a field more": reflect.TypeFor[struct {
			i      amount
			d      decAmount
			s      string
			Format format
			extra  int
		}](),
		"cache is bytes": reflect.TypeFor[struct {
			i      amount
			d      decAmount
			s      []byte
			Format format
		}](),
	}
	for name, typ := range lookalikes {
		t.Run(name, func(t *testing.T) {
			l, err := readQuantityLayout(typ)
			if !errors.Is(err, errQuantityLayout) || l.ok {
				t.Fatalf("layout %+v, error %v; want errQuantityLayout", l, err)
			}
		})
	}
	// The same shape as Quantity is accepted, with its offsets.
	l, err := readQuantityLayout(reflect.TypeFor[struct {
		i      amount
		d      decAmount
		s      string
		Format format
	}]())
	if err != nil || !l.ok || l.iSize != 12 || l.d != 16 {
		t.Fatalf("layout %+v, error %v; want i of 12 bytes, d at 16", l, err)
	}
}

// With a quantity layout it does not know, a Table shares what holds no
// quantity and leaves every quantity, and every node holding one, to its
// object: objects serialise as before, nothing panics, and readers calling
// String on quantities of different objects touch no shared memory (-race).
func TestSharingWithUnknownQuantityLayout(t *testing.T) {
	tbl := newTable(quantityLayout{})
	if tbl.plans != fallbackPlanner {
		t.Fatal("a failed layout check does not select the fallback plans")
	}
	pods := make([]*corev1.Pod, 6)
	copies := make([]*corev1.Pod, len(pods))
	before := make([]string, len(pods))
	for i := range pods {
		pods[i] = fixturePod()
		pods[i].Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
		pods[i].Spec.Volumes = append(pods[i].Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrTo(resource.MustParse("1Gi"))},
		}})
		copies[i] = pods[i].DeepCopy()
		before[i] = mustJSON(t, pods[i])
		tbl.Share(pods[i], nil)
	}
	for i, p := range pods {
		if got := mustJSON(t, p); got != before[i] {
			t.Fatalf("pod %d changed\nbefore %s\nafter  %s", i, before[i], got)
		}
		if !apiequality.Semantic.DeepEqual(copies[i], p) {
			t.Fatalf("pod %d not apiequality-equal to its copy", i)
		}
	}
	a, b := pods[4], pods[5]
	if reflect.ValueOf(a.Labels).Pointer() != reflect.ValueOf(b.Labels).Pointer() ||
		&a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] || a.Spec.Containers[0].ReadinessProbe != b.Spec.Containers[0].ReadinessProbe {
		t.Error("labels, tolerations and probes are not shared with the fallback plans")
	}
	if reflect.ValueOf(a.Spec.Overhead).Pointer() == reflect.ValueOf(b.Spec.Overhead).Pointer() ||
		unsafe.SliceData(a.Spec.Containers) == unsafe.SliceData(b.Spec.Containers) ||
		unsafe.SliceData(a.Spec.Volumes) == unsafe.SliceData(b.Spec.Volumes) ||
		a.Spec.Volumes[2].EmptyDir == b.Spec.Volumes[2].EmptyDir {
		t.Error("a node holding a quantity is shared with the fallback plans")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, p := range pods {
				for _, q := range []resource.Quantity{p.Spec.Overhead[corev1.ResourceCPU], p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]} {
					_ = q.String()
				}
				_ = p.Spec.Volumes[2].EmptyDir.SizeLimit.String()
			}
		})
	}
	wg.Wait()

	// The reflective corners, quantities in maps of every shape among them.
	gen := func() []*shareCorner {
		return randomObjects(t, 40, func(c, o *shareCorner) { c.Sizes, c.Counts = o.Sizes, o.Counts })
	}
	objs, again := gen(), gen()
	for round := range 2 {
		for i, obj := range objs {
			tbl.Share(obj, nil)
			if got, want := mustJSON(t, obj), mustJSON(t, again[i]); got != want {
				t.Fatalf("round %d, object %d changed\nbefore %s\nafter  %s", round, i, want, got)
			}
		}
	}
}
