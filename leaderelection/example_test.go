package leaderelection_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// A single candidate acquires the Lease at once, leads until its ctx ends and, with
// ReleaseOnCancel, empties the Lease so a standby could take over immediately.
func Example() {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()

	var e *leaderelection.Elector
	e, err := leaderelection.NewElector(client, leaderelection.Config{
		Namespace:       "default",
		Name:            "example-controller",
		Identity:        "replica-1",
		ReleaseOnCancel: true,
	}, leaderelection.Callbacks{
		OnStartedLeading: func(ctx context.Context) {
			fmt.Println("started leading; leader is", e.Leader())
			cancel() // a controller would run here until ctx ends
			<-ctx.Done()
		},
		OnStoppedLeading: func() { fmt.Println("stopped leading") },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("Run returned", e.Run(ctx))
	fmt.Printf("leader after release: %q\n", e.Leader())
	// Output:
	// started leading; leader is replica-1
	// stopped leading
	// Run returned <nil>
	// leader after release: ""
}

// A second replica is a warm standby: it learns who leads, stays healthy and takes over
// when the leader goes away.
func Example_standby() {
	client := fake.NewClientset()
	ctx := klog.NewContext(context.Background(), logr.Discard())
	cfg := func(id string) leaderelection.Config {
		return leaderelection.Config{Namespace: "default", Name: "example-controller", Identity: id,
			LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
			ReleaseOnCancel: true}
	}
	leading := make(chan string, 2)
	seen := make(chan string, 2)
	onStart := func(id string) func(context.Context) {
		return func(ctx context.Context) { leading <- id; <-ctx.Done() }
	}

	first, _ := leaderelection.NewElector(client, cfg("replica-1"), leaderelection.Callbacks{OnStartedLeading: onStart("replica-1")})
	second, _ := leaderelection.NewElector(client, cfg("replica-2"), leaderelection.Callbacks{
		OnStartedLeading: onStart("replica-2"),
		OnNewLeader:      func(id string) { seen <- id },
	})

	ctx1, stop1 := context.WithCancel(ctx)
	done1 := make(chan error, 1)
	go func() { done1 <- first.Run(ctx1) }()
	fmt.Println(<-leading, "leads")

	ctx2, stop2 := context.WithCancel(ctx)
	defer stop2()
	done2 := make(chan error, 1)
	go func() { done2 <- second.Run(ctx2) }()
	fmt.Println("replica-2 sees", <-seen, "as leader; leading:", second.IsLeader())

	rec := httptest.NewRecorder()
	if err := second.Check(httptest.NewRequest(http.MethodGet, "/healthz", nil)); err != nil {
		http.Error(rec, err.Error(), http.StatusInternalServerError)
	}
	fmt.Println("standby /healthz:", rec.Code)

	stop1() // replica-1 shuts down and releases the Lease
	fmt.Println("replica-1 Run:", <-done1)
	fmt.Println(<-leading, "leads")
	stop2()
	fmt.Println("replica-2 Run:", <-done2)
	// Output:
	// replica-1 leads
	// replica-2 sees replica-1 as leader; leading: false
	// standby /healthz: 200
	// replica-1 Run: <nil>
	// replica-2 leads
	// replica-2 Run: <nil>
}

// Flags are kube-controller-manager's; defaults show in --help.
func ExampleConfig_AddFlags() {
	cfg := leaderelection.Config{Name: "my-controller"}
	fs := pflag.NewFlagSet("my-controller", pflag.ContinueOnError)
	cfg.AddFlags(fs)
	if err := fs.Parse([]string{"--leader-elect", "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Enabled, cfg.Name, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	// Left empty, the namespace is the Pod's (else ctrlkit-system), which WithDefaults reads.
	fmt.Printf("namespace %q\n", cfg.Namespace)
	fmt.Println("valid:", cfg.WithDefaults().Validate() == nil)

	fmt.Println(fs.Parse([]string{"--leader-elect-retry-period=soon"}) != nil)
	// Output:
	// true my-controller 30s 20s 2s
	// namespace ""
	// valid: true
	// true
}

// Every broken rule matches ErrInvalidConfig; the message names the rule and the values, and
// errors.As gives the field.
func ExampleConfig_Validate() {
	cfg := leaderelection.Config{Name: "my-controller", LeaseDuration: 15 * time.Second, RenewDeadline: 14 * time.Second}.WithDefaults()
	err := cfg.Validate()
	var ce *leaderelection.ConfigError
	fmt.Println(errors.Is(err, leaderelection.ErrInvalidConfig), errors.As(err, &ce) && ce.Field == "leaseDuration")
	fmt.Println(err)
	// Output:
	// true true
	// invalid leader election config: leaseDuration 15s, stored in whole seconds as 15s, must be greater than renewDeadline 14s + retryPeriod 2s = 16s
}

// Leader-election events on the Lease, as kube-controller-manager records them: give the
// Config an event recorder (here client-go's fake; in a process, one from a
// record.EventBroadcaster writing to the API server).
func ExampleConfig_eventRecorder() {
	events := record.NewFakeRecorder(10)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	err := leaderelection.Run(ctx, fake.NewClientset(), leaderelection.Config{
		Namespace:     "default",
		Name:          "example-controller",
		Identity:      "replica-1",
		EventRecorder: events,
	}, leaderelection.Callbacks{
		OnStartedLeading: func(context.Context) { cancel() }, // lead, then shut down
	})
	fmt.Println("Run:", err)
	close(events.Events)
	for ev := range events.Events {
		fmt.Println(ev)
	}
	// Output:
	// Run: <nil>
	// Normal LeaderElection replica-1 became leader
	// Normal LeaderElection replica-1 stopped leading
}
