package main

import "time"

// readyBound bounds every wait in these tests for a process to reach a point: serve to
// listen, a worker to join, a run to ask or stop, a log line to appear. It is a hang
// guard, not a speed check, so it is generous: on a loaded 2-core machine (load ~14, CI
// beside other builds) serve with a PostgreSQL store took longer than the 30 s these
// waits used to allow (issue 29). A wait that succeeds returns as soon as it can.
const readyBound = 3 * time.Minute
