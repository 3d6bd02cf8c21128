//go:build !race

package loop

// raceAllocs is what the race detector adds to a one-step run's allocations.
const raceAllocs = 0
