package kubeserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KubeVersion is the Kubernetes release hack/install-kube.sh builds and the default binary
// directory is named after.
const KubeVersion = "v1.37.2"

// Environment variables FindBinaries and testkit read.
const (
	// EnvKubeDir is the directory holding kube-apiserver and etcd, as hack/install-kube.sh
	// installs them. Default: $HOME/.cache/ctrlkit/kube/<KubeVersion>.
	EnvKubeDir = "CTRLKIT_KUBE_DIR"
	// EnvAPIServer and EnvEtcd name one binary each, overriding EnvKubeDir.
	EnvAPIServer = "CTRLKIT_KUBE_APISERVER"
	EnvEtcd      = "CTRLKIT_ETCD"
	// EnvRequireAPIServer set to 1 turns "binaries not installed" from a skip into a failure,
	// so CI cannot pass by skipping every integration test.
	EnvRequireAPIServer = "CTRLKIT_REQUIRE_APISERVER"
)

// ErrBinariesNotFound is matched by the error FindBinaries returns when kube-apiserver or etcd
// is not installed.
var ErrBinariesNotFound = errors.New("kube-apiserver and etcd binaries not found")

// Binaries are the paths of the executables an API server Env runs.
type Binaries struct {
	APIServer string
	Etcd      string
}

// FindBinaries locates kube-apiserver and etcd: EnvAPIServer / EnvEtcd when set, else the files
// of those names in EnvKubeDir or the default install directory. The error names every path it
// tried and matches ErrBinariesNotFound.
func FindBinaries() (Binaries, error) {
	dir := os.Getenv(EnvKubeDir)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Binaries{}, fmt.Errorf("%w: no %s and no home directory: %v", ErrBinariesNotFound, EnvKubeDir, err)
		}
		dir = filepath.Join(home, ".cache", "ctrlkit", "kube", KubeVersion)
	}
	b := Binaries{APIServer: os.Getenv(EnvAPIServer), Etcd: os.Getenv(EnvEtcd)}
	if b.APIServer == "" {
		b.APIServer = filepath.Join(dir, "kube-apiserver")
	}
	if b.Etcd == "" {
		b.Etcd = filepath.Join(dir, "etcd")
	}
	var missing []error
	for _, p := range []string{b.APIServer, b.Etcd} {
		st, err := os.Stat(p)
		switch {
		case err != nil:
			missing = append(missing, err)
		case st.IsDir() || st.Mode().Perm()&0o111 == 0:
			missing = append(missing, fmt.Errorf("%s is not an executable file", p))
		}
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("%w: %w", ErrBinariesNotFound, errors.Join(missing...))
	}
	return b, nil
}
