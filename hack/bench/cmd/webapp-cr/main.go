// Command webapp-cr is examples/webapp written on controller-runtime v0.25.3, as a kubebuilder
// project would write it: the same WebApp API, the same Deployment, Service, registry entry,
// finalizer and status. It exists to be built beside examples/webapp, so that the two
// binaries' sizes compare what each library links into the same operator (hack/binsize.sh).
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webappv1 "github.com/ctrlkit/ctrlkit/examples/webapp/api/v1"
)

const (
	registryNamespace = "webapp-registry"
	registryFinalizer = "examples.ctrlkit.dev/registry"
)

func main() {
	if err := run(); err != nil {
		ctrl.Log.Error(err, "Exiting")
		os.Exit(1)
	}
}

func run() error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := webappv1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	r := &reconciler{Client: mgr.GetClient()}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&webappv1.WebApp{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(registryEntryOf)).
		Complete(r)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// registryEntryOf maps a registry entry, "<namespace>.<name>", to its WebApp.
func registryEntryOf(_ context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != registryNamespace {
		return nil
	}
	if ns, name, ok := strings.Cut(obj.GetName(), "."); ok {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
	}
	return nil
}

type reconciler struct {
	client.Client
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	app := &webappv1.WebApp{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	entry := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: registryNamespace, Name: app.Namespace + "." + app.Name}}
	if !app.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(app, registryFinalizer) {
			if err := r.Delete(ctx, entry); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
			controllerutil.RemoveFinalizer(app, registryFinalizer)
			return reconcile.Result{}, r.Update(ctx, app)
		}
		return reconcile.Result{}, nil
	}
	if controllerutil.AddFinalizer(app, registryFinalizer) {
		if err := r.Update(ctx, app); err != nil {
			return reconcile.Result{}, err
		}
	}

	labels := map[string]string{"app.kubernetes.io/name": app.Name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		dep.Spec.Replicas = ptr.To(ptr.Deref(app.Spec.Replicas, 1))
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		dep.Spec.Template.Labels = labels
		if len(dep.Spec.Template.Spec.Containers) != 1 {
			dep.Spec.Template.Spec.Containers = make([]corev1.Container, 1)
		}
		c := &dep.Spec.Template.Spec.Containers[0]
		c.Name, c.Image, c.Ports = "web", app.Spec.Image, []corev1.ContainerPort{{ContainerPort: app.Spec.Port, Protocol: corev1.ProtocolTCP}}
		return controllerutil.SetControllerReference(app, dep, r.Scheme())
	}); err != nil {
		return reconcile.Result{}, err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		svc.Spec.Selector = labels
		svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: app.Spec.Port, TargetPort: intstr.FromInt32(app.Spec.Port), Protocol: corev1.ProtocolTCP}}
		return controllerutil.SetControllerReference(app, svc, r.Scheme())
	}); err != nil {
		return reconcile.Result{}, err
	}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, entry, func() error {
		entry.Data = map[string]string{"service": app.Name + "." + app.Namespace, "port": fmt.Sprint(app.Spec.Port)}
		return nil
	}); err != nil {
		return reconcile.Result{}, err
	}

	patch := client.MergeFrom(app.DeepCopy())
	app.Status.ReadyReplicas = dep.Status.ReadyReplicas
	ready := metav1.Condition{Type: webappv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing"}
	if dep.Status.ReadyReplicas >= *dep.Spec.Replicas {
		ready.Status, ready.Reason = metav1.ConditionTrue, "Available"
	}
	meta.SetStatusCondition(&app.Status.Conditions, ready)
	return reconcile.Result{}, r.Status().Patch(ctx, app, patch)
}
