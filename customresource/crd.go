package customresource

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// CRDResource is the resource of CustomResourceDefinition objects, which
// EnsureCRDFromYAML reads and creates through the dynamic client (so this package
// needs no k8s.io/apiextensions-apiserver dependency).
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// EnsureCRDOptions configures EnsureCRDFromYAMLWithOptions. The zero value is valid.
type EnsureCRDOptions struct {
	// PollInterval is how often the CRD is read while waiting for it to be Established.
	// Default 200ms: the API server usually establishes a new CRD within a second.
	PollInterval time.Duration
	// Timeout bounds the wait for Established, on top of ctx's own deadline. Default 1
	// minute, so a caller whose context never ends still gets an error.
	Timeout time.Duration
	// Clock is the clock the wait runs on. Default the real clock; tests pass a fake.
	Clock clock.WithTicker
}

// EnsureCRDFromYAML makes sure the CustomResourceDefinition in manifest (YAML or JSON,
// one apiextensions.k8s.io/v1 object) exists and is Established, that is, its resource
// is served: it creates the CRD if no CRD of that name exists and then polls it until
// its Established condition is True. It returns an error wrapping ErrCRDNotEstablished
// when that does not happen within ctx or one minute, or at once when the API server
// refuses the CRD's names (NamesAccepted False), which no amount of waiting mends.
//
// An existing CRD of the same name is used as it is: EnsureCRDFromYAML installs, it
// does not upgrade (use kubectl apply or server-side apply for that). It is safe to
// call from several processes at once; losing the create race is not an error.
//
// It is EnsureCRDFromYAMLWithOptions with the zero EnsureCRDOptions.
func EnsureCRDFromYAML(ctx context.Context, dyn dynamic.Interface, manifest []byte) error {
	return EnsureCRDFromYAMLWithOptions(ctx, dyn, manifest, EnsureCRDOptions{})
}

// EnsureCRDFromYAMLWithOptions is EnsureCRDFromYAML with a poll interval, timeout and
// clock of the caller's choosing.
func EnsureCRDFromYAMLWithOptions(ctx context.Context, dyn dynamic.Interface, manifest []byte, opts EnsureCRDOptions) error {
	if dyn == nil {
		return fmt.Errorf("customresource: ensure CRD: nil dynamic.Interface: %w", ErrInvalidInput)
	}
	crd, err := parseCRDManifest(manifest)
	if err != nil {
		return err
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 200 * time.Millisecond
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	name := crd.GetName()
	logger := klog.FromContext(ctx).WithValues("crd", name)
	crds := dyn.Resource(CRDResource)

	// Start the clock before the first request so that the timeout covers them too.
	timeout := opts.Clock.NewTimer(opts.Timeout)
	defer timeout.Stop()
	ticker := opts.Clock.NewTicker(opts.PollInterval)
	defer ticker.Stop()

	current, err := crds.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		logger.V(2).Info("Creating CustomResourceDefinition")
		current, err = crds.Create(ctx, crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Another process created it between our Get and Create; wait for theirs.
			logger.V(2).Info("CustomResourceDefinition was created concurrently")
			current, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("customresource: create CustomResourceDefinition %q: %w", name, err)
		}
	case err != nil:
		return fmt.Errorf("customresource: get CustomResourceDefinition %q: %w", name, err)
	}

	last := "no status yet"
	for {
		if current != nil {
			established, why, final := crdEstablished(current)
			if established {
				logger.V(2).Info("CustomResourceDefinition is established")
				return nil
			}
			if final {
				return fmt.Errorf("customresource: CustomResourceDefinition %q: %s: %w", name, why, ErrCRDNotEstablished)
			}
			last = why
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("customresource: CustomResourceDefinition %q (%s): %w: %w", name, last, ErrCRDNotEstablished, ctx.Err())
		case <-timeout.C():
			return fmt.Errorf("customresource: CustomResourceDefinition %q not established within %s (%s): %w", name, opts.Timeout, last, ErrCRDNotEstablished)
		case <-ticker.C():
		}
		current, err = crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			// A transient failure (or the CRD deleted under us) is worth another poll;
			// the timeout ends a lasting one.
			logger.V(4).Info("Reading CustomResourceDefinition failed", "err", err)
			last = "last read failed: " + err.Error()
			current = nil
		}
	}
}

// IsCRDEstablished reports whether crd (an apiextensions.k8s.io/v1
// CustomResourceDefinition) has its Established condition True: the API
// server serves its resource.
func IsCRDEstablished(crd *unstructured.Unstructured) bool {
	established, _, _ := crdEstablished(crd)
	return established
}

// crdEstablished reads the conditions of a CRD: established says it is served; why
// describes the state otherwise; final says it cannot become established by waiting.
func crdEstablished(crd *unstructured.Unstructured) (established bool, why string, final bool) {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	why = "Established condition not reported yet"
	for _, c := range conditions {
		cond, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := cond["type"].(string)
		status, _ := cond["status"].(string)
		reason, _ := cond["reason"].(string)
		message, _ := cond["message"].(string)
		switch typ {
		case "Established":
			if status == string(metav1.ConditionTrue) {
				return true, "", false
			}
			why = fmt.Sprintf("Established is %s: %s %s", status, reason, message)
		case "NamesAccepted":
			if status == string(metav1.ConditionFalse) {
				return false, fmt.Sprintf("names not accepted: %s %s", reason, message), true
			}
		}
	}
	return false, why, false
}

// parseCRDManifest decodes a one-document YAML or JSON manifest of a v1 CRD.
func parseCRDManifest(manifest []byte) (*unstructured.Unstructured, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("customresource: %s: %w", fmt.Sprintf(format, args...), ErrInvalidManifest)
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, invalid("reading manifest: %v", err)
		}
		// Separators and comments alone make empty documents; skip them like kubectl.
		if len(bytes.TrimSpace(stripYAMLComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
	if len(docs) != 1 {
		return nil, invalid("manifest holds %d documents, want exactly one CustomResourceDefinition", len(docs))
	}
	js, err := utilyaml.ToJSON(docs[0])
	if err != nil {
		return nil, invalid("manifest is not YAML: %v", err)
	}
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON(js); err != nil {
		return nil, invalid("manifest is not a Kubernetes object: %v", err)
	}
	if gvk := crd.GroupVersionKind(); gvk != CRDResource.GroupVersion().WithKind("CustomResourceDefinition") {
		return nil, invalid("manifest is %s %s, want apiextensions.k8s.io/v1 CustomResourceDefinition", crd.GetAPIVersion(), crd.GetKind())
	}
	if crd.GetName() == "" {
		return nil, invalid("CustomResourceDefinition has no metadata.name")
	}
	return crd, nil
}

func stripYAMLComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
		}
	}
	return out
}
