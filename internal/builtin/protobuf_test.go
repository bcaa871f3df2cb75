package builtin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
)

func TestProtobufConfig(t *testing.T) {
	in := &rest.Config{Host: "https://example.invalid"}
	out := builtin.ProtobufConfig(in)
	assert.Equal(t, "application/vnd.kubernetes.protobuf", out.ContentType)
	assert.Equal(t, "application/vnd.kubernetes.protobuf,application/json", out.AcceptContentTypes)
	assert.Empty(t, in.ContentType, "the given config is not modified")
	assert.Equal(t, in.Host, out.Host)

	accept := &rest.Config{ContentConfig: rest.ContentConfig{AcceptContentTypes: "application/json"}}
	assert.Equal(t, "application/json", builtin.ProtobufConfig(accept).AcceptContentTypes, "an Accept the user set is kept")

	json := &rest.Config{ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
	assert.Same(t, json, builtin.ProtobufConfig(json), "a content type the user set is kept")
}
