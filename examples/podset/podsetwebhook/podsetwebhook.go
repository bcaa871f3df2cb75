package podsetwebhook

import (
	"context"
	"fmt"
	"maps"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// The paths the webhooks are served at.
const (
	MutatePath   = "/mutate-podset"
	ValidatePath = "/validate-podset"
	// ConvertPath is where the CRD's conversion webhook is served (v1beta1.CRDManifest's).
	ConvertPath = v1beta1.ConversionPath
)

// Label defaults: every PodSet carries ManagedByLabel=ManagedBy.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "podset-controller"
)

// Webhook defaults and validates PodSets; it holds no state.
type Webhook struct{}

var (
	_ webhook.Defaulter[*v1alpha1.PodSet] = Webhook{}
	_ webhook.Validator[*v1alpha1.PodSet] = Webhook{}
)

// Default sets spec.replicas, spec.selector and the managed-by label when they are unset.
func (Webhook) Default(_ context.Context, ps *v1alpha1.PodSet) error {
	if ps.Spec.Replicas == nil {
		ps.Spec.Replicas = ptr.To[int32](1)
	}
	if ps.Spec.Selector == nil && len(ps.Spec.Template.Labels) > 0 {
		ps.Spec.Selector = &metav1.LabelSelector{MatchLabels: maps.Clone(ps.Spec.Template.Labels)}
	}
	if _, ok := ps.Labels[ManagedByLabel]; !ok {
		if ps.Labels == nil {
			ps.Labels = map[string]string{}
		}
		ps.Labels[ManagedByLabel] = ManagedBy
	}
	return nil
}

// ValidateCreate checks replicas and the selector.
func (Webhook) ValidateCreate(_ context.Context, ps *v1alpha1.PodSet) (webhook.Warnings, error) {
	return warnings(ps), validateSpec(&ps.Spec).ToAggregate()
}

// ValidateUpdate checks the new PodSet as ValidateCreate does and refuses a changed selector.
func (Webhook) ValidateUpdate(_ context.Context, old, ps *v1alpha1.PodSet) (webhook.Warnings, error) {
	errs := validateSpec(&ps.Spec)
	if !apiequality.Semantic.DeepEqual(old.Spec.Selector, ps.Spec.Selector) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), ps.Spec.Selector, "field is immutable"))
	}
	return warnings(ps), errs.ToAggregate()
}

// ValidateDelete admits every deletion: the controller's finalizer guards what must happen
// first.
func (Webhook) ValidateDelete(context.Context, *v1alpha1.PodSet) (webhook.Warnings, error) {
	return nil, nil
}

func warnings(ps *v1alpha1.PodSet) webhook.Warnings {
	if ps.Spec.Replicas != nil && *ps.Spec.Replicas == 0 {
		return webhook.Warnings{"spec.replicas is 0: the PodSet runs no Pods"}
	}
	return nil
}

func validateSpec(spec *v1alpha1.PodSetSpec) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	if spec.Replicas != nil && *spec.Replicas < 0 {
		errs = append(errs, field.Invalid(specPath.Child("replicas"), *spec.Replicas, "must be greater than or equal to 0"))
	}
	selPath := specPath.Child("selector")
	if spec.Selector == nil || len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		return append(errs, field.Required(selPath, "an empty selector would match every Pod of the namespace"))
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		return append(errs, field.Invalid(selPath, spec.Selector, err.Error()))
	}
	if !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), spec.Template.Labels,
			fmt.Sprintf("selector %q does not match the template's labels", sel.String())))
	}
	return errs
}

// NewConversion returns the conversion handler of PodSet: v1beta1 is the hub, v1alpha1 a
// spoke (v1alpha1.PodSet's ConvertTo and ConvertFrom).
func NewConversion() (*webhook.Conversion[*v1beta1.PodSet], error) {
	c, err := webhook.NewConversion[*v1beta1.PodSet](v1beta1.GVK)
	if err != nil {
		return nil, err
	}
	if err := webhook.AddSpoke[*v1alpha1.PodSet](c, v1alpha1.GVK); err != nil {
		return nil, err
	}
	return c, nil
}

// Register serves the defaulting, validating and conversion webhooks of PodSet on srv at
// MutatePath, ValidatePath and ConvertPath.
func Register(srv *webhook.Server) error {
	def, err := webhook.NewDefaulting[*v1alpha1.PodSet](v1alpha1.GVK, Webhook{})
	if err != nil {
		return err
	}
	val, err := webhook.NewValidating[*v1alpha1.PodSet](v1alpha1.GVK, Webhook{})
	if err != nil {
		return err
	}
	conv, err := NewConversion()
	if err != nil {
		return err
	}
	if err := srv.Register(MutatePath, def); err != nil {
		return err
	}
	if err := srv.Register(ValidatePath, val); err != nil {
		return err
	}
	return srv.Register(ConvertPath, conv)
}

// rules are the operations on PodSets the webhooks see.
func rules(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{v1alpha1.GroupName}, APIVersions: []string{v1alpha1.Version},
			Resources: []string{v1alpha1.Plural}, Scope: ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}
}

// Configurations returns the webhook configurations of PodSet, named name, with the client
// config cc for both webhooks except the path (cc.URL is baseURL+path; with a Service, its
// Path is set). failurePolicy is Fail: a PodSet is never admitted unchecked.
func Configurations(name string, cc admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	at := func(path string) admissionregistrationv1.WebhookClientConfig {
		c := *cc.DeepCopy()
		switch {
		case c.Service != nil:
			c.Service.Path = ptr.To(path)
		case c.URL != nil:
			c.URL = ptr.To(*c.URL + path)
		default:
			c.URL = ptr.To(path)
		}
		return c
	}
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "mpodset." + v1alpha1.GroupName,
			ClientConfig:            at(MutatePath),
			Rules:                   rules(admissionregistrationv1.Create, admissionregistrationv1.Update),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "vpodset." + v1alpha1.GroupName,
			ClientConfig:            at(ValidatePath),
			Rules:                   rules(admissionregistrationv1.Create, admissionregistrationv1.Update),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	return mutating, validating
}
