package events

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The reportingInstance is the election identity, else "<hostname>_<pid>",
// cut to the API server's limit.
func TestInstance(t *testing.T) {
	assert.Equal(t, "replica-a", Instance("replica-a"))
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	assert.Equal(t, fmt.Sprintf("%s_%d", host, os.Getpid()), Instance(""))
	assert.Equal(t, strings.Repeat("x", maxReportingInstance), Instance(strings.Repeat("x", 200)))
}
