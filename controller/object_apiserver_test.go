package controller_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The journey on a real kube-apiserver, Widgets installed from their CRD: the finalizer and
// the status subresource as the server implements them. The package's tests cannot share a
// server (its TestMain is in package controller, which testkit imports), so this is its one
// test with a server of its own.
func TestObjectReconcilerOperatorOnAPIServer(t *testing.T) {
	env := testkit.NewAPIServer(t)
	require.NoError(t, customresource.EnsureCRDFromYAML(env.Context(), env.Dynamic(), widgetCRD))
	operatorJourney(t, env)
}
