package sharding_test

import (
	"context"
	"errors"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	coordv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

var errPartitioned = errors.New("partitioned from the API server")

// partitionable is a clientset whose Lease requests fail while cut is set:
// a member (and its sharder candidate) behind it cannot renew, as when its
// node is partitioned, while the test's other clients still work.
type partitionable struct {
	kubernetes.Interface
	cut *atomic.Bool
}

func (p partitionable) CoordinationV1() coordv1client.CoordinationV1Interface {
	return partitionedCoordination{CoordinationV1Interface: p.Interface.CoordinationV1(), cut: p.cut}
}

type partitionedCoordination struct {
	coordv1client.CoordinationV1Interface
	cut *atomic.Bool
}

func (p partitionedCoordination) Leases(ns string) coordv1client.LeaseInterface {
	return partitionedLeases{LeaseInterface: p.CoordinationV1Interface.Leases(ns), cut: p.cut}
}

type partitionedLeases struct {
	coordv1client.LeaseInterface
	cut *atomic.Bool
}

func (p partitionedLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errPartitioned
	}
	return p.LeaseInterface.Get(ctx, name, o)
}

func (p partitionedLeases) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errPartitioned
	}
	return p.LeaseInterface.Create(ctx, l, o)
}

func (p partitionedLeases) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errPartitioned
	}
	return p.LeaseInterface.Update(ctx, l, o)
}

func (p partitionedLeases) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errPartitioned
	}
	return p.LeaseInterface.Patch(ctx, name, pt, data, o, sub...)
}

// IsWatchListSemanticsUnSupported forwards the wrapped clientset's answer
// (the fake cluster's watches do not stream the initial list).
func (p partitionable) IsWatchListSemanticsUnSupported() bool {
	u, ok := p.Interface.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}
