package manager

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/informer"
)

// The Manager fills in what Options.Cache leaves unset, and keeps what it
// sets: "-" and a negative StalenessCheck turn the informer name and the
// staleness check off.
func TestCacheOptionsMerge(t *testing.T) {
	m, err := New(Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	defer m.Factory().Shutdown()

	o := m.cacheOptions(informer.Options{}, nil)
	assert.NotNil(t, o.EventRecorder)
	assert.True(t, strings.HasPrefix(o.InformerName, "ctrlkit-manager-"), o.InformerName)
	assert.Equal(t, defaultStalenessInterval, o.StalenessCheck)
	assert.Nil(t, o.Scheme)

	s := runtime.NewScheme()
	rec := record.NewFakeRecorder(1)
	o = m.cacheOptions(informer.Options{
		Namespace: "a", EventRecorder: rec, InformerName: "-", StalenessCheck: -1,
	}, s)
	assert.Equal(t, "a", o.Namespace)
	assert.Same(t, rec, o.EventRecorder)
	assert.Empty(t, o.InformerName)
	assert.Negative(t, o.StalenessCheck)
	assert.Same(t, s, o.Scheme)

	o = m.cacheOptions(informer.Options{InformerName: "mine", StalenessCheck: time.Second}, s)
	assert.Equal(t, "mine", o.InformerName)
	assert.Equal(t, time.Second, o.StalenessCheck)
}
