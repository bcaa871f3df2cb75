package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func main() { demo.Main(program(&options{})) }

// options are this binary's own flags; package demo parses the shared ones.
type options struct {
	namespace         string
	namespaceSelector string // namespaces.go
	installCRD        bool
	webhooks          webhookOptions
}

// clients are what the controller talks to: a clientset for Pods and events, a dynamic client
// for PodSets (and the CRD).
type clients struct {
	typed   kubernetes.Interface
	dynamic dynamic.Interface
}

// program is what is particular to this binary; package demo does the rest (flags, cluster,
// Manager, kubelet, demo).
func program(o *options) demo.Program {
	// Events name the objects they are about by kind: the scheme must know PodSet.
	scheme := runtime.NewScheme()
	schemeErr := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme))
	var c *podset.Controller // built by Setup, watched by Demo
	// The demo's system outside the cluster: each PodSet's record there is removed by the
	// controller's finalizer before the PodSet may go.
	records := podset.NewMemoryRecords()
	return demo.Program{
		Name:      "podset",
		Workers:   podset.DefaultWorkers,
		Verbosity: 1, // 2 shows every Pod and status write
		Scheme:    scheme,
		AddFlags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.namespace, "namespace", "", "watch only this namespace (default all; the in-memory demo uses "+demoNamespace+")")
			fs.BoolVar(&o.installCRD, "install-crd", true, "install the PodSet CRD at start when it is missing; with false, wait for it (/readyz names it meanwhile), and stop and wait again whenever it is deleted")
			addNamespaceSelectorFlag(fs, &o.namespaceSelector)
			o.webhooks.addFlags(fs)
		},
		Complete: func(_ *pflag.FlagSet, inMemory bool) error {
			if err := demo.CheckNamespace("--namespace", o.namespace); err != nil {
				return err
			}
			if inMemory && o.namespace != "" && o.namespace != demoNamespace {
				return fmt.Errorf("--namespace %q: the in-memory demo runs in %q", o.namespace, demoNamespace)
			}
			if err := completeNamespaceSelector(o, inMemory); err != nil {
				return err
			}
			if err := o.webhooks.complete(inMemory); err != nil {
				return err
			}
			return schemeErr
		},
		Cluster: func() (fakecluster.Options, error) {
			podsets, pods, err := seed()
			if err != nil {
				return fakecluster.Options{}, err
			}
			objs := pods
			for _, ps := range podsets {
				objs = append(objs, ps)
			}
			return fakecluster.Options{Objects: objs, Resources: []fakecluster.Resource{{
				GVR: v1alpha1.GVR, Kind: v1alpha1.Kind, Namespaced: true, StatusSubresource: true,
			}}}, nil
		},
		Cache: func(c *informer.Options) { c.Namespace = o.namespace },
		Setup: func(ctx context.Context, env *demo.Env) error {
			logger := klog.FromContext(ctx)
			if !env.InMemory {
				if err := o.webhooks.setup(ctx, env, o.namespace); err != nil {
					return err
				}
				if o.webhooks.url == "" && o.installCRD {
					// Installs, never upgrades: a CRD already there is used as it is. With
					// --webhook-url, setup applied the two-version CRD instead.
					if err := demo.UntilAnswered(ctx, "installing the PodSet CRD", func(ctx context.Context) error {
						return customresource.EnsureCRDFromYAML(ctx, env.Dynamic, v1alpha1.CRDManifest)
					}); err != nil {
						return err
					}
					logger.Info("PodSet CRD is served", "crd", v1alpha1.CRDName)
				}
			}
			namespaces, err := namespaceSet(env, o.namespaceSelector)
			if err != nil {
				return err
			}
			build := func(_ context.Context, f *informer.Factory) (manager.Runnable, error) {
				var err error
				c, err = podset.New(f, env.Client, env.Dynamic, podset.Options{
					Workers:    env.Workers,
					Recorder:   env.Manager.EventRecorderFor(podset.Name),
					Logger:     logger,
					Records:    records,
					Namespaces: namespaces,
				})
				return c, err
			}
			if env.InMemory {
				// The in-memory cluster declares PodSets without a CRD object to watch.
				r, err := build(ctx, env.Manager.Factory())
				if err != nil {
					return err
				}
				return env.Manager.Add(r)
			}
			// Runs while the CRD is served: started when it is (at once when installed
			// above), stopped when it is deleted, started again, newly built, when it returns.
			return env.Manager.AddWhenServed(manager.WhenServed{
				Name: podset.Name, Resources: []schema.GroupVersionResource{v1alpha1.GVR}, Build: build,
			})
		},
		Demo:            func(ctx context.Context, env *demo.Env) error { return runDemo(ctx, env, c, records) },
		Kubelet:         &kubelet.Options{StartupDelay: 300 * time.Millisecond, Namespace: demoNamespace},
		RealClusterHint: "Running; create a PodSet with: kubectl apply -f examples/podset/podset.yaml",
	}
}
