package rbactest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// serviceAccountDir is where the kubelet mounts a Pod's ServiceAccount token and the cluster's
// CA; a shipped kubeconfig names files there, and Apply puts the test's versions in their place.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

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

// Access is one request the ServiceAccount makes: a verb on a resource (and subresource) of an
// API group, in the test's namespace unless ClusterScoped, of one object when Name is set.
type Access struct {
	Verb, Group, Resource, Subresource, Name string
	ClusterScoped                            bool
}

func (a Access) String() string {
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Name != "" {
		r += " " + a.Name
	}
	return a.Verb + " " + r
}

// Allowed asks the API server's authorizer (a SubjectAccessReview, as the admin) whether the
// ServiceAccount may do a.
func (in *Install) Allowed(ctx context.Context, a Access) (bool, error) {
	attrs := &authorizationv1.ResourceAttributes{Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name}
	if !a.ClusterScoped {
		attrs.Namespace = in.Namespace
	}
	sar, err := in.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: in.User, ResourceAttributes: attrs,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + in.Namespace, "system:authenticated"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("access review of %s: %w", a, err)
	}
	return sar.Status.Allowed, nil
}

// AwaitAccess waits until the authorizer answers want for a: RBAC objects reach it through
// its own cache, a moment after they are written.
func (in *Install) AwaitAccess(a Access, want bool) {
	in.t.Helper()
	err := wait.PollUntilContextTimeout(in.env.Context(), 20*time.Millisecond, awaitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := in.Allowed(ctx, a)
		return got == want, err
	})
	if err != nil {
		in.t.Fatalf("rbactest: %s: still not allowed=%v for %s: %v", a, want, in.User, err)
	}
}

// boundRules are the rules of every role a binding of the manifests grants the ServiceAccount,
// as Accesses (one per verb, resource and name).
func (in *Install) boundRules() []Access {
	in.t.Helper()
	roles := map[string][]rbacv1.PolicyRule{}
	var bound []string
	for _, u := range in.m.Objects {
		switch u.GetKind() {
		case "ClusterRole", "Role":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				in.t.Fatalf("rbactest: %s %q: %v", u.GetKind(), u.GetName(), err)
			}
			roles[u.GetKind()+"/"+u.GetName()] = r.Rules
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
				in.t.Fatalf("rbactest: %s %q: %v", u.GetKind(), u.GetName(), err)
			}
			if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
				return s.Kind == "ServiceAccount" && s.Name == in.m.ServiceAccount && s.Namespace == in.m.Namespace
			}) {
				bound = append(bound, b.RoleRef.Kind+"/"+b.RoleRef.Name)
			}
		}
	}
	var out []Access
	for _, ref := range bound {
		rules, ok := roles[ref]
		if kind, name, _ := strings.Cut(ref, "/"); !ok && kind == "ClusterRole" {
			// A role the cluster has already, such as system:auth-delegator.
			r, err := in.client.RbacV1().ClusterRoles().Get(in.env.Context(), name, metav1.GetOptions{})
			if err != nil {
				in.t.Fatalf("rbactest: a binding of %s refers to %s, which neither the manifests nor the server hold: %v", in.m.ServiceAccount, ref, err)
			}
			rules, ok = r.Rules, true
		}
		if !ok {
			in.t.Fatalf("rbactest: a binding of %s refers to %s, which the manifests do not hold", in.m.ServiceAccount, ref)
		}
		for _, rule := range rules {
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, verb := range rule.Verbs {
						names := rule.ResourceNames
						if len(names) == 0 {
							names = []string{""}
						}
						for _, name := range names {
							out = append(out, Access{Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name})
						}
					}
				}
			}
		}
	}
	return out
}

// awaitGranted waits until the authorizer grants every bound rule: the manifests grant what
// they say, and the binary will not start before RBAC caught up.
func (in *Install) awaitGranted() {
	in.t.Helper()
	rules := in.boundRules()
	if len(rules) == 0 {
		in.t.Fatalf("rbactest: no rule is bound to ServiceAccount %q", in.m.ServiceAccount)
	}
	for _, a := range rules {
		in.AwaitAccess(a, true)
	}
}

// NewToken mints another token of the ServiceAccount (TokenRequest): the same user as Token,
// without the decisions servers cached for Token.
func (in *Install) NewToken() string {
	in.t.Helper()
	tok, err := in.client.CoreV1().ServiceAccounts(in.Namespace).CreateToken(in.env.Context(), in.m.ServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		in.t.Fatalf("rbactest: TokenRequest for %s: %v", in.m.ServiceAccount, err)
	}
	return tok.Status.Token
}

// writeTokenKubeconfig writes a kubeconfig that reaches the test's server with a token of the
// ServiceAccount and the cluster's CA, and nothing else: for manifests without a Deployment.
func (in *Install) writeTokenKubeconfig() {
	in.t.Helper()
	admin := in.env.Config()
	in.Token = in.NewToken()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	cfg.AuthInfos[in.m.ServiceAccount] = &clientcmdapi.AuthInfo{Token: in.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: in.m.ServiceAccount, Namespace: in.Namespace}
	cfg.CurrentContext = "test"
	in.Kubeconfig = filepath.Join(in.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, in.Kubeconfig); err != nil {
		in.t.Fatal(err)
	}
}

// writeKubeconfig finds the kubeconfig the Deployment mounts (a ConfigMap key behind its
// --kubeconfig argument), checks that its only credentials are the ServiceAccount's token
// file, and writes it for the test: the server's address, and the token and CA in files that
// stand in for the kubelet's mount. It fills in Kubeconfig and Args.
func (in *Install) writeKubeconfig() {
	in.t.Helper()
	c := in.m.Deployment.Spec.Template.Spec.Containers[0]
	args, err := expand(c, in.Namespace)
	if err != nil {
		in.t.Fatalf("rbactest: container %q: %v", c.Name, err)
	}
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--kubeconfig=") })
	if i < 0 {
		in.t.Fatalf("rbactest: container %q has no --kubeconfig=PATH argument: without one the binary runs its in-memory demo", c.Name)
	}
	shipped, err := in.mounted(c, strings.TrimPrefix(args[i], "--kubeconfig="))
	if err != nil {
		in.t.Fatalf("rbactest: container %q: %v", c.Name, err)
	}
	cfg, err := clientcmd.Load([]byte(shipped))
	if err != nil {
		in.t.Fatalf("rbactest: the shipped kubeconfig: %v", err)
	}
	dir := in.t.TempDir()
	admin := in.env.Config()
	in.Token = in.NewToken()
	files := map[string][]byte{"token": []byte(in.Token), "ca.crt": admin.CAData}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			in.t.Fatal(err)
		}
	}
	local := func(p string) string {
		if name, ok := strings.CutPrefix(p, serviceAccountDir+"/"); ok && files[name] != nil {
			return filepath.Join(dir, name)
		}
		in.t.Fatalf("rbactest: the shipped kubeconfig names %q; only the ServiceAccount's token and CA (under %s) are expected", p, serviceAccountDir)
		return ""
	}
	for name, cl := range cfg.Clusters {
		if cl.InsecureSkipTLSVerify || cl.CertificateAuthority == "" {
			in.t.Fatalf("rbactest: the shipped kubeconfig's cluster %q must verify the server with the ServiceAccount's CA", name)
		}
		cl.Server, cl.CertificateAuthority = admin.Host, local(cl.CertificateAuthority)
	}
	for name, u := range cfg.AuthInfos {
		if u.TokenFile == "" || u.Token != "" || u.ClientCertificate != "" || len(u.ClientCertificateData) > 0 || u.ClientKey != "" ||
			len(u.ClientKeyData) > 0 || u.Username != "" || u.Exec != nil || u.AuthProvider != nil || u.Impersonate != "" {
			in.t.Fatalf("rbactest: the shipped kubeconfig's user %q must hold the ServiceAccount's token file and nothing else", name)
		}
		u.TokenFile = local(u.TokenFile)
	}
	in.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, in.Kubeconfig); err != nil {
		in.t.Fatal(err)
	}
	args[i] = "--kubeconfig=" + in.Kubeconfig
	healthPort := ""
	for j, a := range args {
		for _, flag := range []string{"--metrics-addr=", "--health-addr="} {
			if addr, ok := strings.CutPrefix(a, flag); ok {
				if flag == "--health-addr=" {
					_, healthPort, _ = strings.Cut(addr, ":")
				}
				args[j] = flag + "127.0.0.1:0"
			}
		}
	}
	in.Args = args
	in.probes = probePaths(in.t, c, healthPort)
}

// mounted returns the content of the file at p in container c: a key of a ConfigMap of the
// manifests, mounted as a volume.
func (in *Install) mounted(c corev1.Container, p string) (string, error) {
	for _, vm := range c.VolumeMounts {
		key, ok := strings.CutPrefix(p, strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range in.m.Deployment.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			for _, u := range in.m.Objects {
				if u.GetKind() == "ConfigMap" && u.GetName() == v.ConfigMap.Name {
					if data, ok, _ := unstructured.NestedString(u.Object, "data", path.Clean(key)); ok {
						return data, nil
					}
				}
			}
			return "", fmt.Errorf("%s is in volume %q, but ConfigMap %q of the manifests has no key %q", p, v.Name, v.ConfigMap.Name, key)
		}
	}
	return "", fmt.Errorf("%s is not in a ConfigMap volume the container mounts", p)
}

// varRef is a $(VAR) reference in a container's arguments.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand returns c's arguments with $(VAR) replaced as the kubelet would for the container's
// env: literal values, and metadata.namespace as namespace.
func expand(c corev1.Container, namespace string) ([]string, error) {
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			vars[e.Name] = namespace
		}
	}
	var errs []error
	args := slices.Clone(c.Args)
	for i, a := range args {
		args[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := vars[name]
			if !ok {
				errs = append(errs, fmt.Errorf("argument %q refers to $(%s), which the test cannot resolve", a, name))
			}
			return v
		})
	}
	return args, errors.Join(errs...)
}

// Revoke takes verb away from the rules of a role of the manifests (kind "ClusterRole" or
// "Role", name as in the manifests) for one resource ("pods", "podsets/status") of group,
// leaving the role's other grants as they were, and waits until the authorizer refuses it. The
// returned restore puts the role's rules back and waits until the authorizer grants a again.
func (in *Install) Revoke(kind, name string, a Access) (restore func()) {
	in.t.Helper()
	ctx := in.env.Context()
	rbac := in.client.RbacV1()
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	var orig []rbacv1.PolicyRule
	update := func(edit func([]rbacv1.PolicyRule) []rbacv1.PolicyRule) error {
		switch kind {
		case "ClusterRole":
			r, err := rbac.ClusterRoles().Get(ctx, in.names["ClusterRole/"+name], metav1.GetOptions{})
			if err != nil {
				return err
			}
			orig, r.Rules = r.Rules, edit(r.Rules)
			_, err = rbac.ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
			return err
		case "Role":
			r, err := rbac.Roles(in.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			orig, r.Rules = r.Rules, edit(r.Rules)
			_, err = rbac.Roles(in.Namespace).Update(ctx, r, metav1.UpdateOptions{})
			return err
		}
		return fmt.Errorf("kind %q: want ClusterRole or Role", kind)
	}
	found := false
	err := update(func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		out, found = withoutVerb(rules, a.Group, resource, a.Verb)
		return out
	})
	if err != nil {
		in.t.Fatalf("rbactest: revoking %s from %s %q: %v", a, kind, name, err)
	}
	if !found {
		in.t.Fatalf("rbactest: %s %q has no rule granting %s", kind, name, a)
	}
	revoked := orig
	in.AwaitAccess(a, false)
	return func() {
		in.t.Helper()
		if err := update(func([]rbacv1.PolicyRule) []rbacv1.PolicyRule { return revoked }); err != nil {
			in.t.Fatalf("rbactest: restoring %s %q: %v", kind, name, err)
		}
		in.AwaitAccess(a, true)
	}
}

// withoutVerb returns rules with verb on resource of group taken away, every other grant kept:
// a rule that grants it is split into the rule without the resource, the resource in the
// rule's other groups, and the resource in group without the verb (each dropped when empty). found reports whether any rule granted it.
func withoutVerb(rules []rbacv1.PolicyRule, group, resource, verb string) (out []rbacv1.PolicyRule, found bool) {
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, group) || !slices.Contains(r.Resources, resource) || !slices.Contains(r.Verbs, verb) {
			out = append(out, r)
			continue
		}
		found = true
		others, otherGroups, this := *r.DeepCopy(), *r.DeepCopy(), *r.DeepCopy()
		others.Resources = slices.DeleteFunc(others.Resources, func(s string) bool { return s == resource })
		otherGroups.Resources = []string{resource}
		otherGroups.APIGroups = slices.DeleteFunc(otherGroups.APIGroups, func(s string) bool { return s == group })
		this.Resources, this.APIGroups = []string{resource}, []string{group}
		this.Verbs = slices.DeleteFunc(this.Verbs, func(s string) bool { return s == verb })
		for _, keep := range []rbacv1.PolicyRule{others, otherGroups, this} {
			if len(keep.APIGroups) > 0 && len(keep.Resources) > 0 && len(keep.Verbs) > 0 {
				out = append(out, keep)
			}
		}
	}
	return out, found
}

// probePaths returns the paths of c's liveness and readiness probes, which must be on the port
// of the binary's --health-addr (healthPort).
func probePaths(t testing.TB, c corev1.Container, healthPort string) []string {
	t.Helper()
	if healthPort == "" {
		t.Fatalf("rbactest: container %q has no --health-addr=HOST:PORT argument for its probes", c.Name)
	}
	var paths []string
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		// CheckDeployment made sure both are HTTP probes on a port the container declares.
		port := p.HTTPGet.Port.String()
		for _, cp := range c.Ports {
			if cp.Name == port {
				port = strconv.Itoa(int(cp.ContainerPort))
			}
		}
		if port != healthPort {
			t.Fatalf("rbactest: container %q probes %s on port %s, but --health-addr serves port %s", c.Name, p.HTTPGet.Path, port, healthPort)
		}
		paths = append(paths, p.HTTPGet.Path)
	}
	return paths
}
