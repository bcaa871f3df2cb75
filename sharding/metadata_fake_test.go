package sharding_test

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// lossyMetadata is the fake cluster's metadata front end (testkit.Env.Metadata) whose patches
// may lose their reply: lostReplies, when set, decides per patch whether the reply is lost
// (the patch is applied and an error returned, as when a connection drops after the server
// wrote).
type lossyMetadata struct {
	metadata.Interface

	mu          sync.Mutex
	lostReplies func(gvr schema.GroupVersionResource, name string) bool
	lost        int
}

func (m *lossyMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return lossyGetter{Getter: m.Interface.Resource(gvr), m: m, gvr: gvr}
}

func (m *lossyMetadata) loseReply(gvr schema.GroupVersionResource, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lostReplies != nil && m.lostReplies(gvr, name) {
		m.lost++
		return true
	}
	return false
}

func (m *lossyMetadata) lostCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
}

// IsWatchListSemanticsUnSupported tells client-go's reflector that the fake cluster's watches
// do not stream the initial list, as the front end underneath says too.
func (m *lossyMetadata) IsWatchListSemanticsUnSupported() bool { return true }

type lossyGetter struct {
	metadata.Getter
	m   *lossyMetadata
	gvr schema.GroupVersionResource
}

func (g lossyGetter) Namespace(ns string) metadata.ResourceInterface {
	return lossyResource{ResourceInterface: g.Getter.Namespace(ns), m: g.m, gvr: g.gvr}
}

func (g lossyGetter) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	return lossyPatch(ctx, g.Getter, g.m, g.gvr, name, pt, data, o, sub...)
}

type lossyResource struct {
	metadata.ResourceInterface
	m   *lossyMetadata
	gvr schema.GroupVersionResource
}

func (r lossyResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	return lossyPatch(ctx, r.ResourceInterface, r.m, r.gvr, name, pt, data, o, sub...)
}

func lossyPatch(ctx context.Context, ri metadata.ResourceInterface, m *lossyMetadata, gvr schema.GroupVersionResource, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	p, err := ri.Patch(ctx, name, pt, data, o, sub...)
	if err != nil {
		return nil, err
	}
	if m.loseReply(gvr, name) {
		return nil, fmt.Errorf("reply to the patch of %s %s lost", gvr.Resource, name)
	}
	return p, nil
}
