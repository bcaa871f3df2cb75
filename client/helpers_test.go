package client_test

import (
	"testing"

	"github.com/ctrlkit/ctrlkit/controller/controllertest"
	"github.com/ctrlkit/ctrlkit/controller/controllertest/fakecluster"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// podSetEnv is a fake cluster that serves PodSets, namespaced with a status subresource.
func podSetEnv(t *testing.T) *controllertest.FakeEnv {
	t.Helper()
	return controllertest.NewFakeWithOptions(t, controllertest.FakeOptions{Resources: []fakecluster.Resource{{
		GVR: v1alpha1.GVR, Kind: v1alpha1.Kind, Namespaced: true, StatusSubresource: true,
	}}})
}
