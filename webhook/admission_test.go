package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/webhook"
)

var configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// cmDefaulter labels every ConfigMap and gives it a "mode" key.
type cmDefaulter struct{ panics bool }

func (d cmDefaulter) Default(ctx context.Context, cm *corev1.ConfigMap) error {
	if d.panics {
		panic("bug")
	}
	if webhook.RequestFrom(ctx) == nil {
		return errors.New("no request in the context")
	}
	if cm.Data["forbidden"] != "" {
		return errors.New("forbidden key")
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels["app.kubernetes.io/managed-by"] = "ctrlkit"
	if _, ok := cm.Data["mode"]; !ok {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["mode"] = "default"
	}
	return nil
}

// cmValidator wants a "mode" key of "default" or "fast", keeps "mode" immutable and refuses
// deleting a ConfigMap labelled protected.
type cmValidator struct{}

func (cmValidator) ValidateCreate(_ context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
	var errs field.ErrorList
	switch mode := cm.Data["mode"]; mode {
	case "default", "fast":
	case "":
		errs = append(errs, field.Required(field.NewPath("data", "mode"), ""))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("data", "mode"), mode, []string{"default", "fast"}))
	}
	if len(cm.Data) > 3 {
		errs = append(errs, field.TooMany(field.NewPath("data"), len(cm.Data), 3))
	}
	var warnings webhook.Warnings
	if cm.Data["mode"] == "fast" {
		warnings = append(warnings, "mode fast is deprecated")
	}
	return warnings, errs.ToAggregate()
}

func (v cmValidator) ValidateUpdate(ctx context.Context, old, cm *corev1.ConfigMap) (webhook.Warnings, error) {
	if old.Data["mode"] != cm.Data["mode"] {
		return nil, field.Forbidden(field.NewPath("data", "mode"), "is immutable")
	}
	return v.ValidateCreate(ctx, cm)
}

func (cmValidator) ValidateDelete(_ context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
	if cm.Labels["protected"] == "true" {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, cm.Name, errors.New("protected"))
	}
	if cm.Labels["plain"] == "true" {
		return nil, errors.New("not today")
	}
	return nil, nil
}

func request(t *testing.T, op admissionv1.Operation, obj, old any) *admissionv1.AdmissionRequest {
	t.Helper()
	raw := func(v any) runtime.RawExtension {
		switch v := v.(type) {
		case nil:
			return runtime.RawExtension{}
		case string:
			return runtime.RawExtension{Raw: []byte(v)}
		default:
			b, err := json.Marshal(v)
			require.NoError(t, err)
			return runtime.RawExtension{Raw: b}
		}
	}
	return &admissionv1.AdmissionRequest{
		UID: types.UID("uid-1"), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Namespace: "default", Name: "cfg", Operation: op, Object: raw(obj), OldObject: raw(old),
	}
}

func TestDefaultingPatchesOnlyWhatDefaultChanged(t *testing.T) {
	h, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	// As the API server sends it on create: no creationTimestamp, and a field ConfigMap does
	// not know (a newer server's), which the patch must not remove.
	raw := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"default","labels":{"a":"b"}},"data":{"k":"v"},"futureField":{"x":1}}`
	resp := h.Handle(context.Background(), request(t, admissionv1.Create, raw, nil))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, types.UID("uid-1"), resp.UID)
	require.NotNil(t, resp.PatchType)
	assert.Equal(t, admissionv1.PatchTypeJSONPatch, *resp.PatchType)
	assert.JSONEq(t, `[
		{"op":"add","path":"/data/mode","value":"default"},
		{"op":"add","path":"/metadata/labels/app.kubernetes.io~1managed-by","value":"ctrlkit"}]`, string(resp.Patch))

	p, err := jsonpatch.DecodePatch(resp.Patch)
	require.NoError(t, err)
	out, err := p.Apply([]byte(raw))
	require.NoError(t, err)
	assert.JSONEq(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"default",
		"labels":{"a":"b","app.kubernetes.io/managed-by":"ctrlkit"}},"data":{"k":"v","mode":"default"},"futureField":{"x":1}}`, string(out))

	// Defaulting a defaulted object changes nothing: no patch.
	resp = h.Handle(context.Background(), request(t, admissionv1.Update, string(out), raw))
	require.True(t, resp.Allowed)
	assert.Nil(t, resp.Patch)
	assert.Nil(t, resp.PatchType)

	// A map that did not exist is added whole.
	resp = h.Handle(context.Background(), request(t, admissionv1.Create, `{"metadata":{"name":"cfg"}}`, nil))
	require.True(t, resp.Allowed)
	assert.JSONEq(t, `[
		{"op":"add","path":"/data","value":{"mode":"default"}},
		{"op":"add","path":"/metadata/labels","value":{"app.kubernetes.io/managed-by":"ctrlkit"}}]`, string(resp.Patch))

	// Deletes are not defaulted.
	resp = h.Handle(context.Background(), request(t, admissionv1.Delete, nil, raw))
	assert.True(t, resp.Allowed)
	assert.Nil(t, resp.Patch)
}

func TestAdmissionAnswersBadInputWith400(t *testing.T) {
	d, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	v, err := webhook.NewValidating[*corev1.ConfigMap](configMapGVK, cmValidator{})
	require.NoError(t, err)
	handlers := map[string]func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse{
		"defaulting": d.Handle, "validating": v.Handle,
	}
	for name, handle := range handlers {
		t.Run(name, func(t *testing.T) {
			wrongKind := request(t, admissionv1.Create, `{}`, nil)
			wrongKind.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "Secret"}
			resp := handle(context.Background(), wrongKind)
			require.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
			assert.Equal(t, metav1.StatusReasonBadRequest, resp.Result.Reason)
			assert.Equal(t, "webhook: this webhook admits /v1, Kind=ConfigMap, not /v1, Kind=Secret", resp.Result.Message)

			resp = handle(context.Background(), request(t, admissionv1.Create, `{"data":{"k":1}}`, nil))
			require.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
			assert.Contains(t, resp.Result.Message, "webhook: decoding the object as ConfigMap: json: cannot unmarshal number")
			assert.Equal(t, types.UID("uid-1"), resp.UID)

			if name == "validating" {
				resp = handle(context.Background(), request(t, admissionv1.Update, `{}`, nil))
				require.False(t, resp.Allowed)
				assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
				assert.Equal(t, "webhook: the review has no oldObject", resp.Result.Message)
			}
		})
	}
}

func TestNilRequestsAreBadRequests(t *testing.T) {
	h, err := webhook.NewValidating[*corev1.ConfigMap](configMapGVK, cmValidator{})
	require.NoError(t, err)
	resp := h.Handle(context.Background(), nil)
	require.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
	c := widgetConversion(t)
	assert.Equal(t, metav1.StatusFailure, c.Handle(context.Background(), nil).Result.Status)
}

func TestDefaulterErrorsAndPanicsDeny(t *testing.T) {
	h, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	resp := h.Handle(context.Background(), request(t, admissionv1.Create, `{"data":{"forbidden":"x"}}`, nil))
	require.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusForbidden), resp.Result.Code)
	assert.Equal(t, "forbidden key", resp.Result.Message)

	h, err = webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{panics: true})
	require.NoError(t, err)
	resp = h.Handle(context.Background(), request(t, admissionv1.Create, `{}`, nil))
	require.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusInternalServerError), resp.Result.Code)
	assert.Equal(t, "webhook: ConfigMap handler panicked: bug", resp.Result.Message)
}

func TestValidatingAnswers(t *testing.T) {
	h, err := webhook.NewValidating[*corev1.ConfigMap](configMapGVK, cmValidator{})
	require.NoError(t, err)
	cm := func(mode string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Labels: labels}, Data: map[string]string{"mode": mode}}
	}
	ctx := context.Background()

	resp := h.Handle(ctx, request(t, admissionv1.Create, cm("default", nil), nil))
	assert.True(t, resp.Allowed)
	assert.Nil(t, resp.Patch)

	resp = h.Handle(ctx, request(t, admissionv1.Create, cm("fast", nil), nil))
	assert.True(t, resp.Allowed)
	assert.Equal(t, []string{"mode fast is deprecated"}, resp.Warnings)

	// A field error list is a 422 Invalid with one cause per field, as the API server's own.
	bad := cm("slow", nil)
	bad.Data["a"], bad.Data["b"], bad.Data["c"] = "1", "2", "3"
	resp = h.Handle(ctx, request(t, admissionv1.Create, bad, nil))
	require.False(t, resp.Allowed)
	st := resp.Result
	assert.Equal(t, metav1.StatusFailure, st.Status)
	assert.Equal(t, int32(http.StatusUnprocessableEntity), st.Code)
	assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
	assert.Equal(t, `ConfigMap "cfg" is invalid: [data.mode: Unsupported value: "slow": supported values: "default", "fast", data: Too many: 4: must have at most 3 items]`, st.Message)
	require.NotNil(t, st.Details)
	assert.Equal(t, "cfg", st.Details.Name)
	assert.Equal(t, "ConfigMap", st.Details.Kind)
	require.Len(t, st.Details.Causes, 2)
	assert.Equal(t, metav1.CauseType(field.ErrorTypeNotSupported), st.Details.Causes[0].Type)
	assert.Equal(t, "data.mode", st.Details.Causes[0].Field)
	assert.Equal(t, "data", st.Details.Causes[1].Field)

	// A single field error too.
	resp = h.Handle(ctx, request(t, admissionv1.Update, cm("fast", nil), cm("default", nil)))
	require.False(t, resp.Allowed)
	assert.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
	assert.Equal(t, `ConfigMap "cfg" is invalid: data.mode: Forbidden: is immutable`, resp.Result.Message)

	// An API status is passed through; any other error is 403.
	resp = h.Handle(ctx, request(t, admissionv1.Delete, nil, cm("default", map[string]string{"protected": "true"})))
	require.False(t, resp.Allowed)
	assert.Equal(t, metav1.StatusReasonConflict, resp.Result.Reason)
	assert.Equal(t, int32(http.StatusConflict), resp.Result.Code)
	resp = h.Handle(ctx, request(t, admissionv1.Delete, nil, cm("default", map[string]string{"plain": "true"})))
	require.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusForbidden), resp.Result.Code)
	assert.Equal(t, metav1.StatusReasonForbidden, resp.Result.Reason)
	assert.Equal(t, "not today", resp.Result.Message)
	resp = h.Handle(ctx, request(t, admissionv1.Delete, nil, cm("default", nil)))
	assert.True(t, resp.Allowed)

	// CONNECT is none of the validator's business.
	resp = h.Handle(ctx, request(t, admissionv1.Connect, nil, nil))
	assert.True(t, resp.Allowed)
}

func TestNewAdmissionRefusesBadArguments(t *testing.T) {
	_, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, nil)
	require.ErrorIs(t, err, webhook.ErrInvalidHandler)
	var nilDefaulter *cmDefaulter
	_, err = webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, nilDefaulter)
	require.ErrorIs(t, err, webhook.ErrInvalidHandler)
	_, err = webhook.NewValidating[*corev1.ConfigMap](schema.GroupVersionKind{}, cmValidator{})
	require.ErrorIs(t, err, webhook.ErrInvalidHandler)
}

func TestAdmissionServeHTTP(t *testing.T) {
	h, err := webhook.NewDefaulting[*corev1.ConfigMap](configMapGVK, cmDefaulter{})
	require.NoError(t, err)
	post := func(method, contentType, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/default", strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	review := func(req *admissionv1.AdmissionRequest) string {
		b, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
		require.NoError(t, err)
		return string(b)
	}

	rec := post(http.MethodPost, "application/json", review(request(t, admissionv1.Create, `{"metadata":{"name":"cfg"}}`, nil)))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	assert.Equal(t, "admission.k8s.io/v1", out.APIVersion)
	assert.Equal(t, "AdmissionReview", out.Kind)
	require.NotNil(t, out.Response)
	assert.True(t, out.Response.Allowed)
	assert.Equal(t, types.UID("uid-1"), out.Response.UID)
	assert.NotEmpty(t, out.Response.Patch)

	for _, tc := range []struct {
		name, method, contentType, body string
		code                            int
		message                         string
	}{
		{"GET", http.MethodGet, "application/json", "", http.StatusMethodNotAllowed, "reviews are POSTed"},
		{"YAML", http.MethodPost, "application/yaml", "{}", http.StatusUnsupportedMediaType, "reviews are application/json"},
		{"empty", http.MethodPost, "application/json", "", http.StatusBadRequest, "empty body"},
		{"not JSON", http.MethodPost, "application/json", "{", http.StatusBadRequest, "decoding the AdmissionReview"},
		{"v1beta1", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}`,
			http.StatusBadRequest, `expected an admission.k8s.io/v1 AdmissionReview, got apiVersion "admission.k8s.io/v1beta1"`},
		{"no request", http.MethodPost, "application/json; charset=utf-8", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
			http.StatusBadRequest, "the AdmissionReview has no request"},
		{"too large", http.MethodPost, "application/json", `{"x":"` + strings.Repeat("x", webhook.DefaultMaxRequestBytes) + `"}`,
			http.StatusRequestEntityTooLarge, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := post(tc.method, tc.contentType, tc.body)
			assert.Equal(t, tc.code, rec.Code)
			assert.Contains(t, rec.Body.String(), tc.message)
		})
	}
}
