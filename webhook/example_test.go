package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// replicasDefaulter gives every ConfigMap a "replicas" key.
type replicasDefaulter struct{}

func (replicasDefaulter) Default(_ context.Context, cm *corev1.ConfigMap) error {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	if cm.Data["replicas"] == "" {
		cm.Data["replicas"] = "1"
	}
	return nil
}

// A defaulting webhook answers with the JSON patch of what Default changed, nothing else.
func ExampleNewDefaulting() {
	h, err := webhook.NewDefaulting[*corev1.ConfigMap](corev1.SchemeGroupVersion.WithKind("ConfigMap"), replicasDefaulter{})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp := h.Handle(context.Background(), &admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`)},
	})
	fmt.Println(resp.Allowed, *resp.PatchType, string(resp.Patch))
	// Output: true JSONPatch [{"op":"add","path":"/data","value":{"replicas":"1"}}]
}

// nameValidator refuses ConfigMaps without a "replicas" key, field by field.
type nameValidator struct{}

func (nameValidator) ValidateCreate(_ context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
	if cm.Data["replicas"] == "" {
		return nil, field.ErrorList{field.Required(field.NewPath("data", "replicas"), "")}.ToAggregate()
	}
	return nil, nil
}

func (v nameValidator) ValidateUpdate(ctx context.Context, _, cm *corev1.ConfigMap) (webhook.Warnings, error) {
	return v.ValidateCreate(ctx, cm)
}

func (nameValidator) ValidateDelete(context.Context, *corev1.ConfigMap) (webhook.Warnings, error) {
	return nil, nil
}

// A field error list becomes a 422 Invalid status with one cause per field.
func ExampleNewValidating() {
	h, err := webhook.NewValidating[*corev1.ConfigMap](corev1.SchemeGroupVersion.WithKind("ConfigMap"), nameValidator{})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp := h.Handle(context.Background(), &admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Name: "web", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"web"}}`)},
	})
	fmt.Println(resp.Allowed, resp.Result.Code, resp.Result.Reason)
	fmt.Println(resp.Result.Message)
	fmt.Println(resp.Result.Details.Causes[0].Field)
	// Output:
	// false 422 Invalid
	// ConfigMap "web" is invalid: data.replicas: Required value
	// data.replicas
}

// CreatePatch diffs two JSON documents; arrays are replaced whole.
func ExampleCreatePatch() {
	ops, err := webhook.CreatePatch(
		[]byte(`{"metadata":{"labels":{"a":"1"}},"spec":{"ports":[80]}}`),
		[]byte(`{"metadata":{"labels":{"a":"1","app.kubernetes.io/name":"web"}},"spec":{"ports":[80,443]}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, op := range ops {
		fmt.Println(op.Op, op.Path, string(op.Value))
	}
	// Output:
	// add /metadata/labels/app.kubernetes.io~1name "web"
	// replace /spec/ports [80,443]
}

// A Server on a throw-away certificate, as in development and tests. In a cluster the pair
// comes from a mounted Secret (cert-manager), CertDir points at it, and the Manager runs the
// Server (AddToManager).
func ExampleServer() {
	dir, err := os.MkdirTemp("", "webhook-certs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ca, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"127.0.0.1"}})
	if err == nil {
		err = ca.WriteFiles(dir)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := webhook.NewServer(webhook.ServerOptions{Addr: "127.0.0.1:0", CertDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := webhook.NewDefaulting[*corev1.ConfigMap](corev1.SchemeGroupVersion.WithKind("ConfigMap"), replicasDefaulter{})
	if err == nil {
		err = srv.Register("/default-configmap", h)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// Listening takes a moment.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return srv.Addr() != "", nil
	}); err != nil {
		fmt.Println(err)
		return
	}

	// What the API server does with the webhook configuration's caBundle (ca.CAPEM).
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.CertPool(), MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"CREATE",
		"kind":{"group":"","version":"v1","kind":"ConfigMap"},"object":{"metadata":{"name":"web"}}}}`
	resp, err := (&http.Client{Transport: tr}).Post("https://"+srv.Addr()+"/default-configmap", "application/json", bytes.NewBufferString(review))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.StatusCode, out.Response.Allowed, string(out.Response.Patch))
	// Output: 200 true [{"op":"add","path":"/data","value":{"replicas":"1"}}]
}

// A conversion handler for a kind with two versions: v2 is the hub, v1 a spoke that moved
// spec.size to spec.scale.size (the widget types are in conversion_test.go).
func ExampleNewConversion() {
	c, err := webhook.NewConversion[*widgetV2](schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"})
	if err == nil {
		err = webhook.AddSpoke[*widgetV1](c, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	v2, err := c.Convert([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}`), "example.com/v2")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(v2))
	// Output: {"kind":"Widget","apiVersion":"example.com/v2","metadata":{"name":"w"},"spec":{"scale":{"size":3}}}
}

// A Server run by a Manager: on every replica, with its readiness in /readyz and its metrics
// on the Manager's registry.
func ExampleAddToManager() {
	dir, err := os.MkdirTemp("", "webhook-certs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ca, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{})
	if err == nil {
		err = ca.WriteFiles(dir)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	mgr, err := manager.New(manager.Options{Client: fake.NewClientset()})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := webhook.NewServer(webhook.ServerOptions{Addr: "127.0.0.1:0", CertDir: dir, Registerer: mgr.Registerer()})
	if err == nil {
		err = webhook.AddToManager(mgr, srv)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		rec := httptest.NewRecorder()
		mgr.ReadyzHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code == http.StatusOK, nil
	})
	fmt.Println("ready:", err == nil, "leader only:", srv.NeedLeaderElection())
	// Output: ready: true leader only: false
}

// Admission-time assignment: a new ReplicaSet is labelled for its member in the ring "web" as it
// is created. In a binary, the Manager builds and runs the Assigner
// (manager.ShardingOptions.AssignAtAdmission, Manager.ShardAssigner) and the webhook server
// serves the handler; here one member, "a", holds its Lease.
func ExampleNewShardAssigning() {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "web.a", Labels: map[string]string{sharding.RingLabel: "web"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: new("a_1"), RenewTime: &now},
	}
	a, err := sharding.NewAssigner(fake.NewClientset(lease), sharding.Config{Ring: "web", Namespace: "ops", Identity: "web-0"}, sharding.AssignerOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	_ = wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return a.HasSynced(), nil
	})

	h, err := webhook.NewShardAssigning(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), a)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp := h.Handle(context.Background(), &admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
		Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"namespace":"default","name":"web"}}`)},
	})
	fmt.Println(resp.Allowed, string(resp.Patch))
	// Output: true [{"op":"add","path":"/metadata/annotations","value":{"shard.ctrlkit.dev/web-holder":"a_1"}},{"op":"add","path":"/metadata/labels","value":{"shard.ctrlkit.dev/web":"a"}}]
}
