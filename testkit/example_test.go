package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// labelSeen is the controller the examples test: it labels every ConfigMap seen=true.
func labelSeen(env *testkit.Env) (*controller.Controller[controller.Key], error) {
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	if err != nil {
		return nil, err
	}
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		cm, err := cms.Lister().Get(key.Namespace, key.Name)
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		if err != nil || cm.Labels["seen"] == "true" {
			return controller.Result{}, err
		}
		cm = cm.DeepCopy()
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels["seen"] = "true"
		_, err = env.Client().CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return controller.Result{}, err // an injected failure is retried with backoff
	})
	c, err := controller.New("label-seen", r, controller.Options[controller.Key]{
		Workers: 2,
		// Retries come back within WaitForQuiet's quiet period, so a key in backoff is never
		// mistaken for a settled one for long.
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](time.Millisecond, 20*time.Millisecond),
		Retry:       controller.Backoff(100, controller.Every(5*time.Minute)),
	})
	if err != nil {
		return nil, err
	}
	return c, controller.Watch(c, cms, controller.EnqueueObject)
}

func ExampleNewFake() {
	// In a real test t is the test's *testing.T; an Example has none, so exampleT stands in.
	runExample(func(t testing.TB) {
		env := testkit.NewFake(t,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "a"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "b"}},
		)
		env.FailWrites(50) // half the updates fail; the controller must retry through them

		c, err := labelSeen(env.Env)
		if err != nil {
			t.Fatal(err)
		}
		env.RunController(env.Context(), c)
		env.WaitForQuiet(30 * time.Second)

		list, _ := env.Client().CoreV1().ConfigMaps("demo").List(env.Context(), metav1.ListOptions{
			LabelSelector: labels.Set{"seen": "true"}.String(),
		})
		fmt.Println("labelled:", len(list.Items))
		fmt.Println("went through injected failures:", env.Injected() > 0)
	})
	// Output:
	// labelled: 2
	// went through injected failures: true
}

// Custom resources are declared as their CRD declares them and get the API server's rules, and
// the fake's controls cover them: here an injected failure, then a status write that leaves the
// spec alone.
func ExampleNewFakeWithOptions() {
	runExample(func(t testing.TB) {
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
		env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{
			Resources: []fakecluster.Resource{{GVR: gvr, Kind: "Widget", Namespaced: true, StatusSubresource: true}},
		})
		widgets := env.Dynamic().Resource(gvr).Namespace(env.Namespace())
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w"},
			"spec":     map[string]any{"size": int64(1)},
		}}

		env.FailWrites(100, "create")
		_, err := widgets.Create(env.Context(), w, metav1.CreateOptions{})
		fmt.Println("injected:", errors.Is(err, testkit.ErrInjected))
		env.FailWrites(0)

		created, err := widgets.Create(env.Context(), w, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Object["spec"] = map[string]any{"size": int64(9)} // ignored by /status
		created.Object["status"] = map[string]any{"ready": true}
		st, err := widgets.UpdateStatus(env.Context(), created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(st.Object["spec"], st.Object["status"], "generation", st.GetGeneration())
		fmt.Println("requests:", len(env.Actions()) > 0)
	})
	// Output:
	// injected: true
	// map[size:1] map[ready:true] generation 1
	// requests: true
}

func ExampleNewAPIServer() {
	// In a test (not run here: it needs the binaries `make kube` builds):
	var t *testing.T
	env := testkit.NewAPIServer(t) // etcd + kube-apiserver on loopback; skipped without binaries
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	created, err := env.Client().CoreV1().Pods(env.Namespace()).Create(env.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(created.Spec.RestartPolicy) // defaulted by the real server: Always

	// Informers recover from a server restart; RestartAPIServer makes one happen.
	if err := env.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}
}

func ExampleMain() {
	// In the package's main_test.go, so SharedAPIServer can hand one server to every test and
	// stop it at the end:
	//
	//	func TestMain(m *testing.M) { testkit.Main(m) }
	//
	// or, with goleak:
	//
	//	func TestMain(m *testing.M) { goleak.VerifyTestMain(testkit.WithSharedAPIServer(m)) }
	var t *testing.T
	env := testkit.SharedAPIServer(t) // a fresh namespace on the shared server
	fmt.Println(env.Namespace())
}

// exampleT is a minimal testing.TB for Examples, which get no *testing.T: it runs cleanups at
// the end, prints failures and discards log output (which would otherwise pollute // Output).
type exampleT struct {
	testing.TB // nil: calling anything not overridden below panics, on purpose
	ctx        context.Context
	cancel     context.CancelFunc
	cleanups   []func()
	failed     bool
}

func runExample(body func(t testing.TB)) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &exampleT{ctx: ctx, cancel: cancel}
	done := make(chan struct{})
	go func() { // Fatal ends this goroutine, as it ends a test's
		defer close(done)
		body(t)
	}()
	<-done
	t.cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

func (t *exampleT) Helper()                  {}
func (t *exampleT) Name() string             { return "Example" }
func (t *exampleT) Context() context.Context { return t.ctx }
func (t *exampleT) Cleanup(f func())         { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Log(...any)               {}
func (t *exampleT) Logf(string, ...any)      {}
func (t *exampleT) Failed() bool             { return t.failed }
func (t *exampleT) Errorf(format string, args ...any) {
	t.failed = true
	fmt.Fprintf(os.Stdout, "error: "+format+"\n", args...)
}
func (t *exampleT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	runtime.Goexit()
}
func (t *exampleT) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

// A Recorder stands in for a Reconciler where a test checks what reaches the controller, not
// what it does.
func ExampleRecorder() {
	var rec testkit.Recorder[controller.Key]
	_, _ = rec.Reconcile(context.Background(), controller.Key{Namespace: "default", Name: "web"})
	_, _ = rec.Reconcile(context.Background(), controller.Key{Namespace: "default", Name: "web"})
	fmt.Println(rec.Count(controller.Key{Namespace: "default", Name: "web"}), len(rec.Keys()))
	// Output: 2 1
}
