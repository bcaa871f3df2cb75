package rbactest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestLoad(t *testing.T) {
	m, err := Load("testdata/deploy.yaml")
	require.NoError(t, err)
	assert.Len(t, m.Objects, 6)
	assert.Equal(t, "ops", m.Namespace)
	assert.Equal(t, "widget-controller", m.ServiceAccount)
	require.NotNil(t, m.Deployment)
	assert.Equal(t, "widget-controller", m.Deployment.Spec.Template.Spec.ServiceAccountName)

	_, err = Load("testdata/missing.yaml")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Each way a manifest can grant or run more than it should is an error naming the culprit.
func TestLoadRejects(t *testing.T) {
	data, err := os.ReadFile("testdata/deploy.yaml")
	require.NoError(t, err)
	for name, tc := range map[string]struct{ old, new, want string }{
		"wildcard verb":         {`verbs: ["list", "watch", "create"]`, `verbs: ["*"]`, `ClusterRole "widget-controller": invalid manifest: rule 0: a wildcard in verbs`},
		"wildcard resource":     {`resources: ["configmaps"]`, `resources: ["*"]`, `a wildcard in resources`},
		"unknown kind":          {"kind: Namespace", "kind: Secret", "kind /v1, Kind=Secret is not one a deploy directory may hold"},
		"two namespaces":        {"  name: widget-controller\n  namespace: ops\n---\napiVersion: rbac", "  name: widget-controller\n  namespace: dev\n---\napiVersion: rbac", `namespace "ops", where the other objects are in "dev"`},
		"no service account":    {"kind: ServiceAccount", "kind: ConfigMap", "no ServiceAccount"},
		"other account":         {"serviceAccountName: widget-controller", "serviceAccountName: default", `serviceAccountName "default", want "widget-controller"`},
		"root allowed":          {"runAsNonRoot: true", "runAsNonRoot: false", `container "controller": runAsNonRoot is not true`},
		"no seccomp":            {"seccompProfile: {type: RuntimeDefault}", "seccompProfile: {type: Unconfined}", "seccompProfile is not RuntimeDefault"},
		"escalation":            {"allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation is not false"},
		"writable root":         {"readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem is not true"},
		"capabilities":          {"drop: [ALL]", "drop: [NET_RAW]", "capabilities must drop [ALL]"},
		"probe on another port": {"port: health}", "port: metrics}", `livenessProbe port metrics is not a port of the container`},
		"no readiness probe":    {"readinessProbe: {httpGet: {path: /readyz, port: 8081}}", "", "no HTTP readinessProbe"},
		"not yaml":              {"kind: Deployment", "kind: [", "document 6: invalid manifest"},
	} {
		t.Run(name, func(t *testing.T) {
			require.Contains(t, string(data), tc.old)
			p := filepath.Join(t.TempDir(), "deploy.yaml")
			require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), tc.old, tc.new, 1)), 0o600))
			_, err := Load(p)
			assert.ErrorIs(t, err, ErrInvalidManifest)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestExpand(t *testing.T) {
	c := corev1.Container{
		Args: []string{"--ns=$(POD_NAMESPACE)", "--mode=$(MODE)-x", "--plain"},
		Env: []corev1.EnvVar{
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "MODE", Value: "fast"},
		},
	}
	args, err := expand(c, "test-ns")
	require.NoError(t, err)
	assert.Equal(t, []string{"--ns=test-ns", "--mode=fast-x", "--plain"}, args)
	assert.Equal(t, "--ns=$(POD_NAMESPACE)", c.Args[0], "the container is not changed")

	c.Args = []string{"--node=$(NODE_NAME)"}
	_, err = expand(c, "test-ns")
	assert.ErrorContains(t, err, "$(NODE_NAME)")
}

func TestWithoutVerb(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"list", "create"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"me"}, Verbs: []string{"get"}},
	}
	out, found := withoutVerb(rules, "", "pods", "create")
	require.True(t, found)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "create"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		rules[1], rules[2],
	}, out)
	assert.Equal(t, []string{"pods", "configmaps"}, rules[0].Resources, "the input is not changed")

	out, found = withoutVerb(rules, "events.k8s.io", "events", "patch")
	require.True(t, found)
	assert.Equal(t, []rbacv1.PolicyRule{
		rules[0],
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}},
		rules[2],
	}, out)

	out, found = withoutVerb(rules, "coordination.k8s.io", "leases", "get")
	require.True(t, found)
	assert.Equal(t, rules[:2], out, "a rule left with no verb goes")

	_, found = withoutVerb(rules, "apps", "pods", "create")
	assert.False(t, found)
}

func TestAccessString(t *testing.T) {
	assert.Equal(t, "create pods", Access{Verb: "create", Resource: "pods"}.String())
	assert.Equal(t, "update podsets/status.examples.ctrlkit.dev", Access{Verb: "update", Group: "examples.ctrlkit.dev", Resource: "podsets", Subresource: "status"}.String())
	assert.Equal(t, "get leases.coordination.k8s.io me", Access{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: "me", ClusterScoped: true}.String())
}
