package delegatedauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/manager/internal/delegatedauth/delegatedauthtest"
)

func authedGet(h http.Handler, path, authorization string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	h.ServeHTTP(rec, req)
	return rec
}

func TestFilterDecisions(t *testing.T) {
	client, rev := delegatedauthtest.NewReviewer()
	clk := clocktesting.NewFakeClock(time.Now())
	auth := New(client, Options{AllowTTL: time.Minute, DenyTTL: 10 * time.Second, Clock: clk})
	h := auth.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("secret")) }))

	// No or malformed credentials: 401 without asking the API server.
	for _, authz := range []string{"", "Basic YWRtaW46YWRtaW4=", "Bearer", "Bearer   ", "scraper-token"} {
		rec := authedGet(h, "/metrics", authz)
		assert.Equal(t, http.StatusUnauthorized, rec.Code, "%q", authz)
		assert.Equal(t, `Bearer realm="metrics"`, rec.Header().Get("WWW-Authenticate"))
		assert.NotContains(t, rec.Body.String(), "secret")
	}
	assert.Zero(t, rev.Calls())

	// Allowed: 200, and the review names the user, groups, extra, path and verb.
	rec := authedGet(h, "/metrics", "Bearer scraper-token")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "secret", rec.Body.String())
	require.Len(t, rev.SARCalls(), 1)
	assert.Equal(t, authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:monitoring:prometheus", UID: "u1", Groups: []string{"system:serviceaccounts"},
		Extra:                 map[string]authorizationv1.ExtraValue{"k": {"v"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}, rev.SARCalls()[0])
	assert.Equal(t, 2, rev.Calls())
	// The scheme is case-insensitive, as in kube-apiserver.
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "bearer scraper-token").Code)

	// Cached within AllowCacheTTL, asked again after it.
	clk.Step(time.Minute - time.Nanosecond)
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "Bearer scraper-token").Code)
	assert.Equal(t, 2, rev.Calls(), "a cached decision makes no API call")
	clk.Step(time.Nanosecond)
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "Bearer scraper-token").Code)
	assert.Equal(t, 4, rev.Calls(), "an expired decision is reviewed again")

	// The same token on another path is another decision.
	rec = authedGet(h, "/debug/pprof/", "Bearer scraper-token")
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Contains(t, rec.Body.String(), `user "system:serviceaccount:monitoring:prometheus" cannot get path "/debug/pprof/": no RBAC policy matched`)

	// An authenticated user without the permission: 403, cached for DenyCacheTTL.
	calls := rev.Calls()
	assert.Equal(t, http.StatusForbidden, authedGet(h, "/metrics", "Bearer nobody-token").Code)
	assert.Equal(t, calls+2, rev.Calls())
	clk.Step(10*time.Second - time.Nanosecond)
	assert.Equal(t, http.StatusForbidden, authedGet(h, "/metrics", "Bearer nobody-token").Code)
	assert.Equal(t, calls+2, rev.Calls())
	rev.Allowed["nobody get /metrics"] = true // granted meanwhile
	clk.Step(time.Nanosecond)
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "Bearer nobody-token").Code, "a grant is seen once the denial expired")

	// An invalid token: 401 after one TokenReview, cached too.
	calls = rev.Calls()
	assert.Equal(t, http.StatusUnauthorized, authedGet(h, "/metrics", "Bearer forged").Code)
	assert.Equal(t, http.StatusUnauthorized, authedGet(h, "/metrics", "Bearer forged").Code)
	assert.Equal(t, calls+1, rev.Calls())

	// The API server failing: 500 (not a panic, not a 401), never cached.
	rev.SetFailure(errors.New("connection refused"))
	rec = authedGet(h, "/metrics", "Bearer admin-token")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.NotContains(t, rec.Body.String(), "connection refused", "internal errors stay in the log")
	rev.SetFailure(nil)
	assert.Equal(t, http.StatusOK, authedGet(h, "/metrics", "Bearer admin-token").Code, "the error was not cached")
	// A failing SubjectAccessReview after a good TokenReview is a 500 too.
	rev.Allowed["admin get /debug/pprof/heap"] = true
	rev.Tokens["other-admin"] = rev.Tokens["admin-token"]
	client.PrependReactor("create", "subjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "", errors.New("rbac"))
	})
	assert.Equal(t, http.StatusInternalServerError, authedGet(h, "/debug/pprof/heap", "Bearer other-admin").Code)
}

func TestFilterErrorsNameTheMissingPermission(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "tokenreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("rbac"))
	})
	auth := New(client, Options{AllowTTL: time.Minute, DenyTTL: time.Minute, Clock: clocktesting.NewFakeClock(time.Now())})
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
func TestFilterCacheIsBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	auth := New(fake.NewClientset(), Options{AllowTTL: time.Minute, DenyTTL: time.Second, Clock: clk})
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
