package manager

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/leaderelection"
)

func eventsV1(t *testing.T, client *fake.Clientset, ns string, n int) []eventsv1.Event {
	t.Helper()
	var list *eventsv1.EventList
	require.Eventually(t, func() bool {
		var err error
		list, err = client.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) >= n
	}, 10*time.Second, 5*time.Millisecond)
	return list.Items
}

// An events.k8s.io/v1 Event carries reason, action, note, regarding,
// related, the controller as reportingController and the Manager's identity
// as reportingInstance; events before Start and after its return are dropped
// (and logged), and Start leaves no goroutine behind.
func TestEventRecorder(t *testing.T) {
	client := fake.NewClientset()
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "u1"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "u2"}}
	rec := m.EventRecorder("pod-scheduler")
	rec.Eventf(pod, nil, corev1.EventTypeNormal, "TooEarly", "Waiting", "dropped: the manager is not running")

	ctx, logs := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool { return m.running.Load() }, 10*time.Second, time.Millisecond)
	rec.Eventf(pod, node, corev1.EventTypeWarning, "FailedBinding", "Binding", "binding %s to %s failed", pod.Name, node.Name)
	ev := eventsV1(t, client, "ns", 1)[0]
	require.NoError(t, stop())
	rec.Eventf(pod, nil, corev1.EventTypeNormal, "TooLate", "Waiting", "dropped: Start returned")

	host, _ := os.Hostname()
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Equal(t, "FailedBinding", ev.Reason)
	assert.Equal(t, "Binding", ev.Action)
	assert.Equal(t, "binding web-0 to node-a failed", ev.Note)
	assert.Equal(t, "Pod", ev.Regarding.Kind)
	assert.Equal(t, "web-0", ev.Regarding.Name)
	require.NotNil(t, ev.Related)
	assert.Equal(t, "node-a", ev.Related.Name)
	assert.Equal(t, "pod-scheduler", ev.ReportingController)
	assert.Equal(t, fmt.Sprintf("%s_%d", host, os.Getpid()), ev.ReportingInstance)
	assert.False(t, ev.EventTime.IsZero())

	list, err := client.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1, "the events before Start and after its return are dropped")
	// Before Start the Manager logs through klog's global logger; after, through Start's.
	var droppedReasons []any
	for _, e := range logged(logs) {
		if e.Message == "Dropping event: the manager is not running" {
			droppedReasons = append(droppedReasons, kv(e.ParameterKVList, "reason"))
			assert.Equal(t, 2, e.Verbosity)
		}
	}
	assert.Equal(t, []any{"TooLate"}, droppedReasons)
	goleak.VerifyNone(t)
}

// kv returns the value of key in a logr key/value list.
func kv(list []any, key string) any {
	for i := 0; i+1 < len(list); i += 2 {
		if list[i] == key {
			return list[i+1]
		}
	}
	return nil
}

// With leader election, reportingInstance is the election identity, so an
// event names the replica that holds (or held) the Lease.
func TestEventReportingInstanceIsTheElectionIdentity(t *testing.T) {
	client := fake.NewClientset()
	m, err := New(Options{Client: client, LeaderElection: &leaderelection.Config{
		Enabled: true, Namespace: "kube-system", Name: "ctrlkit-test", Identity: "replica-a",
	}})
	require.NoError(t, err)
	assert.Equal(t, "replica-a", m.identity())

	m, err = New(Options{Client: client, LeaderElection: &leaderelection.Config{
		Enabled: true, Namespace: "kube-system", Name: "ctrlkit-test", Identity: strings.Repeat("x", 200),
	}})
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 128), m.identity(), "cut to the API server's limit on reportingInstance")
}

// AnnotatedEventf writes the annotations; a repeated event becomes one Event
// with a series (client-go's aggregation, through the Manager's sink, which
// keeps the identity on the patch).
func TestEventRecorderAnnotationsAndSeries(t *testing.T) {
	client := fake.NewClientset()
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settings", UID: "u1"}}
	rec := m.EventRecorder("config-check")

	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool { return m.running.Load() }, 10*time.Second, time.Millisecond)
	rec.AnnotatedEventf(cm, nil, map[string]string{"example.com/rule": "size"}, corev1.EventTypeWarning, "TooBig", "Checking", "%d keys", 300)
	ev := eventsV1(t, client, "ns", 1)[0]
	assert.Equal(t, "size", ev.Annotations["example.com/rule"])
	assert.Equal(t, "300 keys", ev.Note)

	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Checked", "Checking", "ok")
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Checked", "Checking", "ok")
	var series *eventsv1.Event
	require.Eventually(t, func() bool {
		list, err := client.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for i := range list.Items {
			if e := &list.Items[i]; e.Reason == "Checked" && e.Series != nil && e.Series.Count == 2 {
				series = e
			}
		}
		return series != nil
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, stop())
	assert.Equal(t, m.identity(), series.ReportingInstance)
	goleak.VerifyNone(t)
}

// hasGoroutineIn reports whether a goroutine runs code of pkg.
func hasGoroutineIn(t *testing.T, pkg string) bool {
	t.Helper()
	var b strings.Builder
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&b, 2))
	return strings.Contains(b.String(), pkg)
}

// A broadcaster starts with the first event of its API: a Manager that
// records nothing runs no event goroutine, and one that records only
// events.k8s.io/v1 Events runs no core/v1 broadcaster.
func TestEventBroadcastersStartOnFirstEvent(t *testing.T) {
	const (
		v1Pkg     = "k8s.io/client-go/tools/events."
		legacyPkg = "k8s.io/client-go/tools/record."
	)
	client := fake.NewClientset()
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool { return m.running.Load() }, 10*time.Second, time.Millisecond)
	assert.False(t, hasGoroutineIn(t, v1Pkg))
	assert.False(t, hasGoroutineIn(t, legacyPkg))

	m.EventRecorder("c").Eventf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, nil, corev1.EventTypeNormal, "R", "A", "n")
	eventsV1(t, client, "ns", 1)
	assert.True(t, hasGoroutineIn(t, v1Pkg))
	assert.False(t, hasGoroutineIn(t, legacyPkg))

	m.EventRecorderFor("c").Event(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, corev1.EventTypeNormal, "R", "n")
	assert.True(t, hasGoroutineIn(t, legacyPkg))
	require.NoError(t, stop())
	goleak.VerifyNone(t)
}

// Start returns only after the events.k8s.io write in flight returned: no
// write to the API server outlives the Manager.
func TestStartWaitsForEventWritesInFlight(t *testing.T) {
	client := fake.NewClientset()
	entered, release := make(chan struct{}), make(chan struct{})
	var writeReturned atomic.Bool
	client.PrependReactor("create", "events", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group != eventsv1.GroupName {
			return false, nil, nil
		}
		close(entered)
		<-release
		writeReturned.Store(true)
		return false, nil, nil // on to the tracker
	})
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool { return m.running.Load() }, 10*time.Second, time.Millisecond)
	m.EventRecorder("c").Eventf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, nil, corev1.EventTypeNormal, "R", "A", "n")
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	require.Eventually(t, func() bool { return !m.running.Load() }, 10*time.Second, time.Millisecond)
	close(release)
	require.NoError(t, <-stopped)
	assert.True(t, writeReturned.Load(), "Start returned while an event write was in flight")
	goleak.VerifyNone(t)
}

// Recording through both APIs from many goroutines while Start returns
// neither races nor panics, and leaves no goroutine behind.
func TestEventsRecordedWhileStopping(t *testing.T) {
	client := fake.NewClientset()
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool { return m.running.Load() }, 10*time.Second, time.Millisecond)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	var quit atomic.Bool
	var recorded atomic.Int64
	done := make(chan struct{})
	const workers = 4
	for i := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			v1, legacy := m.EventRecorder(fmt.Sprint("c", i)), m.EventRecorderFor(fmt.Sprint("c", i))
			for n := 0; !quit.Load(); n++ {
				v1.Eventf(pod, nil, corev1.EventTypeNormal, "R", "A", "event %d", n)
				legacy.Eventf(pod, corev1.EventTypeNormal, "R", "event %d", n)
				recorded.Add(1)
			}
		}()
	}
	require.Eventually(t, func() bool { return recorded.Load() > 100 }, 10*time.Second, time.Millisecond)
	require.NoError(t, stop())
	quit.Store(true)
	for range workers {
		<-done
	}
	goleak.VerifyNone(t)
}
