package sharding_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// Rendezvous hashing gives every process the same answer, and a member
// leaving moves only its own keys.
func ExampleNewRing() {
	three := sharding.NewRing("web", []string{"web-0", "web-1", "web-2"})
	two := sharding.NewRing("web", []string{"web-0", "web-2"})
	for _, key := range []string{"default/a", "default/b", "default/c", "default/d"} {
		fmt.Printf("%s: %s -> %s\n", key, three.Owner(key), two.Owner(key))
	}
	// Output:
	// default/a: web-1 -> web-2
	// default/b: web-2 -> web-2
	// default/c: web-1 -> web-0
	// default/d: web-2 -> web-2
}

// A child built by a sharded controller carries its owner's assignment, so
// it is in the owner's member's cache from its first event.
func ExampleInherit() {
	owner := &metav1.ObjectMeta{Name: "web", Labels: map[string]string{
		"app": "web", sharding.Label("pods"): "web-1", sharding.DrainLabel("pods"): "true",
	}}
	child := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Labels: map[string]string{"app": "web"}}}
	sharding.Inherit(owner, child)
	fmt.Println(child.Labels)
	// Output:
	// map[app:web shard.ctrlkit.dev/pods:web-1]
}

// Bad configuration is refused before anything starts, naming the culprit.
func ExampleConfig_Validate() {
	err := sharding.Config{Ring: "web", Identity: "Web_0"}.WithDefaults().Validate()
	fmt.Println(err)
	// Output:
	// invalid sharding config: identity "Web_0" must also be usable in the Lease name <ring>.<identity> (lower-case alphanumerics, '-' and '.'): a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
}

// The wiring of one sharded controller: a member, a sharder candidate, the
// informers selecting the member's label, the dispatcher between the
// controller's queue and its workers, and a Group running them while this
// replica is a member. Run it in every replica with its own identity (a Pod's name); a
// manager.Manager runs the Group as it is (it needs no leader election).
// With a Manager, manager.Options.Sharding and manager.AddSharded do all of
// this (see manager's ExampleAddSharded).
func ExampleNewGroup() {
	run := func(ctx context.Context, client kubernetes.Interface, meta metadata.Interface, podName string, r controller.Reconciler[controller.Key]) error {
		cfg := sharding.Config{Ring: "configmaps", Namespace: "my-system", Identity: podName}
		opts := sharding.SharderOptions{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}
		if err := sharding.CheckAccess(ctx, client, cfg, opts); err != nil {
			return err
		}
		member, err := sharding.NewMember(client, cfg, sharding.MemberOptions{})
		if err != nil {
			return err
		}
		sharder, err := sharding.NewSharder(client, meta, cfg, opts)
		if err != nil {
			return err
		}
		factory := informer.NewFactory(client, informer.Options{})
		cms, err := informer.For[*corev1.ConfigMap](factory, informer.WithLabelSelector[*corev1.ConfigMap](member.Selector()))
		if err != nil {
			return err
		}
		c, err := controller.New("configmaps", r, controller.Options[controller.Key]{})
		if err != nil {
			return err
		}
		if err := controller.Watch(c, cms, controller.EnqueueObject); err != nil {
			return err
		}
		dispatcher, err := sharding.NewDispatcher(member, cms, c.Enqueue, sharding.DispatcherOptions{Metadata: meta})
		if err != nil {
			return err
		}
		if err := c.SetAdmission(dispatcher); err != nil {
			return err
		}
		group, err := sharding.NewGroup("configmaps", member, sharder, factory, dispatcher, c)
		if err != nil {
			return err
		}
		return group.Run(ctx)
	}
	_ = run
}

// A Manager runs a Group as it runs a controller: on every replica, since a
// Group needs no leader election, with the member's Lease as a readiness
// check.
func ExampleGroup_manager() {
	setup := func(mgr *manager.Manager, group *sharding.Group) error {
		if err := mgr.AddReadyzCheck("shard-"+group.Name(), group.Member().Check); err != nil {
			return err
		}
		return mgr.Add(group)
	}
	_ = setup
}

var _ manager.LeaderElectionRunnable = (*sharding.Group)(nil)

// A binary's ring comes from its flags; every error names the flag.
func ExampleConfig_AddFlags() {
	var ring sharding.Config
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	ring.AddFlags(fs)
	_ = fs.Parse([]string{"--shard-ring=replicasets", "--shard-identity=controller-0", "--shard-renew-deadline=20s"})
	// Left empty, the namespace is the Pod's (else ctrlkit-system), which WithDefaults reads.
	fmt.Printf("%v %s %s %q\n", ring.Sharded(), ring.Ring, ring.Identity, ring.Namespace)
	fmt.Println(ring.ValidateFlags())
	// Output:
	// true replicasets controller-0 ""
	// --shard-lease-duration: invalid sharding config: leaseDuration 15s must be greater than renewDeadline 20s
}

// A server-side ring (ModeServer) writes no object: the sharder records the
// member's hash slots in its Lease, the keeper makes the member's informers
// select them (a ShardSet) and records what it serves, and the dispatcher
// admits the keys of served slots. ctrlkit's fake cluster serves shard
// selectors as an API server with the ShardedListAndWatch gate does.
func ExampleNewSlotKeeper() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := fakecluster.New(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}},
	)
	if err != nil {
		panic(err)
	}
	client := cluster.Clientset()
	served, _ := sharding.ServesShardSelector(ctx, client, "default")
	fmt.Println("shard selectors served:", served)

	cfg := sharding.Config{Ring: "configmaps", Namespace: "default", Identity: "member-0", Mode: sharding.ModeServer}
	member, err := sharding.NewMember(client, cfg, sharding.MemberOptions{})
	if err != nil {
		panic(err)
	}
	sharder, err := sharding.NewSharder(client, nil, cfg, sharding.SharderOptions{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}})
	if err != nil {
		panic(err)
	}
	set, err := informer.NewShardSet()
	if err != nil {
		panic(err)
	}
	factory := informer.NewFactory(client, informer.Options{ShardSet: set})
	cms, err := informer.For[*corev1.ConfigMap](factory)
	if err != nil {
		panic(err)
	}
	keeper, err := sharding.NewSlotKeeper(member, set, factory.HasSynced, sharding.SlotKeeperOptions{})
	if err != nil {
		panic(err)
	}
	reconciled := make(chan string, 10)
	c, err := controller.New("configmaps", controller.ReconcilerFunc[controller.Key](func(_ context.Context, k controller.Key) (controller.Result, error) {
		reconciled <- k.Name
		return controller.Result{}, nil
	}), controller.Options[controller.Key]{})
	if err != nil {
		panic(err)
	}
	if err := controller.Watch(c, cms, controller.EnqueueObject); err != nil {
		panic(err)
	}
	dispatcher, err := sharding.NewSlotDispatcher(keeper, cms, c.Enqueue)
	if err != nil {
		panic(err)
	}
	if err := c.SetAdmission(dispatcher); err != nil {
		panic(err)
	}
	group, err := sharding.NewGroup("configmaps", member, sharder, factory, keeper, dispatcher, c)
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- group.Run(ctx) }()

	names := []string{<-reconciled, <-reconciled}
	slices.Sort(names)
	fmt.Println("reconciled:", names)
	lease, err := client.CoordinationV1().Leases("default").Get(ctx, "configmaps.member-0", metav1.GetOptions{})
	if err != nil {
		panic(err)
	}
	_, slots, _ := strings.Cut(lease.Annotations[sharding.SlotsAnnotation("configmaps")], ":")
	fmt.Println("slots:", slots)
	cancel()
	fmt.Println(<-done)
	// Output:
	// shard selectors served: true
	// reconciled: [a b]
	// slots: 0-63
	// <nil>
}
