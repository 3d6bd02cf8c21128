// Package insights sums up what the stored sessions say: runs by status and reason, the
// tools' error rates and durations, cost per outcome, feedback per agent and the
// commonest failures with example runs, and plan revisions per agent (`agenthost
// insights`); and proposes changes from them, each with a stable id (`insights suggest`,
// Suggest and Stamp) that `insights apply` finds again (Find) before it changes
// anything — the applying is the command's, through manifest's edits and the host's
// audit log, never this package's.
//
// It reads the store only (loop.SessionStore with the optional SessionLister and
// FeedbackStore) and must not write to it, start anything or import the host: a report
// is computed from what was recorded, as anyone with the database could compute it.
package insights
