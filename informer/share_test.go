package informer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The sharing itself is tested in internal/hashcons; these tests check that
// the factory applies it.

// Readers of the cache run concurrently with the informer sharing new
// objects' sub-objects with theirs (run with -race).
func TestSharingConcurrentReaders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tmpl, err := appliedPod()
	if err != nil {
		t.Fatal(err)
	}
	tmpl = tmpl.DeepCopy() // appliedPod's Pod is every test's: change a copy
	tmpl.ManagedFields = nil
	newPod := func(i int) *corev1.Pod {
		p := tmpl.DeepCopy()
		p.Name = fmt.Sprintf("web-%d", i)
		p.ResourceVersion = fmt.Sprint(i + 1)
		return p
	}
	client := fake.NewClientset(newPod(0), newPod(1), newPod(2))
	f := NewFactory(client, Options{})
	defer f.Shutdown()
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(newPod(0))
	if err != nil {
		t.Fatal(err)
	}
	want := len(data)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				list, err := pods.Lister().List(nil)
				if err != nil {
					t.Error(err)
					return
				}
				for _, p := range list {
					data, err := json.Marshal(p)
					if err != nil || len(data) < want-20 || len(data) > want+20 {
						t.Errorf("pod %s: %d B of JSON (%v), want about %d", p.Name, len(data), err, want)
					}
					q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
					_ = q.String()
					cp := p.DeepCopy()
					cp.Labels["x"] = "y"
				}
			}
		})
	}
	for i := 3; i < 40; i++ {
		if _, err := client.CoreV1().Pods(tmpl.Namespace).Create(ctx, newPod(i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(pods.Informer().GetStore().ListKeys()) < 40 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	list, err := pods.Lister().List(nil)
	if err != nil || len(list) != 40 {
		t.Fatalf("%d pods cached (%v), want 40", len(list), err)
	}
	// Most pods share one labels map. Not all: the first pod seen keeps its
	// own (a node is admitted at its second sighting), and the admission
	// filter is lossy, so a filter slot reused by another hash in between
	// delays admission by one more pod. A canonical map dropped while still
	// in use would split the pods into large groups instead.
	holders := map[uintptr][]string{}
	for _, p := range list {
		k := reflect.ValueOf(p.Labels).Pointer()
		holders[k] = append(holders[k], p.Name)
	}
	most := 0
	for _, names := range holders {
		most = max(most, len(names))
	}
	if most < len(list)-4 {
		t.Errorf("the factory shared too little: %d pods of one template hold %d label maps, at most %d pods one map; holders: %v",
			len(list), len(holders), most, holders)
	}
	for _, p := range list {
		if _, ok := p.Labels["x"]; ok {
			t.Fatalf("pod %s: a reader's DeepCopy mutation reached the cache", p.Name)
		}
	}
}

func TestWithoutSharing(t *testing.T) {
	f := NewFactory(fake.NewClientset(), Options{DisableSharing: true})
	defer f.Shutdown()
	if f.table != nil {
		t.Fatal("DisableSharing left sharing on")
	}
	if NewFactory(fake.NewClientset(), Options{}).table == nil {
		t.Fatal("sharing is not the default")
	}
}

// Factories of three clusters sharing one table (Options.ShareWith) store a
// sub-object identical across them once; only the table's owner reports
// its bytes.
func TestShareWithAnotherFactory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "1",
			Labels: map[string]string{"app": "web", "tier": "frontend"}}}
	}
	owner := NewFactory(fake.NewClientset(pod()), Options{})
	defer owner.Shutdown()
	other := NewFactory(fake.NewClientset(pod()), Options{ShareWith: owner})
	defer other.Shutdown()
	third := NewFactory(fake.NewClientset(pod()), Options{ShareWith: owner})
	defer third.Shutdown()
	if other.table != owner.table {
		t.Fatal("ShareWith did not share the table")
	}
	var labels []map[string]string
	// One at a time: a sub-object is shared from the second time the
	// table sees it, so the second and third clusters' copies are one.
	for _, f := range []*Factory{owner, other, third} {
		pods, err := For[*corev1.Pod](f)
		if err != nil {
			t.Fatal(err)
		}
		f.Start(ctx)
		if err := f.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := pods.Lister().Get("ns", "web")
		if err != nil {
			t.Fatal(err)
		}
		labels = append(labels, p.Labels)
	}
	if reflect.ValueOf(labels[1]).Pointer() != reflect.ValueOf(labels[2]).Pointer() {
		t.Error("the clusters' identical labels are separate maps")
	}
	if owner.CacheMemory().TableBytes == 0 || other.CacheMemory().TableBytes != 0 {
		t.Errorf("TableBytes: owner %d, other %d; want the owner's alone", owner.CacheMemory().TableBytes, other.CacheMemory().TableBytes)
	}
	if NewFactory(fake.NewClientset(), Options{ShareWith: NewFactory(fake.NewClientset(), Options{DisableSharing: true})}).table == nil {
		t.Error("ShareWith a factory without sharing: this one keeps a table of its own")
	}
}
