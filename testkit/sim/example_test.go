package sim_test

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

// A scenario: a controller that keeps a "<name>-copy" of every ConfigMap, and what its users
// do. In a test, sim.Check(t, mirror, sim.Crash(), sim.StaleRestart(30*time.Second),
// sim.MergeEvents(30*time.Second), sim.Relist(30*time.Second), sim.APIErrors(20), sim.Drift(), sim.Edit())
// runs it under each fault for sim.Seeds() seeds and fails any run whose end state or writes
// differ from the run without faults.
func Example() {
	mirror := mirrorScenario()
	_ = mirror // sim.Check(t, mirror, ...) in a test function
	for _, f := range []sim.Fault{sim.Crash(), sim.StaleRestart(30 * time.Second), sim.MergeEvents(30 * time.Second),
		sim.Relist(30 * time.Second), sim.APIErrors(20), sim.Drift(), sim.Edit()} {
		fmt.Println(f)
	}
	// Output:
	// crash
	// stale-restart-30s
	// merge-events-30s
	// relist-30s
	// api-errors-20%
	// drift
	// edit
}

// mirrorScenario is the example's scenario: a controller that keeps "<name>-copy", owned by
// its source, equal to every ConfigMap.
func mirrorScenario() sim.Scenario {
	return sim.Scenario{
		Start: func(p *sim.Process) error {
			cms, err := informer.For[*corev1.ConfigMap](p.Factory)
			if err != nil {
				return err
			}
			c, err := controller.New("mirror", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
				src, err := cms.Lister().Get(key.Namespace, key.Name)
				if apierrors.IsNotFound(err) || (err == nil && metav1.GetControllerOf(src) != nil) {
					return controller.Result{}, nil // gone, or a copy itself
				}
				if err != nil {
					return controller.Result{}, err
				}
				want := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-copy", Labels: map[string]string{"copy": "true"},
						OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(src, corev1.SchemeGroupVersion.WithKind("ConfigMap"))}},
					Data: src.Data,
				}
				have, err := cms.Lister().Get(key.Namespace, want.Name)
				switch {
				case apierrors.IsNotFound(err):
					_, err = p.Client.CoreV1().ConfigMaps(key.Namespace).Create(ctx, want, metav1.CreateOptions{})
					if apierrors.IsAlreadyExists(err) {
						err = nil // the cache has not shown it yet; its event brings the key back
					}
				case err == nil && (!maps.Equal(have.Data, want.Data) || !maps.Equal(have.Labels, want.Labels)):
					fix := have.DeepCopy()
					fix.Data, fix.Labels = want.Data, want.Labels
					_, err = p.Client.CoreV1().ConfigMaps(key.Namespace).Update(ctx, fix, metav1.UpdateOptions{})
				}
				return controller.Result{}, err
			}), controller.Options[controller.Key]{Workers: 1}) // one worker: a reproducible trace
			if err != nil {
				return err
			}
			// A copy's events reconcile its source: without this, a copy another actor deletes or
			// edits is never put back, which sim.Drift found in the first version of this example
			// (as it found that telling copies by a label let an edited label make a copy of a copy).
			source := func(cm *corev1.ConfigMap) []controller.Key {
				if ref := metav1.GetControllerOf(cm); ref != nil && ref.Kind == "ConfigMap" {
					return []controller.Key{{Namespace: cm.Namespace, Name: ref.Name}}
				}
				return []controller.Key{{Namespace: cm.Namespace, Name: cm.Name}}
			}
			if err := controller.Watch(c, cms, source); err != nil {
				return err
			}
			p.Run(c)
			return nil
		},
		Workload: []sim.Step{{Name: "create a ConfigMap", Do: func(ctx context.Context, u *sim.User) error {
			_, err := u.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			return err
		}}},
	}
}
