package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/surface/server"
)

// k8sObjects reads deploy/k8s: every file kustomization.yaml lists, by kind/name.
func k8sObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	dir := filepath.Join(repoRoot, "deploy", "k8s")
	var kust struct {
		Resources []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &kust); err != nil && !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	objs := map[string]map[string]any{}
	for _, f := range kust.Resources {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", f, err)
		}
		var o map[string]any
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kind, _ := o["kind"].(string)
		name, _ := at(o, "metadata", "name").(string)
		if o["apiVersion"] == nil || kind == "" || name == "" {
			t.Fatalf("%s: apiVersion, kind and metadata.name are required: %v", f, o)
		}
		objs[kind+"/"+name] = o
	}
	return objs
}

// at walks a decoded YAML document by map keys and list indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// The Kubernetes manifests hold together with the code they deploy: each container's
// arguments are flags the command accepts; the serve pods' probes are /healthz and
// /readyz on the port serve listens on; the termination grace covers [serve] grace (read
// from the ConfigMap's agent.toml by the manifest parser) plus the end of a drain; the
// Service and the PodDisruptionBudget select the serve pods; every mount has its volume;
// the Secret holds every variable agent.toml reads; the pods run as the image's user.
func TestDeployManifestsMatchTheCommandsTheyRun(t *testing.T) {
	objs := k8sObjects(t)
	for _, want := range []string{"ConfigMap/agenthost-config", "Secret/agenthost-secrets", "Deployment/agenthost-serve",
		"Deployment/agenthost-worker", "Service/agenthost", "PodDisruptionBudget/agenthost-serve"} {
		if objs[want] == nil {
			t.Fatalf("deploy/k8s has no %s", want)
		}
	}
	toml := at(objs["ConfigMap/agenthost-config"], "data", "agent.toml").(string)
	t.Setenv("AGENTHOST_PG_URL", "postgres://agenthost@db:5432/agenthost") // from the Secret, in a pod
	// The plugins volume, here: the example plugins of the same names.
	plugins := t.TempDir()
	for _, f := range regexp.MustCompile(`"/plugins/([a-z_]+)\.wasm"`).FindAllStringSubmatch(toml, -1) {
		b, err := os.ReadFile(filepath.Join(repoRoot, "plugins/examples/go", f[1], f[1]+".wasm"))
		if err == nil {
			err = os.WriteFile(filepath.Join(plugins, f[1]+".wasm"), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	m, err := manifest.Parse("/etc/agenthost/agent.toml", []byte(strings.ReplaceAll(toml, `"/plugins/`, `"`+plugins+`/`)))
	if err != nil {
		t.Fatalf("the ConfigMap's agent.toml: %v", err)
	}
	if m.Serve.Grace == nil || m.Store.Kind != "postgres" {
		t.Fatalf("agent.toml: [serve] grace %v, store %s; want a grace and postgres", m.Serve.Grace, m.Store.Kind)
	}
	minGrace := time.Duration(*m.Serve.Grace) + server.ShutdownTimeout
	secret := at(objs["Secret/agenthost-secrets"], "stringData").(map[string]any)
	for _, v := range append([]string{"AGENTHOST_TOKEN", "AGENTHOST_PG_URL"}, m.Providers[m.Agent.Provider[0]].Env...) {
		if secret[v] == nil {
			t.Errorf("the Secret has no %s", v)
		}
	}
	uid := containerfileUser(t)
	for _, d := range []string{"agenthost-serve", "agenthost-worker"} {
		spec := at(objs["Deployment/"+d], "spec", "template", "spec")
		if tg := at(spec, "terminationGracePeriodSeconds").(float64); time.Duration(tg)*time.Second < minGrace {
			t.Errorf("%s: terminationGracePeriodSeconds %v < [serve] grace + %s", d, tg, server.ShutdownTimeout)
		}
		if at(spec, "securityContext", "runAsNonRoot") != true || at(spec, "securityContext", "runAsUser") != float64(uid) {
			t.Errorf("%s: want runAsNonRoot and the image's user %d: %v", d, uid, at(spec, "securityContext"))
		}
		labels := at(objs["Deployment/"+d], "spec", "template", "metadata", "labels").(map[string]any)
		for k, v := range at(objs["Deployment/"+d], "spec", "selector", "matchLabels").(map[string]any) {
			if labels[k] != v {
				t.Errorf("%s: its selector %s=%v does not match its pods", d, k, v)
			}
		}
		c := at(spec, "containers", 0)
		args := strs(at(c, "args"))
		checkArgs(t, d, args, c, spec)
	}
	serve := at(objs["Deployment/agenthost-serve"], "spec", "template", "spec", "containers", 0)
	for probe, path := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got := at(serve, probe, "httpGet", "path"); got != path || at(serve, probe, "httpGet", "port") != "http" {
			t.Errorf("serve %s: %v on port %v, want %s on http", probe, got, at(serve, probe, "httpGet", "port"), path)
		}
	}
	podLabels := at(objs["Deployment/agenthost-serve"], "spec", "template", "metadata", "labels").(map[string]any)
	for _, sel := range [][]any{{"Service/agenthost", "spec", "selector"}, {"PodDisruptionBudget/agenthost-serve", "spec", "selector", "matchLabels"}} {
		for k, v := range at(objs[sel[0].(string)], sel[1:]...).(map[string]any) {
			if podLabels[k] != v {
				t.Errorf("%s selects %s=%v: not the serve pods", sel[0], k, v)
			}
		}
	}
	if at(objs["Service/agenthost"], "spec", "ports", 0, "targetPort") != "http" {
		t.Errorf("the Service's targetPort is not the serve pods' http port")
	}
}

// checkArgs parses a container's arguments with the command they run, and checks the
// config mount and serve's port.
func checkArgs(t *testing.T, d string, args []string, c, spec any) {
	t.Helper()
	if len(args) < 3 || args[0] != "-c" {
		t.Fatalf("%s: args %q: want -c MANIFEST COMMAND ...", d, args)
	}
	mounted := false
	for _, vm := range at(c, "volumeMounts").([]any) {
		name := at(vm, "name")
		if filepath.Dir(args[1]) == at(vm, "mountPath") && name == "config" {
			mounted = true
		}
		if !slices.ContainsFunc(at(spec, "volumes").([]any), func(v any) bool { return at(v, "name") == name }) {
			t.Errorf("%s mounts %v, which is no volume", d, name)
		}
	}
	if !mounted {
		t.Errorf("%s: -c %s is not in the config volume", d, args[1])
	}
	var cc *cobra.Command
	switch args[2] {
	case "serve":
		cc = newServeCmd()
	case "worker":
		cc = newWorkerCmd()
	default:
		t.Fatalf("%s runs %q: want serve or worker", d, args[2])
	}
	if err := cc.ParseFlags(args[3:]); err != nil {
		t.Fatalf("%s: agenthost %s %q: %v", d, args[2], args[3:], err)
	}
	if args[2] != "serve" {
		return
	}
	_, port, err := net.SplitHostPort(cc.Flag("addr").Value.String())
	if err != nil || fmt.Sprint(at(c, "ports", 0, "containerPort")) != port || at(c, "ports", 0, "name") != "http" {
		t.Errorf("serve listens on %s (%v), its container port is %v", cc.Flag("addr").Value, err, at(c, "ports", 0))
	}
	if cc.Flag("workers").Value.String() == "0" {
		t.Errorf("serve nodes should execute runs (--workers)")
	}
}

// containerfileUser is the numeric USER of the Containerfile.
func containerfileUser(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if u, ok := strings.CutPrefix(line, "USER "); ok {
			uid, err := strconv.Atoi(strings.Split(u, ":")[0])
			if err != nil {
				t.Fatalf("Containerfile USER %q: want a number (runAsNonRoot checks it)", u)
			}
			return uid
		}
	}
	t.Fatal("the Containerfile sets no USER")
	return 0
}
