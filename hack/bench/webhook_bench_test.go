package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	crwebhookadmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podsetwebhook"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// The webhook benchmarks: one review answered in-process through each implementation's
// http.Handler (decode the review and the object, default or validate or convert, diff,
// encode the answer), no TLS and no network. Both run the same Defaulter, Validator and
// conversion functions (examples/podset's) on the same realistic PodSet: two containers with
// env, resources, probes and ports, a volume, labels, annotations and a status with
// conditions, about 2.5 kB of JSON.

// realisticPodSet is the PodSet both implementations review.
func realisticPodSet() *v1alpha1.PodSet {
	lbls := map[string]string{"app": "web", "tier": "frontend", "track": "stable"}
	container := func(name, image string, port int32) corev1.Container {
		return corev1.Container{
			Name: name, Image: image,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
				PeriodSeconds: 10},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"}},
		}
	}
	return &v1alpha1.PodSet{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "3f1c0a62-5d2e-4c1b-9e8f-0a1b2c3d4e5f",
			ResourceVersion: "123456", Generation: 4, CreationTimestamp: metav1.Unix(1700000000, 0),
			Labels:      map[string]string{"app": "web", "team": "storefront"},
			Annotations: map[string]string{"description": "the storefront's web tier", "owner": "storefront@example.com"}},
		Spec: v1alpha1.PodSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls, Annotations: map[string]string{"prometheus.io/scrape": "true"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container("web", "nginx:1.27", 8080), container("sidecar", "envoyproxy/envoy:v1.31", 9901)},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}},
					TerminationGracePeriodSeconds: ptr.To[int64](30),
				},
			},
		},
		Status: v1alpha1.PodSetStatus{Replicas: 3, ReadyReplicas: 3, ObservedGeneration: 4, Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 4,
				LastTransitionTime: metav1.Unix(1700000100, 0), Reason: "AllReady", Message: "3 of 3 ready"},
			{Type: v1alpha1.ConditionReplicaFailure, Status: metav1.ConditionFalse, ObservedGeneration: 4,
				LastTransitionTime: metav1.Unix(1700000100, 0), Reason: "NoFailure", Message: "no Pod creation failed"},
		}},
	}
}

func admissionReviewBody(b *testing.B, op admissionv1.Operation) []byte {
	b.Helper()
	ps := realisticPodSet()
	ps.Spec.Replicas = nil // so that the defaulter has something to do
	raw, err := json.Marshal(ps)
	if err != nil {
		b.Fatal(err)
	}
	req := &admissionv1.AdmissionRequest{
		UID: "7e3b9c1d-0a2f-4b8e-9c6d-1f2e3a4b5c6d", Operation: op, Namespace: ps.Namespace, Name: ps.Name,
		Kind:     metav1.GroupVersionKind{Group: v1alpha1.GroupName, Version: v1alpha1.Version, Kind: v1alpha1.Kind},
		Resource: metav1.GroupVersionResource{Group: v1alpha1.GroupName, Version: v1alpha1.Version, Resource: v1alpha1.Plural},
		Object:   runtime.RawExtension{Raw: raw},
	}
	if op == admissionv1.Update {
		req.OldObject = runtime.RawExtension{Raw: raw}
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func conversionReviewBody(b *testing.B) []byte {
	b.Helper()
	raw, err := json.Marshal(realisticPodSet())
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(webhook.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &webhook.ConversionRequest{UID: "7e3b9c1d-0a2f-4b8e-9c6d-1f2e3a4b5c6d",
			DesiredAPIVersion: v1beta1.GroupVersion.String(), Objects: []runtime.RawExtension{{Raw: raw}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// serve posts body to h b.N times and checks every answer is a 200.
func serve(b *testing.B, h http.Handler, body []byte, check func(b *testing.B, resp []byte)) {
	b.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/review", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	check(b, rec.Body.Bytes())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/review", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

func podSetScheme(b *testing.B) *runtime.Scheme {
	b.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	return scheme
}

// allowedWithPatch checks an admission answer: allowed, with a patch when want says so.
func allowedWithPatch(want bool) func(b *testing.B, body []byte) {
	return func(b *testing.B, body []byte) {
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil {
			b.Fatal(err)
		}
		if review.Response == nil || !review.Response.Allowed || (len(review.Response.Patch) > 0) != want {
			b.Fatalf("unexpected answer %s", body)
		}
	}
}

func BenchmarkAdmissionDefault(b *testing.B) {
	body := admissionReviewBody(b, admissionv1.Create)
	b.Run("impl=ctrlkit", func(b *testing.B) {
		h, err := webhook.NewDefaulting[*v1alpha1.PodSet](v1alpha1.GVK, podsetwebhook.Webhook{})
		if err != nil {
			b.Fatal(err)
		}
		serve(b, h, body, allowedWithPatch(true))
	})
	b.Run("impl=controller-runtime", func(b *testing.B) {
		h := crwebhookadmission.WithDefaulter[*v1alpha1.PodSet](podSetScheme(b), podsetwebhook.Webhook{})
		serve(b, h, body, allowedWithPatch(true))
	})
}

func BenchmarkAdmissionValidate(b *testing.B) {
	body := admissionReviewBody(b, admissionv1.Update)
	b.Run("impl=ctrlkit", func(b *testing.B) {
		h, err := webhook.NewValidating[*v1alpha1.PodSet](v1alpha1.GVK, podsetwebhook.Webhook{})
		if err != nil {
			b.Fatal(err)
		}
		serve(b, h, body, allowedWithPatch(false))
	})
	b.Run("impl=controller-runtime", func(b *testing.B) {
		h := crwebhookadmission.WithValidator[*v1alpha1.PodSet](podSetScheme(b), validatorAdapter{})
		serve(b, h, body, allowedWithPatch(false))
	})
}

// validatorAdapter is podsetwebhook.Webhook as controller-runtime's Validator (its Warnings
// type is its own).
type validatorAdapter struct{ podsetwebhook.Webhook }

func (v validatorAdapter) ValidateCreate(ctx context.Context, ps *v1alpha1.PodSet) (crwebhookadmission.Warnings, error) {
	w, err := v.Webhook.ValidateCreate(ctx, ps)
	return crwebhookadmission.Warnings(w), err
}

func (v validatorAdapter) ValidateUpdate(ctx context.Context, old, ps *v1alpha1.PodSet) (crwebhookadmission.Warnings, error) {
	w, err := v.Webhook.ValidateUpdate(ctx, old, ps)
	return crwebhookadmission.Warnings(w), err
}

func (v validatorAdapter) ValidateDelete(ctx context.Context, ps *v1alpha1.PodSet) (crwebhookadmission.Warnings, error) {
	w, err := v.Webhook.ValidateDelete(ctx, ps)
	return crwebhookadmission.Warnings(w), err
}

func converted(b *testing.B, body []byte) {
	var review webhook.ConversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		b.Fatal(err)
	}
	if review.Response == nil || review.Response.Result.Status != metav1.StatusSuccess || len(review.Response.ConvertedObjects) != 1 ||
		!bytes.Contains(review.Response.ConvertedObjects[0].Raw, []byte(`"scale":{"replicas":`)) {
		b.Fatalf("unexpected answer %s", body)
	}
}

func BenchmarkConversion(b *testing.B) {
	body := conversionReviewBody(b)
	b.Run("impl=ctrlkit", func(b *testing.B) {
		h, err := podsetwebhook.NewConversion()
		if err != nil {
			b.Fatal(err)
		}
		serve(b, h, body, converted)
	})
	b.Run("impl=controller-runtime", func(b *testing.B) {
		scheme := podSetScheme(b)
		conv, err := crconversion.NewHubSpokeConverter(&v1beta1.PodSet{}, crconversion.NewSpokeConverter(&v1alpha1.PodSet{},
			func(_ context.Context, hub *v1beta1.PodSet, spoke *v1alpha1.PodSet) error {
				return spoke.ConvertFrom(hub)
			},
			func(_ context.Context, spoke *v1alpha1.PodSet, hub *v1beta1.PodSet) error {
				return spoke.ConvertTo(hub)
			},
		))(scheme)
		if err != nil {
			b.Fatal(err)
		}
		reg := crconversion.NewRegistry()
		if err := reg.RegisterConverter(v1beta1.GVK.GroupKind(), conv); err != nil {
			b.Fatal(err)
		}
		serve(b, crconversion.NewWebhookHandler(scheme, reg), body, converted)
	})
}
