package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podsetwebhook"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The webhook mode's rights are an opt-in file, deploy/rbac-webhook.yaml, proven needed and
// sufficient on a real API server, with the binary run as the Deployment runs it (its arguments,
// a token of its ServiceAccount as its only credentials) plus --webhook-addr and --webhook-url.
// With rbac.yaml alone it exits at start, naming the refused patch of its CRD. With the file, it
// installs the two-version CRD and both webhook configurations, and they work: an invalid PodSet
// is refused with the validator's message, a v1beta1 PodSet is converted and defaulted. Without
// any one rule of the file (creating the CRD and each configuration on a fresh cluster, patching
// each configuration once they exist) it exits naming that refusal. Its own API server: the
// binary writes the cluster-scoped CRD and webhook configurations.
func TestAPIServerWebhookModeLeastPrivilege(t *testing.T) {
	env := testkit.NewAPIServer(t)
	ctx := env.Context()
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/deployment.yaml")
	addr := freePort(t)
	webhookMode := []string{"--namespace", in.Namespace, "--webhook-addr", addr, "--webhook-url", "https://" + addr}

	crd := func(verb string) rbactest.Access {
		return rbactest.Access{Verb: verb, Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions",
			Name: v1alpha1.CRDName, ClusterScoped: true}
	}
	configuration := func(verb, resource string) rbactest.Access {
		return rbactest.Access{Verb: verb, Group: "admissionregistration.k8s.io", Resource: resource,
			Name: podsetwebhook.DefaultConfigurationName, ClusterScoped: true}
	}
	const mutating, validating = "mutatingwebhookconfigurations", "validatingwebhookconfigurations"
	exitsRefused := func(a rbactest.Access) {
		t.Helper()
		p := in.Start(run, webhookMode...)
		assert.Equal(t, 1, p.Wait(), "a right the binary needs at start: exit 1")
		lines := p.ForbiddenLines(in, a)
		if assert.Len(t, lines, 1, "the refusal of %s, logged once as the reason of the exit", a) {
			assert.Contains(t, lines[0], `"Exiting"`)
		}
	}
	revokedExitsRefused := func(a rbactest.Access) {
		t.Helper()
		restore := in.Revoke("ClusterRole", "ctrlkit-podset-webhook", a)
		exitsRefused(a)
		restore()
	}

	exitsRefused(crd("patch")) // rbac.yaml alone

	in.Grant("deploy/rbac-webhook.yaml")
	// On a fresh cluster Install creates, in order, the CRD and the two configurations; each run
	// gets one step further.
	for _, a := range []rbactest.Access{crd("create"), configuration("create", mutating), configuration("create", validating)} {
		revokedExitsRefused(a)
	}

	p := in.Start(run, webhookMode...)
	alpha, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	beta, err := customresource.NewClient[*v1beta1.PodSet](env.Dynamic(), v1beta1.GVR)
	require.NoError(t, err)
	poll := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, cond), what)
	}
	bad := webPodSet(1)
	bad.Namespace = in.Namespace
	bad.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	poll("the validating webhook refuses a PodSet whose selector misses its template", func(ctx context.Context) (bool, error) {
		_, err := alpha.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), `selector "app=db" does not match the template's labels`), nil
	})
	web := &v1beta1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: "web"},
		Spec: v1beta1.PodSetSpec{
			Scale: &v1beta1.ScaleSpec{Replicas: 2},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	_, err = beta.Create(ctx, web, metav1.CreateOptions{})
	require.NoError(t, err, "a v1beta1 PodSet is converted and admitted")
	ps, err := alpha.Get(ctx, in.Namespace, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), ps.Spec.DesiredReplicas())
	assert.Equal(t, map[string]string{"app": "web"}, ps.Spec.Selector.MatchLabels, "the mutating webhook defaulted the selector")
	assert.Equal(t, podsetwebhook.ManagedBy, ps.Labels[podsetwebhook.ManagedByLabel])
	assert.Contains(t, p.Output(), `"PodSet webhooks installed"`)
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")

	// Installed: every later start patches them (the CRD's patch was refused first above).
	for _, a := range []rbactest.Access{configuration("patch", mutating), configuration("patch", validating)} {
		revokedExitsRefused(a)
	}
}
