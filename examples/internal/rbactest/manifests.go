package rbactest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ErrInvalidManifest is matched by the errors Load and CheckDeployment return for manifests
// that are malformed or grant or run more than they should.
var ErrInvalidManifest = errors.New("invalid manifest")

// kind is what Apply knows of a kind it may meet in a deploy directory.
type kind struct {
	resource   schema.GroupVersionResource
	namespaced bool
}

// kinds are the kinds a deploy directory may hold; anything else is an error naming it, so a
// manifest the tests would silently skip cannot be shipped.
var kinds = map[schema.GroupVersionKind]kind{
	{Version: "v1", Kind: "Namespace"}:                       {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	{Version: "v1", Kind: "ServiceAccount"}:                  {schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	{Version: "v1", Kind: "ConfigMap"}:                       {schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true},
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"):        {rbacv1.SchemeGroupVersion.WithResource("clusterroles"), false},
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"): {rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), false},
	rbacv1.SchemeGroupVersion.WithKind("Role"):               {rbacv1.SchemeGroupVersion.WithResource("roles"), true},
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"):        {rbacv1.SchemeGroupVersion.WithResource("rolebindings"), true},
	appsv1.SchemeGroupVersion.WithKind("Deployment"):         {appsv1.SchemeGroupVersion.WithResource("deployments"), true},
}

// Manifests are the objects of an example's deploy files, in file and document order.
type Manifests struct {
	// Objects are every document, as read.
	Objects []*unstructured.Unstructured
	// Namespace is the one namespace of every namespaced object.
	Namespace string
	// ServiceAccount is the one ServiceAccount's name.
	ServiceAccount string
	// Deployment is the one Deployment, typed; nil for LoadRBAC's.
	Deployment *appsv1.Deployment

	rbacOnly bool
}

// Load reads the YAML files at paths (each a stream of documents) and checks them: only kinds
// Apply knows, every namespaced object in one namespace, exactly one ServiceAccount and one
// Deployment, no wildcard in any rule, and the Deployment as CheckDeployment wants it.
func Load(paths ...string) (*Manifests, error) {
	return load(false, paths)
}

// LoadRBAC is Load for manifests that ship no Deployment, only the ServiceAccount and its
// rules: a binary the user runs with a kubeconfig of their own, as examples/first-controller.
// Apply then writes a kubeconfig with the ServiceAccount's token (Kubeconfig) and no Args.
func LoadRBAC(paths ...string) (*Manifests, error) {
	return load(true, paths)
}

func load(rbacOnly bool, paths []string) (*Manifests, error) {
	m := &Manifests{rbacOnly: rbacOnly}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		objs, err := decode(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		m.Objects = append(m.Objects, objs...)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

// decode splits a YAML stream into objects, skipping empty documents.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w: %w", i, ErrInvalidManifest, err)
		}
		if len(doc) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: doc}
		if _, ok := kinds[u.GroupVersionKind()]; !ok {
			return nil, fmt.Errorf("document %d (%s %q): %w: kind %s is not one a deploy directory may hold", i, u.GetKind(), u.GetName(), ErrInvalidManifest, u.GroupVersionKind())
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("document %d (%s): %w: no metadata.name", i, u.GetKind(), ErrInvalidManifest)
		}
		objs = append(objs, u)
	}
}

func (m *Manifests) check() error {
	var errs []error
	bad := func(u *unstructured.Unstructured, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %q: %w: %s", u.GetKind(), u.GetName(), ErrInvalidManifest, fmt.Sprintf(format, args...)))
	}
	var deployments []*unstructured.Unstructured
	for _, u := range m.Objects {
		k := kinds[u.GroupVersionKind()]
		switch ns := u.GetNamespace(); {
		case k.namespaced && ns == "":
			bad(u, "no metadata.namespace")
		case k.namespaced && m.Namespace == "":
			m.Namespace = ns
		case k.namespaced && ns != m.Namespace:
			bad(u, "namespace %q, where the other objects are in %q", ns, m.Namespace)
		case !k.namespaced && ns != "":
			bad(u, "cluster-scoped, but has namespace %q", ns)
		}
		switch u.GetKind() {
		case "ServiceAccount":
			if m.ServiceAccount != "" {
				bad(u, "a second ServiceAccount (the first is %q)", m.ServiceAccount)
			}
			m.ServiceAccount = u.GetName()
		case "Deployment":
			deployments = append(deployments, u)
		case "ClusterRole", "Role":
			errs = append(errs, checkRules(u)...)
		}
	}
	if m.ServiceAccount == "" {
		errs = append(errs, fmt.Errorf("%w: no ServiceAccount", ErrInvalidManifest))
	}
	if m.rbacOnly {
		if len(deployments) != 0 {
			errs = append(errs, fmt.Errorf("%w: %d Deployments, want none", ErrInvalidManifest, len(deployments)))
		}
	} else if len(deployments) != 1 {
		errs = append(errs, fmt.Errorf("%w: %d Deployments, want 1", ErrInvalidManifest, len(deployments)))
	} else {
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deployments[0].Object, d); err != nil {
			bad(deployments[0], "%v", err)
		} else if err := CheckDeployment(d, m.ServiceAccount); err != nil {
			errs = append(errs, err)
		} else {
			m.Deployment = d
		}
	}
	return errors.Join(errs...)
}

// checkRules reports what is wrong with the rules of a ClusterRole or Role: a wildcard anywhere.
func checkRules(u *unstructured.Unstructured) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %q: %w: %s", u.GetKind(), u.GetName(), ErrInvalidManifest, fmt.Sprintf(format, args...)))
	}
	var r rbacv1.ClusterRole // a Role's fields are a subset
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		bad("%v", err)
		return errs
	}
	for i, rule := range r.Rules {
		for field, values := range map[string][]string{"apiGroups": rule.APIGroups, "resources": rule.Resources, "verbs": rule.Verbs, "nonResourceURLs": rule.NonResourceURLs} {
			if slices.ContainsFunc(values, func(v string) bool { return strings.Contains(v, "*") }) {
				bad("rule %d: a wildcard in %s %q grants more than the binary uses", i, field, values)
			}
		}
	}
	return errs
}

// CheckDeployment checks what the restricted Pod Security Standard and a controller's operator
// want of d beyond what the API server validates: it runs as serviceAccount, as non-root with a
// RuntimeDefault seccomp profile; every container drops ALL capabilities, forbids privilege
// escalation, has a read-only root filesystem, and has liveness and readiness probes on a port
// the container declares. The error lists every failure.
func CheckDeployment(d *appsv1.Deployment, serviceAccount string) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("deployment %q: %w: %s", d.Name, ErrInvalidManifest, fmt.Sprintf(format, args...)))
	}
	spec := d.Spec.Template.Spec
	if spec.ServiceAccountName != serviceAccount {
		bad("serviceAccountName %q, want %q", spec.ServiceAccountName, serviceAccount)
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	podNonRoot := psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	podSeccomp := psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
	if len(spec.Containers) == 0 {
		bad("no containers")
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			bad("container %q: no securityContext", c.Name)
			continue
		}
		if !podNonRoot && (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
			bad("container %q: runAsNonRoot is not true (in the pod or the container)", c.Name)
		}
		if !podSeccomp && (sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault) {
			bad("container %q: seccompProfile is not RuntimeDefault (in the pod or the container)", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad("container %q: allowPrivilegeEscalation is not false", c.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			bad("container %q: readOnlyRootFilesystem is not true", c.Name)
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			bad("container %q: capabilities must drop [ALL] and add nothing", c.Name)
		}
	}
	for _, c := range spec.Containers {
		for name, p := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil {
				bad("container %q: no HTTP %s", c.Name, name)
				continue
			}
			port := p.HTTPGet.Port
			if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
				return port.String() == cp.Name || port.IntValue() == int(cp.ContainerPort)
			}) {
				bad("container %q: %s port %s is not a port of the container", c.Name, name, port.String())
			}
		}
	}
	return errors.Join(errs...)
}
