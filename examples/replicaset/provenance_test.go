package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// At -v=2 every sync says why it runs: the ReplicaSet's own add, and the events of the Pods it
// created, by name.
func TestReasonsAreLoggedAtV2(t *testing.T) {
	e := newTestEnv(t, envOptions{kubelet: true, noStart: true})
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	e.RunController(ctx, e.rsc)
	e.createRS("web", 2)
	e.WaitForQuiet(quiet)
	e.assertConverged("web", true)

	var reasons []string
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if entry.Message != "Reconciling" || entry.Verbosity != 2 {
			continue
		}
		for i := 0; i+1 < len(entry.ParameterKVList); i += 2 {
			if entry.ParameterKVList[i] == "reasons" {
				reasons = append(reasons, fmt.Sprint(entry.ParameterKVList[i+1]))
			}
		}
	}
	all := strings.Join(reasons, "\n")
	assert.Contains(t, all, "event:add replicasets.apps default/web", "the first sync names the ReplicaSet's add")
	assert.Contains(t, all, "pods default/web-", "later syncs name the Pods whose events queued them")
}
