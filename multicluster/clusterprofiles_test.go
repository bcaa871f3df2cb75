package multicluster_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctrlkit/ctrlkit/multicluster"
)

func clusterProfile(name string, providers ...map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1",
		"kind":       "ClusterProfile",
		"metadata":   map[string]any{"namespace": "fleet", "name": name},
		"spec":       map[string]any{"clusterManager": map[string]any{"name": "ocm"}},
	}}
	items := make([]any, len(providers))
	for i, p := range providers {
		items[i] = p
	}
	if len(items) > 0 {
		_ = unstructured.SetNestedSlice(u.Object, items, "status", "accessProviders")
	}
	return u
}

func accessProvider(name, server string) map[string]any {
	return map[string]any{"name": name, "cluster": map[string]any{
		"server": server, "certificate-authority-data": base64.StdEncoding.EncodeToString([]byte("ca of " + server))}}
}

// The ClusterProfiles provider follows the profiles of its namespace: a
// profile is engaged at its access provider's server with the credential
// plugin, again when the server changes, and disengaged when deleted or
// when it names no such provider.
func TestClusterProfilesEngagesEachProfile(t *testing.T) {
	hub, hubFake := fake(t,
		clusterProfile("east", accessProvider("other", "https://wrong.example"), accessProvider("ocm", "https://east.example:6443")),
		clusterProfile("pending"))
	var e engagements
	p := &multicluster.ClusterProfiles{Client: hub.Client, Dynamic: hub.Dynamic, Namespace: "fleet", ProviderName: "ocm",
		Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "cp-creds"}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx, &e) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
		assert.Empty(t, e.snapshot())
	}()
	live := func(want map[string]string) func() bool {
		return func() bool { return assert.ObjectsAreEqual(want, e.snapshot()) }
	}
	require.Eventually(t, live(map[string]string{"east": "https://east.example:6443"}), wait, pollEvery, "pending names no provider yet")

	profiles := hubFake.Dynamic().Resource(multicluster.ClusterProfileResource).Namespace("fleet")
	pending, err := profiles.Get(ctx, "pending", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedSlice(pending.Object, []any{accessProvider("ocm", "https://pending.example")}, "status", "accessProviders"))
	_, err = profiles.UpdateStatus(ctx, pending, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, live(map[string]string{"east": "https://east.example:6443", "pending": "https://pending.example"}), wait, pollEvery)

	// The older status field is read too, and a moved server engages again.
	east, err := profiles.Get(ctx, "east", metav1.GetOptions{})
	require.NoError(t, err)
	unstructured.RemoveNestedField(east.Object, "status", "accessProviders")
	require.NoError(t, unstructured.SetNestedSlice(east.Object, []any{accessProvider("ocm", "https://east-2.example")}, "status", "credentialProviders"))
	_, err = profiles.UpdateStatus(ctx, east, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, live(map[string]string{"east": "https://east-2.example", "pending": "https://pending.example"}), wait, pollEvery)

	require.NoError(t, profiles.Delete(ctx, "pending", metav1.DeleteOptions{}))
	require.Eventually(t, live(map[string]string{"east": "https://east-2.example"}), wait, pollEvery)

	e.mu.Lock()
	cfg := e.configs["east"]
	e.mu.Unlock()
	require.NotNil(t, cfg)
	assert.Equal(t, []byte("ca of https://east-2.example"), cfg.CAData)
	require.NotNil(t, cfg.ExecProvider)
	assert.Equal(t, "cp-creds", cfg.ExecProvider.Command)
	assert.True(t, cfg.ExecProvider.ProvideClusterInfo)
	assert.Equal(t, clientcmdapi.NeverExecInteractiveMode, cfg.ExecProvider.InteractiveMode)

	assert.ErrorIs(t, (&multicluster.ClusterProfiles{}).Run(ctx, &e), multicluster.ErrInvalidOptions)
	assert.ErrorIs(t, (&multicluster.ClusterProfiles{Client: hub.Client, Dynamic: hub.Dynamic, Namespace: "fleet", ProviderName: "ocm",
		Exec: &clientcmdapi.ExecConfig{Command: "x"}}).Run(ctx, &e), multicluster.ErrInvalidOptions)
}
