package rbactest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// servingMetrics is the Manager's log line for its metrics server.
var servingMetrics = regexp.MustCompile(`"Serving" addr="([^"]+)" what=\[[^\]]*"metrics"[^\]]*\] https=(true|false)`)

// Metrics asks the binary's /metrics (HTTPS, as the examples serve it against a cluster; its
// certificate is self-signed, so it is not verified) with token as the bearer token ("" for
// none) and returns the status code and body; 0 and the error when there was no answer.
func (p *Process) Metrics(token string) (int, string) {
	p.t.Helper()
	return p.MetricsPath("/metrics", token)
}

// MetricsPath is Metrics for another path of the metrics server.
func (p *Process) MetricsPath(path, token string) (int, string) {
	p.t.Helper()
	p.AwaitLog(servingMetrics)
	m := servingMetrics.FindStringSubmatch(p.Output())
	if m[2] != "true" {
		p.t.Fatalf("rbactest: the binary serves /metrics over plain HTTP on %s; the examples serve it over HTTPS against a cluster", m[1])
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // self-signed, a loopback test
	}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "https://"+m[1]+path, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return fetch(client, req)
}

// GrantMetrics binds the manifests' ClusterRole named role (the metrics reader, which the
// manifests bind to a scraper) to the ServiceAccount too, until the test ends.
func (in *Install) GrantMetrics(role string) {
	in.t.Helper()
	name, ok := in.names["ClusterRole/"+role]
	if !ok {
		in.t.Fatalf("rbactest: the manifests hold no ClusterRole %q", role)
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + in.m.ServiceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.m.ServiceAccount, Namespace: in.Namespace}},
	}
	if _, err := in.client.RbacV1().ClusterRoleBindings().Create(in.env.Context(), b, metav1.CreateOptions{}); err != nil {
		in.t.Fatalf("rbactest: binding %s: %v", name, err)
	}
	in.t.Cleanup(func() {
		_ = in.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
	})
}

// CheckMetricsAccess proves that the binary's /metrics is for those the cluster lets read it:
// without a token 401; with the ServiceAccount's own token 403 (its manifests grant it the
// reviews, not the reading); once role (the manifests' metrics reader) is bound to the
// ServiceAccount, 200 with the controller's series, and its /debug/informers page too. The check after the grant uses a fresh
// token of the same ServiceAccount, since the binary caches a denial for its token a while.
func CheckMetricsAccess(p *Process, in *Install, role string) {
	p.t.Helper()
	if code, body := p.Metrics(""); code != http.StatusUnauthorized {
		p.t.Fatalf("rbactest: /metrics without a token: %d %s, want 401", code, body)
	}
	if code, body := p.Metrics(in.Token); code != http.StatusForbidden {
		p.t.Fatalf("rbactest: /metrics with the ServiceAccount's token before the grant: %d %s, want 403", code, body)
	}
	in.GrantMetrics(role)
	fresh := in.NewToken()
	var code int
	var body string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, awaitTimeout, true, func(context.Context) (bool, error) {
		code, body = p.Metrics(fresh)
		return code == http.StatusOK, nil
	})
	if err != nil {
		p.t.Fatalf("rbactest: /metrics after granting %s: %v (last answer %d %.200s)", role, err, code, body)
	}
	if !strings.Contains(body, "rest_client_requests_total") || !strings.Contains(body, "ctrlkit_informer_bytes{") {
		p.t.Fatalf("rbactest: /metrics answered 200 without the process's series: %s", fmt.Sprintf("%.300s", body))
	}
	// The same role reads what the informer caches hold.
	if code, body := p.MetricsPath("/debug/informers", fresh); code != http.StatusOK || !strings.Contains(body, "RESOURCE") {
		p.t.Fatalf("rbactest: /debug/informers after granting %s: %d %.300s", role, code, body)
	}
	if code, body := p.MetricsPath("/debug/informers", ""); code != http.StatusUnauthorized {
		p.t.Fatalf("rbactest: /debug/informers without a token: %d %.200s, want 401", code, body)
	}
}
