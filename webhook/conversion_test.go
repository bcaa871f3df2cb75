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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/webhook"
)

// Widget has two versions: v1 has spec.size, v2 (the hub) moved it to spec.scale.size.
type widgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int    `json:"size"`
		Mode string `json:"mode,omitempty"`
	} `json:"spec"`
}

type widgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Scale struct {
			Size int `json:"size"`
		} `json:"scale"`
		Mode string `json:"mode,omitempty"`
	} `json:"spec"`
}

func (w *widgetV1) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (w *widgetV2) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (*widgetV2) Hub() {}

func (w *widgetV1) ConvertTo(hub *widgetV2) error {
	if w.Spec.Mode == "panic" {
		panic("bug")
	}
	if w.Spec.Mode == "broken" {
		return errors.New("mode broken has no v2 form")
	}
	hub.ObjectMeta = w.ObjectMeta
	hub.Spec.Scale.Size, hub.Spec.Mode = w.Spec.Size, w.Spec.Mode
	return nil
}

func (w *widgetV1) ConvertFrom(hub *widgetV2) error {
	w.ObjectMeta = hub.ObjectMeta
	w.Spec.Size, w.Spec.Mode = hub.Spec.Scale.Size, hub.Spec.Mode
	return nil
}

var (
	widgetV1GVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetV2GVK = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
)

func widgetConversion(t *testing.T) *webhook.Conversion[*widgetV2] {
	t.Helper()
	c, err := webhook.NewConversion[*widgetV2](widgetV2GVK)
	require.NoError(t, err)
	require.NoError(t, webhook.AddSpoke[*widgetV1](c, widgetV1GVK))
	return c
}

func TestConvertBetweenVersions(t *testing.T) {
	c := widgetConversion(t)
	assert.Equal(t, []string{"example.com/v2", "example.com/v1"}, c.Versions())
	v1 := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","uid":"u1","labels":{"a":"b"}},"spec":{"size":3,"mode":"fast"}}`
	v2, err := c.Convert([]byte(v1), "example.com/v2")
	require.NoError(t, err)
	assert.JSONEq(t, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w","namespace":"ns","uid":"u1","labels":{"a":"b"}},"spec":{"scale":{"size":3},"mode":"fast"}}`, string(v2))
	back, err := c.Convert(v2, "example.com/v1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","uid":"u1","labels":{"a":"b"}},"spec":{"size":3,"mode":"fast"}}`, string(back))

	same, err := c.Convert([]byte(v1), "example.com/v1")
	require.NoError(t, err)
	assert.Equal(t, v1, string(same), "an object at the desired version is returned untouched")
}

func TestConvertErrorsNameTheProblem(t *testing.T) {
	c := widgetConversion(t)
	for _, tc := range []struct{ name, obj, desired, message string }{
		{"unknown desired", `{"apiVersion":"example.com/v1","kind":"Widget"}`, "example.com/v3", `desired apiVersion "example.com/v3" is none of [example.com/v2 example.com/v1]`},
		{"unknown source", `{"apiVersion":"example.com/v0","kind":"Widget"}`, "example.com/v2", `apiVersion "example.com/v0" of the object is none of`},
		{"other kind", `{"apiVersion":"example.com/v1","kind":"Gadget"}`, "example.com/v2", `object of apiVersion "example.com/v1" kind "Gadget", this webhook converts Widget.example.com`},
		{"not JSON", `{`, "example.com/v2", "decoding an object"},
		{"bad field", `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":"three"}}`, "example.com/v2", "decoding Widget as example.com/v1"},
		{"conversion error", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"mode":"broken"}}`, "example.com/v2",
			"Widget ns/w from example.com/v1 to example.com/v2: mode broken has no v2 form"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Convert([]byte(tc.obj), tc.desired)
			require.ErrorIs(t, err, webhook.ErrConversion)
			assert.ErrorContains(t, err, tc.message)
		})
	}
}

func TestConversionHandle(t *testing.T) {
	c := widgetConversion(t)
	req := &webhook.ConversionRequest{UID: "r1", DesiredAPIVersion: "example.com/v2", Objects: []runtime.RawExtension{
		{Raw: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"size":1}}`)},
		{Raw: []byte(`{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"b"},"spec":{"scale":{"size":2}}}`)},
	}}
	resp := c.Handle(context.Background(), req)
	assert.Equal(t, metav1.StatusSuccess, resp.Result.Status)
	assert.Equal(t, "r1", string(resp.UID))
	require.Len(t, resp.ConvertedObjects, 2)
	assert.Contains(t, string(resp.ConvertedObjects[0].Raw), `"scale":{"size":1}`)
	assert.Contains(t, string(resp.ConvertedObjects[1].Raw), `"scale":{"size":2}`)

	req.Objects = append(req.Objects, runtime.RawExtension{Raw: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"mode":"panic"}}`)})
	resp = c.Handle(context.Background(), req)
	assert.Equal(t, metav1.StatusFailure, resp.Result.Status)
	assert.Equal(t, int32(http.StatusInternalServerError), resp.Result.Code)
	assert.Contains(t, resp.Result.Message, "Widget conversion panicked: bug")
	assert.Empty(t, resp.ConvertedObjects)
}

func TestConversionServeHTTP(t *testing.T) {
	c := widgetConversion(t)
	post := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		return rec
	}
	rec := post(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"r1","desiredAPIVersion":"example.com/v1",
		"objects":[{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"a"},"spec":{"scale":{"size":5}}}]}}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out webhook.ConversionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	assert.Equal(t, "apiextensions.k8s.io/v1", out.APIVersion)
	assert.Equal(t, "ConversionReview", out.Kind)
	require.NotNil(t, out.Response)
	assert.Equal(t, "r1", string(out.Response.UID))
	assert.Equal(t, metav1.StatusSuccess, out.Response.Result.Status)
	require.Len(t, out.Response.ConvertedObjects, 1)
	assert.JSONEq(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"size":5}}`, string(out.Response.ConvertedObjects[0].Raw))

	for body, message := range map[string]string{
		`{`: "decoding the ConversionReview",
		`{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{}}`: "expected an apiextensions.k8s.io/v1 ConversionReview",
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`:                   "the ConversionReview has no request",
	} {
		rec := post(body)
		assert.Equal(t, http.StatusBadRequest, rec.Code, body)
		assert.Contains(t, rec.Body.String(), message)
	}
}

func TestNewConversionRefusesBadArguments(t *testing.T) {
	_, err := webhook.NewConversion[*widgetV2](schema.GroupVersionKind{})
	require.ErrorIs(t, err, webhook.ErrInvalidHandler)
	c := widgetConversion(t)
	require.ErrorIs(t, webhook.AddSpoke[*widgetV1](c, widgetV1GVK), webhook.ErrInvalidHandler, "twice")
	require.ErrorIs(t, webhook.AddSpoke[*widgetV1](c, widgetV2GVK), webhook.ErrInvalidHandler, "the hub's version")
	require.ErrorIs(t, webhook.AddSpoke[*widgetV1](c, schema.GroupVersionKind{Group: "example.com", Version: "v3", Kind: "Gadget"}), webhook.ErrInvalidHandler, "another kind")
}
