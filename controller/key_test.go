package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestKeyStringMatchesMetaNamespaceKeyFunc(t *testing.T) {
	for _, obj := range []metav1.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-1"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}},
	} {
		want, err := cache.MetaNamespaceKeyFunc(obj)
		require.NoError(t, err)
		k := KeyFromObject(obj)
		assert.Equal(t, want, k.String())
		back, err := ParseKey(want)
		require.NoError(t, err)
		assert.Equal(t, k, back)
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Key
		bad  bool
	}{
		{in: "ns/name", want: Key{Namespace: "ns", Name: "name"}},
		{in: "name", want: Key{Name: "name"}},
		{in: "", bad: true},
		{in: "ns/", bad: true},
		{in: "/name", bad: true},
		{in: "/", bad: true},
		{in: "a/b/c", bad: true},
	} {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			got, err := ParseKey(tc.in)
			if tc.bad {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrInvalidKey)
				assert.Contains(t, err.Error(), fmt.Sprintf("%q", tc.in), "the error names the key")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.in, got.String())
		})
	}
}

// FuzzParseKey: ParseKey never panics, what it accepts round-trips through
// String, and it agrees with client-go's SplitMetaNamespaceKey on every key
// it accepts.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"", "a", "ns/a", "/a", "a/", "a/b/c", "//", "ü/ñ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ParseKey(%q) error %v does not match ErrInvalidKey", s, err)
			}
			return
		}
		if k.String() != s {
			t.Fatalf("ParseKey(%q).String() = %q", s, k.String())
		}
		ns, name, err := cache.SplitMetaNamespaceKey(s)
		if err != nil || ns != k.Namespace || name != k.Name {
			t.Fatalf("client-go splits %q as (%q, %q, %v), ParseKey as %+v", s, ns, name, err, k)
		}
	})
}

func TestTerminal(t *testing.T) {
	assert.NoError(t, Terminal(nil))
	base := errors.New("spec.replicas must not be negative")
	err := Terminal(base)
	assert.True(t, IsTerminal(err))
	assert.ErrorIs(t, err, base, "Terminal keeps the cause matchable")
	wrapped := fmt.Errorf("reconciling ns/a: %w", err)
	assert.True(t, IsTerminal(wrapped))
	require.ErrorIs(t, wrapped, base)
	assert.Equal(t, "reconciling ns/a: terminal: spec.replicas must not be negative", wrapped.Error())
	assert.False(t, IsTerminal(base))
	assert.False(t, IsTerminal(nil))
}

func TestPanicErrorUnwrapsErrorValues(t *testing.T) {
	cause := errors.New("index out of range")
	pe := &PanicError{Value: cause}
	assert.ErrorIs(t, pe, cause)
	assert.Nil(t, (&PanicError{Value: 42}).Unwrap())
	assert.Equal(t, "reconcile panicked: 42", (&PanicError{Value: 42}).Error())
}
