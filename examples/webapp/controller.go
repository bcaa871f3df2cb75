package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	webappv1 "github.com/ctrlkit/ctrlkit/examples/webapp/api/v1"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/predicate"
)

// RegistryNamespace holds a ConfigMap per WebApp for a front proxy to read. An owner reference
// cannot reach across namespaces, so a finalizer deletes it.
const RegistryNamespace = "webapp-registry"

// WebAppReconciler runs each WebApp as a Deployment and a Service that it owns.
type WebAppReconciler struct {
	webApps     *customresource.Client[*webappv1.WebApp]
	deployments client.Client[*appsv1.Deployment]
	services    client.Client[*corev1.Service]
	configMaps  client.Client[*corev1.ConfigMap]
}

// NewWebAppController builds the controller and adds it to mgr.
func NewWebAppController(mgr *manager.Manager) (*controller.Controller[controller.Key], error) {
	apps, err1 := informer.ForResource[*webappv1.WebApp](mgr.Factory(), webappv1.GVR)
	deps, err2 := informer.For[*appsv1.Deployment](mgr.Factory())
	svcs, err3 := informer.For[*corev1.Service](mgr.Factory())
	entries, err4 := informer.For(mgr.Factory(), informer.InNamespaces[*corev1.ConfigMap](RegistryNamespace))
	webApps, err5 := customresource.NewClient[*webappv1.WebApp](mgr.Dynamic(), webappv1.GVR)
	depClient, err6 := client.For[*appsv1.Deployment](mgr.Client())
	svcClient, err7 := client.For[*corev1.Service](mgr.Client())
	cmClient, err8 := client.For[*corev1.ConfigMap](mgr.Client())
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8); err != nil {
		return nil, err
	}
	r := &WebAppReconciler{webApps: webApps, deployments: depClient, services: svcClient, configMaps: cmClient}
	finalizers := finalizer.New[*webappv1.WebApp]()
	err1 = finalizers.Register("examples.ctrlkit.dev/registry", r.unregister)
	rec, err2 := controller.AsReconciler(apps.Lister(), r, controller.WithFinalizers(finalizers, webApps))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	// Auto fences: the next pass waits until the cache shows this one's writes, so the
	// finalizer it added is never added again from a stale copy (a Conflict).
	ctrl, err := controller.New("webapp", rec, controller.Options[controller.Key]{Fences: &controller.Fences{Auto: true}})
	if err != nil {
		return nil, err
	}
	return ctrl, errors.Join(controller.Watch(ctrl, apps, controller.EnqueueObject,
		controller.WithPredicates(predicate.GenerationChanged[*webappv1.WebApp]())),
		controller.Owns(ctrl, deps, apps), controller.Owns(ctrl, svcs, apps),
		controller.Watch(ctrl, entries, registryEntryOf), mgr.Add(ctrl))
}

// registryEntryOf maps a registry entry, "<namespace>.<name>", to its WebApp: an entry deleted
// or edited by someone else is put back (no owner reference can reach it).
func registryEntryOf(cm *corev1.ConfigMap) []controller.Key {
	if ns, name, ok := strings.Cut(cm.Name, "."); ok {
		return []controller.Key{{Namespace: ns, Name: name}}
	}
	return nil
}

// Reconcile makes the Deployment, the Service and the registry entry match app, and reports
// the Deployment's readiness in app's status.
func (r *WebAppReconciler) Reconcile(ctx context.Context, app *webappv1.WebApp) (controller.Result, error) {
	labels := map[string]string{"app.kubernetes.io/name": app.Name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	_, err1 := client.CreateOrUpdate(ctx, r.deployments, dep, func(d *appsv1.Deployment) error {
		d.Spec.Replicas = ptr.To(ptr.Deref(app.Spec.Replicas, 1))
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		d.Spec.Template.Labels = labels
		if len(d.Spec.Template.Spec.Containers) != 1 { // keep the fields the API server defaults
			d.Spec.Template.Spec.Containers = make([]corev1.Container, 1)
		}
		c := &d.Spec.Template.Spec.Containers[0]
		c.Name, c.Image, c.Ports = "web", app.Spec.Image, []corev1.ContainerPort{{ContainerPort: app.Spec.Port, Protocol: corev1.ProtocolTCP}}
		return ownerref.SetControllerReference(app, d)
	})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	_, err2 := client.CreateOrUpdate(ctx, r.services, svc, func(s *corev1.Service) error {
		s.Spec.Selector = labels
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: app.Spec.Port, TargetPort: intstr.FromInt32(app.Spec.Port), Protocol: corev1.ProtocolTCP}}
		return ownerref.SetControllerReference(app, s)
	})
	entry := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: RegistryNamespace, Name: app.Namespace + "." + app.Name}}
	_, err3 := client.CreateOrUpdate(ctx, r.configMaps, entry, func(cm *corev1.ConfigMap) error {
		cm.Data = map[string]string{"service": app.Name + "." + app.Namespace, "port": fmt.Sprint(app.Spec.Port)}
		return nil
	})
	if err := errors.Join(err1, err2, err3); err != nil {
		return controller.Result{}, err
	}
	_, _, err := client.PatchStatus(ctx, r.webApps, app, func(app *webappv1.WebApp) error {
		app.Status.ReadyReplicas = dep.Status.ReadyReplicas
		ready := metav1.Condition{Type: webappv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing"}
		if dep.Status.ReadyReplicas >= *dep.Spec.Replicas {
			ready.Status, ready.Reason = metav1.ConditionTrue, "Available"
		}
		meta.SetStatusCondition(&app.Status.Conditions, ready)
		return nil
	})
	return controller.Result{}, err
}

// unregister is the finalizer's cleanup: the registry entry goes before the WebApp does.
func (r *WebAppReconciler) unregister(ctx context.Context, app *webappv1.WebApp) error {
	return client.IgnoreNotFound(r.configMaps.Delete(ctx, RegistryNamespace, app.Namespace+"."+app.Name, metav1.DeleteOptions{}))
}
