package main

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/predicate"
)

// InfoController keeps a ConfigMap <name>-info for every Deployment labelled team.
type InfoController struct {
	*controller.Controller[controller.Key]
	deployments informer.Lister[*appsv1.Deployment]
	live        client.Client[*appsv1.Deployment] // the API server's word, before a delete
	configMaps  client.Client[*corev1.ConfigMap]
}

// NewInfoController builds the controller and adds it to mgr.
func NewInfoController(mgr *manager.Manager) (*InfoController, error) {
	c := &InfoController{}
	deps, err1 := informer.For[*appsv1.Deployment](mgr.Factory())
	cms, err2 := informer.For[*corev1.ConfigMap](mgr.Factory())
	cmClient, err3 := client.For[*corev1.ConfigMap](mgr.Client())
	depClient, err4 := client.For[*appsv1.Deployment](mgr.Client())
	ctrl, err5 := controller.New("deployment-info", c, controller.Options[controller.Key]{})
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, err
	}
	*c = InfoController{Controller: ctrl, deployments: deps.Lister(), live: depClient, configMaps: cmClient}
	changed := predicate.Or(predicate.GenerationChanged[*appsv1.Deployment](), predicate.LabelsChanged[*appsv1.Deployment]())
	return c, errors.Join(controller.Watch(ctrl, deps, controller.EnqueueObject, controller.WithPredicates(changed)),
		controller.Owns(ctrl, cms, deps), mgr.Add(c))
}

func (c *InfoController) Reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	d, err := c.deployments.Get(key.Namespace, key.Name)
	if err != nil || d.Labels["team"] == "" { // gone (a lister only answers NotFound) or not labelled
		// A cache can lag (a restart onto a lagging API server): delete only if the API server
		// agrees. Otherwise the cache's own update brings the key back.
		live, err := c.live.Get(ctx, key.Namespace, key.Name, metav1.GetOptions{})
		if err == nil && live.Labels["team"] != "" {
			return controller.Result{}, nil
		}
		if client.IgnoreNotFound(err) != nil {
			return controller.Result{}, err
		}
		return controller.Result{}, client.IgnoreNotFound(c.configMaps.Delete(ctx, key.Namespace, key.Name+"-info", metav1.DeleteOptions{}))
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name + "-info"}}
	_, err = client.CreateOrUpdate(ctx, c.configMaps, cm, func(cm *corev1.ConfigMap) error {
		cm.Data = map[string]string{"replicas": fmt.Sprint(ptr.Deref(d.Spec.Replicas, 1)), "image": d.Spec.Template.Spec.Containers[0].Image}
		return ownerref.SetControllerReference(d, cm)
	})
	return controller.Result{}, err
}
