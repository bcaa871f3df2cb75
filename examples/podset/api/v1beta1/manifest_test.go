package v1beta1

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// v1alpha1Manifest reads v1alpha1's CRD from its source (v1alpha1 imports this package for
// its conversions, so this package's tests cannot import it).
func v1alpha1Manifest(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../v1alpha1/crd.yaml")
	require.NoError(t, err)
	return b
}
