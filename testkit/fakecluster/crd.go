package fakecluster

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// CRDResource is where the cluster serves CustomResourceDefinitions (apiextensions.k8s.io/v1,
// cluster-scoped). Creating one declares the custom resource it defines, as if it had been
// given in Options.Resources, and reports it Established at once.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

var crdInfo = kindInfo{gvk: CRDResource.GroupVersion().WithKind("CustomResourceDefinition"), status: true, crd: true, generation: true, conditionalUpdate: true}

// serveCRD declares the resources of every served version of crd, with the version's structural
// schema, and sets the status an API server reports once it serves them: names accepted,
// Established, the storage version stored. A CRD without a group, names or versions is a
// BadRequest, as validation would make it; one whose schema is not structural is a 422 Invalid
// naming the CRD and the offending fields, as from an API server. A version without a schema
// (which an API server would refuse) is served without one: nothing is pruned, defaulted or
// validated.
func (c *Cluster) serveCRD(crd *unstructured.Unstructured) error {
	storage, err := c.declareCRD(crd)
	if err != nil {
		return err
	}
	now := metav1.NewTime(c.clock.Now().Truncate(time.Second)).UTC().Format(time.RFC3339)
	condition := func(typ, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now}
	}
	names, _, _ := unstructured.NestedMap(crd.Object, "spec", "names")
	crd.Object["status"] = map[string]any{
		"acceptedNames": names,
		"conditions": []any{
			condition("NamesAccepted", "NoConflicts", "no conflicts found"),
			condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
		},
		"storedVersions": storage,
	}
	return nil
}

// declareCRD declares (again, on an update) the resources of every served version of crd with
// their schemas, and returns the storage versions.
func (c *Cluster) declareCRD(crd *unstructured.Unstructured) ([]any, error) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if group == "" || plural == "" || kind == "" || len(versions) == 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("CustomResourceDefinition %q: spec.group, spec.names.plural, spec.names.kind and spec.versions are required", crd.GetName()))
	}
	schemas, err := crdSchemas(crd.GetName(), versions)
	if err != nil {
		return nil, err
	}
	var declared []kindInfo
	var storage []any
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _, _ := unstructured.NestedString(version, "name")
		served, _, _ := unstructured.NestedBool(version, "served")
		if name == "" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("CustomResourceDefinition %q: a version without a name", crd.GetName()))
		}
		if stored, _, _ := unstructured.NestedBool(version, "storage"); stored {
			storage = append(storage, name)
		}
		if !served {
			continue
		}
		_, status, _ := unstructured.NestedFieldNoCopy(version, "subresources", "status")
		declared = append(declared, kindInfo{
			gvk:        schema.GroupVersionKind{Group: group, Version: name, Kind: kind},
			namespaced: scope != "Cluster",
			status:     status,
			schema:     schemas[name],
		})
	}
	for _, ki := range declared {
		gvr := schema.GroupVersionResource{Group: group, Version: ki.gvk.Version, Resource: plural}
		if err := c.declareInfo(gvr, ki); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("CustomResourceDefinition %q: %v", crd.GetName(), err))
		}
	}
	return storage, nil
}

// parseCRDManifest decodes a manifest (YAML or JSON) of one apiextensions.k8s.io/v1
// CustomResourceDefinition.
func parseCRDManifest(manifest []byte) (*unstructured.Unstructured, error) {
	m, err := decodeYAML(manifest)
	if err != nil {
		return nil, fmt.Errorf("decoding CRD manifest: %w", err)
	}
	crd := &unstructured.Unstructured{Object: m}
	if m == nil || crd.GroupVersionKind() != CRDResource.GroupVersion().WithKind("CustomResourceDefinition") {
		return nil, fmt.Errorf("manifest is %q %q, want an apiextensions.k8s.io/v1 CustomResourceDefinition", crd.GetAPIVersion(), crd.GetKind())
	}
	if crd.GetName() == "" {
		return nil, fmt.Errorf("CRD manifest has no metadata.name")
	}
	return crd, nil
}

// parseSchemaManifest decodes Resource.Schema, an openAPIV3Schema in YAML or JSON.
func parseSchemaManifest(raw []byte) (*structural, error) {
	m, err := decodeYAML(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding schema: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("schema is empty")
	}
	s, errs := parseSchema(m, field.NewPath("openAPIV3Schema"))
	if len(errs) > 0 {
		return nil, schemaError(errs)
	}
	return s, nil
}

// decodeYAML decodes a YAML or JSON object with numbers as the API server decodes them (int64
// when whole, else float64).
func decodeYAML(doc []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	return m, nil
}
