package sharding_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// errReplyLost is the error a write whose reply writeFaults dropped returns
// (wrapped by client-go): the server applied the write, the client does not
// know it.
var errReplyLost = errors.New("injected: reply lost after the server applied the write")

// writeFaults is an http.RoundTripper that fails a seeded random fraction
// of write requests (POST, PUT, PATCH, DELETE) on a real API server: some
// are refused with a 500 or 503 the server never saw, others are sent, and
// when the server applied them their reply is dropped. Reads, lists and watches pass untouched, so caches
// stay fed and only the writes a member, sharder or dispatcher makes fail.
//
// The decisions come from one seed; which request meets which decision
// depends on the goroutines' interleaving.
type writeFaults struct {
	next          http.RoundTripper
	refuse, lose  float64 // fractions of writes
	off           atomic.Bool
	mu            sync.Mutex
	rnd           *rand.Rand
	byKind        map[string]int // "refused 503 PATCH configmaps" -> count
	writes        atomic.Int64
	refused, lost atomic.Int64
}

func newWriteFaults(seed uint64, refuse, lose float64) *writeFaults {
	return &writeFaults{refuse: refuse, lose: lose, rnd: rand.New(rand.NewPCG(seed, 0xfa17)), byKind: map[string]int{}}
}

// wrap makes cfg's clients send through w.
func (w *writeFaults) wrap(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &writeFaultsTransport{w: w, next: rt}
	})
	return cfg
}

func (w *writeFaults) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	kinds := make([]string, 0, len(w.byKind))
	for k, n := range w.byKind {
		kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d writes: %d refused, %d replies lost (%s)",
		w.writes.Load(), w.refused.Load(), w.lost.Load(), strings.Join(kinds, ", "))
}

// writeFaultsTransport is one client's transport in front of w.
type writeFaultsTransport struct {
	w    *writeFaults
	next http.RoundTripper
}

func (t *writeFaultsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := t.w
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return t.next.RoundTrip(req)
	}
	w.writes.Add(1)
	w.mu.Lock()
	p := w.rnd.Float64()
	code := http.StatusInternalServerError
	if w.rnd.IntN(2) == 0 {
		code = http.StatusServiceUnavailable
	}
	w.mu.Unlock()
	what := req.Method + " " + resourceOf(req.URL.Path)
	switch {
	case p < w.refuse:
		if req.Body != nil {
			_ = req.Body.Close()
		}
		w.count(&w.refused, fmt.Sprintf("refused %d %s", code, what))
		return statusResponse(req, code), nil
	case p < w.refuse+w.lose:
		resp, err := t.next.RoundTrip(req)
		if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
			return resp, err // only a write the server applied loses its reply
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		w.count(&w.lost, "lost "+what)
		return nil, errReplyLost
	default:
		return t.next.RoundTrip(req)
	}
}

func (w *writeFaults) count(n *atomic.Int64, kind string) {
	n.Add(1)
	w.mu.Lock()
	w.byKind[kind]++
	w.mu.Unlock()
}

// resourceOf is the resource a request path names: the segment after the
// namespace, or after the version for a cluster-scoped one.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			return parts[i+2]
		}
	}
	return path
}

// statusResponse is the reply an API server under strain gives: a Status of
// the code, as JSON, so client-go decodes it into an APIStatus error.
func statusResponse(req *http.Request, code int) *http.Response {
	reason := metav1.StatusReasonInternalError
	if code == http.StatusServiceUnavailable {
		reason = metav1.StatusReasonServiceUnavailable
	}
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason,
		Message: "injected write failure",
	})
	return &http.Response{
		Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(strings.NewReader(string(body))),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
