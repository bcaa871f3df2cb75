package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The journey of an operator whose leader loses its Lease while clients write PodSets: the
// webhooks go on answering on every replica, the leader included. The Lease is taken by
// another holder while admission calls run without pause; the binary stops its controller
// and does not exit, /readyz stays ok, no admission call fails, and once the Lease is free
// the binary leads again and its controller works. Then an admission policy refuses its Lease
// updates: it loses the Lease again, /readyz stays ok throughout while /readyz?verbose names
// the refusal, no admission call fails, and once the policy is lifted the line clears and it
// leads again. Its own API server: the binary changes
// the cluster-scoped CRD.
func TestWebhooksServeThroughALostLease(t *testing.T) {
	env := testkit.NewAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(kubeconfig, env.Config()))
	ports := freePorts(t, 2)
	addr, health := ports[0], ports[1]
	const lease = "ctrlkit-podset"

	runCtx, cancel := context.WithCancel(ctx)
	out := &rbactest.LogBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"--kubeconfig", kubeconfig, "--namespace", ns, "-v", "2",
			"--health-addr", health, "--metrics-addr", "",
			"--leader-elect-resource-namespace", ns, "--leader-elect-resource-name", lease,
			"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "250ms",
			"--webhook-addr", addr, "--webhook-url", "https://" + addr}, out)
	}()
	exited := false
	defer func() {
		cancel()
		if !exited {
			assert.Equal(t, 0, <-done)
		}
		if t.Failed() {
			t.Log(out.String())
		}
	}()
	alpha, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	leases := env.Client().CoordinationV1().Leases(ns)
	poll := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, cond), what)
	}
	ready := func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+health+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK, nil
	}

	// admit makes one round of what clients do: a PodSet without a selector is defaulted (the
	// mutating webhook), one whose selector misses its template is refused (the validating one).
	admit := func(ctx context.Context, i int) error {
		good := webPodSet(1)
		good.Namespace, good.Name, good.Spec.Selector = ns, fmt.Sprintf("dry-%d", i), nil
		got, err := alpha.Create(ctx, good, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return fmt.Errorf("defaulting: %w", err)
		}
		if got.Spec.Selector == nil {
			return errors.New("defaulting: the selector was not defaulted")
		}
		bad := webPodSet(1)
		bad.Namespace, bad.Name = ns, fmt.Sprintf("bad-%d", i)
		bad.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
		_, err = alpha.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "does not match the template's labels") {
			return fmt.Errorf("validation: want the validator's refusal, got %v", err)
		}
		return nil
	}
	poll("the webhooks answer", func(ctx context.Context) (bool, error) { return admit(ctx, 0) == nil, nil })
	var holder string
	poll("the binary leads", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, lease, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return holder != "" && strings.Count(out.String(), `"Started leading`) == 1, nil
	})

	// Clients call the webhooks without pause from here on.
	var calls atomic.Int64
	var failMu sync.Mutex
	var failures []error
	callCtx, stopCalls := context.WithCancel(ctx)
	var callers sync.WaitGroup
	callers.Go(func() {
		for i := 1; callCtx.Err() == nil; i++ {
			if err := admit(callCtx, i); err != nil && callCtx.Err() == nil {
				failMu.Lock()
				failures = append(failures, err)
				failMu.Unlock()
			}
			calls.Add(1)
		}
	})
	defer func() {
		stopCalls()
		callers.Wait()
	}()

	// Another holder takes the Lease, as a partition that outlasted the renew deadline would
	// leave it.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error { // the leader renews meanwhile
		l, err := leases.Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NowMicro()
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To("thief"), ptr.To[int32](3600)
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}))
	poll("the binary steps down", func(context.Context) (bool, error) {
		return strings.Contains(out.String(), `"Lost the lease: the controllers that need leader election stopped; contending for it again"`), nil
	})
	select {
	case code := <-done:
		exited = true
		t.Fatalf("the binary exited (%d) after losing its Lease", code)
	default:
	}
	atLoss := calls.Load()
	poll("admission goes on while another replica holds the Lease", func(context.Context) (bool, error) {
		return calls.Load() >= atLoss+20, nil
	})
	ok, err := ready(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "/readyz while not leading: a standby serves webhooks, so it is ready")
	l, err := leases.Get(ctx, lease, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "thief", ptr.Deref(l.Spec.HolderIdentity, ""), "a standby does not take a Lease whose holder renews")

	// The Lease is free again: the binary leads again and its controller works.
	require.NoError(t, leases.Delete(ctx, lease, metav1.DeleteOptions{}))
	poll("the binary leads again", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, lease, metav1.GetOptions{})
		return err == nil && ptr.Deref(l.Spec.HolderIdentity, "") == holder && strings.Count(out.String(), `"Started leading`) == 2, nil
	})
	ps := webPodSet(2)
	ps.Namespace = ns
	_, err = alpha.Create(ctx, ps, metav1.CreateOptions{})
	require.NoError(t, err)
	poll("the controller runs 2 Pods for a PodSet created after the new term began", func(ctx context.Context) (bool, error) {
		ps, err := alpha.Get(ctx, ns, "web", metav1.GetOptions{})
		return err == nil && ps.Status.Replicas == 2, nil
	})

	// An admission policy now refuses the binary its Lease updates, as a Role edited without
	// the rule would: it cannot renew and loses the Lease, yet stays ready (its webhooks keep
	// their Service's endpoints), and /readyz?verbose names the refusal until it is lifted.
	refuseLeaseUpdates(t, env.Client(), ns, lease)
	verbose := func(want string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+health+"/readyz?verbose", nil)
			if err != nil {
				return false, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "/readyz?verbose while the Lease is refused: %s", body)
			return strings.Contains(string(body), want), nil
		}
	}
	poll("/readyz?verbose names the refused update", verbose("[+]leaderelection ok, but: cannot update lease "+ns+"/"+lease+": "))
	poll("the binary loses the Lease it cannot renew, ready all along", func(ctx context.Context) (bool, error) {
		ok, err := ready(ctx)
		require.NoError(t, err)
		require.True(t, ok, "/readyz while the Lease is refused")
		return strings.Count(out.String(), `"Lost the lease"`) == 2, nil
	})
	atRefusal := calls.Load()
	poll("admission goes on while the Lease is refused", func(context.Context) (bool, error) {
		return calls.Load() >= atRefusal+20, nil
	})
	require.NoError(t, env.Client().AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "refuse-lease-updates", metav1.DeleteOptions{}))
	poll("the refusal clears from /readyz?verbose", verbose("[+]leaderelection ok\n"))
	poll("the binary leads again", func(context.Context) (bool, error) {
		return strings.Count(out.String(), `"Started leading`) == 3, nil
	})
	assert.Equal(t, 1, strings.Count(out.String(), `"The API server refuses this replica its lease`), "logged once")
	assert.Contains(t, out.String(), `"The lease is accessible again"`)

	stopCalls()
	callers.Wait()
	failMu.Lock()
	defer failMu.Unlock()
	assert.Empty(t, failures, "admission calls failed around the lost and the refused Lease")
	assert.Greater(t, calls.Load(), atRefusal+20)
}

// refuseLeaseUpdates makes the API server refuse every update of the Lease namespace/name, with
// a ValidatingAdmissionPolicy and its binding "refuse-lease-updates" (deleting the binding lifts
// it).
func refuseLeaseUpdates(t *testing.T, client kubernetes.Interface, namespace, name string) {
	t.Helper()
	ctx := t.Context()
	reg := client.AdmissionregistrationV1()
	_, err := reg.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-lease-updates"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"v1"},
						Resources: []string{"leases"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.namespace != %q || object.metadata.name != %q", namespace, name),
				Message:    "lease updates refused by the test",
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = reg.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-lease-updates"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "refuse-lease-updates",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}
