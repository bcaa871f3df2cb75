package leaderelection

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
)

// useNamespaceFile points DefaultLeaseNamespace at path for the test.
func useNamespaceFile(t *testing.T, path string) {
	t.Helper()
	old := namespaceFile
	namespaceFile = path
	t.Cleanup(func() { namespaceFile = old })
}

// outsidePod makes the test see no ServiceAccount namespace file, wherever it runs (in a
// Pod too).
func outsidePod(t *testing.T) {
	t.Helper()
	useNamespaceFile(t, filepath.Join(t.TempDir(), "no-such-file"))
	t.Setenv(PodNamespaceEnv, "")
}

// podNamespace writes a namespace file as the kubelet mounts it in a Pod of namespace ns
// and points DefaultLeaseNamespace at it.
func podNamespace(t *testing.T, content string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "namespace")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	useNamespaceFile(t, path)
	t.Setenv(PodNamespaceEnv, "")
}

func TestNamespaceFrom(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"in a Pod", file("pod", "team-a"), "team-a"},
		{"white space around it", file("spaced", " team-b\n"), "team-b"},
		{"not in a Pod", filepath.Join(dir, "missing"), DefaultNamespace},
		{"an empty file", file("empty", "\n"), DefaultNamespace},
		{"unreadable (a directory)", dir, DefaultNamespace},
	} {
		assert.Equal(t, tc.want, namespaceFrom(tc.path), tc.name)
	}
	assert.Equal(t, "ctrlkit-system", DefaultNamespace, "the namespace of every shipped manifest")
	assert.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/namespace", ServiceAccountNamespaceFile)
}

// In a Pod the Lease defaults to the Pod's namespace, where its deployment's Role grants it;
// outside one, to ctrlkit-system. A namespace given is kept, and the flag's empty default
// means the same default.
func TestDefaultNamespaceIsThePods(t *testing.T) {
	podNamespace(t, "team-a\n")
	assert.Equal(t, "team-a", DefaultLeaseNamespace())
	assert.Equal(t, "team-a", Config{Name: "x"}.WithDefaults().Namespace)
	assert.Equal(t, "ops", Config{Name: "x", Namespace: "ops"}.WithDefaults().Namespace)
	e, err := NewElector(fake.NewClientset(), Config{Name: "x"}, Callbacks{})
	require.NoError(t, err)
	assert.Equal(t, "team-a", e.Config().Namespace)

	var cfg Config
	fs := newFlagSet(&cfg)
	require.NoError(t, fs.Parse([]string{"--leader-elect", "--leader-elect-resource-name=x"}))
	require.NoError(t, cfg.ValidateFlags())
	assert.Equal(t, "team-a", cfg.WithDefaults().Namespace)
	usage := fs.Lookup("leader-elect-resource-namespace").Usage
	assert.Contains(t, usage, ServiceAccountNamespaceFile, "the help says where the default comes from")
	assert.Contains(t, usage, `else "ctrlkit-system"`)

	outsidePod(t)
	assert.Equal(t, DefaultNamespace, Config{Name: "x"}.WithDefaults().Namespace)

	// A file that names no namespace is Validate's to report, with the value.
	podNamespace(t, "Not_A_Namespace")
	err = Config{Name: "x"}.WithDefaults().Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	assert.True(t, strings.Contains(err.Error(), `namespace "Not_A_Namespace" must be a DNS-1123 label`), err)
}

// $POD_NAMESPACE, set from the downward API, names the Pod's namespace before the
// service account's file does, as in client-go's in-cluster config (a Pod may mount no token).
func TestDefaultLeaseNamespacePrefersPodNamespaceEnv(t *testing.T) {
	outsidePod(t)
	assert.Equal(t, DefaultNamespace, DefaultLeaseNamespace(), "neither set: not in a Pod")
	t.Setenv(PodNamespaceEnv, " team-c ")
	assert.Equal(t, "team-c", DefaultLeaseNamespace())
}
