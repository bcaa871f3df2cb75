package sharding

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// fakeLister serves pages of a namespace's labelled pods and records the
// LISTs it was asked for.
type fakeLister struct {
	mu    sync.Mutex
	items []metav1.PartialObjectMetadata
	calls []metav1.ListOptions
	fail  error
	// block, when set, holds each LIST until it is closed.
	block chan struct{}
}

func (f *fakeLister) list(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, opts)
	if f.fail != nil {
		return nil, f.fail
	}
	from := 0
	if opts.Continue != "" {
		from, _ = strconv.Atoi(opts.Continue)
	}
	to := min(len(f.items), from+int(opts.Limit))
	out := &metav1.PartialObjectMetadataList{Items: append([]metav1.PartialObjectMetadata(nil), f.items[from:to]...)}
	if to < len(f.items) {
		out.Continue = strconv.Itoa(to)
	}
	return out, nil
}

func (f *fakeLister) lists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.Continue == "" {
			n++
		}
	}
	return n
}

func listedPod(name string, owner types.UID) metav1.PartialObjectMetadata {
	o := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, ResourceVersion: "7",
		Labels:      map[string]string{Label("r"): "a", "app": "web"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
	}}
	if owner != "" {
		o.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: string(owner), UID: owner, Controller: ptrBool(true)}}
	}
	return o
}

func TestChildListsPagesGroupsAndSlims(t *testing.T) {
	f := &fakeLister{}
	for i := range 7 {
		f.items = append(f.items, listedPod(fmt.Sprintf("a-%d", i), "A"))
	}
	f.items = append(f.items, listedPod("b-0", "B"), listedPod("orphan", ""))
	l := newChildLists("r", testingclock.NewFakeClock(t0), f.list)
	l.pageSize = 3
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "A"}}

	got, err := l.children(context.Background(), []schema.GroupVersionResource{pods}, owner, l.observe())
	require.NoError(t, err)
	require.Len(t, got, 7)
	for _, c := range got {
		assert.Equal(t, pods, c.gvr)
		assert.Equal(t, map[string]string{Label("r"): "a"}, c.obj.Labels, "only the ring's labels are kept")
		assert.Empty(t, c.obj.Annotations)
		assert.Equal(t, "7", c.obj.ResourceVersion)
	}
	require.Len(t, f.calls, 3, "9 items in pages of 3")
	for _, c := range f.calls {
		assert.Equal(t, Label("r"), c.LabelSelector, "every labelled child, whatever its member")
		assert.Equal(t, int64(3), c.Limit)
	}
}

// Handovers that began before a LIST started share it; one that began after
// it started lists again, since a child may have been written in between.
func TestChildListsShareAListStartedAfterTheMark(t *testing.T) {
	f := &fakeLister{items: []metav1.PartialObjectMetadata{listedPod("a-0", "A"), listedPod("b-0", "B")}}
	l := newChildLists("r", testingclock.NewFakeClock(t0), f.list)
	gvrs := []schema.GroupVersionResource{pods}
	ownerA := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "A"}}
	ownerB := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "B"}}
	ctx := context.Background()

	markA, markB := l.observe(), l.observe()
	a, err := l.children(ctx, gvrs, ownerA, markA)
	require.NoError(t, err)
	b, err := l.children(ctx, gvrs, ownerB, markB)
	require.NoError(t, err)
	assert.Len(t, a, 1)
	assert.Len(t, b, 1)
	assert.Equal(t, 1, f.lists(), "both marks precede the LIST")

	f.mu.Lock()
	f.items = append(f.items, listedPod("a-1", "A"))
	f.mu.Unlock()
	a, err = l.children(ctx, gvrs, ownerA, l.observe())
	require.NoError(t, err)
	assert.Len(t, a, 2, "a mark after the LIST lists again and sees the new child")
	assert.Equal(t, 2, f.lists())

	// Another namespace is another LIST.
	other := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "other", UID: "A"}}
	_, err = l.children(ctx, gvrs, other, 0)
	require.NoError(t, err)
	assert.Equal(t, 3, f.lists())
}

// Concurrent handovers wait for the LIST under way rather than start their
// own, when they began before it.
func TestChildListsConcurrentHandoversShareOneList(t *testing.T) {
	f := &fakeLister{items: []metav1.PartialObjectMetadata{listedPod("a-0", "A")}, block: make(chan struct{})}
	l := newChildLists("r", testingclock.NewFakeClock(t0), f.list)
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "A"}}
	marks := []uint64{l.observe(), l.observe(), l.observe()}
	var wg sync.WaitGroup
	results := make([]int, len(marks))
	for i, m := range marks {
		wg.Go(func() {
			got, err := l.children(context.Background(), []schema.GroupVersionResource{pods}, owner, m)
			assert.NoError(t, err)
			results[i] = len(got)
		})
	}
	close(f.block)
	wg.Wait()
	assert.Equal(t, []int{1, 1, 1}, results)
	assert.Equal(t, 1, f.lists())
}

func TestChildListsErrorNamesTheResource(t *testing.T) {
	f := &fakeLister{fail: errors.New("etcd is having a bad day")}
	l := newChildLists("r", testingclock.NewFakeClock(t0), f.list)
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "A"}}
	_, err := l.children(context.Background(), []schema.GroupVersionResource{pods}, owner, l.observe())
	require.ErrorIs(t, err, f.fail)
	assert.Contains(t, err.Error(), "listing pods in ns")

	// A failed LIST is not shared: the next handover lists again.
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	_, err = l.children(context.Background(), []schema.GroupVersionResource{pods}, owner, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, f.lists())
}

func TestChildListsPruneDropsOldLists(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	f := &fakeLister{items: []metav1.PartialObjectMetadata{listedPod("a-0", "A")}}
	l := newChildLists("r", clk, f.list)
	for _, ns := range []string{"x", "y"} {
		owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, UID: "A"}}
		_, err := l.children(context.Background(), []schema.GroupVersionResource{pods}, owner, 0)
		require.NoError(t, err)
		clk.Step(time.Second)
	}
	// x ended 2 s ago, y 1 s ago.
	l.prune(2500 * time.Millisecond)
	assert.Equal(t, 2, l.len(), "both younger than 2.5 s")
	l.prune(1500 * time.Millisecond)
	assert.Equal(t, 1, l.len(), "x is older than 1.5 s")
	clk.Step(time.Second)
	l.prune(1500 * time.Millisecond)
	assert.Zero(t, l.len())
}

func TestChildListsDrop(t *testing.T) {
	f := &fakeLister{items: []metav1.PartialObjectMetadata{listedPod("a-0", "A")}}
	l := newChildLists("r", testingclock.NewFakeClock(t0), f.list)
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "A"}}
	mark := l.observe()
	for range 2 {
		_, err := l.children(context.Background(), []schema.GroupVersionResource{pods}, owner, mark)
		require.NoError(t, err)
		l.drop(pods, "ns")
	}
	assert.Equal(t, 2, f.lists(), "a dropped list is not shared")
}
