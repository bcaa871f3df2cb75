package main

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

// seed is the in-memory cluster's starting state: a source namespace with three ConfigMaps to
// propagate (one with a broken selector), two labelled target namespaces, one with a dev label,
// one unlabelled, and a name already taken by someone else's ConfigMap in team-b.
func seed(src string) []runtime.Object {
	ns := func(name string, lbls map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	}
	cm := func(ns, name string, annotations, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations,
			Labels: map[string]string{propagator.LabelPropagate: "true", "app.kubernetes.io/part-of": "platform"}}, Data: data}
	}
	target := map[string]string{propagator.LabelPropagate: "true"}
	return []runtime.Object{
		ns(src, nil), ns("team-a", target), ns("team-b", target), ns("team-c", nil),
		ns("sandbox", map[string]string{"env": "dev"}),
		cm(src, "shared-config", nil, map[string]string{"log-level": "info", "region": "eu-west-1"}),
		cm(src, "dev-tools", map[string]string{propagator.AnnotationTargets: "env=dev"}, map[string]string{"debug": "true"}),
		cm(src, "broken", map[string]string{propagator.AnnotationTargets: "env in (dev"}, map[string]string{"x": "y"}),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "shared-config"}, Data: map[string]string{"mine": "yes"}},
	}
}

// runDemo walks through what the propagator does, waiting for each step to converge.
func runDemo(ctx context.Context, env *demo.Env, o *options) error {
	logger := klog.FromContext(ctx).WithName("demo")
	client := env.Client
	src := o.opts.SourceNamespace
	cms := func(ns string) typedcorev1.ConfigMapInterface { return client.CoreV1().ConfigMaps(ns) }
	step := func(what string, cond func(context.Context) (bool, error)) error { return env.Step(ctx, what, cond) }
	// copyIs reports whether ns holds a copy of src/name with the source's current data.
	copyIs := func(ns, name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			s, err := cms(src).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c, err := cms(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && c.Annotations[propagator.AnnotationSource] == src+"/"+name && maps.Equal(c.Data, s.Data), err
		}
	}
	gone := func(ns, name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			_, err := cms(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
	}
	all := func(conds ...func(context.Context) (bool, error)) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			for _, c := range conds {
				if ok, err := c(ctx); !ok || err != nil {
					return false, err
				}
			}
			return true, nil
		}
	}
	labelNamespace := func(name string, value *string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if value == nil {
				delete(ns.Labels, propagator.LabelPropagate)
			} else {
				if ns.Labels == nil {
					ns.Labels = map[string]string{}
				}
				ns.Labels[propagator.LabelPropagate] = *value
			}
			_, err = client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
			return err
		})
	}

	if err := step("shared-config copied to team-a, dev-tools to sandbox; team-b's own shared-config left alone",
		all(copyIs("team-a", "shared-config"), copyIs("sandbox", "dev-tools"), gone("team-c", "shared-config"))); err != nil {
		return err
	}
	if c, err := cms("team-b").Get(ctx, "shared-config", metav1.GetOptions{}); err != nil || c.Data["mine"] != "yes" {
		return fmt.Errorf("team-b's own shared-config was overwritten (%v)", err)
	}

	logger.Info("Editing the source: log-level=debug")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := cms(src).Get(ctx, "shared-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Data["log-level"] = "debug"
		_, err = cms(src).Update(ctx, s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := step("the edit reached team-a", copyIs("team-a", "shared-config")); err != nil {
		return err
	}

	logger.Info("Deleting team-a's copy by hand")
	if err := cms("team-a").Delete(ctx, "shared-config", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := step("team-a's copy recreated", copyIs("team-a", "shared-config")); err != nil {
		return err
	}

	logger.Info("Labelling team-c, unlabelling team-a")
	if err := labelNamespace("team-c", new("true")); err != nil {
		return err
	}
	if err := labelNamespace("team-a", nil); err != nil {
		return err
	}
	if err := step("copy added to team-c and removed from team-a",
		all(copyIs("team-c", "shared-config"), gone("team-a", "shared-config"))); err != nil {
		return err
	}

	logger.Info("team-b's owner deletes their shared-config")
	if err := cms("team-b").Delete(ctx, "shared-config", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("team-b gets the copy (the propagator looks again after %v)", o.opts.RetryTakenAfter),
		copyIs("team-b", "shared-config")); err != nil {
		return err
	}
	logger.Info("Demo converged")
	return nil
}
