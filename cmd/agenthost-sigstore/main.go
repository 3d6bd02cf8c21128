// Command agenthost-sigstore verifies Sigstore bundles for agenthost, which starts it
// (ociplugin/keyless) beside itself: one request on standard input, one answer on
// standard output, both JSON (keyless.HelperRequest, keyless.HelperResponse). It is
// not started by hand.
//
// Why a program of its own: Sigstore's client (sigstore-go, with Rekor's types, their
// OpenAPI models and validators) is ~5 MB of agenthost's binary and ~2 ms of every
// start's package init, for a check made only when a keyless-signed plugin is pulled or
// a release verified. Here it is paid then, and only then.
//
// What it must not do: reach a network (everything it checks is in the request and the
// trusted root file it names), or answer anything but the one request it was given.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/agenthost/agenthost/ociplugin/keyless"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "agenthost-sigstore verifies Sigstore bundles for agenthost, which starts it; it takes no arguments")
		os.Exit(2)
	}
	var req keyless.HelperRequest
	dec := json.NewDecoder(io.LimitReader(os.Stdin, keyless.MaxHelperRequest))
	if err := dec.Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "agenthost-sigstore: reading the request:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(answer(req)); err != nil {
		fmt.Fprintln(os.Stderr, "agenthost-sigstore:", err)
		os.Exit(1)
	}
}
