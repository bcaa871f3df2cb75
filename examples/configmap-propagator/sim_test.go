package main

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

const simSource = "ctrlkit-system"

// The propagator under the simulator's faults, on the demo's world (a source with a default
// selector, one selecting env=dev, one whose selector does not parse, a target name taken by a
// ConfigMap that is not a copy): end state and writes must be those of the run without faults,
// and every source's copies must be where its selector says.
func TestSimPropagator(t *testing.T) {
	sim.Check(t, propagatorScenario(), sim.Crash(), sim.StaleRestart(30*time.Second), sim.MergeEvents(30*time.Second),
		sim.Relist(30*time.Second), sim.APIErrors(20), sim.Drift())
}

func propagatorScenario() sim.Scenario {
	return sim.Scenario{
		Objects: seed(simSource),
		Start: func(p *sim.Process) error {
			c, err := propagator.New(p.Factory, p.Client, propagator.Options{SourceNamespace: simSource, Workers: 1,
				RetryTakenAfter: time.Second}) // the demo's: a taken name is looked at again soon
			if err != nil {
				return err
			}
			p.Run(c)
			return nil
		},
		Workload: []sim.Step{
			{Name: "label namespace team-c as a target", Do: func(ctx context.Context, u *sim.User) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					ns, err := u.Client.CoreV1().Namespaces().Get(ctx, "team-c", metav1.GetOptions{})
					if err != nil {
						return err
					}
					ns.Labels = map[string]string{propagator.LabelPropagate: "true"}
					_, err = u.Client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
					return err
				})
			}},
			{Name: "change shared-config's log level", Do: func(ctx context.Context, u *sim.User) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					cm, err := u.Client.CoreV1().ConfigMaps(simSource).Get(ctx, "shared-config", metav1.GetOptions{})
					if err != nil {
						return err
					}
					cm.Data["log-level"] = "debug"
					_, err = u.Client.CoreV1().ConfigMaps(simSource).Update(ctx, cm, metav1.UpdateOptions{})
					return err
				})
			}},
			{Name: "team-b deletes its own shared-config, freeing the name", Do: func(ctx context.Context, u *sim.User) error {
				return u.Client.CoreV1().ConfigMaps("team-b").Delete(ctx, "shared-config", metav1.DeleteOptions{})
			}},
			{Name: "delete the source dev-tools", Do: func(ctx context.Context, u *sim.User) error {
				return u.Client.CoreV1().ConfigMaps(simSource).Delete(ctx, "dev-tools", metav1.DeleteOptions{})
			}},
		},
		Invariants: []sim.Invariant{{Name: "every valid source has an equal copy in each namespace it selects, and no copy is elsewhere", Check: copiesMatchSources}},
	}
}

// copiesMatchSources checks the propagator's promise against the world.
func copiesMatchSources(ctx context.Context, u *sim.User) error {
	nss, err := u.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	srcs, err := u.Client.CoreV1().ConfigMaps(simSource).List(ctx, metav1.ListOptions{LabelSelector: propagator.LabelPropagate + "=true"})
	if err != nil {
		return err
	}
	want := map[string]*corev1.ConfigMap{} // "namespace/name" of each copy → its source
	for i := range srcs.Items {
		src := &srcs.Items[i]
		targets := src.Annotations[propagator.AnnotationTargets]
		if targets == "" {
			targets = propagator.DefaultTargets
		}
		sel, err := labels.Parse(targets)
		if err != nil {
			continue // bad input: left alone
		}
		for _, ns := range nss.Items {
			if ns.Name != simSource && sel.Matches(labels.Set(ns.Labels)) {
				want[ns.Name+"/"+src.Name] = src
			}
		}
	}
	for key, src := range want {
		ns := key[:len(key)-len(src.Name)-1]
		cp, err := u.Client.CoreV1().ConfigMaps(ns).Get(ctx, src.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no copy of %s/%s in %s", simSource, src.Name, ns)
		}
		if err != nil {
			return err
		}
		if cp.Annotations[propagator.AnnotationSource] != simSource+"/"+src.Name {
			continue // a name taken by someone else's ConfigMap: never overwritten
		}
		if !maps.Equal(cp.Data, src.Data) {
			return fmt.Errorf("copy %s holds %v, its source %v", key, cp.Data, src.Data)
		}
	}
	all, err := u.Client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, cm := range all.Items {
		if cm.Annotations[propagator.AnnotationSource] != "" && want[cm.Namespace+"/"+cm.Name] == nil {
			return fmt.Errorf("copy %s/%s of %s should not exist", cm.Namespace, cm.Name, cm.Annotations[propagator.AnnotationSource])
		}
	}
	return nil
}
