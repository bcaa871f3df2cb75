package clientgometrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A registry that has the client-go series already keeps them: registering
// again is not an error.
func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	require.NoError(t, Register(reg))
	require.NoError(t, Register(reg))
}

// hookedAtInit is Hooked when the test binary initialised, before any test
// ran: the package hooks nothing by being imported.
var hookedAtInit = Hooked()

// Install hooks the collectors into client-go once; a second call changes
// nothing.
func TestInstallOnce(t *testing.T) {
	assert.False(t, hookedAtInit, "nothing is hooked before Install")
	Install()
	assert.True(t, Hooked())
	Install()
	assert.True(t, Hooked())
}
