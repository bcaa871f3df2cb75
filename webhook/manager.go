package webhook

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/manager"
)

var (
	_ manager.Runnable               = (*Server)(nil)
	_ manager.LeaderElectionRunnable = (*Server)(nil)
)

// AddToManager adds s to mgr as a Runnable (served on every replica, leader or not) and its
// ReadyCheck to mgr's /readyz under ServerName, so a replica gets no traffic before it serves.
// Build s with ServerOptions.Registerer set to mgr.Registerer() to serve its metrics on mgr's
// /metrics.
// A Manager runs one Server (its runnable and check are named ServerName; a second one is
// refused with manager.ErrDuplicateName): register every webhook on that one.
func AddToManager(mgr *manager.Manager, s *Server) error {
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	if err := mgr.AddReadyzCheck(ServerName, s.ReadyCheck); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return nil
}
