package multicluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
)

// ClusterProfileResource is the cluster inventory API's ClusterProfile
// (KEP-4322, sigs.k8s.io/cluster-inventory-api), read as unstructured: its
// Go types are not a dependency of ctrlkit.
var ClusterProfileResource = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}

// ClusterProfiles is a Provider of the clusters a cluster inventory
// publishes as ClusterProfiles in a namespace of the hub (Open Cluster
// Management, Fleet, Karmada and others write them): a cluster per
// ClusterProfile, named after it, reached at the server its status names for
// the access provider ProviderName (status.accessProviders, or the older
// status.credentialProviders) with the credentials Exec yields, the
// credential plugin that provider documents (KEP-5339). A ClusterProfile
// whose status names no such provider, or no server, is logged and engages
// nothing until it does; one whose server or certificate authority changes
// is engaged again; one deleted is disengaged. The hub's clients need list
// and watch on clusterprofiles.multicluster.x-k8s.io in Namespace.
type ClusterProfiles struct {
	// Client and Dynamic reach the hub.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Namespace holds the ClusterProfiles; required.
	Namespace string
	// LabelSelector narrows them ("" means all of Namespace's), e.g. by
	// x-k8s.io/cluster-manager.
	LabelSelector string
	// ProviderName picks the access provider of each ClusterProfile's
	// status; required.
	ProviderName string
	// Exec is the credential plugin the rest.Configs authenticate with
	// (ProvideClusterInfo is set, so it is told which cluster; an empty
	// InteractiveMode is Never). Its APIVersion is required. nil means none:
	// the clusters are reached with no credentials of their own, which suits
	// only tests.
	Exec *clientcmdapi.ExecConfig
}

// Run engages the clusters of the ClusterProfiles until ctx ends.
func (p *ClusterProfiles) Run(ctx context.Context, e Engager) error {
	if p.Client == nil || p.Dynamic == nil || p.Namespace == "" || p.ProviderName == "" {
		return fmt.Errorf("multicluster: ClusterProfiles: %w: Client, Dynamic, Namespace and ProviderName are required", ErrInvalidOptions)
	}
	if p.Exec != nil && p.Exec.APIVersion == "" {
		return fmt.Errorf("multicluster: ClusterProfiles: %w: Exec.APIVersion is required (client.authentication.k8s.io/v1)", ErrInvalidOptions)
	}
	logger := klog.FromContext(ctx).WithValues("provider", "clusterprofiles", "namespace", p.Namespace)
	f := informer.NewFactory(p.Client, informer.Options{Namespace: p.Namespace, DynamicClient: p.Dynamic, Logger: logger})
	defer f.Shutdown()
	var opts []informer.ScopeOption[*unstructured.Unstructured]
	if p.LabelSelector != "" {
		opts = append(opts, informer.WithLabelSelector[*unstructured.Unstructured](p.LabelSelector))
	}
	inf, err := informer.ForResource[*unstructured.Unstructured](f, ClusterProfileResource, opts...)
	if err != nil {
		return fmt.Errorf("multicluster: ClusterProfiles: %w", err)
	}
	w := newFollower(ctx, e, logger)
	defer w.stop()
	reg, err := inf.AddHandler(informer.HandlerFuncs[*unstructured.Unstructured]{
		OnAdd:    func(obj *unstructured.Unstructured, _ bool) { p.apply(w, obj) },
		OnUpdate: func(_, obj *unstructured.Unstructured) { p.apply(w, obj) },
		OnDelete: func(obj *unstructured.Unstructured) { w.remove(obj.GetName()) },
	})
	if err != nil {
		return fmt.Errorf("multicluster: ClusterProfiles: %w", err)
	}
	defer func() { _ = inf.RemoveHandler(reg) }()
	f.Start(ctx)
	<-ctx.Done()
	return nil
}

func (p *ClusterProfiles) apply(w *follower, profile *unstructured.Unstructured) {
	cfg, fingerprint, err := p.config(profile)
	w.apply(profile.GetName(), profile.GetName(), fingerprint, cfg, err)
}

// config is the rest.Config of profile's access provider ProviderName.
func (p *ClusterProfiles) config(profile *unstructured.Unstructured) (*rest.Config, string, error) {
	var cluster map[string]any
	for _, field := range []string{"accessProviders", "credentialProviders"} {
		providers, _, _ := unstructured.NestedSlice(profile.Object, "status", field)
		for _, item := range providers {
			m, ok := item.(map[string]any)
			if !ok || m["name"] != p.ProviderName {
				continue
			}
			cluster, _ = m["cluster"].(map[string]any)
		}
		if cluster != nil {
			break
		}
	}
	if cluster == nil {
		return nil, "", fmt.Errorf("the ClusterProfile's status names no access provider %q", p.ProviderName)
	}
	server, _, _ := unstructured.NestedString(cluster, "server")
	if server == "" {
		return nil, "", errors.New("the ClusterProfile's access provider names no server")
	}
	cfg := &rest.Config{Host: server}
	fingerprint := server
	if ca, _, _ := unstructured.NestedString(cluster, "certificate-authority-data"); ca != "" {
		pem, err := base64.StdEncoding.DecodeString(ca)
		if err != nil {
			return nil, "", fmt.Errorf("the ClusterProfile's certificate-authority-data: %w", err)
		}
		cfg.CAData = pem
		fingerprint += "\x00" + ca
	}
	if name, _, _ := unstructured.NestedString(cluster, "tls-server-name"); name != "" {
		cfg.ServerName = name
		fingerprint += "\x00" + name
	}
	if skip, _, _ := unstructured.NestedBool(cluster, "insecure-skip-tls-verify"); skip {
		cfg.Insecure = true
		fingerprint += "\x00insecure"
	}
	if p.Exec != nil {
		exec := *p.Exec
		exec.ProvideClusterInfo = true
		if exec.InteractiveMode == "" {
			exec.InteractiveMode = clientcmdapi.NeverExecInteractiveMode // a controller has no terminal
		}
		cfg.ExecProvider = &exec
	}
	return cfg, fingerprint, nil
}
