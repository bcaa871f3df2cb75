package testkit

// PIDs exposes the API server's process ids to the external tests, which check that teardown
// leaves nothing running.
func PIDs(e *Env) []int {
	if e.server == nil {
		return nil
	}
	return e.server.PIDs()
}
