package client_test

import (
	"testing"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// podSetEnv is a fake cluster that serves PodSets, namespaced with a status subresource.
func podSetEnv(t *testing.T) *testkit.FakeEnv {
	t.Helper()
	return testkit.NewFakeWithOptions(t, testkit.FakeOptions{Resources: []fakecluster.Resource{{
		GVR: v1alpha1.GVR, Kind: v1alpha1.Kind, Namespaced: true, StatusSubresource: true,
	}}})
}
