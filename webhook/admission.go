package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Object is the constraint on the types the admission handlers decode: a pointer to a struct
// with ObjectMeta, such as *v1alpha1.PodSet or *corev1.Pod (the one ctrlkit constraint).
type Object = object.Object

// Warnings are messages for the API client that made the request (kubectl prints them, with
// the request's outcome): controller-runtime's admission.Warnings.
type Warnings []string

// Defaulter sets the defaults of an object being created or updated. Default changes obj in
// place; the handler sends the API server the JSON patch from the object as received to obj.
// An error denies the request (see Validator for how errors become answers).
type Defaulter[T Object] interface {
	Default(ctx context.Context, obj T) error
}

// Validator checks objects being created, updated or deleted: controller-runtime's
// CustomValidator, typed. A nil error admits the request (with the warnings, if any). An
// error denies it:
//   - a field.ErrorList turned into an error (list.ToAggregate()) or a single *field.Error is
//     answered as 422 Invalid, one cause per field error, as the API server's own validation
//     answers (kubectl shows each field);
//   - an error carrying an API status (apierrors.NewForbidden, NewConflict, ...) is answered
//     with that status;
//   - any other error is answered as 403 Forbidden with its message.
type Validator[T Object] interface {
	ValidateCreate(ctx context.Context, obj T) (Warnings, error)
	ValidateUpdate(ctx context.Context, oldObj, newObj T) (Warnings, error)
	// ValidateDelete gets the object as stored (the review's oldObject).
	ValidateDelete(ctx context.Context, obj T) (Warnings, error)
}

// Admission answers admission reviews (admission.k8s.io/v1) for objects of one kind by
// decoding them into T and calling a Defaulter (a mutating webhook) or a Validator (a
// validating webhook). It is an http.Handler; register it on a Server at the path the
// webhook configuration names. It is safe for concurrent use.
type Admission[T Object] struct {
	gvk       schema.GroupVersionKind
	elem      reflect.Type
	defaulter Defaulter[T]
	validator Validator[T]
	maxBytes  int64
}

// NewDefaulting returns the mutating webhook handler that decodes objects of kind gvk into T
// and defaults them with d, on CREATE and UPDATE (other operations are admitted untouched).
// Errors match ErrInvalidHandler.
func NewDefaulting[T Object](gvk schema.GroupVersionKind, d Defaulter[T]) (*Admission[T], error) {
	a, err := newAdmission[T](gvk)
	if err != nil {
		return nil, err
	}
	if object.IsNil(d) {
		return nil, fmt.Errorf("%w: nil Defaulter for %s", ErrInvalidHandler, gvk)
	}
	a.defaulter = d
	return a, nil
}

// NewValidating returns the validating webhook handler that decodes objects of kind gvk into
// T and checks them with v. Errors match ErrInvalidHandler.
func NewValidating[T Object](gvk schema.GroupVersionKind, v Validator[T]) (*Admission[T], error) {
	a, err := newAdmission[T](gvk)
	if err != nil {
		return nil, err
	}
	if object.IsNil(v) {
		return nil, fmt.Errorf("%w: nil Validator for %s", ErrInvalidHandler, gvk)
	}
	a.validator = v
	return a, nil
}

func newAdmission[T Object](gvk schema.GroupVersionKind) (*Admission[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %s is not a pointer to a struct", ErrInvalidHandler, t)
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("%w: kind %q needs a version and a kind", ErrInvalidHandler, gvk.String())
	}
	return &Admission[T]{gvk: gvk, elem: t.Elem(), maxBytes: DefaultMaxRequestBytes}, nil
}

// GVK returns the kind the handler admits.
func (a *Admission[T]) GVK() schema.GroupVersionKind { return a.gvk }

// ServeHTTP answers one AdmissionReview (see Handle). A body that is not an
// admission.k8s.io/v1 AdmissionReview with a request gets HTTP 400; a wrong method or content
// type 405 and 415; a body over DefaultMaxRequestBytes 413.
func (a *Admission[T]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := readReview(w, r, a.maxBytes)
	if !ok {
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		badRequest(w, r, fmt.Errorf("decoding the AdmissionReview: %w", err))
		return
	}
	if gvk := review.GroupVersionKind(); gvk != admissionv1.SchemeGroupVersion.WithKind("AdmissionReview") {
		badRequest(w, r, fmt.Errorf("expected an %s AdmissionReview, got apiVersion %q kind %q",
			admissionv1.SchemeGroupVersion, review.APIVersion, review.Kind))
		return
	}
	if review.Request == nil {
		badRequest(w, r, errors.New("the AdmissionReview has no request"))
		return
	}
	resp := a.Handle(r.Context(), review.Request)
	if !resp.Allowed && resp.Result != nil {
		reportRejection(r.Context(), resp.Result.Code)
	}
	writeJSON(w, r, admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
}

// requestKey carries the AdmissionRequest in the context Default and Validate* get.
type requestKey struct{}

// RequestFrom returns the admission request being handled, for a Defaulter or Validator that
// needs more than the object (the user, the operation, dry run). It is nil outside a handler.
// The request is shared: do not modify it.
func RequestFrom(ctx context.Context) *admissionv1.AdmissionRequest {
	req, _ := ctx.Value(requestKey{}).(*admissionv1.AdmissionRequest)
	return req
}

// Handle answers one admission request; the response carries req's UID. Objects of another
// kind than the handler's, and objects that do not decode into T, are answered with 400 Bad
// Request naming the problem. A Defaulter's or Validator's panic is answered with 500 (and
// logged), never passed on.
func (a *Admission[T]) Handle(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	if req == nil {
		return badRequestResponse(&admissionv1.AdmissionRequest{}, errors.New("webhook: no admission request"))
	}
	logger := klog.FromContext(ctx).WithValues("kind", req.Kind.Kind, "namespace", req.Namespace,
		"name", req.Name, "operation", req.Operation, "uid", req.UID)
	ctx = klog.NewContext(context.WithValue(ctx, requestKey{}, req), logger)
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("webhook: %s handler panicked: %v", a.gvk.Kind, r)
			logger.Error(err, "Admission request failed")
			resp = deny(req, &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
				Reason: metav1.StatusReasonInternalError, Message: err.Error()}, nil)
		}
	}()
	switch got := (schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}); {
	case got != a.gvk:
		resp = badRequestResponse(req, fmt.Errorf("webhook: this webhook admits %s, not %s", a.gvk, got))
	case a.defaulter != nil:
		resp = a.handleDefault(ctx, req)
	default:
		resp = a.handleValidate(ctx, req)
	}
	if !resp.Allowed {
		logger.V(1).Info("Admission request denied", "code", resp.Result.Code, "reason", resp.Result.Reason, "message", resp.Result.Message)
	} else {
		logger.V(4).Info("Admission request allowed", "patchBytes", len(resp.Patch), "warnings", len(resp.Warnings))
	}
	return resp
}

func (a *Admission[T]) handleDefault(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return allow(req, nil)
	}
	obj, err := a.decode(req.Object.Raw, "object")
	if err != nil {
		return badRequestResponse(req, err)
	}
	before, err := json.Marshal(obj)
	if err != nil {
		return internalError(req, fmt.Errorf("webhook: encoding the %s: %w", a.gvk.Kind, err))
	}
	if err := a.defaulter.Default(ctx, obj); err != nil {
		return deny(req, a.statusFor(req, err), nil)
	}
	after, err := json.Marshal(obj)
	if err != nil {
		return internalError(req, fmt.Errorf("webhook: encoding the defaulted %s: %w", a.gvk.Kind, err))
	}
	resp := allow(req, nil)
	if string(before) == string(after) {
		return resp
	}
	patch, err := admissionPatch(req.Object.Raw, before, after)
	if err != nil {
		return internalError(req, err)
	}
	if len(patch) > 0 {
		if resp.Patch, err = json.Marshal(patch); err != nil {
			return internalError(req, fmt.Errorf("webhook: encoding the patch: %w", err))
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	}
	return resp
}

// admissionPatch is the patch from the object as received (raw) to the defaulted object
// (after), restricted to what Default changed: before is the decoded, undefaulted object
// encoded again, and where before and after agree nothing is patched. So fields T does not
// know are not removed, and fields T encodes although they were absent (a zero status) are
// not added. controller-runtime diffs raw against after and then drops the removals the round
// trip alone causes (with a second diff, when there are any); the additions it causes stay in
// its patch.
func admissionPatch(raw, before, after []byte) ([]PatchOperation, error) {
	r, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("webhook: the received object: %w", err)
	}
	b, err := decodeJSON(before)
	if err != nil {
		return nil, fmt.Errorf("webhook: the decoded object: %w", err)
	}
	a, err := decodeJSON(after)
	if err != nil {
		return nil, fmt.Errorf("webhook: the defaulted object: %w", err)
	}
	var ops []PatchOperation
	if err := diff3(r, true, b, a, "", &ops); err != nil {
		return nil, err
	}
	return ops, nil
}

// diff3 appends the operations that bring r (present in the received document when rOK)
// where Default took b: to a. Members of b and a are walked together; where they are equal,
// whatever r holds stays.
func diff3(r any, rOK bool, b, a any, path string, ops *[]PatchOperation) error {
	bm, bObj := b.(map[string]any)
	am, aObj := a.(map[string]any)
	rm, rObj := r.(map[string]any)
	if bObj && aObj && rObj {
		for _, k := range slices.Sorted(maps.Keys(am)) {
			rv, rHas := rm[k]
			p := path + "/" + escapePointer(k)
			if bv, bHas := bm[k]; bHas {
				if err := diff3(rv, rHas, bv, am[k], p, ops); err != nil {
					return err
				}
				continue
			}
			// Added by Default.
			op := "add"
			if rHas {
				op = "replace"
			}
			if err := appendOp(ops, op, p, am[k]); err != nil {
				return err
			}
		}
		for _, k := range slices.Sorted(maps.Keys(bm)) {
			if _, kept := am[k]; kept {
				continue
			}
			// Removed by Default: remove it where the received document has it.
			if _, rHas := rm[k]; rHas {
				*ops = append(*ops, PatchOperation{Op: "remove", Path: path + "/" + escapePointer(k)})
			}
		}
		return nil
	}
	if jsonEqual(b, a) {
		return nil
	}
	if !rOK {
		return appendOp(ops, "add", path, a)
	}
	return appendOp(ops, "replace", path, a)
}

// jsonEqual compares two decoded JSON values (decodeJSON's: maps, slices, json.Number,
// strings, bools, nil).
func jsonEqual(x, y any) bool {
	switch x := x.(type) {
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := y.(json.Number)
		return ok && x == y
	case string:
		y, ok := y.(string)
		return ok && x == y
	case bool:
		y, ok := y.(bool)
		return ok && x == y
	case nil:
		return y == nil
	}
	return false
}

func (a *Admission[T]) handleValidate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var (
		warnings Warnings
		err      error
	)
	switch req.Operation {
	case admissionv1.Create:
		obj, derr := a.decode(req.Object.Raw, "object")
		if derr != nil {
			return badRequestResponse(req, derr)
		}
		warnings, err = a.validator.ValidateCreate(ctx, obj)
	case admissionv1.Update:
		obj, derr := a.decode(req.Object.Raw, "object")
		if derr != nil {
			return badRequestResponse(req, derr)
		}
		old, derr := a.decode(req.OldObject.Raw, "oldObject")
		if derr != nil {
			return badRequestResponse(req, derr)
		}
		warnings, err = a.validator.ValidateUpdate(ctx, old, obj)
	case admissionv1.Delete:
		old, derr := a.decode(req.OldObject.Raw, "oldObject")
		if derr != nil {
			return badRequestResponse(req, derr)
		}
		warnings, err = a.validator.ValidateDelete(ctx, old)
	default:
		return allow(req, nil)
	}
	if err != nil {
		return deny(req, a.statusFor(req, err), warnings)
	}
	return allow(req, warnings)
}

// decode decodes one object of the review into a new T.
func (a *Admission[T]) decode(raw []byte, what string) (T, error) {
	var zero T
	if len(raw) == 0 {
		return zero, fmt.Errorf("webhook: the review has no %s", what)
	}
	obj := reflect.New(a.elem).Interface().(T)
	if err := json.Unmarshal(raw, obj); err != nil {
		return zero, fmt.Errorf("webhook: decoding the %s as %s: %w", what, a.gvk.Kind, err)
	}
	return obj, nil
}

// statusFor turns a Defaulter's or Validator's error into the status of the denial.
func (a *Admission[T]) statusFor(req *admissionv1.AdmissionRequest, err error) *metav1.Status {
	if fields := fieldErrors(err); len(fields) > 0 {
		st := apierrors.NewInvalid(a.gvk.GroupKind(), req.Name, fields).Status()
		return &st
	}
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		st := api.Status()
		return &st
	}
	return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
		Reason: metav1.StatusReasonForbidden, Message: err.Error()}
}

// fieldErrors returns the field errors err is made of: a *field.Error, or an aggregate
// (field.ErrorList.ToAggregate) of them and nothing else.
func fieldErrors(err error) field.ErrorList {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		var list field.ErrorList
		for _, e := range agg.Errors() {
			var fe *field.Error
			if !errors.As(e, &fe) {
				return nil
			}
			list = append(list, fe)
		}
		return list
	}
	var fe *field.Error
	if errors.As(err, &fe) {
		return field.ErrorList{fe}
	}
	return nil
}

func allow(req *admissionv1.AdmissionRequest, warnings Warnings) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Warnings: warnings}
}

func deny(req *admissionv1.AdmissionRequest, st *metav1.Status, warnings Warnings) *admissionv1.AdmissionResponse {
	st.Status = metav1.StatusFailure
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: false, Result: st, Warnings: warnings}
}

func badRequestResponse(req *admissionv1.AdmissionRequest, err error) *admissionv1.AdmissionResponse {
	return deny(req, &metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: err.Error()}, nil)
}

func internalError(req *admissionv1.AdmissionRequest, err error) *admissionv1.AdmissionResponse {
	return deny(req, &metav1.Status{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError, Message: err.Error()}, nil)
}
