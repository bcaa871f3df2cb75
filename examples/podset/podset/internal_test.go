package podset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/expectations"
)

func TestNewPodCarriesTemplateAndControllerRef(t *testing.T) {
	ps := &v1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "ps-uid"},
		Spec: v1alpha1.PodSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Finalizers: []string{"x/y"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}},
	}
	p := newPod(ps)
	assert.Equal(t, "web-", p.GenerateName)
	assert.Equal(t, "ns", p.Namespace)
	assert.Equal(t, []string{"x/y"}, p.Finalizers)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "examples.ctrlkit.dev/v1alpha1", Kind: "PodSet", Name: "web",
		UID: "ps-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}, p.OwnerReferences)
	p.Labels["app"] = "changed"
	assert.Equal(t, "web", ps.Spec.Template.Labels["app"], "the template is copied, not shared")
}

// A PodSet deleted and re-created under the same name starts with clean expectations, and a
// deleted one leaves no record behind.
func TestExpectationsFollowThePodSetUID(t *testing.T) {
	c := &Controller{exp: expectations.NewUIDTracking[types.UID](), uid: map[controller.Key]types.UID{}}
	k := controller.Key{Namespace: "ns", Name: "web"}
	c.remember(k, "old")
	c.exp.ExpectCreations("old", 3)
	assert.False(t, c.exp.Satisfied("old"))

	c.remember(k, "new")
	_, _, exists := c.exp.Get("old")
	assert.False(t, exists, "the replaced PodSet's record is dropped")

	c.exp.ExpectCreations("new", 1)
	c.forget(k)
	_, _, exists = c.exp.Get("new")
	assert.False(t, exists, "a deleted PodSet's record is dropped")
	assert.Empty(t, c.uid)
}
