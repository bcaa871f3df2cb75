package customresource_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// The benchmarks compare the client-side decoding cost of the two designs doc.go
// weighs: a generated (gentype) client decodes the response body straight into T; this
// package's dynamic client decodes it into a map and then converts the map to T.

func benchPodSetJSON(b *testing.B) []byte {
	ps := podSet("default", "web", 3)
	ps.Status = v1alpha1.PodSetStatus{Replicas: 3, ReadyReplicas: 3, ObservedGeneration: 1}
	data, err := json.Marshal(toUnstructured(b, ps).Object)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkDecodeTyped is the gentype path: JSON body → T.
func BenchmarkDecodeTyped(b *testing.B) {
	data := benchPodSetJSON(b)
	b.ReportAllocs()
	for b.Loop() {
		var ps v1alpha1.PodSet
		if err := json.Unmarshal(data, &ps); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeDynamic is this package's path: JSON body → unstructured → T.
func BenchmarkDecodeDynamic(b *testing.B) {
	data := benchPodSetJSON(b)
	c := newClient(b, newFake(b))
	b.ReportAllocs()
	for b.Loop() {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
		if _, err := c.FromUnstructured(u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFromUnstructured is the conversion alone: what a Client adds to the
// dynamic client for every object it returns.
func BenchmarkFromUnstructured(b *testing.B) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(benchPodSetJSON(b)); err != nil {
		b.Fatal(err)
	}
	c := newClient(b, newFake(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.FromUnstructured(u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToUnstructured is the conversion of every object a Client sends.
func BenchmarkToUnstructured(b *testing.B) {
	ps := podSet("default", "web", 3)
	c := newClient(b, newFake(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.ToUnstructured(ps); err != nil {
			b.Fatal(err)
		}
	}
}
