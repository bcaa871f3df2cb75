package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// An operator's outage after which the network has forgotten the connections (a load
// balancer's or NAT's flows lost, as in a failover), black box: the binary runs against an API
// server whose packets are dropped for 25 s; the ReplicaSet is scaled meanwhile; when the
// packets flow again, the connections open before the outage stay dead (testkit's
// Outage.Drop), as they do on a real network. The change is reconciled within 10 s of the
// restore: the Manager's probe, on connections of its own, sees the server answer again and
// closes the clients' connections, so the informers re-watch at once. Without that they waited
// for HTTP/2's health check on the dead connection (30 s without a frame, then a 15 s ping) and
// the reflectors' backoff (figures in docs/performance.md).
func TestAPIServerOutageCatchUpOverDeadConnections(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	r := runBehindOutage(t, env)
	out, outage := r.out, r.outage

	outage.Cut()
	cut := time.Now()
	r.scale(t, 3)
	// 25 s: past the probe's notice and the renew deadline, short of HTTP/2's 45 s, so the
	// connections of before are still in use when the outage ends.
	require.Eventually(t, func() bool { return time.Since(cut) >= 25*time.Second }, time.Minute, 100*time.Millisecond)
	outage.Drop()
	outage.Restore()
	restored := time.Now()
	err := wait.PollUntilContextTimeout(env.Context(), 50*time.Millisecond, 90*time.Second, true, r.pods(3))
	caughtUp := time.Since(restored)
	require.NoError(t, err, "the binary reconciled the change made during the outage: %s", out)
	t.Logf("caught up %v after the outage ended", caughtUp.Round(time.Millisecond))
	assert.Less(t, caughtUp, 10*time.Second, "caught up within 10 s of the restore: %s", out)
	assert.Contains(t, out.String(), `"The API server answers again"`)

	r.stop(t, 30*time.Second)
	if t.Failed() {
		t.Log(strings.ReplaceAll(out.String(), `\n`, "\n"))
	}
}
