package controller

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	apimachineryuuid "k8s.io/apimachinery/pkg/util/uuid"
)

// A reconcile ID is a version 4 UUID in its usual text form, and never repeats.
func TestReconcileIDsAreRandomUUIDs(t *testing.T) {
	// Version 4 in the 13th digit, the RFC 9562 variant (10xx) in the 17th.
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := make(map[types.UID]bool, 100000)
	for range 100000 {
		id := newReconcileID()
		require.Regexp(t, v4, string(id))
		require.False(t, seen[id], "repeated: %s", id)
		seen[id] = true
	}
}

func BenchmarkReconcileID(b *testing.B) {
	b.Run("ctrlkit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = newReconcileID()
		}
	})
	b.Run("apimachinery", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = apimachineryuuid.NewUUID()
		}
	})
}
