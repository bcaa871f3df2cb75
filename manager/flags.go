package manager

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// Flags are the command-line flags of a controller binary's Manager, for a main to register
// (AddFlags) and turn into Options (Options): the cluster (--kubeconfig, --kube-api-qps,
// --kube-api-burst), /metrics (--metrics-addr, --metrics-secure, --metrics-cert-dir,
// --profiling), the probes (--health-addr), leader election (kube-controller-manager's
// --leader-elect flags, leaderelection.Config.AddFlags), the caches' memory budget
// (informer.BudgetFlags) and -v. A field set before AddFlags is its flag's default; the
// zero value's defaults are documented on each field.
type Flags struct {
	// Kubeconfig is --kubeconfig: a kubeconfig file, or a list of them as in $KUBECONFIG.
	// Empty means GetConfig's: $KUBECONFIG, ~/.kube/config, then in-cluster.
	Kubeconfig string
	// QPS and Burst are --kube-api-qps and --kube-api-burst, the client's rate limit. QPS 0
	// (the default) means no client-side limit, as GetConfig's (API Priority and Fairness on
	// the server decides); a positive QPS needs a Burst of at least 1 (default 10,
	// client-go's). kube-controller-manager's defaults are 20 and 30.
	QPS   float32
	Burst int

	// MetricsAddr is --metrics-addr, Options.MetricsAddr: host:port of /metrics; "" (typed on
	// the command line) serves none. Default ":8080".
	MetricsAddr string
	// MetricsSecure is --metrics-secure, MetricsServingOptions.SecureServing. Default false.
	MetricsSecure bool
	// MetricsCertDir is --metrics-cert-dir, MetricsServingOptions.CertDir: tls.crt and
	// tls.key, checked to load at Validate. Empty: a self-signed certificate.
	MetricsCertDir string
	// Profiling is --profiling, MetricsServingOptions.EnableProfiling.
	Profiling bool
	// HealthProbeAddr is --health-addr, Options.HealthProbeAddr: host:port of /healthz and
	// /readyz; "" serves none. Default ":8081".
	HealthProbeAddr string

	// LeaderElection gets kube-controller-manager's flags (see its AddFlags); set Enabled
	// and Name before AddFlags for their defaults.
	LeaderElection leaderelection.Config
	// CacheMemoryBudget is --cache-memory-budget and --cache-memory-budget-policy, the
	// informer factory's MemoryBudget and BudgetPolicy (Options.Cache).
	CacheMemoryBudget informer.BudgetFlags

	// Verbosity is -v, the verbosity of Options.Logger (klog's text format on stderr).
	Verbosity int
}

// AddFlags registers the flags on fs, bound to f's fields, with f's values (defaulted as each
// field says) as their defaults.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	if f.Burst == 0 {
		f.Burst = rest.DefaultBurst
	}
	if f.MetricsAddr == "" {
		f.MetricsAddr = ":8080"
	}
	if f.HealthProbeAddr == "" {
		f.HealthProbeAddr = ":8081"
	}
	fs.StringVar(&f.Kubeconfig, "kubeconfig", f.Kubeconfig, "path to a kubeconfig (or a list, as in $KUBECONFIG); empty: $KUBECONFIG, ~/.kube/config, then in-cluster")
	fs.Float32Var(&f.QPS, "kube-api-qps", f.QPS, "QPS to use while talking with the API server (kube-controller-manager's flag); 0: no client-side limit, API Priority and Fairness on the server decides")
	fs.IntVar(&f.Burst, "kube-api-burst", f.Burst, "burst to use while talking with the API server, with a positive --kube-api-qps")
	fs.StringVar(&f.MetricsAddr, "metrics-addr", f.MetricsAddr, `address of /metrics, host:port ("" disables)`)
	fs.BoolVar(&f.MetricsSecure, "metrics-secure", f.MetricsSecure, "serve /metrics over HTTPS, only to bearer tokens the API server authenticates and authorizes for get on /metrics (TokenReview, SubjectAccessReview; the binary's identity needs system:auth-delegator)")
	fs.StringVar(&f.MetricsCertDir, "metrics-cert-dir", f.MetricsCertDir, "directory holding "+certwatcher.CertFileName+" and "+certwatcher.KeyFileName+" for --metrics-secure, reloaded when they change; empty: a self-signed certificate")
	fs.BoolVar(&f.Profiling, "profiling", f.Profiling, "serve /debug/pprof/ on the metrics server (with --metrics-secure, to tokens allowed to get those paths)")
	fs.StringVar(&f.HealthProbeAddr, "health-addr", f.HealthProbeAddr, `address of /healthz and /readyz, host:port ("" disables)`)
	fs.IntVarP(&f.Verbosity, "v", "v", f.Verbosity, "log verbosity")
	f.LeaderElection.AddFlags(fs)
	f.CacheMemoryBudget.AddFlags(fs)
}

// Validate checks every value (after fs.Parse) without reaching the cluster: each malformed
// one is an error naming its flag, which a main reports before it exits with code 2. Options
// calls it; call it alone when the Options are built another way (a test's client).
func (f *Flags) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch q := float64(f.QPS); {
	case math.IsNaN(q) || math.IsInf(q, 0) || q < 0:
		bad("--kube-api-qps %v: want a finite number of requests per second, or 0 for no client-side limit", f.QPS)
	case q > 0 && f.Burst < 1:
		bad("--kube-api-burst %d: want at least 1 with --kube-api-qps %v", f.Burst, f.QPS)
	}
	if f.Burst < 0 {
		bad("--kube-api-burst %d: must not be negative", f.Burst)
	}
	for flag, addr := range map[string]string{"--metrics-addr": f.MetricsAddr, "--health-addr": f.HealthProbeAddr} {
		if err := checkAddr(addr); err != nil {
			bad("%s %q: %w", flag, addr, err)
		}
	}
	switch {
	case f.MetricsCertDir != "" && !f.MetricsSecure:
		bad("--metrics-cert-dir %q needs --metrics-secure", f.MetricsCertDir)
	case f.MetricsCertDir != "":
		if _, err := tls.LoadX509KeyPair(filepath.Join(f.MetricsCertDir, certwatcher.CertFileName),
			filepath.Join(f.MetricsCertDir, certwatcher.KeyFileName)); err != nil {
			bad("--metrics-cert-dir %q: %w", f.MetricsCertDir, err)
		}
	}
	if f.MetricsSecure && f.MetricsAddr != "" && f.MetricsAddr == f.HealthProbeAddr && !strings.HasSuffix(f.MetricsAddr, ":0") {
		bad("--metrics-secure: --metrics-addr and --health-addr are both %q; probes carry no token, give /metrics an address of its own", f.MetricsAddr)
	}
	if f.Verbosity < 0 {
		bad("-v %d: must not be negative", f.Verbosity)
	}
	// Without an election its durations are not used, so the rules between them are not
	// checked; a malformed name or namespace is a typo either way.
	le := f.LeaderElection
	if !le.Enabled {
		le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = leaderelection.DefaultLeaseDuration, leaderelection.DefaultRenewDeadline, leaderelection.DefaultRetryPeriod
		if le.Name == "" {
			le.Name = "unused" // only an election needs one
		}
	}
	if err := le.ValidateFlags(); err != nil {
		errs = append(errs, err)
	}
	if err := f.CacheMemoryBudget.Apply(nil); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Options validates the flags (Validate) and returns the Options they ask for: Config loaded
// from --kubeconfig (else GetConfig's) with --kube-api-qps and --kube-api-burst (and the
// Manager's handler of the API server's warnings, which logs each once at warning level),
// LeaderElection, the serving addresses and MetricsServing, the budget in Cache and
// a Logger at -v. Add what the flags do not say (FeatureGate, Scheme, ...) before New.
func (f *Flags) Options() (Options, error) {
	if err := f.Validate(); err != nil {
		return Options{}, err
	}
	cfg, err := f.restConfig()
	if err != nil {
		return Options{}, err
	}
	var cache informer.Options
	_ = f.CacheMemoryBudget.Apply(&cache) // checked by Validate
	le := f.LeaderElection
	return Options{
		Config:          cfg,
		Cache:           cache,
		LeaderElection:  &le,
		HealthProbeAddr: f.HealthProbeAddr,
		MetricsAddr:     f.MetricsAddr,
		MetricsServing: MetricsServingOptions{
			SecureServing:   f.MetricsSecure,
			CertDir:         f.MetricsCertDir,
			EnableProfiling: f.Profiling,
		},
		Logger: textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(f.Verbosity))),
	}, nil
}

// restConfig loads --kubeconfig (GetConfig's without it) and applies the rate limit flags.
func (f *Flags) restConfig() (*rest.Config, error) {
	var cfg *rest.Config
	if f.Kubeconfig == "" {
		var err error
		if cfg, err = GetConfig(); err != nil {
			return nil, fmt.Errorf("no --kubeconfig: %w", err)
		}
	} else {
		rules := &clientcmd.ClientConfigLoadingRules{}
		if paths := filepath.SplitList(f.Kubeconfig); len(paths) == 1 {
			rules.ExplicitPath = paths[0] // a missing file is an error, not an empty config
		} else {
			rules.Precedence = paths
		}
		var err error
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %q: %w", f.Kubeconfig, err)
		}
	}
	cfg.QPS, cfg.Burst = f.QPS, f.Burst
	return withWarningHandler(unlimited(cfg)), nil
}

// checkAddr accepts "" (not served) and host:port with a numeric port, so a typo is a flag
// error before anything starts rather than a failure to listen after the controllers did.
func checkAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}
