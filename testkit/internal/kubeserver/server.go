package kubeserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Timeouts of the API server's life cycle.
const (
	// StartTimeout bounds how long etcd and kube-apiserver may take to answer healthy. A
	// kube-apiserver is ready in about 15 s on an idle 2-core machine; a loaded one is slower.
	StartTimeout = 2 * time.Minute
	// stopGrace is how long a process may take to exit after SIGTERM before it gets SIGKILL.
	stopGrace = 15 * time.Second
	// portAttempts is how often start picks new ports when another process took a free port
	// between our probe and the child's bind.
	portAttempts = 3
)

// UserAgent is the User-Agent of the server's clients; kube-apiserver records "ctrlkit-testkit"
// as the field manager of their writes that name none, and testkit's fake cluster does too.
const UserAgent = "ctrlkit-testkit"

// Server is one etcd and one kube-apiserver on loopback, with their files in dir.
type Server struct {
	bins Binaries
	dir  string
	pki  *pki
	// featureGates is kube-apiserver's --feature-gates value; "" passes none.
	featureGates string

	mu         sync.Mutex // serialises start, restart and stop
	etcd       *process
	apiserver  *process
	etcdPort   int
	peerPort   int
	port       int // kube-apiserver's secure port; kept across restarts so clients reconnect
	config     *rest.Config
	stopped    bool
	startedFor time.Duration // how long the last full start took
}

// New prepares dir (certificates, token file); start runs the processes. featureGates is
// kube-apiserver's --feature-gates value ("Name=true,Other=false"); "" passes none.
func New(bins Binaries, dir, featureGates string) (*Server, error) {
	for _, sub := range []string{"certs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", sub, err)
		}
	}
	p, err := newPKI(filepath.Join(dir, "certs"))
	if err != nil {
		return nil, err
	}
	return &Server{bins: bins, dir: dir, pki: p, featureGates: featureGates}, nil
}

// Start runs etcd, then kube-apiserver, and waits until both answer healthy. On error whatever
// still runs is left to Stop (which the caller always calls); the logs stay in dir for LogTails.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("api server already stopped")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()

	var err error
	for attempt := 1; attempt <= portAttempts; attempt++ {
		var ports []int
		if ports, err = freePorts(3); err != nil {
			return err
		}
		s.etcdPort, s.peerPort, s.port = ports[0], ports[1], ports[2]
		if err = s.startEtcdLocked(ctx); err != nil {
			if s.portTaken(s.etcd) {
				continue
			}
			return err
		}
		if err = s.startAPIServerLocked(ctx); err != nil {
			if s.portTaken(s.apiserver) {
				s.stopEtcdLocked()
				continue
			}
			return err
		}
		s.startedFor = time.Since(begin)
		return nil
	}
	return fmt.Errorf("no free ports after %d attempts: %w", portAttempts, err)
}

// portTaken reports whether p exited because its port was taken in the meantime.
func (s *Server) portTaken(p *process) bool {
	return p != nil && p.exited() && strings.Contains(p.tail(50), "address already in use")
}

func (s *Server) etcdURL() string { return "http://127.0.0.1:" + strconv.Itoa(s.etcdPort) }

func (s *Server) startEtcdLocked(ctx context.Context) error {
	// Each attempt starts from an empty store: a data dir keeps the member's old peer URL.
	dataDir := filepath.Join(s.dir, "etcd")
	if err := os.RemoveAll(dataDir); err != nil {
		return fmt.Errorf("reset etcd data dir: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create etcd data dir: %w", err)
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(s.peerPort)
	args := []string{
		"--name=testkit",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + s.etcdURL(),
		"--advertise-client-urls=" + s.etcdURL(),
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=testkit=" + peer,
		// A throw-away store: durability buys nothing and fsync dominates write latency.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
	p, err := startProcess("etcd", s.bins.Etcd, args, filepath.Join(s.dir, "etcd.log"))
	if err != nil {
		return err
	}
	s.etcd = p
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	return waitHealthy(ctx, p, func(ctx context.Context) error {
		return probe(ctx, client, s.etcdURL()+"/health", "", func(body string) bool {
			return strings.Contains(body, `"health":"true"`)
		})
	})
}

// apiServerArgs are the flags known to work on loopback, plus:
//   - a token file whose one user is in system:masters (cluster admin without RBAC bindings);
//   - ServiceAccount admission disabled: nothing creates the "default" ServiceAccount without a
//     kube-controller-manager, and Pods would be refused until a test made one in each namespace;
//   - priority-and-fairness off: its config controllers only delay readiness here;
//   - shutdown-send-retry-after: SIGTERM then waits for ordinary requests and gives open watches
//     2 s, instead of up to --request-timeout (60 s) for watch streams that never end.
func (s *Server) apiServerArgs() []string {
	args := []string{
		"--etcd-servers=" + s.etcdURL(),
		"--secure-port=" + strconv.Itoa(s.port),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(s.dir, "certs"),
		"--tls-cert-file=" + s.pki.servingCert,
		"--tls-private-key-file=" + s.pki.servingKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + s.pki.saPublic,
		"--service-account-signing-key-file=" + s.pki.saPrivate,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--token-auth-file=" + s.pki.tokenFile,
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--shutdown-send-retry-after=true",
		"--profiling=false",
	}
	if s.featureGates != "" {
		args = append(args, "--feature-gates="+s.featureGates)
	}
	return args
}

func (s *Server) startAPIServerLocked(ctx context.Context) error {
	p, err := startProcess("kube-apiserver", s.bins.APIServer, s.apiServerArgs(), filepath.Join(s.dir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	s.apiserver = p
	s.config = &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(s.port),
		BearerToken:     s.pki.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.pki.caPEM},
		// No client-side throttling: tests create objects in bursts and the server is theirs.
		QPS:       -1,
		UserAgent: UserAgent,
	}
	client, err := s.probeClient()
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	err = waitHealthy(ctx, p, func(ctx context.Context) error {
		return probe(ctx, client, s.config.Host+"/readyz", s.pki.token, func(body string) bool { return body == "ok" })
	})
	if err != nil && !p.exited() {
		// Say which readiness checks were still failing.
		verbose := probeBody(client, s.config.Host+"/readyz?verbose", s.pki.token)
		err = fmt.Errorf("%w\n/readyz?verbose:\n%s", err, verbose)
	}
	return err
}

// probeClient is an HTTPS client trusting the server's CA.
func (s *Server) probeClient() (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.pki.caPEM) {
		return nil, errors.New("cannot load generated ca certificate")
	}
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}, nil
}

// Restart stops kube-apiserver and starts it again on the same port and etcd, so existing
// clients and informers reconnect to it.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.apiserver == nil {
		return errors.New("api server is not running")
	}
	if err := s.apiserver.stop(stopGrace); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	return s.startAPIServerLocked(ctx)
}

// Stop ends kube-apiserver, then etcd, and returns once both are reaped. It is idempotent.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	var errs []error
	if s.apiserver != nil {
		errs = append(errs, s.apiserver.stop(stopGrace))
	}
	errs = append(errs, s.stopEtcdLocked())
	return errors.Join(errs...)
}

func (s *Server) stopEtcdLocked() error {
	if s.etcd == nil {
		return nil
	}
	return s.etcd.stop(stopGrace)
}

// PIDs are the process ids of the children that have been started, for leak checks.
func (s *Server) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for _, p := range []*process{s.etcd, s.apiserver} {
		if p != nil {
			pids = append(pids, p.pid())
		}
	}
	return pids
}

// LogTails returns the end of each process's log, for a failure message.
func (s *Server) LogTails(lines int) string {
	var b strings.Builder
	for _, name := range []string{"etcd", "kube-apiserver"} {
		path := filepath.Join(s.dir, name+".log")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		fmt.Fprintf(&b, "--- last %d lines of %s ---\n%s\n", lines, path, tailFile(path, lines))
	}
	return b.String()
}

// waitHealthy polls check every 100 ms until it succeeds, the process exits or ctx ends.
func waitHealthy(ctx context.Context, p *process, check func(context.Context) error) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var last error
	for {
		if p.exited() {
			return p.exitError()
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w (last probe: %v)", p.name, context.Cause(ctx), last)
		case <-p.done:
		case <-ticker.C:
		}
	}
}

// probe GETs url and succeeds on 200 with a body ok accepts.
func probe(ctx context.Context, client *http.Client, url, token string, ok func(string) bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	text := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK || !ok(text) {
		return fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, text)
	}
	return nil
}

func probeBody(client *http.Client, url, token string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var body string
	err := probe(ctx, client, url, token, func(b string) bool { body = b; return true })
	if err != nil {
		return err.Error()
	}
	return body
}

// freePorts returns n distinct loopback ports that were free a moment ago. They are held open
// together while choosing so that n different ones come back.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ClientConfig is a copy of the configuration that reaches the server as a cluster admin.
func (s *Server) ClientConfig() *rest.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rest.CopyConfig(s.config)
}

// IsStopped reports whether Stop has been called.
func (s *Server) IsStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Dir is the directory holding the server's data, certificates and logs.
func (s *Server) Dir() string { return s.dir }

// StartedFor is how long the last full Start took.
func (s *Server) StartedFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startedFor
}
