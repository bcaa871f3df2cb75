package podsetwebhook_test

import (
	"context"
	"crypto/tls"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// Through a real kube-apiserver with the two-version CRD converted by the webhook: objects
// written as v1alpha1 read as v1beta1 and back, equal; objects written as v1beta1 read as
// v1alpha1; the PodSet controller (which reads and writes v1alpha1) keeps working while
// clients use both versions; and a certificate rotation while requests go on fails none. Its
// own API server: the test changes the cluster-scoped CRD.
func TestConversionThroughTheAPIServer(t *testing.T) {
	env := testkit.NewAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	// The rotation replaces the CA too (SelfSigned keeps no CA key), so the caBundle trusts
	// both CAs from the start, as a CA rotation does.
	next, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	s, dir := serveWebhooks(t, env, webhook.ServerOptions{CertReloadInterval: 50 * time.Millisecond})
	s.CABundle = append(append([]byte(nil), s.CABundle...), next.CAPEM...)

	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1beta1.CRDManifest))
	require.NoError(t, env.SetCRDConversion(v1beta1.CRDName, s, v1beta1.ConversionPath))
	installAdmission(t, env, s)
	alpha, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	beta, err := customresource.NewClient[*v1beta1.PodSet](env.Dynamic(), v1beta1.GVR)
	require.NoError(t, err)

	ctrl, err := podset.New(env.Factory(), env.Client(), env.Dynamic(), podset.Options{})
	require.NoError(t, err)
	env.RunController(ctx, ctrl)

	poll := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, cond), what)
	}

	// Written as v1alpha1 (defaulted by the webhook: selector, managed-by label)...
	in := sample(ns, "alpha")
	in.Spec.Replicas = ptr.To[int32](2)
	var created *v1alpha1.PodSet
	poll("the v1alpha1 PodSet is admitted", func(ctx context.Context) (bool, error) {
		created, err = alpha.Create(ctx, in, metav1.CreateOptions{})
		return err == nil, nil
	})
	// ... read as v1beta1: what v1alpha1's ConvertTo makes of it.
	var asBeta *v1beta1.PodSet
	poll("the PodSet reads as v1beta1", func(ctx context.Context) (bool, error) {
		asBeta, err = beta.Get(ctx, ns, "alpha", metav1.GetOptions{})
		return err == nil, nil
	})
	want := &v1beta1.PodSet{}
	require.NoError(t, created.ConvertTo(want))
	assert.Equal(t, want.Spec, asBeta.Spec)
	assert.Equal(t, &v1beta1.ScaleSpec{Replicas: 2}, asBeta.Spec.Scale)
	assert.Equal(t, created.UID, asBeta.UID)
	assert.Equal(t, created.Labels, asBeta.Labels)
	// ... and back as v1alpha1, equal.
	back, err := alpha.Get(ctx, ns, "alpha", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, created.Spec, back.Spec)
	assert.Equal(t, created.ObjectMeta.UID, back.ObjectMeta.UID)

	// Written as v1beta1 (admitted by the v1alpha1 webhooks after conversion), read as v1alpha1.
	b := &v1beta1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "beta"},
		Spec: v1beta1.PodSetSpec{
			Scale: &v1beta1.ScaleSpec{Replicas: 3},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "beta"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	createdBeta, err := beta.Create(ctx, b, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "beta"}}, createdBeta.Spec.Selector, "defaulted through the v1alpha1 webhook")
	asAlpha, err := alpha.Get(ctx, ns, "beta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int32](3), asAlpha.Spec.Replicas)

	// The controller (v1alpha1) serves both; clients see its status at either version.
	replicas := func(name string, n int32) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			ps, err := beta.Get(ctx, ns, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			pods, err := env.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil {
				return false, err
			}
			return ps.Status.Replicas == n && ps.Status.ObservedGeneration == ps.Generation && len(pods.Items) == int(n), nil
		}
	}
	poll("alpha has 2 Pods", replicas("alpha", 2))
	poll("beta has 3 Pods", replicas("beta", 3))
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ps, err := beta.Get(ctx, ns, "beta", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ps.Spec.Scale.Replicas = 1
		_, err = beta.Update(ctx, ps, metav1.UpdateOptions{})
		return err
	}))
	poll("beta, scaled to 1 through v1beta1, has 1 Pod", replicas("beta", 1))

	// Certificate rotation while clients read both versions: no request fails.
	var failures, successes atomic.Int32
	var lastErr atomic.Value
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := beta.List(ctx, ns, metav1.ListOptions{}); err != nil {
					failures.Add(1)
					lastErr.Store(err.Error())
				} else {
					successes.Add(1)
				}
			}
		})
	}
	require.NoError(t, next.WriteFiles(dir))
	served := func() string {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), &tls.Config{RootCAs: next.CertPool(), MinVersion: tls.VersionTLS12})
		if err != nil {
			return ""
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	poll("the new certificate is served", func(context.Context) (bool, error) {
		return served() == next.Certificate.Leaf.SerialNumber.String(), nil
	})
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ps, err := beta.Get(ctx, ns, "alpha", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ps.Spec.Scale.Replicas = 3
		_, err = beta.Update(ctx, ps, metav1.UpdateOptions{})
		return err
	}))
	poll("alpha, scaled to 3 through v1beta1 after the rotation, has 3 Pods", replicas("alpha", 3))
	stop.Store(true)
	wg.Wait()
	assert.Zero(t, failures.Load(), "requests failed during the rotation, the last: %v", lastErr.Load())
	assert.Positive(t, successes.Load(), "requests were made during the rotation")
}
