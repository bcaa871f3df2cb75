package featuregate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/apply"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

// installInClientGo makes g back client-go's gates for the duration of the test.
func installInClientGo(t *testing.T, g *featuregate.Gate) {
	t.Helper()
	original := clientfeatures.FeatureGates()
	clientfeatures.ReplaceFeatureGates(featuregate.ClientGoAdapter(g))
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(original) })
}

func TestClientGoFeaturesAreRegistered(t *testing.T) {
	g := featuregate.New()
	require.NoError(t, g.AddClientGoFeatures())
	require.NoError(t, g.AddClientGoFeatures(), "registering twice is a no-op")
	assert.Contains(t, g.KnownFeatures(), "ClientsAllowCBOR=true|false (ALPHA - default=false)")
	assert.Contains(t, g.KnownFeatures(), "WatchListClient=true|false (BETA - default=true)")

	// The histories came along: at 1.31 WatchListClient was beta and off.
	require.NoError(t, g.SetEmulationVersion(v(1, 31)))
	assert.Contains(t, g.KnownFeatures(), "WatchListClient=true|false (BETA - default=false)")
	assertReason(t, g.Set("AtomicFIFO=true"), featuregate.ReasonPreAlpha, "AtomicFIFO arrives at 1.36")
}

func TestClientGoAdapterUnversionedRegistry(t *testing.T) {
	// AddFeaturesToExistingFeatureGates uses the unversioned Registry.Add.
	g := featuregate.New()
	require.NoError(t, clientfeatures.AddFeaturesToExistingFeatureGates(featuregate.ClientGoAdapter(g)))
	assert.Contains(t, g.KnownFeatures(), "ClientsPreferCBOR=true|false (ALPHA - default=false)")
	require.NoError(t, g.Set("ClientsPreferCBOR=true"))
	assert.True(t, featuregate.ClientGoAdapter(g).Enabled(clientfeatures.ClientsPreferCBOR))
}

func TestClientGoReadsTheCtrlkitGate(t *testing.T) {
	g := featuregate.New()
	require.NoError(t, g.AddClientGoFeatures())
	require.NoError(t, g.Set("ClientsAllowCBOR=true,WatchListClient=false"))
	installInClientGo(t, g)

	gates := clientfeatures.FeatureGates()
	assert.True(t, gates.Enabled(clientfeatures.ClientsAllowCBOR))
	assert.False(t, gates.Enabled(clientfeatures.WatchListClient))
	assert.True(t, gates.Enabled(clientfeatures.InOrderInformers), "defaults come from client-go's specs")

	// Flipping the ctrlkit gate is seen by client-go at once.
	require.NoError(t, g.Set("ClientsAllowCBOR=false"))
	assert.False(t, gates.Enabled(clientfeatures.ClientsAllowCBOR))
}

// The proof that client-go's behaviour follows the ctrlkit gate: an apply request is sent
// as CBOR only when ClientsAllowCBOR and ClientsPreferCBOR are on in our gate.
func TestClientGoBehaviourFollowsTheGate(t *testing.T) {
	var (
		mu           sync.Mutex
		contentTypes []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		contentTypes = append(contentTypes, r.Header.Get("Content-Type"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	client, err := rest.RESTClientFor(&rest.Config{
		Host:      srv.URL,
		Transport: &http.Transport{DisableKeepAlives: true},
		ContentConfig: rest.ContentConfig{
			GroupVersion:         &schema.GroupVersion{Version: "v1"},
			NegotiatedSerializer: serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion(),
		},
	})
	require.NoError(t, err)

	g := featuregate.New()
	require.NoError(t, g.AddClientGoFeatures())
	installInClientGo(t, g)

	send := func() {
		req, err := apply.NewRequest(client, map[string]string{"kind": "Thing"})
		require.NoError(t, err)
		require.NoError(t, req.AbsPath("/apply").Do(context.Background()).Error())
	}
	send()
	require.NoError(t, g.Set("ClientsAllowCBOR=true,ClientsPreferCBOR=true"))
	send()
	require.NoError(t, g.Set("ClientsPreferCBOR=false"))
	send()

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"application/apply-patch+yaml",
		"application/apply-patch+cbor",
		"application/apply-patch+yaml",
	}, contentTypes)
}

// client-go's own test helper works on a ctrlkit-backed gate, even a read one, and leaves
// it as it found it.
func TestClientGoTestingHelper(t *testing.T) {
	g := featuregate.New()
	require.NoError(t, g.AddClientGoFeatures())
	require.NoError(t, g.Set("WatchListClient=false"))
	assert.False(t, g.Enabled("WatchListClient")) // read: registration is closed
	installInClientGo(t, g)

	t.Run("override", func(t *testing.T) {
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsAllowCBOR, true)
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, true)
		assert.True(t, g.Enabled("ClientsAllowCBOR"))
		assert.True(t, g.Enabled("WatchListClient"))
	})
	assert.False(t, g.Enabled("ClientsAllowCBOR"))
	assert.False(t, g.Enabled("WatchListClient"), "the explicit value is back")
	assert.Equal(t, "WatchListClient=false", g.String())

	// Validation still applies to the testing path.
	assertReason(t, featuregate.ClientGoAdapter(g).SetForTesting("Nope", true), featuregate.ReasonUnknownFeature)
}

// SetForTesting is an exported method anyone can call, so it must not be a way around
// Freeze: after Freeze it fails like Set and changes nothing.
func TestClientGoSetForTestingRespectsFreeze(t *testing.T) {
	g := featuregate.New()
	require.NoError(t, g.AddClientGoFeatures())
	require.NoError(t, g.Set("WatchListClient=false"))
	g.Freeze()
	a := featuregate.ClientGoAdapter(g)
	assertReason(t, a.Set(clientfeatures.ClientsAllowCBOR, true), featuregate.ReasonFrozen)
	assertReason(t, a.SetForTesting(clientfeatures.ClientsAllowCBOR, true), featuregate.ReasonFrozen)
	assertReason(t, a.SetForTesting(clientfeatures.WatchListClient, true), featuregate.ReasonFrozen)
	assert.False(t, g.Enabled("ClientsAllowCBOR"))
	assert.False(t, g.Enabled("WatchListClient"))
	assert.Equal(t, "WatchListClient=false", g.String())
}
