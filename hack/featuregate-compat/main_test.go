package compat

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// TestMain silences klog: upstream logs its warnings (setting GA features, ...) through
// the global logger, thousands of lines in the random test, none of them compared.
func TestMain(m *testing.M) {
	klog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
