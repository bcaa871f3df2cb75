// Package webhook serves the webhooks a custom resource needs: typed admission (defaulting and
// validation) and CRD version conversion, over HTTPS with a certificate reloaded from disk,
// run by a Manager on every replica. The shapes are controller-runtime's (CustomDefaulter,
// CustomValidator, hub and spoke conversion, its metric names), typed with generics.
//
// # Admission
//
// A Defaulter[T] changes the object in place; a Validator[T] returns warnings and an error:
//
//	type podSetWebhook struct{}
//	func (podSetWebhook) Default(ctx context.Context, ps *v1alpha1.PodSet) error { ... }
//	func (podSetWebhook) ValidateCreate(ctx context.Context, ps *v1alpha1.PodSet) (webhook.Warnings, error) { ... }
//	...
//	def, err := webhook.NewDefaulting[*v1alpha1.PodSet](v1alpha1.GVK, podSetWebhook{})
//	val, err := webhook.NewValidating[*v1alpha1.PodSet](v1alpha1.GVK, podSetWebhook{})
//	srv.Register("/mutate-podset", def)
//	srv.Register("/validate-podset", val)
//
// The handlers decode the review's object into T (a review for another kind, or an object that
// does not decode, is answered 400 Bad Request, naming why) and answer with what the API
// server expects. A defaulting answer carries the JSON patch (RFC 6902, made by CreatePatch)
// from the object as received to the defaulted one, restricted to what Default changed: fields
// T does not know are kept, and the zero values T encodes for absent fields (an empty status,
// a null creationTimestamp) are not added. A validator's field.ErrorList (as
// list.ToAggregate()) becomes a 422 Invalid status with one cause per field, as the API
// server's own validation answers; an error with an API status keeps it; any other error is a
// 403 denial with its message. A panicking Default or Validate is a 500 answer, logged. The
// request itself is available to both through RequestFrom.
//
// # Server
//
// NewServer reads tls.crt and tls.key from ServerOptions.CertDir (a mounted
// kubernetes.io/tls Secret) through a certwatcher.CertWatcher: a renewed certificate is served
// from the next reload on, without a restart and without failing a request. For development
// and tests, certwatcher.SelfSigned makes a CA and a serving certificate; the CA goes into the
// webhook configuration's caBundle. The server has read, write and idle timeouts, limits
// bodies (DefaultMaxRequestBytes), answers 405, 415, 413 and 400 to what is not a review, and
// shuts down gracefully. It is a manager.Runnable that needs no leader election (every replica
// behind the Service must answer); AddToManager adds it and its /readyz check.
//
// # Metrics and logs
//
// Every registered path is counted under controller-runtime's names,
// controller_runtime_webhook_requests_total{webhook,code},
// controller_runtime_webhook_latency_seconds{webhook} and
// controller_runtime_webhook_requests_in_flight{webhook}, plus
// ctrlkit_webhook_rejections_total{webhook,code} for denials and failed conversions, on
// ServerOptions.Registerer (the Manager's, manager.Manager.Registerer). Each request logs
// through the Run context's klog logger with the webhook path, the object's kind, namespace,
// name, operation and the review UID; denials at V(1).
package webhook
