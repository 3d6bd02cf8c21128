// Package schedule decides when declared schedules fire: a cron expression or an
// interval (Parse), the latest tick due (Latest), what a node that wakes does with the
// ticks that fell due (Decide: fire on time, and missed ticks by the schedule's policy),
// and the loop that waits for each schedule's next tick on an injected clock (Scheduler).
//
// A tick is a point of the schedule's grid, the same on every node (an interval is
// aligned to absolute time, not to when a node started), so that nodes that wake for
// the same tick name the same fire and a claim keyed by (schedule, tick) lets exactly
// one of them fire it. Whether a fire is claimed, and what a fire runs, are the
// caller's (Options.Fire): serve claims it in PostgreSQL with River when it runs a
// cluster, and runs it through the host's door.
//
// It must not run an agent or a workflow itself, reach a store or the network, or read
// the wall clock anywhere but through its Clock.
package schedule
