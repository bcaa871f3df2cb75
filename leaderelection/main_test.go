package leaderelection

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine an Elector starts ends before Run returns, so after all tests none of the
// package's may remain. klog's flush daemon is started by klog itself at init.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}
