// Command k8scheck renders a kustomization (deploy/k8s, or an overlay of it) with
// kustomize's own library and decodes every object it yields strictly into Kubernetes' own
// API types (k8s.io/api), with apimachinery's decoder in strict mode: the check the API
// server makes under fieldValidation=Strict (kubectl apply's default). A field the type
// does not have (a misspelling, a field at the wrong level), a duplicated field, a value of
// the wrong type (a string for an integer, a quantity that does not parse) or a kind this
// check does not know is an error naming the object and the field.
//
//	go run . ../../deploy/k8s          # from tools/k8scheck; `make test` runs its tests
//
// It is a module of its own so that the main module links none of k8s.io/api (large) nor
// kustomize. What it does not check is what the API server's validation adds beyond the
// schema (a container without a name, a selector that does not match its pods): the main
// module's TestDeployManifestsMatchTheCommandsTheyRun checks what of that matters here.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: k8scheck DIR (a directory holding a kustomization.yaml)")
		os.Exit(2)
	}
	objs, err := Check(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8scheck:", err)
		os.Exit(1)
	}
	for _, o := range objs {
		fmt.Println(o)
	}
}
