package hashcons

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ptrTo[T any](v T) *T { return &v }

// fixturePod is a Pod of a Deployment as an API server holds it, with the
// parts the Pods of one ReplicaSet have in common (labels, owner, probes,
// env, resources, tolerations, volume sources) and the parts they do not
// (names, UID, the token volume's random name).
func fixturePod() *corev1.Pod {
	quantities := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	probe := func(path string, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds: period, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1,
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-6d9f7c8b5-x7k2p", GenerateName: "web-6d9f7c8b5-", Namespace: "shop", UID: "0b6c3c1e-8f0a-4f43-9d1b-0f1c2d3e4f50",
			ResourceVersion:   "4711",
			CreationTimestamp: metav1.Date(2026, 11, 30, 9, 41, 7, 0, time.UTC),
			Labels:            map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/version": "1.27.3", "pod-template-hash": "6d9f7c8b5"},
			Annotations:       map[string]string{"shop.example.com/owner-team": "payments"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-6d9f7c8b5", UID: "6a1f0c9e-1111-4b2a-8c3d-0a1b2c3d4e5f",
				Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true),
			}},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: "web",
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.example.com/shop/web:1.27.3",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "LOG_LEVEL", Value: "info"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				},
				Resources:      corev1.ResourceRequirements{Requests: quantities("250m", "256Mi"), Limits: quantities("1", "512Mi")},
				VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web", ReadOnly: true}, {Name: "kube-api-access-9xk2d", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				ReadinessProbe: probe("/readyz", 5),
				LivenessProbe:  probe("/livez", 10),
			}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](300)},
			},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}, DefaultMode: ptrTo[int32](0o644)}}},
				{Name: "kube-api-access-9xk2d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: ptrTo[int32](0o644),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptrTo[int64](3607), Path: "token"}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					},
				}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
	}
}
