package providers

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// CPUProfileEnv names a file an adapter writes its CPU profile to, from the start of
// Serve to its graceful shutdown (Client.Close), for `go tool pprof`. The host passes
// only what ClientConfig.Env lists, so a diagnosis lists it there
// (`env = ["AGENTHOST_PROVIDER_CPUPROFILE=/tmp/adapter.prof"]`); unset, nothing happens.
const CPUProfileEnv = "AGENTHOST_PROVIDER_CPUPROFILE"

// Serve runs impl as an adapter process; it is the whole of an adapter's main:
//
//	func main() { providers.Serve(scripted.New(nil)) }
//
// It never returns normally. Besides serving, it watches the parent process:
// when the host dies without shutting the adapter down (SIGKILL, a crash), the
// adapter is re-parented and exits instead of lingering as an orphan.
//
// An adapter runs Go code on one thread (GOMAXPROCS 1) unless its environment sets
// GOMAXPROCS (the manifest's env = ["GOMAXPROCS=4"]). Its work is relaying: a request
// in, a model's events out, waiting on the network in between, which one thread does
// for many concurrent calls; more threads only hand each event from one to another
// (the network poller, the handler, gRPC's writer), and on a machine the host shares
// they compete with the host's threads. Measured in providers/README.md.
func Serve(impl Provider) {
	go watchParent(os.Getppid(), 250*time.Millisecond)
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	stop := startCPUProfile(os.Getenv(CPUProfileEnv))
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake,
		Plugins:         plugin.PluginSet{pluginName: &grpcPlugin{Impl: impl}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, grpcServerOptions()...))
		},
	})
	stop()
	os.Exit(0)
}

// startCPUProfile starts writing the process's CPU profile to path ("" = no profile)
// and returns what finishes it. A profile that cannot start is said on stderr (the
// host's log), not fatal: it is a diagnosis, not the adapter's work.
func startCPUProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agenthost provider: %s: %v\n", CPUProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// watchParent exits the process once its parent is no longer parent. Polling
// getppid is portable across Unix systems and needs no cooperation from the
// host; a re-parented process sees a different ppid (init or a subreaper).
func watchParent(ppid int, every time.Duration) {
	for {
		time.Sleep(every)
		if os.Getppid() != ppid {
			fmt.Fprintf(os.Stderr, "agenthost provider: parent %d is gone, exiting\n", ppid)
			os.Exit(2)
		}
	}
}
