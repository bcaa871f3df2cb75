package fleetpolicy_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/examples/fleet-policy/fleetpolicy"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

const wait = 30 * time.Second

func source(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-system", Name: fleetpolicy.DefaultName},
		Data: map[string]string{"policy": data}}
}

func namespace(name, baseline string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if baseline != "" {
		ns.Labels = map[string]string{fleetpolicy.LabelBaseline: baseline}
	}
	return ns
}

// baseline returns whether namespace ns of client holds the baseline with data.
func baseline(client kubernetes.Interface, ns, data string) func() bool {
	return func() bool {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), fleetpolicy.DefaultName, metav1.GetOptions{})
		if data == "" {
			return apierrors.IsNotFound(err)
		}
		return err == nil && cm.Data["policy"] == data
	}
}

// The whole journey on fake clusters: a hub and two spokes.
func TestFleetPolicyOnFakeClusters(t *testing.T) {
	hub, err := fakecluster.New(source("deny-all"))
	require.NoError(t, err)
	spokes := map[string]*fakecluster.Cluster{}
	conns := map[string]multicluster.Connection{}
	for _, name := range []string{"east", "west"} {
		fc, err := fakecluster.New(namespace("team-a", "true"), namespace("team-b", ""))
		require.NoError(t, err)
		spokes[name] = fc
		conns[name] = multicluster.Connection{Client: fc.Clientset(), Dynamic: fc.Dynamic(), Metadata: fc.Metadata()}
	}
	list := multicluster.NewList(conns)
	mgr, err := manager.New(manager.Options{Client: hub.Clientset()})
	require.NoError(t, err)
	fleet, err := multicluster.New(multicluster.Options{Provider: list})
	require.NoError(t, err)
	c, err := fleetpolicy.New(mgr.Factory(), fleet, fleetpolicy.Options{SourceNamespace: "fleet-system"})
	require.NoError(t, err)
	require.NoError(t, mgr.Add(fleet))
	require.NoError(t, mgr.Add(c))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, mgr.Start(ctx)) })
	defer wg.Wait()
	defer cancel()

	for _, fc := range spokes {
		require.Eventually(t, baseline(fc.Clientset(), "team-a", "deny-all"), wait, 5*time.Millisecond)
		require.Eventually(t, baseline(fc.Clientset(), "team-b", ""), wait, 5*time.Millisecond)
	}

	// One edit in the hub reaches every cluster.
	_, err = hub.Clientset().CoreV1().ConfigMaps("fleet-system").Update(ctx, source("allow-dns"), metav1.UpdateOptions{})
	require.NoError(t, err)
	for _, fc := range spokes {
		require.Eventually(t, baseline(fc.Clientset(), "team-a", "allow-dns"), wait, 5*time.Millisecond)
	}

	// Drift in one cluster is repaired there.
	east := spokes["east"].Clientset()
	require.NoError(t, east.CoreV1().ConfigMaps("team-a").Delete(ctx, fleetpolicy.DefaultName, metav1.DeleteOptions{}))
	require.Eventually(t, baseline(east, "team-a", "allow-dns"), wait, 5*time.Millisecond)

	// A Namespace labelled later gets it; one unlabelled loses it.
	_, err = east.CoreV1().Namespaces().Update(ctx, namespace("team-b", "true"), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, baseline(east, "team-b", "allow-dns"), wait, 5*time.Millisecond)
	_, err = east.CoreV1().Namespaces().Update(ctx, namespace("team-b", ""), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, baseline(east, "team-b", ""), wait, 5*time.Millisecond)

	// A cluster engaged later is brought up to date; one removed is left alone.
	north, err := fakecluster.New(namespace("ops", "true"))
	require.NoError(t, err)
	require.NoError(t, list.Add("north", multicluster.Connection{Client: north.Clientset(), Dynamic: north.Dynamic(), Metadata: north.Metadata()}))
	require.Eventually(t, baseline(north.Clientset(), "ops", "allow-dns"), wait, 5*time.Millisecond)
}

func TestNewRefusesNoSourceNamespace(t *testing.T) {
	fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(nil)})
	require.NoError(t, err)
	_, err = fleetpolicy.New(nil, fleet, fleetpolicy.Options{})
	require.Error(t, err)
}
