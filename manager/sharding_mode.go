package manager

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/sharding"
)

// chooseMode settles the mode of a server-side ring at Start: the API
// server must serve shard selectors, else the ring runs on labels, saying
// so. It is called before anything of the ring starts.
func (s *shardState) chooseMode(ctx context.Context, client kubernetes.Interface) error {
	if s.cfg.Mode != sharding.ModeServer {
		return nil
	}
	served, err := sharding.ServesShardSelector(ctx, client, s.cfg.Namespace)
	if err != nil {
		return err
	}
	if served {
		return nil
	}
	klog.FromContext(ctx).Info("The API server does not serve shard selectors (its ShardedListAndWatch gate is off): the ring runs on labels",
		"ring", s.cfg.Ring, "wanted", sharding.ModeServer, "mode", sharding.ModeLabels)
	cfg := s.cfg
	cfg.Mode = sharding.ModeLabels
	sharder, err := sharding.NewSharder(s.leases, s.meta, cfg, s.opts.Sharder)
	if err != nil {
		return err
	}
	s.sharder = sharder
	s.mode.Store(sharding.ModeLabels)
	s.labelled.Store(true)
	// One shard without a selector: each informer lists once, by label.
	return s.shards.Set("")
}

// ShardMode returns the mode the ring runs in (empty without
// Options.Sharding): its configured Config.Mode, or sharding.ModeLabels once
// Start found that the API server does not serve the shard selectors a
// sharding.ModeServer ring needs.
func (m *Manager) ShardMode() sharding.Mode {
	if m.shard == nil {
		return ""
	}
	return m.shard.currentMode()
}

// currentMode is the mode the ring runs in (see Manager.ShardMode).
func (s *shardState) currentMode() sharding.Mode {
	mode, _ := s.mode.Load().(sharding.Mode)
	return mode
}
