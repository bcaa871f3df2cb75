package testkit_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// BenchmarkNewFake is the price of one fake Env (clientset, seeded objects, started factory) after
// the one-off type-converter setup the first fake clientset of a binary pays.
func BenchmarkNewFake(b *testing.B) {
	testkit.NewFake(b) // pay the one-off setup outside the timer
	seed := configMap("a", "seed")
	b.ReportAllocs()
	for b.Loop() {
		testkit.NewFake(b, seed)
	}
}

// BenchmarkCreate compares one ConfigMap create on a fake (bare, and with the fault-injection
// reactor consulted but not failing) and on the real API server.
func BenchmarkCreate(b *testing.B) {
	run := func(b *testing.B, env *testkit.Env) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Create(env.Context(),
				configMap(env.Namespace(), fmt.Sprint("cm-", i)), metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	b.Run("fake", func(b *testing.B) { run(b, testkit.NewFake(b).Env) })
	b.Run("fake-failwrites-0", func(b *testing.B) {
		env := testkit.NewFake(b)
		env.FailWrites(0)
		run(b, env.Env)
	})
	b.Run("apiserver", func(b *testing.B) { run(b, testkit.SharedAPIServer(b)) })
}
