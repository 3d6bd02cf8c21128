package loop

// Tools off (Config.ToolsOff, RunInput.ToolsOff; [agent] tools = false, `run
// --no-tools`, forwardedProps.noTools): a run that has them off offers its model no
// tool at all (its own, the client's, the team's transfer_to_ and ask_, the built-in
// read_tool_output), and a call the model makes anyway is refused by the tool
// pipeline's admit stage, the one every call goes through, with a tool_result whose
// refused is "tools_off". A direct call (Agent.DirectCall) is not a model's run and is
// not affected unless its input says so.

// toolsOff reports whether the run has tools off: the acting agent's config or the
// run's input.
func (r *run) toolsOff() bool { return r.cfg.ToolsOff || r.in.ToolsOff }
