package providers

import (
	"fmt"
	"google.golang.org/grpc"
	"os"
	"time"

	"github.com/hashicorp/go-plugin"
)

// Serve runs impl as an adapter process; it is the whole of an adapter's main:
//
//	func main() { providers.Serve(scripted.New(nil)) }
//
// It never returns normally. Besides serving, it watches the parent process:
// when the host dies without shutting the adapter down (SIGKILL, a crash), the
// adapter is re-parented and exits instead of lingering as an orphan.
func Serve(impl Provider) {
	go watchParent(os.Getppid(), 250*time.Millisecond)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake,
		Plugins:         plugin.PluginSet{pluginName: &grpcPlugin{Impl: impl}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, grpcServerOptions()...))
		},
	})
	os.Exit(0)
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
