package multicluster_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctrlkit/ctrlkit/multicluster"
)

// engagements is an Engager that records what a Provider engages.
type engagements struct {
	mu      sync.Mutex
	live    map[string]string // cluster → host, while its context lasts
	all     []string          // every Engage, "name host"
	configs map[string]*rest.Config
}

func (e *engagements) Engage(ctx context.Context, name string, conn multicluster.Connection) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live == nil {
		e.live = map[string]string{}
	}
	e.live[name] = conn.Config.Host
	if e.configs == nil {
		e.configs = map[string]*rest.Config{}
	}
	e.configs[name] = conn.Config
	e.all = append(e.all, name+" "+conn.Config.Host)
	context.AfterFunc(ctx, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.live[name] == conn.Config.Host {
			delete(e.live, name)
		}
	})
	return nil
}

func (e *engagements) snapshot() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for k, v := range e.live {
		out[k] = v
	}
	return out
}

func kubeconfig(t *testing.T, host string) []byte {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: host}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return b
}

func kubeconfigSecret(t *testing.T, name, host string, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, Labels: labels},
		Data: map[string][]byte{"value": kubeconfig(t, host)}}
}

// The Secrets provider follows its Secrets: created, rotated, relabelled out
// of its selector, broken and deleted.
func TestSecretsEngagesTheClustersOfItsSecrets(t *testing.T) {
	member := map[string]string{"fleet": "member"}
	hub, hubFake := fake(t,
		kubeconfigSecret(t, "east", "https://east.example:6443", member),
		kubeconfigSecret(t, "other", "https://other.example:6443", nil))
	p := &multicluster.Secrets{Client: hub.Client, Namespace: "fleet", LabelSelector: "fleet=member", Key: "value"}
	var e engagements
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx, &e) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
		assert.Empty(t, e.snapshot(), "everything is disengaged when Run returns")
	}()
	secrets := hubFake.Clientset().CoreV1().Secrets("fleet")
	live := func(want map[string]string) func() bool {
		return func() bool { return assert.ObjectsAreEqual(want, e.snapshot()) }
	}
	require.Eventually(t, live(map[string]string{"east": "https://east.example:6443"}), wait, pollEvery)

	_, err := secrets.Create(ctx, kubeconfigSecret(t, "west", "https://west.example:6443", member), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, live(map[string]string{"east": "https://east.example:6443", "west": "https://west.example:6443"}), wait, pollEvery)

	// Rotated: engaged again with the new kubeconfig.
	_, err = secrets.Update(ctx, kubeconfigSecret(t, "east", "https://east-2.example:6443", member), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, live(map[string]string{"east": "https://east-2.example:6443", "west": "https://west.example:6443"}), wait, pollEvery)

	// A label change that is not the kubeconfig's engages nothing again.
	n := len(e.all)
	relabelled := kubeconfigSecret(t, "west", "https://west.example:6443", map[string]string{"fleet": "member", "team": "a"})
	_, err = secrets.Update(ctx, relabelled, metav1.UpdateOptions{})
	require.NoError(t, err)

	// Broken: disengaged until fixed.
	broken := kubeconfigSecret(t, "east", "", member)
	broken.Data["value"] = []byte("{not yaml")
	_, err = secrets.Update(ctx, broken, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, live(map[string]string{"west": "https://west.example:6443"}), wait, pollEvery)
	e.mu.Lock()
	assert.Len(t, e.all, n, "neither the relabelling nor the broken kubeconfig engaged anything")
	e.mu.Unlock()

	// Out of the selector, then deleted.
	_, err = secrets.Update(ctx, kubeconfigSecret(t, "west", "https://west.example:6443", nil), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, live(map[string]string{}), wait, pollEvery)
	_, err = secrets.Update(ctx, kubeconfigSecret(t, "east", "https://east-3.example:6443", member), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, live(map[string]string{"east": "https://east-3.example:6443"}), wait, pollEvery)
	require.NoError(t, secrets.Delete(ctx, "east", metav1.DeleteOptions{}))
	require.Eventually(t, live(map[string]string{}), wait, pollEvery)

	assert.ErrorIs(t, (&multicluster.Secrets{}).Run(ctx, &e), multicluster.ErrInvalidOptions)
}
