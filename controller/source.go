package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// waitForSources polls until every source has synced or ctx ends; the error
// names the sources that had not synced.
func waitForSources(ctx context.Context, srcs []source) error {
	allSynced := func(context.Context) (bool, error) {
		for _, s := range srcs {
			if !s.hasSynced() {
				return false, nil
			}
		}
		return true, nil
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, allSynced); err != nil {
		var names []string
		for _, s := range srcs {
			if !s.hasSynced() {
				names = append(names, s.name)
			}
		}
		return fmt.Errorf("informers not synced: %s: %w", strings.Join(names, ", "), err)
	}
	return nil
}
