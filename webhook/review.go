package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"k8s.io/klog/v2"
)

// DefaultMaxRequestBytes is the largest review body a handler reads: an object and its old
// version at the API server's request size limit, with room for the review around them
// (controller-runtime's limit too).
const DefaultMaxRequestBytes = 7 << 20

// readReview reads the body of a review request, or answers the request itself (405, 415,
// 413, 400) and returns false.
func readReview(w http.ResponseWriter, r *http.Request, maxBytes int64) ([]byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpError(w, r, http.StatusMethodNotAllowed, fmt.Errorf("method %s: reviews are POSTed", r.Method))
		return nil, false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		httpError(w, r, http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: reviews are application/json", r.Header.Get("Content-Type")))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		httpError(w, r, http.StatusRequestEntityTooLarge, fmt.Errorf("the review is larger than %d bytes", tooLarge.Limit))
		return nil, false
	case err != nil:
		httpError(w, r, http.StatusBadRequest, fmt.Errorf("reading the review: %w", err))
		return nil, false
	case len(body) == 0:
		httpError(w, r, http.StatusBadRequest, errors.New("empty body"))
		return nil, false
	}
	return body, true
}

func badRequest(w http.ResponseWriter, r *http.Request, err error) {
	httpError(w, r, http.StatusBadRequest, err)
}

// httpError answers a request that is not a review the handler can answer at all; the API
// server then applies the webhook's failurePolicy.
func httpError(w http.ResponseWriter, r *http.Request, code int, err error) {
	klog.FromContext(r.Context()).V(1).Info("Bad review request", "code", code, "err", err.Error(), "remote", r.RemoteAddr)
	http.Error(w, "webhook: "+err.Error(), code)
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		httpError(w, r, http.StatusInternalServerError, fmt.Errorf("encoding the response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(body); err != nil {
		klog.FromContext(r.Context()).V(1).Info("Writing the review response failed", "err", err.Error())
	}
}
