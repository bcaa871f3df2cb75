// Package delegatedauthtest is the API server's side of delegated
// authentication on a fake clientset, and a scraper's side over HTTP, for
// the tests of package delegatedauth and of the Manager's secure metrics.
package delegatedauthtest

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Reviewer answers TokenReviews and SubjectAccessReviews on a fake
// clientset: Tokens map to users, Allowed lists "user verb path" triples.
// Change the maps only while no request is served.
type Reviewer struct {
	Tokens  map[string]authenticationv1.UserInfo
	Allowed map[string]bool

	mu         sync.Mutex
	fail       error
	sars       []authorizationv1.SubjectAccessReviewSpec
	tokenCalls atomic.Int64
}

// NewReviewer returns a fake clientset whose reviews a Reviewer answers. It
// knows three tokens: "scraper-token" (a Prometheus ServiceAccount allowed
// get /metrics), "nobody-token" (allowed nothing) and "admin-token"
// (allowed get /metrics and a few /debug/pprof/ paths).
func NewReviewer() (*fake.Clientset, *Reviewer) {
	f := &Reviewer{
		Tokens: map[string]authenticationv1.UserInfo{
			"scraper-token": {Username: "system:serviceaccount:monitoring:prometheus", UID: "u1",
				Groups: []string{"system:serviceaccounts"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}},
			"nobody-token": {Username: "nobody"},
			"admin-token":  {Username: "admin"},
		},
		Allowed: map[string]bool{
			"system:serviceaccount:monitoring:prometheus get /metrics": true,
			"admin get /metrics":               true,
			"admin get /debug/pprof/":          true,
			"admin get /debug/pprof/cmdline":   true,
			"admin get /debug/pprof/goroutine": true,
		},
	}
	client := fake.NewClientset()
	client.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		f.tokenCalls.Add(1)
		if err := f.failure(); err != nil {
			return true, nil, err
		}
		tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if u, ok := f.Tokens[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: u}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		f.mu.Lock()
		f.sars = append(f.sars, sar.Spec)
		f.mu.Unlock()
		if err := f.failure(); err != nil {
			return true, nil, err
		}
		na := sar.Spec.NonResourceAttributes
		if na != nil && sar.Spec.ResourceAttributes == nil && f.Allowed[sar.Spec.User+" "+na.Verb+" "+na.Path] {
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true}
		} else {
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "no RBAC policy matched"}
		}
		return true, sar, nil
	})
	return client, f
}

func (f *Reviewer) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail
}

// SetFailure makes every review fail with err (nil: answer again).
func (f *Reviewer) SetFailure(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// SARCalls returns the specs of the SubjectAccessReviews made so far.
func (f *Reviewer) SARCalls() []authorizationv1.SubjectAccessReviewSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]authorizationv1.SubjectAccessReviewSpec(nil), f.sars...)
}

// Calls is the number of reviews made so far (TokenReviews and SubjectAccessReviews).
func (f *Reviewer) Calls() int { return int(f.tokenCalls.Load()) + len(f.SARCalls()) }

// Get GETs url through client, with "Authorization: Bearer <token>" unless
// token is empty, and returns the response and its body, read to the end.
func Get(t testing.TB, client *http.Client, url, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}
