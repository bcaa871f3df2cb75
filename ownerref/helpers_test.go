package ownerref_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

var (
	rsGVK   = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
	rsGVR   = appsv1.SchemeGroupVersion.WithResource("replicasets")
)

const (
	ownerUID   = types.UID("rs-uid")
	foreignUID = types.UID("other-rs-uid")
)

func newOwner(mods ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: ownerUID, ResourceVersion: "10"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	for _, m := range mods {
		m(rs)
	}
	return rs
}

func deleting(rs *appsv1.ReplicaSet) {
	rs.DeletionTimestamp = ptr.To(metav1.Unix(1700000000, 0))
	rs.Finalizers = []string{"foregroundDeletion"}
}

func webLabels() map[string]string { return map[string]string{"app": "web"} }

func newPod(name string, labels map[string]string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, UID: types.UID(name + "-uid"), Labels: labels, ResourceVersion: "5",
	}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func controlledBy(uid types.UID) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner-of-" + string(uid), UID: uid,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		})
	}
}

func refTo(uid types.UID) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "v1", Kind: "ConfigMap", Name: "cm-" + string(uid), UID: uid,
		})
	}
}

func inNamespace(ns string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Namespace = ns } }

func podDeleting(p *corev1.Pod) {
	p.DeletionTimestamp = ptr.To(metav1.Unix(1700000000, 0))
	p.Finalizers = []string{"example.com/hold"}
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// patchActions returns the patch actions the fake clientset recorded, in order.
func patchActions(client *fake.Clientset) []clienttesting.PatchAction {
	var out []clienttesting.PatchAction
	for _, a := range client.Actions() {
		if pa, ok := a.(clienttesting.PatchAction); ok && a.GetVerb() == "patch" {
			out = append(out, pa)
		}
	}
	return out
}

func countActions(client *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func storedPod(t *testing.T, client *fake.Clientset, name string) *corev1.Pod {
	t.Helper()
	obj, err := client.Tracker().Get(podsGVR, "default", name)
	require.NoError(t, err)
	return obj.(*corev1.Pod)
}

// enforcePreconditions makes the fake behave as the API server does for the metadata a claim
// patch carries, which the fake tracker does not check: a metadata.uid different from the
// stored object's is a change of an immutable field (422 Invalid), and a resourceVersion other
// than the stored one is a Conflict (409). Everything else falls through to the tracker.
func enforcePreconditions(client *fake.Clientset, resource string) {
	client.PrependReactor("patch", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchAction)
		var body struct {
			Metadata struct {
				UID             types.UID `json:"uid"`
				ResourceVersion string    `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(pa.GetPatch(), &body); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		stored, err := client.Tracker().Get(pa.GetResource(), pa.GetNamespace(), pa.GetName())
		if err != nil {
			return false, nil, nil // the tracker answers NotFound itself
		}
		m, err := meta.Accessor(stored)
		if err != nil {
			return true, nil, err
		}
		gr := pa.GetResource().GroupResource()
		if body.Metadata.UID != "" && body.Metadata.UID != m.GetUID() {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "Pod"}, pa.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("metadata", "uid"), body.Metadata.UID, "field is immutable"),
			})
		}
		if body.Metadata.ResourceVersion != "" && body.Metadata.ResourceVersion != m.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gr, pa.GetName(),
				errors.New("the object has been modified; please apply your changes to the latest version and try again"))
		}
		return false, nil, nil
	})
}
