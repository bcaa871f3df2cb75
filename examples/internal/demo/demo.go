package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/internal/retry"
)

// EnvKubeconfig is the environment variable kubectl reads; a path list, like $PATH.
const EnvKubeconfig = clientcmd.RecommendedConfigPathEnvVar

// ErrNotConverged is matched by the error Await returns when its deadline passed first.
var ErrNotConverged = errors.New("did not converge")

// Kubeconfig returns the kubeconfig the examples use: the --kubeconfig flag's value, else
// $KUBECONFIG, else "" — which means the in-memory cluster. ~/.kube/config is deliberately not
// read: running a demo must never touch a real cluster by accident.
func Kubeconfig(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(EnvKubeconfig)
}

// RESTConfig loads a kubeconfig (a file, or a $KUBECONFIG-style list of files) and returns the
// rest.Config of its current context, with QPS and burst raised from client-go's 5/10 to what
// kube-controller-manager uses (20/30), since a controller's writes come in bursts.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return nil, errors.New("loading kubeconfig: no path given")
	}
	rules := &clientcmd.ClientConfigLoadingRules{}
	if paths := filepath.SplitList(kubeconfig); len(paths) == 1 {
		rules.ExplicitPath = paths[0] // a missing file is an error, not an empty config
	} else {
		rules.Precedence = paths
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %q: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 20, 30
	return cfg, nil
}

// WriteKubeconfig writes a kubeconfig file that reaches the cluster of cfg with its
// credentials (bearer token or client certificate, CA or insecure), for handing a rest.Config
// to a binary's --kubeconfig flag: tests of a main against a test API server use it.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		ClientCertificate:     cfg.CertFile,
		ClientCertificateData: cfg.CertData,
		ClientKey:             cfg.KeyFile,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["context"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	kc.CurrentContext = "context"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %q: %w", path, err)
	}
	return nil
}

// NewLogger returns a klog text logger writing to out at the given verbosity (klog's -v):
// the examples log contextually (klog.FromContext), so the logger is all they need. Lines are
// written whole and one at a time, so out need not be safe for concurrent use (a test's
// bytes.Buffer).
func NewLogger(out io.Writer, verbosity int) klog.Logger {
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&lockedWriter{w: out}), textlogger.Verbosity(verbosity)))
}

// lockedWriter serialises writes: textlogger writes each line with one Write but from any
// goroutine, relying on the writer (os.Stderr) being safe for that.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Await polls cond every interval until it reports true, returns an error, or timeout passes
// (then the error matches ErrNotConverged and names what). Demos use it to wait for a
// controller to converge; tests should rather wait for a quiet controller (testkit).
func Await(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	const interval = 50 * time.Millisecond
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, cond)
	if err != nil && wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("%s: %w within %v", what, ErrNotConverged, timeout)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// UntilAnswered calls fn until it returns nil, an error that is the API server's answer, or ctx
// ends: while the API server does not answer (a refused connection, a timeout, 429 or 5xx) it
// logs that it waits for it and calls fn again, 1 s then up to 30 s later. A binary's Setup
// wraps what it asks the API server before the Manager starts (installing a CRD) in it, so
// that it waits for an unreachable server as the Manager does, rather than exiting.
func UntilAnswered(ctx context.Context, what string, fn func(context.Context) error) error {
	var answer error
	_, err := retry.Until(ctx, clock.RealClock{}, func(ctx context.Context) (struct{}, error) {
		err := fn(ctx)
		if err != nil && unanswered(err) {
			return struct{}{}, err
		}
		answer = err
		return struct{}{}, nil
	}, func(err error, wait time.Duration) {
		klog.FromContext(ctx).Info("Waiting for the API server: "+what, "err", err, "retryIn", wait)
	})
	if err != nil {
		return err
	}
	return answer
}

// unanswered reports whether err says the API server did not answer (or cannot now).
func unanswered(err error) bool {
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return true
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err)
}
