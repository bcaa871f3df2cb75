package leaderelection

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
)

// With an EventRecorder, a candidate records client-go's events on the Lease as it starts
// and stops leading; a standby records nothing until it leads.
func TestLeaderElectionEvents(t *testing.T) {
	c := newCluster(0, 1)
	events := record.NewFakeRecorder(16)
	events.IncludeObject = true
	cfg := fastConfig("a")
	cfg.EventRecorder = events
	rec := newRecorder()
	e := newTestElector(t, c, &netem{}, cfg, rec)
	r := start(e)
	waitFor(t, rec.started, 5*time.Second, "OnStartedLeading")
	const lease = " involvedObject{kind=Lease,apiVersion=coordination.k8s.io/v1}"
	assert.Equal(t, "Normal "+EventReasonLeaderElection+" a became leader"+lease,
		waitFor(t, events.Events, 5*time.Second, "the became-leader event"))

	standbyEvents := record.NewFakeRecorder(16)
	standbyCfg := fastConfig("b")
	standbyCfg.EventRecorder = standbyEvents
	standbyRec := newRecorder()
	standby := newTestElector(t, c, &netem{}, standbyCfg, standbyRec)
	rs := start(standby)
	waitForValue(t, standbyRec.newLeaders, "a", 5*time.Second, "the standby sees a")
	assert.Empty(t, standbyEvents.Events, "a standby records nothing")

	require.NoError(t, r.stop(t))
	assert.Equal(t, "Normal "+EventReasonLeaderElection+" a stopped leading"+lease,
		waitFor(t, events.Events, 5*time.Second, "the stopped-leading event"))
	// b takes over once a's Lease expired (a did not release it).
	waitFor(t, standbyRec.started, 10*time.Second, "b's OnStartedLeading")
	assert.True(t, strings.HasSuffix(waitFor(t, standbyEvents.Events, 5*time.Second, "b's event"), "b became leader"))
	require.NoError(t, rs.stop(t))
	assert.True(t, strings.HasSuffix(waitFor(t, standbyEvents.Events, 5*time.Second, "b's event"), "b stopped leading"))
	assert.Empty(t, events.Events, "a recorded nothing as a candidate that no longer runs")
}
