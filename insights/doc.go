// Package insights sums up what the stored sessions say: runs by status and reason, the
// tools' error rates and durations, cost per outcome, feedback per agent and the
// commonest failures with example runs (`agenthost insights`).
//
// It reads the store only (loop.SessionStore with the optional SessionLister and
// FeedbackStore) and must not write to it, start anything or import the host: a report
// is computed from what was recorded, as anyone with the database could compute it.
package insights
