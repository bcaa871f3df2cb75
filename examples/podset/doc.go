// Command podset runs the PodSet controller: a custom resource (podsets.examples.ctrlkit.dev,
// v1alpha1) whose controller keeps spec.replicas Pods running from spec.template, adopting
// orphans, reporting status through the status subresource and events on the PodSet.
//
// Without --kubeconfig (and without $KUBECONFIG) it runs a scripted demo on an in-memory
// cluster — one fakecluster serving Pods and events through its clientset and PodSets through
// its dynamic client, a simulated kubelet that makes Pods Running and Ready — and exits 0 once
// every step converged (1 if one did not within --timeout); --watch keeps it running afterwards
// until Ctrl-C:
//
//	go run ./examples/podset
//
// With --kubeconfig it installs the PodSet CRD if it is missing and runs the controller
// against that cluster until interrupted:
//
//	go run ./examples/podset --kubeconfig ~/.kube/config
//	kubectl apply -f examples/podset/podset.yaml
//	kubectl get podsets,pods; kubectl describe podset web
//
// With --webhook-addr it also serves the PodSet webhooks (package podsetwebhook): defaulting,
// validation, and conversion between v1alpha1 and v1beta1, over HTTPS with the certificate of
// --webhook-cert-dir (reloaded when it changes) or a throw-away self-signed one. With
// --webhook-url, the address the API server reaches it at, it installs or updates the webhook
// configurations and the two-version CRD with that URL and the right caBundle at start:
//
//	go run ./examples/podset --kubeconfig ~/.kube/config \
//		--webhook-addr 127.0.0.1:9443 --webhook-url https://127.0.0.1:9443
//
// It writes them by server-side apply, each by name, so the rights --webhook-url needs on top of
// deploy/rbac.yaml are create and patch of the CRD podsets.examples.ctrlkit.dev and of the two
// configurations podset-webhooks, and no more: deploy/rbac-webhook.yaml grants them to the
// ServiceAccount. Without that file the binary exits at start naming the refused patch.
//
// The controller itself is package podset (./podset), the API types and the CRD manifests are
// packages v1alpha1 and v1beta1 (./api/...), the webhooks package podsetwebhook. This command
// only wires them: clients, one informer factory with the dynamic client, a Manager with a
// scheme that knows PodSet (for events), the webhook server and — for the demo — the
// in-memory cluster.
package main
