package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Hub is the version of a kind every other version converts to and from, as the internal
// version is in Kubernetes' own API machinery (controller-runtime's conversion.Hub). Hub is a
// marker method that does nothing.
type Hub interface {
	Object
	Hub()
}

// Spoke is a version of a kind other than the hub: it converts itself to the hub and sets
// itself from the hub (controller-runtime's conversion.Convertible, typed). Both must be
// lossless for the fields the two versions share, and ObjectMeta must be copied as it is: the
// API server refuses a conversion that changes metadata other than labels and annotations.
type Spoke[H Hub] interface {
	Object
	ConvertTo(hub H) error
	ConvertFrom(hub H) error
}

// ConversionReview is the apiextensions.k8s.io/v1 ConversionReview the API server posts to a
// CRD's conversion webhook, on the wire (so this module needs no
// k8s.io/apiextensions-apiserver).
type ConversionReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *ConversionRequest  `json:"request,omitempty"`
	Response        *ConversionResponse `json:"response,omitempty"`
}

// ConversionRequest asks for Objects converted to DesiredAPIVersion.
type ConversionRequest struct {
	UID               types.UID              `json:"uid"`
	DesiredAPIVersion string                 `json:"desiredAPIVersion"`
	Objects           []runtime.RawExtension `json:"objects"`
}

// ConversionResponse carries the converted objects, in the request's order, or a failure.
type ConversionResponse struct {
	UID              types.UID              `json:"uid"`
	ConvertedObjects []runtime.RawExtension `json:"convertedObjects"`
	Result           metav1.Status          `json:"result"`
}

// ConversionReviewVersion is the only review version the conversion handler speaks.
var ConversionReviewVersion = schema.GroupVersion{Group: "apiextensions.k8s.io", Version: "v1"}

// ErrConversion is matched by the errors of Conversion.Convert.
var ErrConversion = errors.New("webhook: conversion failed")

// Conversion converts the objects of one kind between its versions through the hub H: a
// spoke converts to H, H converts to the desired spoke. It answers a CRD's conversion reviews
// (it is an http.Handler; register it at the path of the CRD's
// spec.conversion.webhook.clientConfig). Build it with NewConversion, add each other version
// with AddSpoke, then serve it; it is safe for concurrent use once served.
type Conversion[H Hub] struct {
	gk       schema.GroupKind
	hub      string // apiVersion of H
	hubElem  reflect.Type
	spokes   map[string]spokeFuncs[H] // by apiVersion
	maxBytes int64
}

// anyObject is an Object with its type erased.
type anyObject interface {
	metav1.Object
	runtime.Object
}

// spokeFuncs are one spoke version's conversions, with its type erased.
type spokeFuncs[H Hub] struct {
	newObj func() anyObject
	to     func(anyObject, H) error
	from   func(H, anyObject) error
}

// NewConversion returns the conversion handler of hubGVK's kind, whose hub version is H.
// Errors match ErrInvalidHandler.
func NewConversion[H Hub](hubGVK schema.GroupVersionKind) (*Conversion[H], error) {
	t := reflect.TypeFor[H]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %s is not a pointer to a struct", ErrInvalidHandler, t)
	}
	if hubGVK.Kind == "" || hubGVK.Version == "" {
		return nil, fmt.Errorf("%w: hub kind %q needs a version and a kind", ErrInvalidHandler, hubGVK.String())
	}
	return &Conversion[H]{gk: hubGVK.GroupKind(), hub: hubGVK.GroupVersion().String(), hubElem: t.Elem(),
		spokes: map[string]spokeFuncs[H]{}, maxBytes: DefaultMaxRequestBytes}, nil
}

// AddSpoke adds the version gvk, whose Go type is S, to c. It must be c's kind and not a
// version c has already. Errors match ErrInvalidHandler.
func AddSpoke[S Spoke[H], H Hub](c *Conversion[H], gvk schema.GroupVersionKind) error {
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%w: %s is not a pointer to a struct", ErrInvalidHandler, t)
	}
	av := gvk.GroupVersion().String()
	switch {
	case gvk.GroupKind() != c.gk || gvk.Version == "":
		return fmt.Errorf("%w: spoke %s is not a version of %s", ErrInvalidHandler, gvk, c.gk)
	case av == c.hub:
		return fmt.Errorf("%w: %s is the hub version", ErrInvalidHandler, av)
	}
	if _, dup := c.spokes[av]; dup {
		return fmt.Errorf("%w: spoke %s added twice", ErrInvalidHandler, av)
	}
	elem := t.Elem()
	c.spokes[av] = spokeFuncs[H]{
		newObj: func() anyObject { return reflect.New(elem).Interface().(S) },
		to:     func(o anyObject, h H) error { return o.(S).ConvertTo(h) },
		from:   func(h H, o anyObject) error { return o.(S).ConvertFrom(h) },
	}
	return nil
}

// Versions returns the apiVersions c converts between, the hub's first.
func (c *Conversion[H]) Versions() []string {
	out := make([]string, 0, len(c.spokes)+1)
	for v := range c.spokes {
		out = append(out, v)
	}
	sort.Strings(out)
	return append([]string{c.hub}, out...)
}

// Convert converts one object (JSON, any of c's versions) to apiVersion desired and returns
// it as JSON with its apiVersion and kind set. An object already at desired is returned as
// it is. Errors match ErrConversion and name the object and the versions.
func (c *Conversion[H]) Convert(raw []byte, desired string) ([]byte, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("%w: decoding an object: %v", ErrConversion, err)
	}
	if gv, err := schema.ParseGroupVersion(tm.APIVersion); err != nil || gv.WithKind(tm.Kind).GroupKind() != c.gk {
		return nil, fmt.Errorf("%w: object of apiVersion %q kind %q, this webhook converts %s", ErrConversion, tm.APIVersion, tm.Kind, c.gk)
	}
	if tm.APIVersion == desired {
		return raw, nil
	}
	if desired != c.hub {
		if _, ok := c.spokes[desired]; !ok {
			return nil, fmt.Errorf("%w: desired apiVersion %q is none of %v", ErrConversion, desired, c.Versions())
		}
	}
	hub, err := c.toHub(raw, tm.APIVersion)
	if err != nil {
		return nil, err
	}
	var out anyObject = hub
	if desired != c.hub {
		s := c.spokes[desired]
		out = s.newObj()
		if err := s.from(hub, out); err != nil {
			return nil, fmt.Errorf("%w: %s %s from %s to %s: %v", ErrConversion, c.gk.Kind, objectName(hub), c.hub, desired, err)
		}
	}
	out.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(desired, c.gk.Kind))
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding %s %s as %s: %v", ErrConversion, c.gk.Kind, objectName(out), desired, err)
	}
	return b, nil
}

// toHub decodes raw, of apiVersion from, and converts it to the hub.
func (c *Conversion[H]) toHub(raw []byte, from string) (H, error) {
	hub := reflect.New(c.hubElem).Interface().(H)
	if from == c.hub {
		if err := json.Unmarshal(raw, hub); err != nil {
			var zero H
			return zero, fmt.Errorf("%w: decoding %s as %s: %v", ErrConversion, c.gk.Kind, from, err)
		}
		return hub, nil
	}
	s, ok := c.spokes[from]
	if !ok {
		var zero H
		return zero, fmt.Errorf("%w: apiVersion %q of the object is none of %v", ErrConversion, from, c.Versions())
	}
	src := s.newObj()
	if err := json.Unmarshal(raw, src); err != nil {
		var zero H
		return zero, fmt.Errorf("%w: decoding %s as %s: %v", ErrConversion, c.gk.Kind, from, err)
	}
	if err := s.to(src, hub); err != nil {
		var zero H
		return zero, fmt.Errorf("%w: %s %s from %s to %s: %v", ErrConversion, c.gk.Kind, objectName(src), from, c.hub, err)
	}
	return hub, nil
}

func objectName(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// Handle converts the objects of one review. A failure on any object fails the whole review
// (the API server then fails the request that needed it), with a message naming the object.
// A panicking conversion function fails the review, and is logged.
func (c *Conversion[H]) Handle(ctx context.Context, req *ConversionRequest) (resp *ConversionResponse) {
	if req == nil {
		return &ConversionResponse{Result: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest,
			Reason: metav1.StatusReasonBadRequest, Message: "webhook: no conversion request"}}
	}
	logger := klog.FromContext(ctx).WithValues("kind", c.gk.Kind, "desiredAPIVersion", req.DesiredAPIVersion, "uid", req.UID, "objects", len(req.Objects))
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("%w: %s conversion panicked: %v", ErrConversion, c.gk.Kind, r)
			logger.Error(err, "Conversion failed")
			resp = &ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusFailure,
				Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError, Message: err.Error()}}
		}
	}()
	resp = &ConversionResponse{UID: req.UID, ConvertedObjects: make([]runtime.RawExtension, len(req.Objects))}
	for i, o := range req.Objects {
		b, err := c.Convert(o.Raw, req.DesiredAPIVersion)
		if err != nil {
			logger.V(1).Info("Conversion failed", "err", err.Error())
			return &ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusFailure,
				Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: err.Error()}}
		}
		resp.ConvertedObjects[i] = runtime.RawExtension{Raw: b}
	}
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	logger.V(4).Info("Converted")
	return resp
}

// ServeHTTP answers one ConversionReview (apiextensions.k8s.io/v1). A body that is not one
// gets HTTP 400, as the admission handlers answer (see Admission.ServeHTTP).
func (c *Conversion[H]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := readReview(w, r, c.maxBytes)
	if !ok {
		return
	}
	var review ConversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		badRequest(w, r, fmt.Errorf("decoding the ConversionReview: %w", err))
		return
	}
	if review.GroupVersionKind() != ConversionReviewVersion.WithKind("ConversionReview") {
		badRequest(w, r, fmt.Errorf("expected an %s ConversionReview, got apiVersion %q kind %q",
			ConversionReviewVersion, review.APIVersion, review.Kind))
		return
	}
	if review.Request == nil {
		badRequest(w, r, errors.New("the ConversionReview has no request"))
		return
	}
	resp := c.Handle(r.Context(), review.Request)
	if resp.Result.Status != metav1.StatusSuccess {
		reportRejection(r.Context(), resp.Result.Code)
	}
	writeJSON(w, r, ConversionReview{TypeMeta: review.TypeMeta, Response: resp})
}
