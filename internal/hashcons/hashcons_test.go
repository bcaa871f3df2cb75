package hashcons

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// shareFiller fills objects at random, with values that serialise: nil and
// empty slices and maps both occur.
func shareFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			formats := []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent}
			*q = *resource.NewScaledQuantity(c.Int63n(5000), resource.Scale(c.Intn(7)-3))
			q.Format = formats[c.Intn(len(formats))]
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(1e9), 0) },
		func(t *time.Time, c randfill.Continue) { *t = time.Unix(c.Int63n(1e9), c.Int63n(1e9)).UTC() },
		func(a *any, c randfill.Continue) {},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(1e9), c.Int63n(1e9)))
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(fmt.Sprintf(`{"f:spec":{"f:replicas":{},"f:n%d":{}}}`, c.Intn(3)))
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*v = intstr.FromInt32(c.Int31n(3))
			} else {
				*v = intstr.FromString([]string{"http", "80%", ""}[c.Intn(3)])
			}
		},
		// Few distinct strings, so that random objects have equal parts.
		func(s *string, c randfill.Continue) { *s = []string{"", "a", "b", "web", "kube-system"}[c.Intn(5)] },
	)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// randomObjects returns n objects of type T filled from few seeds, with
// parts of other objects swapped in, so that many of their sub-objects are
// equal and some nearly equal.
func randomObjects[T any](t *testing.T, n int, mix func(dst, src *T)) []*T {
	t.Helper()
	out := make([]*T, n)
	for i := range out {
		obj := new(T)
		shareFiller(int64(i % 7)).Fill(obj)
		if mix != nil {
			other := new(T)
			shareFiller(int64(100 + i%5)).Fill(other)
			mix(obj, other)
		}
		out[i] = obj
	}
	return out
}

// checkSharing runs every object through one Table and checks that each
// serialises exactly as before and stays apiequality-equal to a copy taken
// before, then that sharing them all again changes nothing.
func checkSharing[T any](t *testing.T, objs []*T, deepCopy func(*T) *T) *Table {
	t.Helper()
	copies := make([]*T, len(objs))
	for i, obj := range objs {
		copies[i] = deepCopy(obj)
	}
	return checkSharingAgainst(t, objs, copies)
}

func checkSharingAgainst[T any](t *testing.T, objs, copies []*T) *Table {
	t.Helper()
	// Every node hash collides: equality alone tells nodes apart. Then the
	// real hashes (the objects are already canonical for the first table).
	colliding := New()
	colliding.mask = 3
	shareAndCheck(t, colliding, objs, copies)
	s := New()
	shareAndCheck(t, s, objs, copies)
	return s
}

func shareAndCheck[T any](t *testing.T, s *Table, objs, copies []*T) {
	t.Helper()
	before := make([]string, len(objs))
	for i, obj := range objs {
		before[i] = mustJSON(t, obj)
	}
	for round := range 3 {
		for i, obj := range objs {
			s.Share(obj, nil)
			if got := mustJSON(t, obj); got != before[i] {
				t.Fatalf("round %d, object %d: JSON changed\nbefore %s\nafter  %s", round, i, before[i], got)
			}
		}
	}
	for i, obj := range objs {
		if got := mustJSON(t, obj); got != before[i] {
			t.Fatalf("object %d changed after later objects were shared\nbefore %s\nafter  %s", i, before[i], got)
		}
		if !apiequality.Semantic.DeepEqual(copies[i], obj) {
			t.Fatalf("object %d not apiequality-equal to its copy", i)
		}
	}
	if s.len() == 0 {
		t.Fatalf("nothing was shared among %d objects", len(objs))
	}
}

func TestSharingKeepsEveryObjectIntact(t *testing.T) {
	t.Run("Pod", func(t *testing.T) {
		objs := randomObjects(t, 60, func(p, o *corev1.Pod) {
			p.Labels = o.Labels
			p.Spec.Tolerations = o.Spec.Tolerations
			if len(p.Spec.Containers) > 0 && len(o.Spec.Containers) > 0 {
				p.Spec.Containers[0].Resources = o.Spec.Containers[0].Resources
				p.Spec.Containers[0].Env = o.Spec.Containers[0].Env
			}
		})
		s := checkSharing(t, objs, (*corev1.Pod).DeepCopy)
		t.Logf("%d canonical nodes", s.len())
	})
	t.Run("Deployment", func(t *testing.T) {
		objs := randomObjects(t, 60, func(d, o *appsv1.Deployment) {
			d.Spec.Template.Spec.Volumes = o.Spec.Template.Spec.Volumes
			d.Spec.Selector = o.Spec.Selector
		})
		checkSharing(t, objs, (*appsv1.Deployment).DeepCopy)
	})
	t.Run("ConfigMap", func(t *testing.T) {
		objs := randomObjects(t, 60, func(c, o *corev1.ConfigMap) { c.BinaryData = o.BinaryData })
		checkSharing(t, objs, (*corev1.ConfigMap).DeepCopy)
	})
	t.Run("Node", func(t *testing.T) {
		checkSharing(t, randomObjects[corev1.Node](t, 40, nil), (*corev1.Node).DeepCopy)
	})
	t.Run("PartialObjectMetadata", func(t *testing.T) {
		checkSharing(t, randomObjects[metav1.PartialObjectMetadata](t, 40, nil), (*metav1.PartialObjectMetadata).DeepCopy)
	})
}

// Nearly equal sub-objects (one scalar, one string, nil against empty, a
// quantity written differently) are never conflated.
func TestSharingTellsNearlyEqualApart(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				Tolerations: []corev1.Toleration{{Key: "k", TolerationSeconds: ptrTo[int64](300)}},
				Containers: []corev1.Container{{
					Name: "web", Args: []string{"a"},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				}},
			},
		}
	}
	variants := []func(*corev1.Pod){
		func(*corev1.Pod) {},
		func(p *corev1.Pod) { p.Labels["app"] = "web2" },
		func(p *corev1.Pod) { p.Labels = map[string]string{} },
		func(p *corev1.Pod) { p.Labels = nil },
		func(p *corev1.Pod) { *p.Spec.Tolerations[0].TolerationSeconds = 301 },
		func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = nil },
		func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{} },
		func(p *corev1.Pod) { p.Spec.Containers[0].Args = nil },
		func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"a", ""} },
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
		},
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewQuantity(1024, resource.BinarySI)
		},
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewQuantity(1024, resource.DecimalSI)
		},
		func(p *corev1.Pod) {
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(1024, resource.BinarySI)}
		},
		func(p *corev1.Pod) {
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(1024, resource.DecimalSI)}
		},
	}
	var objs []*corev1.Pod
	for range 3 { // each variant thrice: admitted on the second sighting, found on the third
		for _, v := range variants {
			p := base()
			v(p)
			objs = append(objs, p)
		}
	}
	checkSharing(t, objs, (*corev1.Pod).DeepCopy)

	// Fields without omitempty serialise nil and empty differently.
	corners := func() []*shareCorner {
		var out []*shareCorner
		for range 3 {
			out = append(out,
				&shareCorner{Next: &shareCorner{Raw: nil}},
				&shareCorner{Next: &shareCorner{Raw: []byte{}}},
				&shareCorner{Next: &shareCorner{Counts: nil}},
				&shareCorner{Next: &shareCorner{Counts: map[string]int32{}}},
				&shareCorner{Next: &shareCorner{Counts: map[string]int32{"a": 1}}},
				&shareCorner{Next: &shareCorner{Counts: map[string]int32{"a": 2}}},
				&shareCorner{Next: &shareCorner{Sizes: map[string]resource.Quantity{"a": *resource.NewQuantity(1024, resource.BinarySI)}}},
				&shareCorner{Next: &shareCorner{Sizes: map[string]resource.Quantity{"a": *resource.NewQuantity(1024, resource.DecimalSI)}}},
			)
		}
		return out
	}
	checkSharingAgainst(t, corners(), corners())

	if a, b := objs[0], objs[2*len(variants)]; reflect.ValueOf(a.Labels).Pointer() != reflect.ValueOf(b.Labels).Pointer() ||
		&a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] {
		t.Error("equal labels and tolerations of the first and third copy are not shared")
	}
}

// Types the API does not have, for the reflective plan's corners: recursive
// types, arrays, maps of other shapes, interfaces, opaque structs, bytes.
type shareCorner struct {
	Next     *shareCorner
	Children []shareCorner
	ByName   map[string]*shareCorner
	Counts   map[string]int32
	ByNumber map[int64]string
	Sizes    map[string]resource.Quantity
	Pair     [2]string
	Grid     [2][]int32
	Any      any
	When     metav1.Time
	Raw      []byte
	Flag     *bool
	Ratio    float64
	Opt      *struct{ A, B string }
}

func TestSharingCornerTypes(t *testing.T) {
	gen := func() []*shareCorner {
		objs := randomObjects(t, 60, func(c, o *shareCorner) { c.Counts, c.Grid = o.Counts, o.Grid })
		objs[1].Any = []int{1} // not comparable: never shared, but its siblings still are
		objs[2].Any = "x"
		return objs
	}
	// The filler is deterministic: a second run is an untouched copy.
	checkSharingAgainst(t, gen(), gen())
}

// Quantities in shared resource lists have their string cached, so readers
// calling String concurrently only read.
func TestSharedQuantitiesAreReadOnly(t *testing.T) {
	s := New()
	var pods []*corev1.Pod
	for i := range 4 {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		}}}}}
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(250, resource.DecimalSI)}
		p.Name = fmt.Sprint(i)
		s.Share(p, nil)
		pods = append(pods, p)
	}
	a, b := pods[2], pods[3]
	if reflect.ValueOf(a.Spec.Overhead).Pointer() != reflect.ValueOf(b.Spec.Overhead).Pointer() {
		t.Fatal("equal resource lists are not shared")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, p := range pods[1:] {
				q := p.Spec.Overhead[corev1.ResourceCPU]
				if q.String() != "250m" {
					t.Errorf("overhead %s", q.String())
				}
				l := p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
				_ = l.String()
				_ = mustJSON(t, p)
			}
		})
	}
	wg.Wait()
}

// A DeepCopy of an object that shares sub-objects is the caller's own.
func TestDeepCopyOfSharedObjectIsIndependent(t *testing.T) {
	s := New()
	tmpl := fixturePod()
	var pods []*corev1.Pod
	for i := range 5 {
		p := tmpl.DeepCopy()
		p.Name = fmt.Sprint(i)
		s.Share(p, nil)
		pods = append(pods, p)
	}
	a, b := pods[3], pods[4]
	if reflect.ValueOf(a.Labels).Pointer() != reflect.ValueOf(b.Labels).Pointer() ||
		a.Spec.Containers[0].ReadinessProbe != b.Spec.Containers[0].ReadinessProbe {
		t.Fatal("the fixture's labels and probes are not shared")
	}
	want := mustJSON(t, b)
	c := a.DeepCopy()
	c.Labels["mutated"] = "yes"
	c.Spec.Containers[0].ReadinessProbe.PeriodSeconds = 99
	c.Spec.Containers[0].Env[0].Value = "mutated"
	cpu := c.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	cpu.Add(resource.MustParse("1"))
	c.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = cpu
	c.Spec.Tolerations[0].Key = "mutated"
	*c.Spec.Volumes[len(c.Spec.Volumes)-1].Projected.DefaultMode = 0
	if got := mustJSON(t, b); got != want {
		t.Fatalf("mutating a DeepCopy changed another cached object\nbefore %s\nafter  %s", want, got)
	}
	if _, ok := a.Labels["mutated"]; ok {
		t.Fatal("mutating a DeepCopy changed the original")
	}
}

// Canonical sub-objects are let go when no object uses them any more.
func TestSharingTableForgetsDeadSubObjects(t *testing.T) {
	s := New()
	tmpl := fixturePod()
	pods := make([]*corev1.Pod, 50)
	for i := range pods {
		pods[i] = tmpl.DeepCopy()
		pods[i].Name = fmt.Sprint(i)
		s.Share(pods[i], nil)
	}
	alive := s.len()
	if alive == 0 {
		t.Fatal("nothing shared")
	}
	keep := pods[7]
	pods = nil
	runtime.KeepAlive(pods)
	// One object still holds every canonical node: nothing goes.
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if got := s.len(); got != alive {
		t.Errorf("table has %d nodes with one pod alive, want %d", got, alive)
	}
	runtime.KeepAlive(keep)
	keep = nil
	deadline := time.Now().Add(10 * time.Second)
	for s.len() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.len(); got != 0 {
		t.Errorf("table still has %d of %d nodes after every object was dropped", got, alive)
	}
	runtime.KeepAlive(keep)
}

// With a filter that forgets almost everything, nodes are admitted late or
// never, but the table never holds more nodes than there are distinct ones:
// a node is admitted only when the nodes inside it are canonical.
func TestSharingWithThrashingFilterStaysBounded(t *testing.T) {
	tmpl := fixturePod()
	pods := func() []*corev1.Pod {
		out := make([]*corev1.Pod, 200)
		for i := range out {
			out[i] = tmpl.DeepCopy()
			out[i].Name = fmt.Sprint(i)
		}
		return out
	}
	normal := New()
	all := pods()
	for _, p := range all {
		normal.Share(p, nil)
	}
	distinct := normal.len()

	copies := pods()
	for bits := uint(1); bits <= 7; bits++ {
		for range 5 { // hash seeds differ: different collisions
			thrashing := New()
			thrashing.filter, thrashing.shift = make([]atomic.Uint64, 1<<bits), 64-bits
			again := pods()
			for i, p := range again {
				thrashing.Share(p, nil)
				if got, want := mustJSON(t, p), mustJSON(t, copies[i]); got != want {
					t.Fatalf("pod %d changed\nbefore %s\nafter  %s", i, want, got)
				}
			}
			if got := thrashing.len(); got > distinct {
				t.Fatalf("a %d-slot filter: table holds %d nodes for %d distinct ones", 1<<bits, got, distinct)
			}
			runtime.KeepAlive(again)
		}
	}
	runtime.KeepAlive(all)
}

// TestPlanForConcurrentFirstUse shares objects of types never planned before
// from two goroutines at once (each round makes fresh types with
// reflect.StructOf), under -race. planFor publishes a plan only once every
// plan it refers to is complete; before that rule, a reader could walk a map
// plan still being filled in. That interleaving is narrow (the race detector
// caught it once, in the replicaset example's test, not here): this test
// guards the concurrent first use as a whole, the rule holds by construction.
func TestPlanForConcurrentFirstUse(t *testing.T) {
	s := New()
	mapT := reflect.TypeFor[map[string]string]()
	for round := range 300 {
		inner := reflect.StructOf([]reflect.StructField{
			{Name: fmt.Sprintf("Limits%d", round), Type: mapT},
			{Name: "Tags", Type: reflect.TypeFor[[]string]()},
		})
		outer := reflect.StructOf([]reflect.StructField{
			{Name: "Labels", Type: mapT},
			{Name: fmt.Sprintf("Inner%d", round), Type: reflect.PointerTo(inner)},
		})
		newObj := func() any {
			in := reflect.New(inner)
			in.Elem().Field(0).Set(reflect.ValueOf(map[string]string{"cpu": "1"}))
			out := reflect.New(outer)
			out.Elem().Field(0).Set(reflect.ValueOf(map[string]string{"app": "web"}))
			out.Elem().Field(1).Set(in)
			return out.Interface()
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			obj := newObj()
			wg.Go(func() {
				<-start
				s.Share(obj, nil)
			})
		}
		close(start)
		wg.Wait()
		obj := newObj()
		s.Share(obj, nil)
		v := reflect.ValueOf(obj).Elem()
		if got := v.Field(0).Interface(); !reflect.DeepEqual(got, map[string]string{"app": "web"}) {
			t.Fatalf("round %d: labels became %v", round, got)
		}
	}
}
