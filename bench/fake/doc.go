// Package fake holds the zero-cost model, tool and store that every loop benchmark of
// `make bench` shares, in this module's bench/ package and in the separate bench/eino
// module (which runs the agenthost side of the eino comparison in the same binary).
// One definition keeps the two sides of each comparison doing the same work.
package fake
