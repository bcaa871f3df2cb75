package podset_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// The shared API server (TestFinalizerAgainstARealAPIServer) is stopped before goleak looks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(testkit.WithSharedAPIServer(m)) }

const quiet = 10 * time.Second // WaitForQuiet's deadline: generous, it returns as soon as quiet

// podSetResource declares PodSet to the fake cluster as its CRD does (podset.yaml).
var podSetResource = fakecluster.Resource{GVR: v1alpha1.GVR, Kind: v1alpha1.Kind, Namespaced: true, StatusSubresource: true}

// cluster is one test's world: a fake cluster whose typed and dynamic clients write like an API
// server (fakecluster), an informer factory of the test's own (so that its error reports can be
// inspected), a PodSet client and an event recorder that keeps what it gets.
type cluster struct {
	t        *testing.T
	env      *testkit.FakeEnv
	factory  *informer.Factory
	podsets  *customresource.Client[*v1alpha1.PodSet]
	recorder *record.FakeRecorder

	mu      sync.Mutex
	reports []error // what the factory reported (conversion failures)
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{Resources: []fakecluster.Resource{podSetResource}})
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	c := &cluster{t: t, env: env, podsets: podsets, recorder: record.NewFakeRecorder(1000)}
	c.factory = informer.NewFactory(env.Client(), informer.Options{
		DynamicClient: env.Dynamic(),
		Logger:        klog.FromContext(env.Context()),
		ErrorHandler: func(_ context.Context, err error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.reports = append(c.reports, err)
		},
	})
	t.Cleanup(c.factory.Shutdown)
	return c
}

// controller builds the PodSet controller on the cluster's factory and syncs the caches; it
// does not run it (see run).
func (c *cluster) controller(opts podset.Options) *podset.Controller {
	c.t.Helper()
	if opts.Recorder == nil {
		opts.Recorder = c.recorder
	}
	opts.Logger = klog.FromContext(c.env.Context())
	ctrl, err := podset.New(c.factory, c.env.Client(), c.env.Dynamic(), opts)
	require.NoError(c.t, err)
	c.factory.Start(c.env.Context())
	// A synced cache has listed but may not be watching yet; the fake, like an API server,
	// replays to the watch what changed since the list, so a test may write at once.
	require.NoError(c.t, c.factory.WaitForCacheSync(c.env.Context()))
	return ctrl
}

// run builds the controller, runs it until the test ends and waits for it to settle.
func (c *cluster) run() *podset.Controller {
	c.t.Helper()
	ctrl := c.controller(podset.Options{})
	c.env.RunController(c.env.Context(), ctrl)
	c.env.WaitForQuiet(quiet)
	return ctrl
}

func (c *cluster) ctx() context.Context { return c.env.Context() }

// newPodSet is a PodSet of replicas Pods labelled app=name.
func newPodSet(name string, replicas int32) *v1alpha1.PodSet {
	lbls := map[string]string{"app": name}
	return &v1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name},
		Spec: v1alpha1.PodSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls, Annotations: map[string]string{"note": "from the template"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
}

func (c *cluster) create(ps *v1alpha1.PodSet) *v1alpha1.PodSet {
	c.t.Helper()
	got, err := c.podsets.Create(c.ctx(), ps, metav1.CreateOptions{})
	require.NoError(c.t, err)
	return got
}

func (c *cluster) get(name string) *v1alpha1.PodSet {
	c.t.Helper()
	got, err := c.podsets.Get(c.ctx(), c.env.Namespace(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	return got
}

// scale sets spec.replicas, retrying on conflicts with the controller's status writes.
func (c *cluster) scale(name string, replicas int32) {
	c.t.Helper()
	require.NoError(c.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ps, err := c.podsets.Get(c.ctx(), c.env.Namespace(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ps.Spec.Replicas = ptr.To(replicas)
		_, err = c.podsets.Update(c.ctx(), ps, metav1.UpdateOptions{})
		return err
	}))
}

// createUnstructured stores a PodSet as raw JSON fields, e.g. one the Go type cannot hold.
func (c *cluster) createUnstructured(obj map[string]any) {
	c.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(v1alpha1.Kind)
	u.SetNamespace(metav1.NamespaceDefault)
	_, err := c.env.Dynamic().Resource(v1alpha1.GVR).Namespace(metav1.NamespaceDefault).Create(c.ctx(), u, metav1.CreateOptions{})
	require.NoError(c.t, err)
}

// podsOf lists the Pods controlled by the PodSet called name (by controller reference).
func (c *cluster) podsOf(name string) []corev1.Pod {
	c.t.Helper()
	list, err := c.env.Client().CoreV1().Pods(metav1.NamespaceDefault).List(c.ctx(), metav1.ListOptions{})
	require.NoError(c.t, err)
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == v1alpha1.Kind && ref.Name == name {
			out = append(out, p)
		}
	}
	return out
}

// markReady plays kubelet: every Pod matching sel becomes Running and Ready.
func (c *cluster) markReady(sel labels.Selector) {
	c.t.Helper()
	list, err := c.env.Client().CoreV1().Pods(metav1.NamespaceDefault).List(c.ctx(), metav1.ListOptions{LabelSelector: sel.String()})
	require.NoError(c.t, err)
	for i := range list.Items {
		p := &list.Items[i]
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		_, err := c.env.Client().CoreV1().Pods(p.Namespace).UpdateStatus(c.ctx(), p, metav1.UpdateOptions{})
		require.NoError(c.t, err)
	}
}

// events drains the recorder: "Normal SuccessfulCreate Created pod: web-x7k2p", ...
func (c *cluster) events() []string {
	var out []string
	for {
		select {
		case e := <-c.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// podActions and podSetActions return the recorded requests of one verb on Pods or PodSets.
func (c *cluster) podActions(verb string) []clienttesting.Action {
	return filterActions(c.env.Actions(), verb, "pods")
}

func (c *cluster) podSetActions(verb string) []clienttesting.Action {
	return filterActions(c.env.Actions(), verb, v1alpha1.Plural)
}

func filterActions(all []clienttesting.Action, verb, resource string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range all {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

func key(name string) controller.Key {
	return controller.Key{Namespace: metav1.NamespaceDefault, Name: name}
}

func condition(ps *v1alpha1.PodSet, typ string) metav1.Condition {
	for _, c := range ps.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{Type: typ, Status: "absent"}
}

func (c *cluster) reported() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.reports)
}
