package rbactest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// RunFunc is an example's main without os.Exit: it runs until ctx ends, writes its log to out
// and returns the exit code.
type RunFunc func(ctx context.Context, args []string, out io.Writer) int

// Process is an example binary running in the test's process on the ServiceAccount's
// kubeconfig, as the Deployment would run it.
type Process struct {
	t      testing.TB
	probes []string
	cancel context.CancelFunc
	done   chan int
	out    LogBuffer

	mu     sync.Mutex
	code   int
	exited bool
}

// Start runs run with the Deployment's arguments (Args) followed by extra, in its own
// goroutine, until Stop or the end of the test. Its log is kept (Output) and shown when the
// test fails. In the process, only the shipped kubeconfig reaches the cluster: run gets no
// other client, and --kubeconfig wins over $KUBECONFIG.
func (in *Install) Start(run RunFunc, extra ...string) *Process {
	in.t.Helper()
	ctx, cancel := context.WithCancel(in.env.Context())
	p := &Process{t: in.t, probes: in.probes, cancel: cancel, done: make(chan int, 1)}
	args := append(append([]string(nil), in.Args...), extra...)
	go func() { p.done <- run(ctx, args, &p.out) }()
	in.t.Cleanup(func() {
		p.Stop()
		if in.t.Failed() {
			in.t.Logf("rbactest: output of %v:\n%s", args, p.Output())
		}
	})
	return p
}

// Output is what the binary logged so far.
func (p *Process) Output() string { return p.out.String() }

// Exited reports whether the binary returned, and its exit code if it did.
func (p *Process) Exited() (code int, exited bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		select {
		case p.code = <-p.done:
			p.exited = true
		default:
		}
	}
	return p.code, p.exited
}

// Stop ends the binary's context (SIGTERM, in a Pod) and returns its exit code once it
// returned; a binary that does not return within a minute fails the test.
func (p *Process) Stop() int {
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		select {
		case p.code = <-p.done:
			p.exited = true
		case <-time.After(time.Minute):
			p.t.Fatalf("rbactest: the binary did not return within a minute of its context ending")
		}
	}
	return p.code
}

// ForbiddenMessage is the API server's answer when the ServiceAccount user asks for verb on
// resource ("pods", "podsets/status") of group ("" for core): what the binary must log.
func ForbiddenMessage(user, verb, resource, group string) string {
	return fmt.Sprintf(`is forbidden: User %q cannot %s resource %q in API group %q`, user, verb, resource, group)
}

// ForbiddenLines are the error lines the binary logged so far that hold the API server's
// refusal of a to the ServiceAccount.
func (p *Process) ForbiddenLines(in *Install, a Access) []string {
	return in.ForbiddenLines(p.Output(), a)
}

// ForbiddenLines are the error lines of a klog text log (out) that hold the API server's
// refusal of a to the ServiceAccount.
func (in *Install) ForbiddenLines(out string, a Access) []string {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	want := ForbiddenMessage(in.User, a.Verb, resource, a.Group)
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		// klog's text format quotes strings inside values; the message is the unquoted text.
		if strings.HasPrefix(line, "E") && strings.Contains(strings.ReplaceAll(line, `\"`, `"`), want) {
			lines = append(lines, line)
		}
	}
	return lines
}

// AwaitForbidden waits until the binary has logged the API server's refusal of a at least
// times times (a controller that retries logs it again on each attempt), while still running,
// and returns the first such line. A binary that exited meanwhile, or a deadline passed,
// fails the test.
func (p *Process) AwaitForbidden(in *Install, a Access, times int) string {
	p.t.Helper()
	var lines []string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, awaitTimeout, true, func(context.Context) (bool, error) {
		if code, exited := p.Exited(); exited {
			return false, fmt.Errorf("the binary exited with %d instead of retrying", code)
		}
		lines = p.ForbiddenLines(in, a)
		return len(lines) >= times, nil
	})
	if err != nil {
		p.t.Fatalf("rbactest: waiting for %d error lines refusing %s to %s: %d seen: %v", times, a, in.User, len(lines), err)
	}
	return lines[0]
}

// Wait waits until the binary returns on its own and returns its exit code; one that still
// runs after a minute fails the test.
func (p *Process) Wait() int {
	p.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, exited := p.Exited()
		return exited, nil
	})
	if err != nil {
		p.t.Fatalf("rbactest: the binary still runs after a minute")
	}
	code, _ := p.Exited()
	return code
}

// servingHealth is the Manager's log line naming the address it serves the probes on.
var servingHealth = regexp.MustCompile(`"Serving" addr="([^"]+)" what=\[[^\]]*"health"`)

// AwaitProbes waits until every probe of the Deployment's container answers 200 on the
// binary's health address: what the kubelet would ask before it counts the Pod ready, and
// keeps asking to leave it running.
func (p *Process) AwaitProbes() {
	p.t.Helper()
	for _, path := range p.probes {
		var code int
		var body string
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, awaitTimeout, true, func(context.Context) (bool, error) {
			code, body = p.Probe(path)
			return code == http.StatusOK, nil
		})
		if err != nil {
			p.t.Fatalf("rbactest: probe %s: %v (last answer: %d %s)", path, err, code, body)
		}
	}
}

// AwaitProbe waits until the binary's health address answers path with code and a body that
// holds want, and returns that body: a probe the kubelet would see fail (or pass) for a reason.
func (p *Process) AwaitProbe(path string, code int, want string) string {
	p.t.Helper()
	var got int
	var body string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, awaitTimeout, true, func(context.Context) (bool, error) {
		if c, exited := p.Exited(); exited {
			return false, fmt.Errorf("the binary exited with %d", c)
		}
		got, body = p.Probe(path)
		return got == code && strings.Contains(body, want), nil
	})
	if err != nil {
		p.t.Fatalf("rbactest: probe %s: want %d with %q: %v (last answer: %d %s)", path, code, want, err, got, body)
	}
	return body
}

// Probe asks the binary's health address for path (once it serves) and returns the status code
// and body of the answer; 0 and the error when there was none.
func (p *Process) Probe(path string) (int, string) {
	p.t.Helper()
	p.AwaitLog(servingHealth)
	addr := servingHealth.FindStringSubmatch(p.Output())[1]
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	return fetch(&http.Client{Timeout: 5 * time.Second}, req)
}

// fetch sends req and returns the status code and body of the answer; 0 and the error when
// there was none.
func fetch(client *http.Client, req *http.Request) (int, string) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// AwaitLog waits until the binary's log matches re, and fails the test when it exits first
// or the deadline passes.
func (p *Process) AwaitLog(re *regexp.Regexp) {
	p.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, awaitTimeout, true, func(context.Context) (bool, error) {
		if code, exited := p.Exited(); exited {
			return false, fmt.Errorf("the binary exited with %d", code)
		}
		return re.MatchString(p.Output()), nil
	})
	if err != nil {
		p.t.Fatalf("rbactest: waiting for the log to match %q: %v", re, err)
	}
}

// LogBuffer is a bytes.Buffer safe to read while a binary, or a controller's goroutines, write
// their log to it: what every example test that reads a running binary's output needs.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Starter is what RunManager runs: a manager.Manager.
type Starter interface {
	Start(ctx context.Context) error
}

// RunManager starts mgr on ctx with a text logger writing to the returned buffer, and stops it
// when the test ends, expecting a clean return; the log is printed if the test failed. For
// tests that run an example's controllers in-process, under the RBAC of an Install.
func RunManager(t testing.TB, ctx context.Context, mgr Starter) *LogBuffer {
	t.Helper()
	log := &LogBuffer{}
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(log)))))
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	})
	return log
}
