package testkit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/testkit/internal/kubeserver"
)

// NewAPIServer starts a dedicated etcd and kube-apiserver for this test and returns an Env whose
// clients talk to it (as a system:masters user, so RBAC never gets in the way) in a fresh
// namespace (Namespace). Everything is torn down in t.Cleanup, even when the test fails or
// panics: the processes get SIGTERM, then SIGKILL, and are reaped; on Linux the kernel kills
// them if the test binary dies first. Their data and logs live in t.TempDir.
//
// The server has no kube-controller-manager: nothing creates ServiceAccounts (ServiceAccount
// admission is disabled, so Pods can be created anyway), nothing garbage-collects owned objects
// or empties deleted namespaces, and no Deployment grows ReplicaSets unless your controller
// makes them.
//
// Starting takes about 15 s; tests in one package should rather share a server (see
// SharedAPIServer). Without the binaries (hack/install-kube.sh, `make kube`) the test is
// skipped — or fails when CTRLKIT_REQUIRE_APISERVER=1. In -short mode it is skipped.
func NewAPIServer(t testing.TB) *Env {
	t.Helper()
	return NewAPIServerWithOptions(t, APIServerOptions{})
}

// APIServerOptions configure the dedicated server of NewAPIServerWithOptions.
type APIServerOptions struct {
	// FeatureGates are kube-apiserver's --feature-gates: an alpha API the test needs
	// (ShardedListAndWatch for ListOptions.ShardSelector), or a beta one turned off. A name that
	// the server does not know fails its start, with its log's tail.
	FeatureGates map[string]bool
}

// NewAPIServerWithOptions is NewAPIServer with options. The shared server (SharedAPIServer)
// runs with none, so a test that needs a gate has a server of its own.
func NewAPIServerWithOptions(t testing.TB, opts APIServerOptions) *Env {
	t.Helper()
	gates := make([]string, 0, len(opts.FeatureGates))
	for _, name := range slices.Sorted(maps.Keys(opts.FeatureGates)) {
		if name == "" || strings.ContainsAny(name, "=, ") {
			t.Fatalf("testkit: feature gate %q: not a gate name", name)
		}
		gates = append(gates, fmt.Sprintf("%s=%t", name, opts.FeatureGates[name]))
	}
	bins := requireBinaries(t)
	s, err := kubeserver.New(bins, t.TempDir(), strings.Join(gates, ","))
	if err != nil {
		t.Fatalf("testkit: prepare api server: %v", err)
	}
	// Registered after TempDir, so it runs before the directory is removed.
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("testkit: stop api server: %v", err)
		}
	})
	if err := s.Start(t.Context()); err != nil {
		t.Log(s.LogTails(40))
		t.Fatalf("testkit: start api server: %v", err)
	}
	t.Logf("testkit: kube-apiserver ready at %s in %v (logs in %s)", s.ClientConfig().Host, s.StartedFor().Round(time.Millisecond), s.Dir())
	return newServerEnv(t, s)
}

// SharedAPIServer returns an Env on the test binary's one shared API server, starting it on
// first use. Each call gets its own clients, informer factory and a fresh namespace, so tests
// sharing the server stay apart as long as they keep to their namespace (cluster-scoped objects
// are shared). The package must run its tests through Main (or WithSharedAPIServer) so the
// server is stopped and its files removed when the tests are done; otherwise the test fails.
// Binaries and -short are handled as in NewAPIServer.
func SharedAPIServer(t testing.TB) *Env {
	t.Helper()
	bins := requireBinaries(t)
	s, err := sharedServer(bins)
	if err != nil {
		if s != nil {
			t.Log(s.LogTails(40))
		}
		t.Fatalf("testkit: shared api server: %v", err)
	}
	return newServerEnv(t, s)
}

// requireBinaries finds the binaries or skips (fails, under CTRLKIT_REQUIRE_APISERVER=1).
func requireBinaries(t testing.TB) kubeserver.Binaries {
	t.Helper()
	if testing.Short() {
		t.Skip("testkit: real API server tests are skipped in -short mode")
	}
	bins, err := kubeserver.FindBinaries()
	if err != nil {
		msg := fmt.Sprintf("testkit: %v\nrun `make kube` (hack/install-kube.sh) to build them, or point %s (or %s and %s) at them",
			err, kubeserver.EnvKubeDir, kubeserver.EnvAPIServer, kubeserver.EnvEtcd)
		if os.Getenv(kubeserver.EnvRequireAPIServer) == "1" {
			t.Fatalf("%s\n(%s=1, so this is a failure, not a skip)", msg, kubeserver.EnvRequireAPIServer)
		}
		t.Skip(msg)
	}
	return bins
}

// newServerEnv builds the Env of one test on s: clients, informer factory and namespace.
func newServerEnv(t testing.TB, s *kubeserver.Server) *Env {
	t.Helper()
	cfg := s.ClientConfig()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("testkit: clientset: %v", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("testkit: dynamic client: %v", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("testkit: metadata client: %v", err)
	}
	e := newEnv(t, client, dyn, meta)
	e.config, e.server = cfg, s

	ns, err := client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testkit: create test namespace: %v", err)
	}
	e.namespace = ns.Name
	// Runs before the Env's shutdown and the server's stop (cleanups run last-in first-out).
	// Without a namespace controller the namespace stays Terminating with its objects; deleting
	// it still tells anyone looking that the test is over.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !s.IsStopped() {
			t.Logf("testkit: delete namespace %s: %v", ns.Name, err)
		}
	})
	e.factory.Start(e.ctx)
	return e
}

// namespacePrefix turns a test name into a GenerateName prefix: a lower-case DNS label of at
// most 40 characters ending in "-"; the server appends five random characters.
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := true // no leading dash, no runs of dashes
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 39 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	p := strings.TrimSuffix(b.String(), "-")
	if p == "" || p[0] < 'a' {
		p = "t" + p
	}
	return p + "-"
}

// RestartAPIServer stops kube-apiserver and starts it again on the same port and the same etcd
// (nothing stored is lost), returning once it is ready again. Watches break while it is down;
// informers re-list or re-watch on their own, which is what this is for. On a shared server
// every test's clients see the restart: do not use it from parallel tests. It returns an error
// (with the end of the server's log) rather than failing the test, so subtests can call it on
// their parent's Env. On a fake Env it returns an error.
func (e *Env) RestartAPIServer() error {
	if e.server == nil {
		return errors.New("testkit: RestartAPIServer needs an API server Env (NewAPIServer), not a fake")
	}
	begin := time.Now()
	if err := e.server.Restart(e.ctx); err != nil {
		return fmt.Errorf("testkit: restart kube-apiserver: %w\n%s", err, e.server.LogTails(40))
	}
	klog.FromContext(e.ctx).Info("testkit: kube-apiserver restarted", "elapsed", time.Since(begin).Round(time.Millisecond))
	return nil
}

// The shared server of this test binary.
var shared struct {
	mu     sync.Mutex
	inMain bool               // Main / WithSharedAPIServer is running the tests
	srv    *kubeserver.Server // started on first use
	err    error              // a failed start is not retried; later tests report it at once
}

// errNoMain is SharedAPIServer's answer when nobody would stop the server.
var errNoMain = errors.New("SharedAPIServer needs the package's TestMain to call testkit.Main(m) (or run testkit.WithSharedAPIServer(m)), which stops the server after the tests")

func sharedServer(bins kubeserver.Binaries) (*kubeserver.Server, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		return nil, errNoMain
	}
	if shared.srv != nil || shared.err != nil {
		return shared.srv, shared.err
	}
	dir, err := os.MkdirTemp("", "ctrlkit-apiserver-")
	if err != nil {
		shared.err = fmt.Errorf("create data dir: %w", err)
		return nil, shared.err
	}
	s, err := kubeserver.New(bins, dir, "")
	if err != nil {
		shared.err = err
		return nil, err
	}
	shared.srv = s
	if err := s.Start(context.Background()); err != nil {
		shared.err = err
		return s, err
	}
	fmt.Fprintf(os.Stderr, "testkit: shared kube-apiserver ready at %s in %v (logs in %s)\n", s.ClientConfig().Host, s.StartedFor().Round(time.Millisecond), dir)
	return s, nil
}

// TestingM is what WithSharedAPIServer wraps: *testing.M, or anything with its Run.
type TestingM interface{ Run() int }

// WithSharedAPIServer returns m whose Run runs the tests with SharedAPIServer available and
// then stops the shared server and removes its files. It composes with other TestMain helpers:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(testkit.WithSharedAPIServer(m)) }
func WithSharedAPIServer(m TestingM) TestingM { return sharedM{m} }

// Main runs the tests with SharedAPIServer available and exits; call it from TestMain:
//
//	func TestMain(m *testing.M) { testkit.Main(m) }
func Main(m *testing.M) { os.Exit(WithSharedAPIServer(m).Run()) }

type sharedM struct{ m TestingM }

func (s sharedM) Run() int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := s.m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "testkit: stop shared api server: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func stopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.inMain = false
	s := shared.srv
	shared.srv, shared.err = nil, nil
	if s == nil {
		return nil
	}
	err := s.Stop()
	return errors.Join(err, os.RemoveAll(s.Dir()))
}
