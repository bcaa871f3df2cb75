package podsetwebhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podsetwebhook"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// serveWebhooks runs a webhook Server with the PodSet webhooks in the test process until the
// test ends, and returns where the API server reaches it.
func serveWebhooks(t *testing.T, env *testkit.Env, opts webhook.ServerOptions) (testkit.WebhookServer, string) {
	t.Helper()
	dir, ca := testkit.WebhookCerts(t)
	opts.Addr, opts.CertDir = "127.0.0.1:0", dir
	srv, err := webhook.NewServer(opts)
	require.NoError(t, err)
	require.NoError(t, podsetwebhook.Register(srv))
	ctx, cancel := context.WithCancel(env.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return srv.Addr() != "", nil
	}))
	return testkit.WebhookServer{URL: "https://" + srv.Addr(), CABundle: ca.CAPEM}, dir
}

// installAdmission installs the PodSet webhook configurations, scoped to env's namespace.
func installAdmission(t *testing.T, env *testkit.Env, s testkit.WebhookServer) {
	t.Helper()
	mutating, validating := podsetwebhook.Configurations("", admissionregistrationv1.WebhookClientConfig{})
	mutating.GenerateName, validating.GenerateName = "podset-"+env.Namespace()+"-", "podset-"+env.Namespace()+"-"
	_, err := env.InstallMutatingWebhook(s, mutating)
	require.NoError(t, err)
	_, err = env.InstallValidatingWebhook(s, validating)
	require.NoError(t, err)
}

func sample(ns, name string) *v1alpha1.PodSet {
	ps := podSet(nil, nil, map[string]string{"app": name})
	ps.Namespace, ps.Name = ns, name
	return ps
}

// Through a real kube-apiserver: an invalid PodSet is refused with the validator's message,
// defaults appear on created objects, and the selector cannot be changed.
func TestAdmissionThroughTheAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1alpha1.CRDManifest))
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	s, _ := serveWebhooks(t, env, webhook.ServerOptions{})
	installAdmission(t, env, s)

	bad := sample(ns, "bad")
	bad.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	var refusal error
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		// Dry run: until the API server has picked the configuration up, nothing is created.
		_, refusal = podsets.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return refusal != nil, nil
	}), "the validating webhook never refused the PodSet")
	require.True(t, apierrors.IsInvalid(refusal), "%v", refusal)
	assert.Contains(t, refusal.Error(), `admission webhook "vpodset.examples.ctrlkit.dev" denied the request`)
	assert.Contains(t, refusal.Error(), `spec.template.metadata.labels: Invalid value: {"app":"bad"}: selector "app=other" does not match the template's labels`)
	var status apierrors.APIStatus
	require.ErrorAs(t, refusal, &status)
	require.NotNil(t, status.Status().Details)
	require.Len(t, status.Status().Details.Causes, 1)
	assert.Equal(t, "spec.template.metadata.labels", status.Status().Details.Causes[0].Field)

	// No selector and no replicas: the mutating webhook sets them before the schema's
	// required check runs.
	var created *v1alpha1.PodSet
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		created, err = podsets.Create(ctx, sample(ns, "web"), metav1.CreateOptions{})
		return err == nil, nil
	}), "the defaulted PodSet was never admitted: %v", err)
	assert.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, created.Spec.Selector)
	assert.Equal(t, ptr.To[int32](1), created.Spec.Replicas)
	assert.Equal(t, podsetwebhook.ManagedBy, created.Labels[podsetwebhook.ManagedByLabel])

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ps, err := podsets.Get(ctx, ns, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ps.Spec.Selector.MatchLabels["tier"] = "front"
		ps.Spec.Template.Labels["tier"] = "front"
		_, err = podsets.Update(ctx, ps, metav1.UpdateOptions{})
		return err
	})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.True(t, strings.Contains(err.Error(), "spec.selector: Invalid value") && strings.Contains(err.Error(), "field is immutable"), err.Error())
}
