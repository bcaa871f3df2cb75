package delegatedauth

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

// reviewTimeout bounds each TokenReview and SubjectAccessReview.
const reviewTimeout = 10 * time.Second

// Options configure a Filter.
type Options struct {
	// AllowTTL is how long an allowed decision is reused without asking the
	// API server again (a revoked token or a removed permission keeps
	// working at most this long).
	AllowTTL time.Duration
	// DenyTTL is how long a 401 or 403 is reused.
	DenyTTL time.Duration
	// Clock times the cached decisions. nil means the real clock.
	Clock clock.PassiveClock
	// Log returns the logger of the errors the API server answers with
	// (the client gets a bare 500). nil means klog.Background.
	Log func() klog.Logger
}

// Filter authenticates a request's bearer token with a TokenReview and
// authorizes its user to use the request's path with a SubjectAccessReview
// for that non-resource URL. Its methods may be called concurrently.
type Filter struct {
	client   kubernetes.Interface
	clock    clock.PassiveClock
	allowTTL time.Duration
	denyTTL  time.Duration
	log      func() klog.Logger

	mu      sync.Mutex
	entries map[string]cachedDecision
}

// New returns a Filter whose reviews client makes.
func New(client kubernetes.Interface, opts Options) *Filter {
	f := &Filter{client: client, clock: opts.Clock, allowTTL: opts.AllowTTL, denyTTL: opts.DenyTTL, log: opts.Log,
		entries: map[string]cachedDecision{}}
	if f.clock == nil {
		f.clock = clock.RealClock{}
	}
	if f.log == nil {
		f.log = klog.Background
	}
	return f
}

// decision is what a request gets: 0 lets it through, else the status and its text.
type decision struct {
	status int
	reason string
}

// Wrap serves h to requests that are authenticated and authorized: 401
// without a valid bearer token, 403 without the permission, 500 when the
// API server could not tell.
func (f *Filter) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := f.decide(r)
		if err != nil {
			f.log().Error(err, "Cannot authenticate or authorize a request", "path", r.URL.Path, "remote", r.RemoteAddr)
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

func (f *Filter) decide(r *http.Request) (decision, error) {
	token, ok := bearerToken(r)
	if !ok {
		return unauthorized, nil
	}
	verb, path := strings.ToLower(r.Method), r.URL.Path
	sum := sha256.Sum256([]byte(token)) // the cache keeps no token
	key := string(sum[:]) + "\x00" + verb + "\x00" + path
	if d, ok := f.cached(key); ok {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
	defer cancel()
	d, err := f.review(ctx, token, verb, path)
	if err != nil {
		return decision{}, err
	}
	ttl := f.denyTTL
	if d.status == 0 {
		ttl = f.allowTTL
	}
	f.store(key, d, ttl)
	return d, nil
}

// review asks the API server: who holds token, and may they verb path?
func (f *Filter) review(ctx context.Context, token, verb, path string) (decision, error) {
	tr, err := f.client.AuthenticationV1().TokenReviews().Create(ctx,
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
	sar, err := f.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
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
