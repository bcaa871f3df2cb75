package sim_test

import (
	"context"
	"fmt"
	"strings"
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
// sim.MergeEvents(30*time.Second), sim.Relist(30*time.Second), sim.APIErrors(20), sim.Drift())
// runs it under each fault for sim.Seeds() seeds and fails any run whose end state or writes
// differ from the run without faults.
func Example() {
	mirror := mirrorScenario()
	_ = mirror // sim.Check(t, mirror, ...) in a test function
	for _, f := range []sim.Fault{sim.Crash(), sim.StaleRestart(30 * time.Second), sim.MergeEvents(30 * time.Second),
		sim.Relist(30 * time.Second), sim.APIErrors(20), sim.Drift()} {
		fmt.Println(f)
	}
	// Output:
	// crash
	// stale-restart-30s
	// merge-events-30s
	// relist-30s
	// api-errors-20%
	// drift
}

// mirrorScenario is the example's scenario.
func mirrorScenario() sim.Scenario {
	return sim.Scenario{
		Start: func(p *sim.Process) error {
			cms, err := informer.For[*corev1.ConfigMap](p.Factory)
			if err != nil {
				return err
			}
			c, err := controller.New("mirror", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
				cm, err := cms.Lister().Get(key.Namespace, key.Name)
				if apierrors.IsNotFound(err) || (err == nil && cm.Labels["copy"] == "true") {
					return controller.Result{}, nil
				}
				if err != nil {
					return controller.Result{}, err
				}
				_, err = p.Client.CoreV1().ConfigMaps(key.Namespace).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-copy", Labels: map[string]string{"copy": "true"}},
					Data:       cm.Data,
				}, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					err = nil
				}
				return controller.Result{}, err
			}), controller.Options[controller.Key]{Workers: 1}) // one worker: a reproducible trace
			if err != nil {
				return err
			}
			// A copy's events reconcile its original: without this, a copy another actor deletes
			// is never put back, which sim.Drift found in the first version of this example.
			source := func(cm *corev1.ConfigMap) []controller.Key {
				if cm.Labels["copy"] == "true" {
					return []controller.Key{{Namespace: cm.Namespace, Name: strings.TrimSuffix(cm.Name, "-copy")}}
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
