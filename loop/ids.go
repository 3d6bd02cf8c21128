package loop

// newID mints an id with the agent's generator (Config.NewID), or the default: the
// prefix and 16 random hex digits. Every id the loop makes goes through it; the other
// ids in a run's events are the model's own call ids (or, when a model gives none,
// call_N_M from the call's position, assembler.go) and a plan step's planREV_STEP, both
// deterministic already.
func (a *Agent) newID(prefix string) string {
	if a.cfg.NewID != nil {
		if id := a.cfg.NewID(prefix); id != "" {
			return id
		}
	}
	return newID(prefix)
}
