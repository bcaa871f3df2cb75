package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func deployment(name string, labels map[string]string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
		}},
	}
}

func TestInfoController(t *testing.T) {
	env := testkit.NewFake(t,
		deployment("web", map[string]string{"team": "shop"}, 3),
		deployment("batch", nil, 1))
	mgr, err := manager.New(manager.Options{Client: env.Client(), Factory: env.Factory()})
	require.NoError(t, err)
	c, err := NewInfoController(mgr)
	require.NoError(t, err)
	env.RunController(env.Context(), c) // the env runs it: mgr is only where it was added
	env.WaitForQuiet(30 * time.Second)
	cms := env.Client().CoreV1().ConfigMaps("default")

	info, err := cms.Get(env.Context(), "web-info", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"replicas": "3", "image": "nginx:1.27"}, info.Data)
	require.Len(t, info.OwnerReferences, 1)
	assert.Equal(t, "web", info.OwnerReferences[0].Name)
	assert.True(t, *info.OwnerReferences[0].Controller)
	_, err = cms.Get(env.Context(), "batch-info", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "an unlabelled Deployment gets no ConfigMap")

	// A spec change updates the ConfigMap; a ConfigMap edited by hand is repaired (Owns).
	deps := env.Client().AppsV1().Deployments("default")
	web, err := deps.Get(env.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	web.Spec.Replicas = ptr.To[int32](5)
	_, err = deps.Update(env.Context(), web, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.WaitForQuiet(30 * time.Second)
	info, err = cms.Get(env.Context(), "web-info", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "5", info.Data["replicas"])
	info.Data["replicas"] = "tampered"
	_, err = cms.Update(env.Context(), info, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.WaitForQuiet(30 * time.Second)
	info, err = cms.Get(env.Context(), "web-info", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "5", info.Data["replicas"])

	// Removing the label deletes the ConfigMap.
	web, err = deps.Get(env.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	web.Labels = nil
	_, err = deps.Update(env.Context(), web, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.WaitForQuiet(30 * time.Second)
	_, err = cms.Get(env.Context(), "web-info", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the label went, so did the ConfigMap: %v", err)
}

// The README shows these two files as they are: a change to either that is not copied there
// fails here, so the README's first controller always compiles and passes the test above.
func TestREADMEShowsThisController(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, file := range []string{"controller.go", "main.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.True(t, strings.Contains(string(readme), "```go\n"+string(src)+"```\n"),
			"README.md does not show examples/first-controller/%s as it is", file)
	}
}
