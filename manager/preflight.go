package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/sharding"
)

// Bounds of preflight's pause between asks while the API server does not answer.
const (
	preflightFirstRetry = time.Second
	preflightMaxRetry   = 30 * time.Second
)

// outsidePod reports whether leaderelection.DefaultLeaseNamespace fell back to
// leaderelection.DefaultNamespace: no $POD_NAMESPACE and no ServiceAccount namespace file. A
// Pod in that very namespace looks the same, and its check then finds the namespace.
func outsidePod() bool {
	return leaderelection.DefaultLeaseNamespace() == leaderelection.DefaultNamespace
}

// preflight asks the API server what Start must know before anything starts: that a Lease
// namespace which was defaulted outside a Pod exists (else the election or the ring would
// retry `namespaces "ctrlkit-system" not found` for ever; controller-runtime refuses to start
// out of a cluster without LeaderElectionNamespace), the ring's permissions and its mode.
// While the API server does not answer, it waits and asks again, as the informers and the
// election do; it returns ctx's error when ctx ends first.
func (m *Manager) preflight(ctx context.Context, logger klog.Logger) error {
	var checks []func(context.Context) error
	if m.elector != nil && m.leaseNamespaceDefaulted {
		ns := m.elector.Config().Namespace
		checks = append(checks, func(ctx context.Context) error {
			return m.checkLeaseNamespace(ctx, ns, "LeaderElection.Namespace", "--leader-elect-resource-namespace")
		})
	}
	if s := m.shard; s != nil {
		if s.namespaceDefaulted {
			checks = append(checks, func(ctx context.Context) error {
				return m.checkLeaseNamespace(ctx, s.cfg.Namespace, "Sharding.Config.Namespace", "--shard-namespace")
			})
		}
		if !s.opts.SkipAccessCheck {
			// A missing permission would otherwise show only as writes failing one by
			// one and keys that never move.
			checks = append(checks, func(ctx context.Context) error {
				return sharding.CheckAccess(ctx, m.client, s.cfg, s.opts.Sharder)
			})
		}
		checks = append(checks, func(ctx context.Context) error { return s.chooseMode(ctx, m.client) })
	}
	delay := preflightFirstRetry
	for _, check := range checks {
		for {
			err := check(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !unanswered(err) {
				return fmt.Errorf("manager: %w", err)
			}
			logger.Info("Waiting for the API server before starting", "err", err, "retryIn", delay)
			t := m.clock.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C():
			}
			delay = min(2*delay, preflightMaxRetry)
		}
	}
	return nil
}

// checkLeaseNamespace fails when the Lease namespace ns, defaulted outside a Pod, does not
// exist, naming the option and the flag that set it. A Forbidden answer means this identity
// may not read namespaces: it cannot tell, and goes on.
func (m *Manager) checkLeaseNamespace(ctx context.Context, ns, field, flag string) error {
	_, err := m.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return &OptionsError{Field: "manager.Options." + field, Reason: fmt.Sprintf(
			"the Lease namespace %q does not exist: it is the default outside a Pod; set %s (or this option) to a namespace that exists, or create %q",
			ns, flag, ns)}
	case apierrors.IsForbidden(err):
		klog.FromContext(ctx).V(2).Info("Cannot tell whether the Lease namespace exists", "namespace", ns, "err", err)
		return nil
	}
	return err
}

// unanswered reports whether err says the API server did not answer (or answered that it
// cannot now), which asking again may cure, rather than a refusal or a configuration error.
func unanswered(err error) bool {
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return true
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err)
}
