package multicluster_test

import (
	"context"
	"io"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

const (
	wait      = 20 * time.Second
	pollEvery = 5 * time.Millisecond
)

// fake returns a Connection to a new in-memory cluster seeded with objs.
func fake(t *testing.T, objs ...runtime.Object) (multicluster.Connection, *fakecluster.Cluster) {
	t.Helper()
	fc, err := fakecluster.New(objs...)
	require.NoError(t, err)
	return multicluster.Connection{Client: fc.Clientset(), Dynamic: fc.Dynamic(), Metadata: fc.Metadata()}, fc
}

// run runs each runnable until the test ends, then stops them and waits.
func run(t *testing.T, runnables ...interface{ Run(context.Context) error }) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range runnables {
		wg.Go(func() {
			if err := r.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// keys records the keys a Reconcile saw.
type keys struct {
	mu   sync.Mutex
	seen map[multicluster.Key]int
}

func (k *keys) add(key multicluster.Key) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[multicluster.Key]int{}
	}
	k.seen[key]++
}

// cached reports whether ConfigMap default/name is in the cache of cluster's ConfigMap
// informer, as a Reconcile of that cluster reads it.
func cached(fleet *multicluster.Fleet, cluster, name string) (bool, error) {
	cl, err := fleet.Get(cluster)
	if err != nil {
		return false, err
	}
	cms, err := informer.For[*corev1.ConfigMap](cl.Factory)
	if err != nil {
		return false, err
	}
	_, err = cms.Lister().Namespace("default").Get(name)
	return err == nil, nil
}

// errContains reports whether err, read once (a cluster's Err changes under the test), says
// what.
func errContains(err error, what string) bool {
	return err != nil && strings.Contains(err.Error(), what)
}

// named reports whether a key of that name was seen, in any cluster and namespace.
func (k *keys) named(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key := range k.seen {
		if key.Name == name {
			return true
		}
	}
	return false
}

func (k *keys) count(key multicluster.Key) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen[key]
}

func key(cluster, ns, name string) multicluster.Key {
	return multicluster.Key{Cluster: cluster, Key: controller.Key{Namespace: ns, Name: name}}
}

// goroutines counts the goroutines from a goroutine of its own, as
// require.Eventually's condition runs: counts taken either way compare.
func goroutines() int {
	n := make(chan int)
	go func() { n <- goruntime.NumGoroutine() }()
	return <-n
}

var metav1Create = metav1.CreateOptions{}

// startable runs a manager.Manager as run's runnables.
type startable struct {
	m interface{ Start(context.Context) error }
}

func (s startable) Run(ctx context.Context) error { return s.m.Start(ctx) }

// readyzOf returns a probe of mgr's /readyz?verbose: its status and body.
func readyzOf(mgr *manager.Manager) func() (int, string) {
	return func() (int, string) {
		resp, err := http.Get("http://" + mgr.HealthProbeAddr() + "/readyz?verbose")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
