package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/webhook"
)

// benchConfigMap is a ConfigMap of n keys with labels and annotations, as received on CREATE.
func benchConfigMap(b *testing.B, n int) []byte {
	b.Helper()
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-config",
			Labels: map[string]string{"app": "web", "tier": "frontend"}, Annotations: map[string]string{"owner": "storefront"}},
		Data: map[string]string{},
	}
	for i := range n {
		cm.Data[fmt.Sprintf("key-%03d", i)] = fmt.Sprintf("value %d of the web tier's configuration", i)
	}
	raw, err := json.Marshal(cm)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkAdmissionDefaultHandle is a defaulting review without HTTP: decode, Default, the
// three-way patch, for a ConfigMap of 50 keys. hack/bench compares the whole handler with
// controller-runtime's.
func BenchmarkAdmissionDefaultHandle(b *testing.B) {
	h, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	if err != nil {
		b.Fatal(err)
	}
	req := &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}
	req.Object.Raw = benchConfigMap(b, 50)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Handle(ctx, req); !resp.Allowed || len(resp.Patch) == 0 {
			b.Fatal("not defaulted")
		}
	}
}

// BenchmarkCreatePatch diffs two ConfigMaps of 50 keys that differ in one key and one label.
func BenchmarkCreatePatch(b *testing.B) {
	from := benchConfigMap(b, 50)
	var cm corev1.ConfigMap
	if err := json.Unmarshal(from, &cm); err != nil {
		b.Fatal(err)
	}
	cm.Data["key-007"] = "changed"
	cm.Labels["track"] = "canary"
	to, err := json.Marshal(&cm)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ops, err := webhook.CreatePatch(from, to); err != nil || len(ops) != 2 {
			b.Fatal(ops, err)
		}
	}
}
