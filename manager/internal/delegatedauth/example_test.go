package delegatedauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ctrlkit/ctrlkit/manager/internal/delegatedauth"
	"github.com/ctrlkit/ctrlkit/manager/internal/delegatedauth/delegatedauthtest"
)

// A handler behind the API server's decisions: no token is 401, a user
// without the permission 403, a user with it gets through.
func ExampleFilter_Wrap() {
	client, _ := delegatedauthtest.NewReviewer() // a fake API server that knows three tokens
	f := delegatedauth.New(client, delegatedauth.Options{AllowTTL: time.Minute, DenyTTL: 30 * time.Second})
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	for _, token := range []string{"", "nobody-token", "scraper-token"} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%q: %d\n", token, rec.Code)
	}
	// Output:
	// "": 401
	// "nobody-token": 403
	// "scraper-token": 200
}
