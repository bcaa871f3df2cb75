package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/customresource"
	webappv1 "github.com/ctrlkit/ctrlkit/examples/webapp/api/v1"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

// The WebApp operator under the simulator's faults, on a fake cluster that serves the generated
// CRD (schema, defaults, status subresource): end state and writes must be those of the run
// without faults, and the registry must hold an entry for each WebApp and no other. There is
// no Deployment controller: a Deployment's status stays empty (its readiness is
// controller_test.go's), so that a Deployment sim.Drift deletes comes back as it was.
// NewWebAppController has no worker option; its controller runs the default, one worker, which
// is what a reproducible trace needs.
func TestSimWebApp(t *testing.T) {
	sim.Check(t, webAppScenario(), sim.Crash(), sim.StaleRestart(30*time.Second), sim.MergeEvents(30*time.Second),
		sim.Relist(30*time.Second), sim.APIErrors(20), sim.Drift())
}

// Two replicas of the operator's Manager, electing a leader: the leader crashed, its Lease
// renewals failing, or cut off the API server, in the middle of its work. The other takes over
// and the WebApps, their Deployments and the registry end as without faults.
func TestSimWebAppFailover(t *testing.T) {
	s := webAppScenario()
	s.Replicas = 2
	s.Start = func(p *sim.Process) error {
		mgr, err := manager.New(manager.Options{Client: p.Client, Dynamic: p.Dynamic, Factory: p.Factory,
			LeaderElection: &leaderelection.Config{Enabled: true, Namespace: "kube-system", Name: "webapp-operator"}})
		if err != nil {
			return err
		}
		c, err := NewWebAppController(mgr)
		if err != nil {
			return err
		}
		p.Run(c)
		p.RunManager(mgr)
		return nil
	}
	sim.Check(t, s, sim.Crash(), sim.LeaseStall(30*time.Second), sim.Partition(30*time.Second))
}

func webAppScenario() sim.Scenario {
	apps := func(u *sim.User) *customresource.Client[*webappv1.WebApp] {
		c, err := customresource.NewClient[*webappv1.WebApp](u.Dynamic, webappv1.GVR)
		if err != nil {
			panic(err) // a GVR and a dynamic client: cannot fail
		}
		return c
	}
	return sim.Scenario{
		CRDs:    [][]byte{webappv1.CRDManifest},
		Objects: []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RegistryNamespace}}},
		Start: func(p *sim.Process) error {
			mgr, err := manager.New(manager.Options{Client: p.Client, Dynamic: p.Dynamic, Factory: p.Factory})
			if err != nil {
				return err
			}
			c, err := NewWebAppController(mgr)
			if err != nil {
				return err
			}
			p.Run(c) // the simulation runs it: mgr is only where it was added
			return nil
		},
		Workload: []sim.Step{
			{Name: "create WebApps shop and blog", Do: func(ctx context.Context, u *sim.User) error {
				for _, name := range []string{"shop", "blog"} {
					if _, err := apps(u).Create(ctx, &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
						Spec: webappv1.WebAppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2)}}, metav1.CreateOptions{}); err != nil {
						return err
					}
				}
				return nil
			}},
			{Name: "roll out a new image and port to shop", Do: func(ctx context.Context, u *sim.User) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					app, err := apps(u).Get(ctx, "default", "shop", metav1.GetOptions{})
					if err != nil {
						return err
					}
					app.Spec.Image, app.Spec.Port = "nginx:1.28", 9090
					_, err = apps(u).Update(ctx, app, metav1.UpdateOptions{})
					return err
				})
			}},
			{Name: "delete blog", Do: func(ctx context.Context, u *sim.User) error {
				return apps(u).Delete(ctx, "default", "blog", metav1.DeleteOptions{})
			}},
			// The fake cluster has no garbage collector: without this step blog's Deployment and
			// Service outlive it, and sim.Drift's deleting one of them is a difference from the
			// run without faults that no cluster would show. As the collector does, it waits for
			// blog to be gone (its finalizer first), then deletes its dependents.
			{Name: "the garbage collector deletes blog's Deployment and Service", Do: func(ctx context.Context, u *sim.User) error {
				for range 600 {
					if _, err := apps(u).Get(ctx, "default", "blog", metav1.GetOptions{}); apierrors.IsNotFound(err) {
						return errors.Join(client.IgnoreNotFound(u.Client.AppsV1().Deployments("default").Delete(ctx, "blog", metav1.DeleteOptions{})),
							client.IgnoreNotFound(u.Client.CoreV1().Services("default").Delete(ctx, "blog", metav1.DeleteOptions{})))
					}
					time.Sleep(time.Second) // virtual
				}
				return errors.New("blog is still there after ten minutes")
			}},
		},
		Invariants: []sim.Invariant{{Name: "the registry holds an entry for each WebApp, at its port, and no other", Check: func(ctx context.Context, u *sim.User) error {
			list, err := apps(u).List(ctx, "default", metav1.ListOptions{})
			if err != nil {
				return err
			}
			entries, err := u.Client.CoreV1().ConfigMaps(RegistryNamespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			want := map[string]string{}
			for _, app := range list.Items {
				want[app.Namespace+"."+app.Name] = fmt.Sprint(app.Spec.Port)
			}
			for _, e := range entries.Items {
				port, ok := want[e.Name]
				if !ok {
					return fmt.Errorf("registry entry %s has no WebApp", e.Name)
				}
				if e.Data["port"] != port {
					return fmt.Errorf("registry entry %s: port %q, the WebApp's %s", e.Name, e.Data["port"], port)
				}
				delete(want, e.Name)
			}
			for name := range want {
				return fmt.Errorf("WebApp %s has no registry entry", name)
			}
			return nil
		}}},
	}
}
