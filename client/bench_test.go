package client_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/client"
)

// benchPod is a Pod of realistic size: labels, annotations, two containers with resources,
// env and mounts, and a status with conditions.
func benchPod() *corev1.Pod {
	c := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example.com/team/" + name + ":v1.2.3",
			Env:          []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", UID: "uid", ResourceVersion: "1",
			Labels:      map[string]string{"app": "web", "tier": "front", "pod-template-hash": "abc"},
			Annotations: map[string]string{"note": "x"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c("app"), c("sidecar")}, NodeName: "n1",
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
}

// The cost of For's dispatch: a Get through Client[T] against the same Get called on the
// typed client directly, both on client-go's fake (whose own cost dominates both).
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	cs := fake.NewClientset(benchPod())
	b.Run("typed", func(b *testing.B) {
		for b.Loop() {
			if _, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client.For", func(b *testing.B) {
		pods, err := client.For[*corev1.Pod](cs)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := pods.Get(ctx, "default", "web-0", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The cost of the cached reader's copy: a lister Get (the cache's own object) against a
// cached Client Get (a deep copy of it).
func BenchmarkCachedGet(b *testing.B) {
	ctx := context.Background()
	pod := benchPod()
	l := podLister{pod}
	pods, err := client.For[*corev1.Pod](fake.NewClientset())
	if err != nil {
		b.Fatal(err)
	}
	cached, err := client.NewCached(pods, l)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("lister", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Get("default", "web-0"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached-client", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cached.Get(ctx, "default", "web-0", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
