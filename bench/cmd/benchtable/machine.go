package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine is what BENCHMARKS.md says about where the figures were taken.
type machine struct {
	date, arch, cpu, goVersion string
	cores                      int
}

func describeMachine() machine {
	m := machine{date: time.Now().UTC().Format("2006-01-02 15:04 MST"), cores: runtime.NumCPU(), cpu: cpuModel()}
	if out, err := exec.Command("uname", "-m").Output(); err == nil {
		m.arch = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.goVersion = strings.TrimPrefix(strings.TrimSpace(string(out)), "go version ")
	}
	return m
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAvg is the 1, 5 and 15 minute load averages from /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
