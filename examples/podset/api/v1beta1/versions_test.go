package v1beta1_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
)

// Each version the two-version CRD serves fits its own Go types, and not the other's: the
// move of spec.replicas to spec.scale.replicas is what VerifyCRD sees.
func TestCRDVersionsMatchTheirGoTypes(t *testing.T) {
	require.NoError(t, customresource.VerifyCRD(v1beta1.CRDManifest, v1alpha1.Version, &v1alpha1.PodSet{}))
	require.NoError(t, customresource.VerifyCRD(v1beta1.CRDManifest, v1beta1.Version, &v1beta1.PodSet{}))

	err := customresource.VerifyCRD(v1beta1.CRDManifest, v1alpha1.Version, &v1beta1.PodSet{})
	require.ErrorIs(t, err, customresource.ErrCRDMismatch)
	require.ErrorContains(t, err, "spec.scale: no schema property, Go v1beta1.ScaleSpec")
	require.ErrorContains(t, err, "spec.replicas: schema integer (int32), no Go field")
}
