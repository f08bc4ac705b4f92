package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// HostProtocolVersions are the plugin protocol versions this host speaks.
var HostProtocolVersions = []int{1}

// clientPlugin is the host side of the one go-plugin plugin a Nexus binary
// serves: it hands back the gRPC connection, on which the kinds are
// services.
type clientPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (clientPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error {
	return errors.New("the host serves no plugins")
}

func (clientPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

func versionedSets(versions []int) map[int]goplugin.PluginSet {
	m := map[int]goplugin.PluginSet{}
	for _, v := range versions {
		m[v] = goplugin.PluginSet{pb.SetName: clientPlugin{}}
	}
	return m
}

// instance is one running plugin process (or one reattached debug server).
type instance struct {
	name    string
	gen     uint64
	client  *goplugin.Client
	runner  *procRunner // nil when reattached
	stderr  *lineRing
	started time.Time

	conn      *grpc.ClientConn
	meta      pb.MetaClient
	transport pb.TransportClient
	policy    pb.PolicyClient
	sanitizer pb.SanitizerClient
	info      Info

	ctx             context.Context // cancelled when the process is gone
	cancel          context.CancelFunc
	exited          chan struct{}
	mu              sync.Mutex
	killed          bool // the host stopped it on purpose
	exit            string
	policyStream    *decisionStream
	sanitizerStream *decisionStream
	fast            *fastPath // nil: decisions go over gRPC only
}

// launchSpec is what a start needs.
type launchSpec struct {
	name     string
	path     string
	sha256   []byte // nil: not verified
	reattach *pb.Reattach
	versions []int
	timeout  time.Duration
	log      hclog.Logger
	environ  []string
}

// launch starts the plugin, completes the handshake and asks what it offers.
func launch(ctx context.Context, s launchSpec) (*instance, error) {
	inst := &instance{name: s.name, stderr: &lineRing{}, exited: make(chan struct{}), started: time.Now()}
	inst.ctx, inst.cancel = context.WithCancel(context.Background())
	log := pluginLogger(s.log, s.name)
	cc := &goplugin.ClientConfig{
		HandshakeConfig:  pb.Handshake,
		VersionedPlugins: versionedSets(s.versions),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     s.timeout,
		Logger:           log,
		Stderr:           inst.stderr,
		SyncStdout:       &logWriter{log: log.Named(s.name), level: hclog.Debug},
		SyncStderr:       &logWriter{log: log.Named(s.name), level: hclog.Info, ring: inst.stderr},
		SkipHostEnv:      true,
		Managed:          true,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(pb.MaxGRPCMessage), grpc.MaxCallSendMsgSize(pb.MaxGRPCMessage)),
			grpc.WithInitialWindowSize(pb.GRPCWindow), grpc.WithInitialConnWindowSize(pb.GRPCWindow)},
	}
	if r := s.reattach; r != nil {
		addr, err := reattachAddr(r.Addr)
		if err != nil {
			return nil, &LoadError{Plugin: s.name, Kind: LoadReattach, Err: err}
		}
		set, ok := cc.VersionedPlugins[r.ProtocolVersion]
		if !ok {
			return nil, &LoadError{Plugin: s.name, Kind: LoadReattach, Err: fmt.Errorf("%s names protocol version %d; this host speaks %v", pb.ReattachEnv, r.ProtocolVersion, s.versions)}
		}
		cc.Plugins = set // go-plugin negotiates VersionedPlugins only when it launches
		cc.Reattach = &goplugin.ReattachConfig{Protocol: goplugin.Protocol(r.Protocol), ProtocolVersion: r.ProtocolVersion, Addr: addr, Pid: r.Pid, Test: r.Test}
		if cc.Reattach.Protocol == "" {
			cc.Reattach.Protocol = goplugin.ProtocolGRPC
		}
	} else {
		var checked <-chan verified
		if s.sha256 != nil {
			// Hashed from now on, in parallel with the certificate go-plugin
			// makes before it calls RunnerFunc; exec waits for the outcome.
			checked = verifyChecksum(s.path, s.sha256)
		}
		cc.AutoMTLS = true
		env := pluginEnv(s.environ)
		if inst.fast = newFastPath(); inst.fast != nil {
			env = append(env, inst.fast.env()...)
		}
		cc.RunnerFunc = func(_ hclog.Logger, cmd *exec.Cmd, _ string) (runner.Runner, error) {
			r, err := newProcRunner(s.name, s.path, checked, env, cmd.Env)
			inst.runner = r
			return r, err
		}
	}
	client := goplugin.NewClient(cc)
	inst.client = client
	fail := func(kind LoadErrorKind, err error) (*instance, error) {
		client.Kill()
		inst.cancel()
		inst.closeFast()
		return nil, &LoadError{Plugin: s.name, Path: s.path, Kind: kind, Stderr: inst.stderr.snapshot(), Err: err}
	}

	rpc, err := client.Client()
	if err != nil {
		if s.reattach != nil {
			return fail(LoadReattach, err)
		}
		exited := false
		if inst.runner != nil {
			select {
			case <-inst.runner.exited:
				exited = true
			case <-time.After(200 * time.Millisecond):
			}
		}
		return fail(classifyStart(err, exited), cleanStartError(err))
	}
	raw, err := rpc.Dispense(pb.SetName)
	if err != nil {
		return fail(LoadBadPlugin, err)
	}
	inst.conn = raw.(*grpc.ClientConn)
	inst.meta = pb.NewMetaClient(inst.conn)

	ictx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := inst.meta.Info(ictx, &pb.InfoRequest{})
	if err != nil {
		if ictx.Err() != nil {
			// Out of time is not proof of a bad plugin: a busy machine, a
			// slow start. Say which.
			return fail(LoadTimeout, fmt.Errorf("timeout while waiting for plugin to start: it answered the handshake but not the Nexus Info call within the %s start timeout (%v)", s.timeout, ictx.Err()))
		}
		return fail(LoadBadPlugin, fmt.Errorf("it answered the handshake but not the Nexus Info call: %v", grpcMessage(err)))
	}
	info, err := infoFrom(s, client.NegotiatedVersion(), resp)
	if err != nil {
		return fail(LoadBadPlugin, err)
	}
	inst.info = info
	for _, k := range info.Kinds {
		switch k {
		case pb.KindTransport:
			inst.transport = pb.NewTransportClient(inst.conn)
		case pb.KindPolicy:
			inst.policy = pb.NewPolicyClient(inst.conn)
		case pb.KindSanitizer:
			inst.sanitizer = pb.NewSanitizerClient(inst.conn)
		}
	}
	go inst.watch()
	return inst, nil
}

func reattachAddr(a pb.ReattachAddr) (net.Addr, error) {
	switch a.Network {
	case "unix":
		return net.ResolveUnixAddr("unix", a.String)
	case "tcp":
		return net.ResolveTCPAddr("tcp", a.String)
	}
	return nil, fmt.Errorf("unknown network %q in %s", a.Network, pb.ReattachEnv)
}

func infoFrom(s launchSpec, negotiated int, r *pb.InfoResponse) (Info, error) {
	info := Info{
		Name:            r.Name,
		Version:         r.Version,
		Kinds:           r.Kinds,
		ProtocolVersion: negotiated,
		EventABI:        int(r.EventAbi),
		Schemas:         map[string]json.RawMessage{},
		schemas:         map[string]*schema{},
	}
	for _, v := range r.ProtocolVersions {
		info.ProtocolVersions = append(info.ProtocolVersions, int(v))
	}
	if len(info.Kinds) == 0 {
		return info, errors.New("it serves no kind (transport, policy or sanitizer)")
	}
	for _, k := range info.Kinds {
		if k != pb.KindTransport && k != pb.KindPolicy && k != pb.KindSanitizer {
			return info, fmt.Errorf("it offers an unknown kind %q", k)
		}
	}
	// A policy or sanitizer reads events: one built for a newer event ABI
	// may misread this host's (0: the plugin does not say).
	if info.EventABI < 0 || info.EventABI > event.ABI && (slices.Contains(info.Kinds, pb.KindPolicy) || slices.Contains(info.Kinds, pb.KindSanitizer)) {
		return info, fmt.Errorf("it expects event ABI %d, and this host speaks event ABI %d: upgrade Nexus, or build the plugin with an SDK of this host's version", info.EventABI, event.ABI)
	}
	for kind, raw := range r.ConfigSchemas {
		sc, err := compileSchema(s.name, kind, raw)
		if err != nil {
			return info, err
		}
		info.Schemas[kind] = json.RawMessage(raw)
		info.schemas[kind] = sc
	}
	return info, nil
}

// watch notices the end of the process.
func (i *instance) watch() {
	if i.runner != nil {
		<-i.runner.exited
	} else {
		// A reattached plugin is not our child: poll.
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for !i.client.Exited() {
			select {
			case <-t.C:
			case <-i.ctx.Done():
				return
			}
		}
	}
	i.mu.Lock()
	if i.runner != nil {
		i.exit = i.runner.exitText()
	}
	i.mu.Unlock()
	i.cancel()
	i.closeFast()
	close(i.exited)
}

// closeFast ends the fast path with the process (it is idempotent).
func (i *instance) closeFast() {
	if i.fast != nil {
		i.fast.close()
	}
}

// dead reports whether the process is gone, or going: one the host
// stopped is not handed out again while it winds down (a call that
// overran its limit must find a new process, not the one being killed).
func (i *instance) dead() bool {
	select {
	case <-i.exited:
		return true
	default:
		return i.wasKilled()
	}
}

// crashWait is how long a call that broke as a crash does (gRPC
// Unavailable or Canceled) waits for the process exit that confirms it.
const crashWait = 5 * time.Second

// exitedWithin waits up to d for the process to be gone: a broken gRPC
// call usually means a crash, and the process exit follows within
// milliseconds.
func (i *instance) exitedWithin(d time.Duration) bool {
	if i.dead() {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-i.exited:
		return true
	case <-t.C:
		return false
	}
}

func (i *instance) crashError(during string) *CrashError {
	i.mu.Lock()
	exit := i.exit
	i.mu.Unlock()
	return &CrashError{Plugin: i.name, During: during, Exit: exit, Stderr: i.stderr.snapshot()}
}

// goneError is why calls on an exited process fail: a crash, or the host
// stopping it (Close) on purpose.
func (i *instance) goneError(during string) error {
	if i.wasKilled() {
		return fmt.Errorf("plugin %q was stopped: %w", i.name, ErrClosed)
	}
	return i.crashError(during)
}

// kill stops the process on purpose (graceful first, as go-plugin does).
func (i *instance) kill() {
	i.mu.Lock()
	i.killed = true
	i.mu.Unlock()
	i.client.Kill()
	i.closeFast()
	if i.runner == nil {
		i.cancel()
	}
}

func (i *instance) wasKilled() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.killed
}

// checksum decodes a hex sha256 from config.
func checksum(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("sha256 %q is not 64 hex digits", s)
	}
	return b, nil
}

var osEnviron = os.Environ
