package sharding

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Inherit copies owner's assignment labels (shard.ctrlkit.dev/<ring>, for
// every ring) to child, a child being built before it is created, so the
// child lands in its owner's member's cache at once instead of after the
// sharder has labelled it. Drain labels are not copied: a child follows its
// owner's assignment, and only owners are drained. Labels child already has
// under those keys are overwritten.
func Inherit(owner, child metav1.Object) {
	if owner == nil || child == nil {
		return
	}
	var labels map[string]string
	for k, v := range owner.GetLabels() {
		if !strings.HasPrefix(k, labelPrefix) {
			continue
		}
		if labels == nil {
			labels = child.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
		}
		labels[k] = v
	}
	if labels != nil {
		child.SetLabels(labels)
	}
}
