package testkit

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/certwatcher"
)

// WebhookServer is where the API server reaches webhooks served by the test process.
type WebhookServer struct {
	// URL is the server's base URL, "https://127.0.0.1:PORT" (the certificate's IP SAN).
	URL string
	// CABundle is the PEM certificate of the CA that signed the serving certificate, the
	// caBundle of the webhook configurations.
	CABundle []byte
}

// WebhookCerts makes a throw-away CA and a serving certificate for 127.0.0.1 and writes them
// into a fresh directory (tls.crt, tls.key, ca.crt), the CertDir of a webhook server the
// test's API server can call. Writing another bundle into the same directory rotates the
// certificate.
func WebhookCerts(t testing.TB) (dir string, b *certwatcher.Bundle) {
	t.Helper()
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatalf("testkit: webhook certificates: %v", err)
	}
	dir = t.TempDir()
	if err := b.WriteFiles(dir); err != nil {
		t.Fatalf("testkit: webhook certificates: %v", err)
	}
	return dir, b
}

var errNoServer = errors.New("testkit: webhooks need an API server Env (NewAPIServer or SharedAPIServer); a fake cluster calls no webhook")

// InstallMutatingWebhook creates cfg on the API server with every webhook pointed at s: its
// clientConfig.url, which holds only the path ("/mutate-podset"), becomes s.URL+path (a
// service reference becomes s.URL+service.path), and its caBundle is s.CABundle. A webhook
// without a NamespaceSelector gets one matching only the Env's namespace, so that it never
// affects other tests on a shared server. Configurations are cluster-scoped: give each a name
// unique to the test (GenerateName is fine). It is deleted when the test ends. The API server
// takes up a new configuration within about a second: poll for its effect.
func (e *Env) InstallMutatingWebhook(s WebhookServer, cfg *admissionregistrationv1.MutatingWebhookConfiguration) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	cfg = cfg.DeepCopy()
	webhooks := make([]webhookRef, len(cfg.Webhooks))
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		webhooks[i] = webhookRef{name: w.Name, cc: &w.ClientConfig, ns: &w.NamespaceSelector}
	}
	return installConfiguration(e, "MutatingWebhookConfiguration", e.client.AdmissionregistrationV1().MutatingWebhookConfigurations(), s, cfg, webhooks)
}

// InstallValidatingWebhook is InstallMutatingWebhook for a ValidatingWebhookConfiguration.
func (e *Env) InstallValidatingWebhook(s WebhookServer, cfg *admissionregistrationv1.ValidatingWebhookConfiguration) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	cfg = cfg.DeepCopy()
	webhooks := make([]webhookRef, len(cfg.Webhooks))
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		webhooks[i] = webhookRef{name: w.Name, cc: &w.ClientConfig, ns: &w.NamespaceSelector}
	}
	return installConfiguration(e, "ValidatingWebhookConfiguration", e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations(), s, cfg, webhooks)
}

// webhookRef is what pointAt rewrites in one webhook of a configuration (the two kinds of
// configuration hold webhooks of two types with these fields in common).
type webhookRef struct {
	name string
	cc   *admissionregistrationv1.WebhookClientConfig
	ns   **metav1.LabelSelector
}

// configurationAPI is the typed client of one kind of webhook configuration.
type configurationAPI[C any] interface {
	Create(context.Context, C, metav1.CreateOptions) (C, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// installConfiguration points the webhooks of cfg (a copy the caller owns) at s, creates cfg
// with api and deletes it when the test ends.
func installConfiguration[C metav1.Object](e *Env, kind string, api configurationAPI[C], s WebhookServer, cfg C, webhooks []webhookRef) (C, error) {
	var none C
	if e.server == nil {
		return none, errNoServer
	}
	for _, w := range webhooks {
		if err := e.pointAt(s, w.name, w.cc, w.ns); err != nil {
			return none, err
		}
	}
	created, err := api.Create(e.ctx, cfg, metav1.CreateOptions{})
	if err != nil {
		return none, fmt.Errorf("testkit: creating %s: %w", kind, err)
	}
	e.t.Cleanup(func() { e.deleteClusterObject(kind, created.GetName(), api.Delete) })
	return created, nil
}

// pointAt rewrites one webhook's client config to reach s, and scopes it to the namespace.
func (e *Env) pointAt(s WebhookServer, name string, cc *admissionregistrationv1.WebhookClientConfig, ns **metav1.LabelSelector) error {
	path, err := webhookPath(s, name, cc)
	if err != nil {
		return err
	}
	cc.URL, cc.Service, cc.CABundle = new(s.URL+path), nil, s.CABundle
	if *ns == nil {
		*ns = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: e.namespace}}
	}
	return nil
}

func webhookPath(s WebhookServer, name string, cc *admissionregistrationv1.WebhookClientConfig) (string, error) {
	if !strings.HasPrefix(s.URL, "https://") || len(s.CABundle) == 0 {
		return "", fmt.Errorf("testkit: webhook %q: the server needs an https URL and a CA bundle, got %q and %d bytes", name, s.URL, len(s.CABundle))
	}
	switch {
	case cc.URL != nil && strings.HasPrefix(*cc.URL, "/"):
		return *cc.URL, nil
	case cc.Service != nil && cc.Service.Path != nil:
		return *cc.Service.Path, nil
	}
	return "", fmt.Errorf("testkit: webhook %q: clientConfig needs a url holding only the path (\"/validate\") or a service with a path", name)
}

func (e *Env) deleteClusterObject(kind, name string, del func(context.Context, string, metav1.DeleteOptions) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && !e.server.IsStopped() {
		e.t.Errorf("testkit: deleting %s %s: %v", kind, name, err)
	}
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// SetCRDConversion makes the API server convert the custom resources of the CRD called
// crdName between their versions by calling s at path (the Webhook strategy, reviews in
// apiextensions.k8s.io/v1, s.CABundle trusted). When the test ends the CRD's previous
// conversion is put back. CRDs are cluster-scoped: a test that changes one shared with other
// tests of the package changes it for them too while it runs, so such tests should rather use
// NewAPIServer.
func (e *Env) SetCRDConversion(crdName string, s WebhookServer, path string) error {
	if e.server == nil {
		return errNoServer
	}
	p := path
	if _, err := webhookPath(s, crdName, &admissionregistrationv1.WebhookClientConfig{URL: &p}); err != nil {
		return err
	}
	conversion := map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig":             map[string]any{"url": s.URL + path, "caBundle": base64.StdEncoding.EncodeToString(s.CABundle)},
		},
	}
	var previous any
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := e.dynamic.Resource(crdResource).Get(e.ctx, crdName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		previous, _, _ = unstructured.NestedFieldCopy(crd.Object, "spec", "conversion")
		if err := unstructured.SetNestedField(crd.Object, conversion, "spec", "conversion"); err != nil {
			return err
		}
		_, err = e.dynamic.Resource(crdResource).Update(e.ctx, crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("testkit: setting the conversion of CRD %s: %w", crdName, err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := e.dynamic.Resource(crdResource).Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if previous == nil {
				previous = map[string]any{"strategy": "None"}
			}
			if err := unstructured.SetNestedField(crd.Object, previous, "spec", "conversion"); err != nil {
				return err
			}
			_, err = e.dynamic.Resource(crdResource).Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) && !e.server.IsStopped() {
			e.t.Errorf("testkit: restoring the conversion of CRD %s: %v", crdName, err)
		}
	})
	return nil
}
