package main

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func main() { demo.Main(program()) }

// ShardRing is the ring --sharded joins: --shard-ring=replicasets.
const ShardRing = "replicasets"

// program is what is particular to this binary; package demo does the rest (flags, cluster,
// Manager, kubelet, demo).
func program() demo.Program {
	return demo.Program{
		Name:      "replicaset",
		LeaseName: "ctrlkit-replicaset-controller",
		Workers:   5, // kube-controller-manager's --concurrent-replicaset-syncs
		Features:  features,
		Cluster: func() (fakecluster.Options, error) {
			return fakecluster.Options{Objects: seed()}, nil
		},
		Setup: func(ctx context.Context, env *demo.Env) error {
			factory := env.Manager.Factory()
			if env.Sharded {
				// Only this replica's ReplicaSets, and their Pods, are listed and cached.
				factory = env.Manager.ShardFactory()
			}
			rsc, err := NewReplicaSetController(factory, env.Client, Options{Workers: env.Workers, FeatureGate: env.Gate,
				Logger: klog.FromContext(ctx), Recorder: env.Manager.EventRecorderFor(ControllerName)})
			if err != nil {
				return err
			}
			klog.FromContext(ctx).Info("Feature gates", "enabled", env.Gate.Enabled(ReplicaSetSlowStartBatching), "feature", ReplicaSetSlowStartBatching)
			if env.Sharded {
				return manager.AddSharded(env.Manager, rsc, rsc.rss, rsc.pods)
			}
			return env.Manager.Add(rsc)
		},
		// --sharded: the ReplicaSets are split across the replicas, each Pod following its
		// controlling ReplicaSet.
		Sharding: &demo.Sharding{
			Ring:     ShardRing,
			Resource: appsv1.SchemeGroupVersion.WithResource("replicasets"),
			Kind:     appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
			Children: []schema.GroupVersionResource{corev1.SchemeGroupVersion.WithResource("pods")},
		},
		Demo:    runDemo,
		Kubelet: &kubelet.Options{StartupDelay: podStartupDelay},
	}
}
