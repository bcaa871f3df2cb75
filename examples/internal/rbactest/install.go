package rbactest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// awaitTimeout bounds every wait of this package: RBAC changes reach the authorizer's cache
// within moments, a controller's retry within its backoff.
const awaitTimeout = 30 * time.Second

// Install is an example's manifests applied to a test API server, in the test's namespace.
type Install struct {
	t      testing.TB
	env    *testkit.Env
	client kubernetes.Interface // the admin's, for setting up and for access reviews
	m      *Manifests
	names  map[string]string // cluster-scoped names in the manifests -> on the server
	probes []string          // the paths of the container's probes, on the health address

	// Namespace is the test's namespace, standing in for the manifests' one.
	Namespace string
	// User is the ServiceAccount's user name, as RBAC and error messages know it.
	User string
	// Token is the ServiceAccount's token (TokenRequest), for requests the test makes as the
	// binary would.
	Token string
	// Kubeconfig is the path of the shipped kubeconfig, rewritten to reach the test's server
	// with the ServiceAccount's token: the binary's only credentials.
	Kubeconfig string
	// Args are the Deployment's container arguments, its $(VAR)s expanded for the test's
	// namespace, --kubeconfig pointing at Kubeconfig and the listen addresses on free
	// loopback ports.
	Args []string
}

// Apply creates m's objects on env's server for one test: namespaced ones in env's namespace
// (the Namespace object is not created), cluster-scoped ones renamed with the namespace as a
// suffix (and the references to them), ServiceAccount subjects moved along, all with strict
// field validation. The Deployment is only created as a server-side dry run (validation) and
// its Pod template must pass the restricted Pod Security Standard; nothing runs it. Apply then
// waits until the authorizer grants every rule bound to the ServiceAccount, mints a token for
// it and writes the kubeconfig the binary gets. Failures fail the test.
func Apply(t testing.TB, env *testkit.Env, m *Manifests) *Install {
	t.Helper()
	ns := env.Namespace()
	in := &Install{t: t, env: env, client: env.Client(), m: m, names: map[string]string{}, Namespace: ns,
		User: "system:serviceaccount:" + ns + ":" + m.ServiceAccount}
	in.create(m.Objects)
	in.awaitGranted()
	if m.Deployment == nil {
		in.writeTokenKubeconfig()
		return in
	}
	in.checkPodSecurity()
	in.writeKubeconfig()
	return in
}

// ApplyFiles is Load then Apply: the manifests of files applied to env's server for one test.
// Manifests that do not load fail the test.
func ApplyFiles(t testing.TB, env *testkit.Env, files ...string) *Install {
	t.Helper()
	m, err := Load(files...)
	if err != nil {
		t.Fatalf("rbactest: %v", err)
	}
	return Apply(t, env, m)
}

// create creates objs (but the Namespace) on the server as Apply describes.
func (in *Install) create(objs []*unstructured.Unstructured) {
	in.t.Helper()
	ctx := in.env.Context()
	for _, u := range objs {
		if k := kinds[u.GroupVersionKind()]; !k.namespaced && u.GetKind() != "Namespace" {
			in.names[u.GetKind()+"/"+u.GetName()] = u.GetName() + "-" + in.Namespace
		}
	}
	for _, orig := range objs {
		if orig.GetKind() == "Namespace" {
			continue
		}
		u, err := in.rewrite(orig)
		if err != nil {
			in.t.Fatalf("rbactest: %s %q: %v", orig.GetKind(), orig.GetName(), err)
		}
		k := kinds[u.GroupVersionKind()]
		opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
		if u.GetKind() == "Deployment" {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		res := in.env.Dynamic().Resource(k.resource)
		if k.namespaced {
			_, err = res.Namespace(in.Namespace).Create(ctx, u, opts)
		} else if _, err = res.Create(ctx, u, opts); err == nil {
			// Cluster-scoped objects outlive the test's namespace: remove them so the next
			// test on the shared server starts from the same cluster.
			name := u.GetName()
			in.t.Cleanup(func() { _ = res.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
		if err != nil {
			in.t.Fatalf("rbactest: applying %s %q: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// rewrite returns a copy of a manifest object placed for the test.
func (in *Install) rewrite(orig *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u := orig.DeepCopy()
	k := kinds[u.GroupVersionKind()]
	if k.namespaced {
		u.SetNamespace(in.Namespace)
	} else {
		u.SetName(in.names[u.GetKind()+"/"+u.GetName()])
	}
	if kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind"); kind == "ClusterRole" {
		name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
		if renamed, ok := in.names["ClusterRole/"+name]; ok {
			if err := unstructured.SetNestedField(u.Object, renamed, "roleRef", "name"); err != nil {
				return nil, err
			}
		}
	}
	subjects, _, err := unstructured.NestedSlice(u.Object, "subjects")
	if err != nil {
		return nil, err
	}
	for _, s := range subjects {
		if s, ok := s.(map[string]any); ok && s["kind"] == "ServiceAccount" && s["namespace"] == in.m.Namespace {
			s["namespace"] = in.Namespace
		}
	}
	if subjects != nil {
		if err := unstructured.SetNestedSlice(u.Object, subjects, "subjects"); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// checkPodSecurity creates the Deployment's Pod template as a Pod, server-side dry run, in a
// namespace that enforces the restricted Pod Security Standard: the API server's own
// PodSecurity admission decides.
func (in *Install) checkPodSecurity() {
	in.t.Helper()
	ctx := in.env.Context()
	name := in.Namespace + "-restricted"
	_, err := in.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}},
		metav1.CreateOptions{})
	if err != nil {
		in.t.Fatalf("rbactest: namespace for the pod security check: %v", err)
	}
	defer func() { _ = in.client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) }()
	tmpl := in.m.Deployment.Spec.Template
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: in.m.Deployment.Name, Labels: tmpl.Labels}, Spec: *tmpl.Spec.DeepCopy()}
	if _, err := in.client.CoreV1().Pods(name).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		in.t.Fatalf("rbactest: the Deployment's pod template fails the restricted pod security standard: %v", err)
	}
}
