package main

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(testkit.WithSharedAPIServer(m)) }

// run is main without os.Exit (see demo.Runner).
var run = demo.Runner(func() demo.Program { return program(&options{}) })

func TestRunConvergesWithThePodCounterOff(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	require.Equal(t, 0, run(context.Background(), nil, &out), out.String())
	assert.Contains(t, out.String(), `"Controller disabled by its feature gate" controller="pod-counter" feature="PodCounter"`)
	assert.Contains(t, out.String(), `names=["configmap-propagator"]`)
	assert.NotContains(t, out.String(), `"Counted pods"`)
	assert.Contains(t, out.String(), `"Demo converged`)
}

func TestRunConvergesWithThePodCounterOn(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"--feature-gates=PodCounter=true", "--workers=3"}, &out), out.String())
	assert.Contains(t, out.String(), `names=["configmap-propagator","pod-counter"]`)
	assert.Contains(t, out.String(), `"Counted pods"`)
	assert.Contains(t, out.String(), `"Demo converged"`)
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers=0"}, "--workers must be at least 1, got 0"},
		{[]string{"--workers=many"}, `invalid argument "many" for "--workers" flag`},
		{[]string{"--feature-gates=PodCounter=maybe"}, "invalid value of PodCounter=maybe"},
		{[]string{"--feature-gates=PodCount=true"}, "unrecognized feature gate: PodCount"},
		{[]string{"--feature-gates=PodCounter"}, "missing bool value for PodCounter"},
		{[]string{"--leader-elect-renew-deadline=20s"}, "invalid leader election config: leaseDuration 15s must be greater than renewDeadline 20s"},
		{[]string{"--leader-elect-retry-period=0s"}, "invalid leader election config: retryPeriod 0s must be greater than zero"},
		{[]string{"--leader-elect-lease-duration=soon"}, `invalid argument "soon" for "--leader-elect-lease-duration" flag`},
		{[]string{"--source-namespace="}, "--source-namespace must not be empty"},
		{[]string{"--timeout=0s"}, "--timeout must be positive"},
		{[]string{"--health"}, "unknown flag: --health"},
	} {
		var out bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), tc.args, &out), "%v: %s", tc.args, out.String())
		assert.Contains(t, out.String(), tc.want, "%v", tc.args)
		assert.Contains(t, out.String(), "multi-controller: ", "%v: the message names the program", tc.args)
	}
	// Rules between values are checked only when they matter: without an election, its
	// durations are not used.
	var out bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"--leader-elect=false", "--leader-elect-renew-deadline=20s"}, &out), out.String())

	out.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, &out))
	for _, flag := range []string{"--kubeconfig", "--leader-elect ", "--leader-elect-lease-duration", "--feature-gates",
		"PodCounter=true|false (ALPHA - default=false)", "--workers", "--metrics-addr", "--health-addr"} {
		assert.Contains(t, out.String(), flag)
	}
}

func TestRunFailsWhenItCannotServe(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var out bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"--health-addr=" + ln.Addr().String()}, &out))
	assert.Contains(t, out.String(), ln.Addr().String())
}

// startManager runs the binary's controllers (addControllers) in a Manager on a fake cluster
// and returns the fake's env and the controllers' names.
func startManager(t *testing.T, args ...string) (*testkit.FakeEnv, []string) {
	t.Helper()
	var o options
	s, err := demo.Parse(program(&o), append([]string{"--leader-elect=false", "--metrics-addr=", "--health-addr="}, args...), &bytes.Buffer{})
	require.NoError(t, err)
	env := testkit.NewFake(t)
	for _, obj := range seed(o.sourceNamespace) {
		create(t, env, obj)
	}
	mgr, err := manager.New(manager.Options{Client: env.Client(), FeatureGate: s.Gate})
	require.NoError(t, err)
	names, err := addControllers(env.Context(), &demo.Env{Client: env.Client(), Manager: mgr, Gate: s.Gate, Workers: s.Workers}, &o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(env.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	return env, names
}

func create(t *testing.T, env *testkit.FakeEnv, obj runtime.Object) {
	t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = env.Client().CoreV1().Namespaces().Create(env.Context(), o, metav1.CreateOptions{})
	case *corev1.ConfigMap:
		_, err = env.Client().CoreV1().ConfigMaps(o.Namespace).Create(env.Context(), o, metav1.CreateOptions{})
	case *corev1.Pod:
		_, err = env.Client().CoreV1().Pods(o.Namespace).Create(env.Context(), o, metav1.CreateOptions{})
	default:
		t.Fatalf("unexpected seed %T", obj)
	}
	require.NoError(t, err)
}

// watches counts the watch requests for resource.
func watches(env *testkit.FakeEnv, resource string) int {
	n := 0
	for _, a := range env.Actions() {
		if a.GetVerb() == "watch" && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func copiedEverywhere(t *testing.T, env *testkit.FakeEnv) func() bool {
	return func() bool {
		for _, ns := range []string{"team-a", "team-b"} {
			_, err := env.Client().CoreV1().ConfigMaps(ns).Get(env.Context(), "shared-config", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false
			}
			require.NoError(t, err)
		}
		return true
	}
}

// Off by default, the pod-counter neither runs nor costs a watch: no Pod is listed or watched,
// no Namespace is annotated, while the propagator next to it does its work.
func TestTheGatedControllerDoesNotRunUnlessEnabled(t *testing.T) {
	env, names := startManager(t)
	assert.Equal(t, []string{"configmap-propagator"}, names)
	require.Eventually(t, copiedEverywhere(t, env), 20*time.Second, 5*time.Millisecond)

	for _, a := range env.Actions() {
		if a.GetResource().Resource == "pods" && (a.GetVerb() == "list" || a.GetVerb() == "watch") {
			t.Errorf("pods were %sed with the pod-counter off", a.GetVerb())
		}
		if a.GetResource().Resource == "namespaces" && a.GetVerb() == "patch" {
			t.Errorf("a namespace was patched with the pod-counter off")
		}
	}
	list, err := env.Client().CoreV1().Namespaces().List(env.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, ns := range list.Items {
		assert.NotContains(t, ns.Annotations, AnnotationPodCount, ns.Name)
	}
}

// On, it counts; and both controllers read Namespaces from one shared informer: one watch.
func TestTheGatedControllerRunsWhenEnabledAndSharesInformers(t *testing.T) {
	env, names := startManager(t, "--feature-gates=PodCounter=true")
	assert.Equal(t, []string{"configmap-propagator", "pod-counter"}, names)
	require.Eventually(t, copiedEverywhere(t, env), 20*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		ns, err := env.Client().CoreV1().Namespaces().Get(env.Context(), "team-a", metav1.GetOptions{})
		require.NoError(t, err)
		return ns.Annotations[AnnotationPodCount] == "2"
	}, 20*time.Second, 5*time.Millisecond)
	// A reflector watches once its list is done, which may be after the controllers converged.
	require.Eventually(t, func() bool { return watches(env, "namespaces") >= 1 && watches(env, "pods") >= 1 },
		20*time.Second, 5*time.Millisecond, "the Namespace and Pod watches start")
	assert.Equal(t, 1, watches(env, "namespaces"), "one Namespace watch for two controllers")
	assert.Equal(t, 1, watches(env, "pods"))
}
