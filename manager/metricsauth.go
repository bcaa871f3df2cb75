package manager

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of MetricsServingOptions' cache TTLs: controller-runtime's authorizer defaults for
// denials, and its authenticator's for allowed requests (a revoked token or a removed
// permission keeps working at most this long).
const (
	DefaultAllowCacheTTL = time.Minute
	DefaultDenyCacheTTL  = 30 * time.Second
)

const (
	// maxCachedDecisions bounds the decision cache, so that a client spraying random tokens
	// costs API calls, not memory.
	maxCachedDecisions = 4096
	// reviewTimeout bounds each TokenReview and SubjectAccessReview.
	reviewTimeout = 10 * time.Second
)

// apiAuth authenticates a request's bearer token with a TokenReview and authorizes its user
// to use the request's path with a SubjectAccessReview for that non-resource URL (the verb is
// the lower-cased method, as the API server names non-resource verbs), the way kube-apiserver
// delegates both for its own components' endpoints. Decisions are cached per token, verb and
// path; errors are not.
type apiAuth struct {
	client   kubernetes.Interface
	clock    clock.PassiveClock
	allowTTL time.Duration
	denyTTL  time.Duration
	log      func() klog.Logger

	mu      sync.Mutex
	entries map[string]cachedDecision
}

// decision is what a request gets: 0 lets it through, else the status and its text.
type decision struct {
	status int
	reason string
}

type cachedDecision struct {
	decision
	expires time.Time
}

func newAPIAuth(client kubernetes.Interface, clk clock.PassiveClock, allowTTL, denyTTL time.Duration, log func() klog.Logger) *apiAuth {
	return &apiAuth{client: client, clock: clk, allowTTL: allowTTL, denyTTL: denyTTL, log: log,
		entries: map[string]cachedDecision{}}
}

// wrap serves h to requests that are authenticated and authorized: 401 without a valid
// bearer token, 403 without the permission, 500 when the API server could not tell.
func (a *apiAuth) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := a.decide(r)
		if err != nil {
			a.log().Error(err, "Cannot authenticate or authorize a request", "path", r.URL.Path, "remote", r.RemoteAddr)
			http.Error(w, "Internal Server Error: authentication or authorization failed", http.StatusInternalServerError)
			return
		}
		if d.status != 0 {
			if d.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			}
			http.Error(w, d.reason, d.status)
			return
		}
		h.ServeHTTP(w, r)
	})
}

var unauthorized = decision{http.StatusUnauthorized, "Unauthorized"}

func (a *apiAuth) decide(r *http.Request) (decision, error) {
	token, ok := bearerToken(r)
	if !ok {
		return unauthorized, nil
	}
	verb, path := strings.ToLower(r.Method), r.URL.Path
	sum := sha256.Sum256([]byte(token)) // the cache keeps no token
	key := string(sum[:]) + "\x00" + verb + "\x00" + path
	if d, ok := a.cached(key); ok {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
	defer cancel()
	d, err := a.review(ctx, token, verb, path)
	if err != nil {
		return decision{}, err
	}
	ttl := a.denyTTL
	if d.status == 0 {
		ttl = a.allowTTL
	}
	a.store(key, d, ttl)
	return d, nil
}

// review asks the API server: who holds token, and may they verb path?
func (a *apiAuth) review(ctx context.Context, token, verb, path string) (decision, error) {
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("token review: %w%s", err, delegationHint(err, "tokenreviews"))
	}
	if !tr.Status.Authenticated {
		return unauthorized, nil
	}
	user := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user.Username,
			UID:                   user.UID,
			Groups:                user.Groups,
			Extra:                 extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("subject access review for %q: %w%s", user.Username, err, delegationHint(err, "subjectaccessreviews"))
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		// The API server's wording, so the answer reads as the one kubectl would get.
		reason := fmt.Sprintf("Forbidden: user %q cannot %s path %q", user.Username, verb, path)
		if sar.Status.Reason != "" {
			reason += ": " + sar.Status.Reason
		}
		return decision{http.StatusForbidden, reason}, nil
	}
	return decision{}, nil
}

// delegationHint names the permission a Manager's client lacks when the API server refused
// the review itself.
func delegationHint(err error, resource string) string {
	if apierrors.IsForbidden(err) {
		return fmt.Sprintf(" (the Manager's client needs create on %s: bind the ClusterRole system:auth-delegator)", resource)
	}
	return ""
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header (the scheme is
// case-insensitive, as in kube-apiserver).
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return "", false
	}
	return token, true
}

func (a *apiAuth) cached(key string) (decision, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.entries[key]
	if !ok {
		return decision{}, false
	}
	if !a.clock.Now().Before(e.expires) {
		delete(a.entries, key)
		return decision{}, false
	}
	return e.decision, true
}

func (a *apiAuth) store(key string, d decision, ttl time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	if len(a.entries) >= maxCachedDecisions {
		for k, e := range a.entries {
			if !now.Before(e.expires) {
				delete(a.entries, k)
			}
		}
		// Still full of live entries: drop one at random (map order), which bounds memory
		// and costs at most one extra review later.
		for k := range a.entries {
			if len(a.entries) < maxCachedDecisions {
				break
			}
			delete(a.entries, k)
		}
	}
	a.entries[key] = cachedDecision{decision: d, expires: now.Add(ttl)}
}
