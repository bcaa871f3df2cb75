package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/fleet-policy/fleetpolicy"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func main() { demo.Main(program(&options{})) }

// options are this binary's own flags; package demo parses the shared ones.
type options struct {
	sourceNamespace   string
	clustersNamespace string
	clusterSelector   string
	secretKey         string
	// spokes are the in-memory demo's clusters.
	spokes map[string]*fakecluster.Cluster
	list   *multicluster.List
}

func program(o *options) demo.Program {
	return demo.Program{
		Name: "fleet-policy",
		AddFlags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.sourceNamespace, "source-namespace", "fleet-system", "hub namespace of the source ConfigMap "+fleetpolicy.DefaultName)
			fs.StringVar(&o.clustersNamespace, "clusters-namespace", "fleet-system", "hub namespace of the clusters' kubeconfig Secrets")
			fs.StringVar(&o.clusterSelector, "cluster-selector", "", "label selector of the kubeconfig Secrets (empty: all of --clusters-namespace)")
			fs.StringVar(&o.secretKey, "secret-key", multicluster.DefaultSecretKey, "data key of the kubeconfig in each Secret (Cluster API's: value)")
		},
		Complete: func(fs *pflag.FlagSet, inMemory bool) error {
			if o.sourceNamespace == "" || o.clustersNamespace == "" {
				return errors.New("--source-namespace and --clusters-namespace must not be empty")
			}
			if err := demo.CheckNamespace("--source-namespace", o.sourceNamespace); err != nil {
				return err
			}
			if err := demo.CheckNamespace("--clusters-namespace", o.clustersNamespace); err != nil {
				return err
			}
			if o.secretKey == "" {
				return errors.New("--secret-key must not be empty")
			}
			return nil
		},
		Cluster: func() (fakecluster.Options, error) {
			return fakecluster.Options{Objects: []runtime.Object{
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.sourceNamespace}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.sourceNamespace, Name: fleetpolicy.DefaultName},
					Data: map[string]string{"policy": "deny-all"}},
			}}, nil
		},
		Setup: func(ctx context.Context, env *demo.Env) error {
			var provider multicluster.Provider = &multicluster.Secrets{Client: env.Client, Namespace: o.clustersNamespace,
				LabelSelector: o.clusterSelector, Key: o.secretKey}
			if env.InMemory {
				// The in-memory hub has no clusters to reach: two
				// in-memory clusters stand in for its Secrets.
				conns := map[string]multicluster.Connection{}
				o.spokes = map[string]*fakecluster.Cluster{}
				for _, name := range []string{"east", "west"} {
					fc, err := fakecluster.New(
						&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{fleetpolicy.LabelBaseline: "true"}}},
						&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}})
					if err != nil {
						return err
					}
					o.spokes[name] = fc
					conns[name] = multicluster.Connection{Client: fc.Clientset(), Dynamic: fc.Dynamic(), Metadata: fc.Metadata()}
				}
				o.list = multicluster.NewList(conns)
				provider = o.list
			}
			fleet, err := multicluster.New(multicluster.Options{Provider: provider, Registerer: env.Manager.Registerer()})
			if err != nil {
				return err
			}
			c, err := fleetpolicy.New(env.Manager.Factory(), fleet, fleetpolicy.Options{SourceNamespace: o.sourceNamespace, Workers: env.Workers})
			if err != nil {
				return err
			}
			if err := env.Manager.Add(fleet); err != nil {
				return err
			}
			return env.Manager.Add(c)
		},
		Demo: func(ctx context.Context, env *demo.Env) error { return runDemo(ctx, env, o) },
		RealClusterHint: "put each member cluster's kubeconfig in a Secret of --clusters-namespace, the source ConfigMap " +
			fleetpolicy.DefaultName + " in --source-namespace, and label namespaces " + fleetpolicy.LabelBaseline + "=true",
	}
}

// runDemo walks through the fleet journey on the in-memory clusters.
func runDemo(ctx context.Context, env *demo.Env, o *options) error {
	has := func(client kubernetes.Interface, ns, data string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, fleetpolicy.DefaultName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return data == "", nil
			}
			return err == nil && cm.Data["policy"] == data, err
		}
	}
	for name, fc := range o.spokes {
		if err := env.Step(ctx, "cluster "+name+": team-a has the baseline", has(fc.Clientset(), "team-a", "deny-all")); err != nil {
			return err
		}
	}
	src, err := env.Client.CoreV1().ConfigMaps(o.sourceNamespace).Get(ctx, fleetpolicy.DefaultName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	src.Data["policy"] = "allow-dns"
	if _, err := env.Client.CoreV1().ConfigMaps(o.sourceNamespace).Update(ctx, src, metav1.UpdateOptions{}); err != nil {
		return err
	}
	for name, fc := range o.spokes {
		if err := env.Step(ctx, "cluster "+name+": the hub's edit arrived", has(fc.Clientset(), "team-a", "allow-dns")); err != nil {
			return err
		}
	}
	east := o.spokes["east"].Clientset()
	if err := east.CoreV1().ConfigMaps("team-a").Delete(ctx, fleetpolicy.DefaultName, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := env.Step(ctx, "cluster east: drift repaired", has(east, "team-a", "allow-dns")); err != nil {
		return err
	}
	north, err := fakecluster.New(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops", Labels: map[string]string{fleetpolicy.LabelBaseline: "true"}}})
	if err != nil {
		return err
	}
	if err := o.list.Add("north", multicluster.Connection{Client: north.Clientset(), Dynamic: north.Dynamic(), Metadata: north.Metadata()}); err != nil {
		return fmt.Errorf("engaging north: %w", err)
	}
	if err := env.Step(ctx, "cluster north, engaged later: ops has the baseline", has(north.Clientset(), "ops", "allow-dns")); err != nil {
		return err
	}
	klog.FromContext(ctx).WithName("demo").Info("Demo converged")
	return nil
}
