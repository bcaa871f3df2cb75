package manager

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReviewer answers TokenReviews and SubjectAccessReviews on a fake clientset: tokens map
// to users, allowed lists "user verb path" triples, fail makes the API server error.
type fakeReviewer struct {
	tokens  map[string]authenticationv1.UserInfo
	allowed map[string]bool

	mu         sync.Mutex
	fail       error
	sars       []authorizationv1.SubjectAccessReviewSpec
	tokenCalls atomic.Int64
}

func newFakeReviewer() (*fake.Clientset, *fakeReviewer) {
	f := &fakeReviewer{
		tokens: map[string]authenticationv1.UserInfo{
			"scraper-token": {Username: "system:serviceaccount:monitoring:prometheus", UID: "u1",
				Groups: []string{"system:serviceaccounts"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}},
			"nobody-token": {Username: "nobody"},
			"admin-token":  {Username: "admin"},
		},
		allowed: map[string]bool{
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
		if u, ok := f.tokens[tr.Spec.Token]; ok {
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
		if na != nil && sar.Spec.ResourceAttributes == nil && f.allowed[sar.Spec.User+" "+na.Verb+" "+na.Path] {
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true}
		} else {
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "no RBAC policy matched"}
		}
		return true, sar, nil
	})
	return client, f
}

func (f *fakeReviewer) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail
}

func (f *fakeReviewer) setFailure(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *fakeReviewer) sarCalls() []authorizationv1.SubjectAccessReviewSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]authorizationv1.SubjectAccessReviewSpec(nil), f.sars...)
}

// calls is the number of reviews made so far (TokenReviews and SubjectAccessReviews).
func (f *fakeReviewer) calls() int { return int(f.tokenCalls.Load()) + len(f.sarCalls()) }

func authedGet(h http.Handler, path, authorization string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	h.ServeHTTP(rec, req)
	return rec
}

func TestAPIAuthDecisions(t *testing.T) {
	client, rev := newFakeReviewer()
	clk := clocktesting.NewFakeClock(time.Now())
	auth := newAPIAuth(client, clk, time.Minute, 10*time.Second, klog.Background)
	h := auth.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("secret")) }))

	// No or malformed credentials: 401 without asking the API server.
	for _, authz := range []string{"", "Basic YWRtaW46YWRtaW4=", "Bearer", "Bearer   ", "scraper-token"} {
		rec := authedGet(h, "/metrics", authz)
		assert.Equal(t, http.StatusUnauthorized, rec.Code, "%q", authz)
		assert.Equal(t, `Bearer realm="metrics"`, rec.Header().Get("WWW-Authenticate"))
		assert.NotContains(t, rec.Body.String(), "secret")
	}
	assert.Zero(t, rev.calls())

	// Allowed: 200, and the review names the user, groups, extra, path and verb.
	rec := authedGet(h, "/metrics", "Bearer scraper-token")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "secret", rec.Body.String())
	require.Len(t, rev.sarCalls(), 1)
	assert.Equal(t, authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:monitoring:prometheus", UID: "u1", Groups: []string{"system:serviceaccounts"},
		Extra:                 map[string]authorizationv1.ExtraValue{"k": {"v"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}, rev.sarCalls()[0])
	assert.Equal(t, 2, rev.calls())
	// The scheme is case-insensitive, as in kube-apiserver.
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "bearer scraper-token").Code)

	// Cached within AllowCacheTTL, asked again after it.
	clk.Step(time.Minute - time.Nanosecond)
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "Bearer scraper-token").Code)
	assert.Equal(t, 2, rev.calls(), "a cached decision makes no API call")
	clk.Step(time.Nanosecond)
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "Bearer scraper-token").Code)
	assert.Equal(t, 4, rev.calls(), "an expired decision is reviewed again")

	// The same token on another path is another decision.
	rec = authedGet(h, "/debug/pprof/", "Bearer scraper-token")
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Contains(t, rec.Body.String(), `user "system:serviceaccount:monitoring:prometheus" cannot get path "/debug/pprof/": no RBAC policy matched`)

	// An authenticated user without the permission: 403, cached for DenyCacheTTL.
	calls := rev.calls()
	assert.Equal(t, http.StatusForbidden, authedGet(h, "/metrics", "Bearer nobody-token").Code)
	assert.Equal(t, calls+2, rev.calls())
	clk.Step(10*time.Second - time.Nanosecond)
	assert.Equal(t, http.StatusForbidden, authedGet(h, "/metrics", "Bearer nobody-token").Code)
	assert.Equal(t, calls+2, rev.calls())
	rev.allowed["nobody get /metrics"] = true // granted meanwhile
	clk.Step(time.Nanosecond)
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "Bearer nobody-token").Code, "a grant is seen once the denial expired")

	// An invalid token: 401 after one TokenReview, cached too.
	calls = rev.calls()
	assert.Equal(t, http.StatusUnauthorized, authedGet(h, "/metrics", "Bearer forged").Code)
	assert.Equal(t, http.StatusUnauthorized, authedGet(h, "/metrics", "Bearer forged").Code)
	assert.Equal(t, calls+1, rev.calls())

	// The API server failing: 500 (not a panic, not a 401), never cached.
	rev.setFailure(errors.New("connection refused"))
	rec = authedGet(h, "/metrics", "Bearer admin-token")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.NotContains(t, rec.Body.String(), "connection refused", "internal errors stay in the log")
	rev.setFailure(nil)
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "Bearer admin-token").Code, "the error was not cached")
	// A failing SubjectAccessReview after a good TokenReview is a 500 too.
	rev.allowed["admin get /debug/pprof/heap"] = true
	rev.tokens["other-admin"] = rev.tokens["admin-token"]
	client.PrependReactor("create", "subjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "", errors.New("rbac"))
	})
	assert.Equal(t, http.StatusInternalServerError, authedGet(h, "/debug/pprof/heap", "Bearer other-admin").Code)
}

func TestAPIAuthErrorsNameTheMissingPermission(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "tokenreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("rbac"))
	})
	auth := newAPIAuth(client, clocktesting.NewFakeClock(time.Now()), time.Minute, time.Minute, klog.Background)
	_, err := auth.decide(httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(t.Context()))
	require.NoError(t, err, "no token: no review")
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer x")
	_, err = auth.decide(req)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.ErrorContains(t, err, "needs create on tokenreviews: bind the ClusterRole system:auth-delegator")
}

// The cache stays bounded whatever the number of distinct tokens, dropping expired entries
// first.
func TestAPIAuthCacheIsBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	auth := newAPIAuth(fake.NewClientset(), clk, time.Minute, time.Second, klog.Background)
	for i := range maxCachedDecisions {
		auth.store(fmt.Sprint("old", i), unauthorized, time.Second)
	}
	clk.Step(time.Second)
	auth.store("fresh", decision{}, time.Minute)
	assert.Len(t, auth.entries, 1, "expired entries are swept when full")
	for i := range 2 * maxCachedDecisions {
		auth.store(fmt.Sprint("live", i), decision{}, time.Minute)
	}
	assert.LessOrEqual(t, len(auth.entries), maxCachedDecisions)
	_, ok := auth.cached(fmt.Sprint("live", 2*maxCachedDecisions-1))
	assert.True(t, ok, "the newest entry is kept")
}
