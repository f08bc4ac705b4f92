package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"google.golang.org/grpc"
)

var logger = hclog.New(&hclog.LoggerOptions{
	Level:      hclog.Trace,
	Output:     os.Stderr,
	JSONFormat: true,
})

// Logger returns the plugin's logger. Its lines travel to the host as JSON
// on stderr and are re-emitted there at their level, tagged with the
// plugin's name; the host's --log-level decides what is shown.
func Logger() hclog.Logger { return logger }

// serveConfig is the go-plugin configuration that serves o; fast, when
// not nil, gets the deciders for the Decide fast path.
func serveConfig(o Options, fast *decideServers) *goplugin.ServeConfig {
	sets := map[int]goplugin.PluginSet{}
	for _, v := range pb.ProtocolVersions {
		sets[v] = goplugin.PluginSet{pb.SetName: &grpcPlugin{o: o, fast: fast}}
	}
	return &goplugin.ServeConfig{
		HandshakeConfig:  pb.Handshake,
		VersionedPlugins: sets,
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(pb.MaxGRPCMessage), grpc.MaxSendMsgSize(pb.MaxGRPCMessage),
				grpc.InitialWindowSize(pb.GRPCWindow), grpc.InitialConnWindowSize(pb.GRPCWindow))
			return grpc.NewServer(opts...)
		},
		Logger: logger,
	}
}

// Serve serves the plugin to the host that launched it and returns only
// when the host is done with it (the process then exits). It never returns
// to a binary run by hand: that prints what the binary is and exits 1.
//
// Run with -debug as its only argument, the binary serves in debug mode
// instead (see Debug).
func Serve(o Options) {
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(os.Args) == 2 && (os.Args[1] == "-debug" || os.Args[1] == "--debug") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if err := Debug(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	fast := &decideServers{}
	serveFastPath(fast)
	goplugin.Serve(serveConfig(o, fast))
}

// Debug serves the plugin in this process until ctx ends, for running it
// under a debugger: it prints the NEXUS_REATTACH_PLUGINS value that makes
// nexus attach to it instead of launching the binary. The key is the
// plugin's Options.Name (else the binary's name); rename it to the name of
// the plugin block in your config.
//
// A reattached plugin is not checksummed and its connection is not
// mutually authenticated: use it for local debugging only.
func Debug(ctx context.Context, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	cfg := serveConfig(o, nil)
	ch := make(chan *goplugin.ReattachConfig, 1)
	closed := make(chan struct{})
	cfg.Test = &goplugin.ServeTestConfig{Context: ctx, ReattachConfigCh: ch, CloseCh: closed}
	go goplugin.Serve(cfg)
	var rc *goplugin.ReattachConfig
	select {
	case rc = <-ch:
	case <-closed:
		return fmt.Errorf("plugin: the debug server stopped before it was ready")
	}
	name := o.Name
	if name == "" {
		name = filepath.Base(os.Args[0])
	}
	b, err := json.Marshal(map[string]pb.Reattach{name: {
		Protocol:        string(rc.Protocol),
		ProtocolVersion: rc.ProtocolVersion,
		Pid:             rc.Pid,
		Test:            true,
		Addr:            pb.ReattachAddr{Network: rc.Addr.Network(), String: rc.Addr.String()},
	}})
	if err != nil {
		return err
	}
	fmt.Printf("Plugin serving in debug mode. In the shell that runs nexus:\n\n\texport %s='%s'\n\nPress Ctrl-C to stop.\n", pb.ReattachEnv, b)
	<-closed
	return nil
}
