package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const deployDir = "../../deploy/k8s"

// deploy/k8s, rendered by kustomize, is the six objects docs/deploy.md describes, and each
// decodes strictly into its Kubernetes API type.
func TestDeployManifestsDecodeStrictlyIntoKubernetesTypes(t *testing.T) {
	objs, err := Check(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap/agenthost-config (v1)", "Secret/agenthost-secrets (v1)", "Deployment/agenthost-serve (apps/v1)",
		"Deployment/agenthost-worker (apps/v1)", "Service/agenthost (v1)", "PodDisruptionBudget/agenthost-serve (policy/v1)"}
	if !slices.Equal(objs, want) {
		t.Fatalf("objects %q, want %q", objs, want)
	}
}

// A copy of deploy/k8s with one edit to one file is refused, the error naming the object
// and what is wrong: a misspelt field, a field of the wrong case (the decoder, unlike
// encoding/json, matches names exactly), a value of the wrong type, a quantity that does
// not parse, a kind that does not exist, a key given twice.
func TestAMisspeltOrMistypedManifestIsRefused(t *testing.T) {
	for _, c := range []struct{ name, file, old, new, want string }{
		{"misspelt field", "serve.yaml", "readOnlyRootFilesystem", "readOnlyRootFileSystem",
			`Deployment/agenthost-serve: strict decoding error: unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem"`},
		{"field at the wrong level", "pdb.yaml", "  minAvailable: 1", "  minAvailable: 1\n  maxSurge: 1",
			`PodDisruptionBudget/agenthost-serve: strict decoding error: unknown field "spec.maxSurge"`},
		{"wrong case", "worker.yaml", "replicas: 2", "Replicas: 2", `Deployment/agenthost-worker: strict decoding error: unknown field "spec.Replicas"`},
		{"wrong type", "serve.yaml", "replicas: 2", `replicas: "two"`, "Deployment/agenthost-serve: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"},
		{"bad quantity", "worker.yaml", "memory: 1Gi", "memory: 1GB", "Deployment/agenthost-worker: quantities must match the regular expression"},
		{"unknown kind", "service.yaml", "kind: Service", "kind: Servce", `Servce/agenthost: no kind "Servce" is registered for version "v1"`},
		{"duplicate key", "serve.yaml", "      terminationGracePeriodSeconds: 60", "      terminationGracePeriodSeconds: 60\n      terminationGracePeriodSeconds: 30",
			`mapping key "terminationGracePeriodSeconds" already defined`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, deployDir)
			p := filepath.Join(dir, c.file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(string(b), c.old) != 1 {
				t.Fatalf("%s holds %q %d times, want once", c.file, c.old, strings.Count(string(b), c.old))
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), c.old, c.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Check(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check: %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}

// A directory without a kustomization, or one that yields nothing, is an error, not a pass.
func TestNothingToCheckIsAnError(t *testing.T) {
	if _, err := Check(t.TempDir()); err == nil || !strings.Contains(err.Error(), "kustomize build") {
		t.Fatalf("an empty directory: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamePrefix: x-\n"), 0o644)
	if _, err := Check(dir); err == nil || !strings.Contains(err.Error(), "no objects") {
		t.Fatalf("an empty kustomization: %v", err)
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
