package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexus-mcp/nexus/internal/config"
	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Link is a policy or sanitizer filter served by a plugin: a policy.Link.
// It survives restarts of the plugin: after one, it configures the new
// process with the same config on its next call.
type Link struct {
	p       *Plugin
	kind    string // pb.KindPolicy or pb.KindSanitizer
	name    string
	config  json.RawMessage
	timeout time.Duration // each call's limit (the filter's limits { timeout })

	mu   sync.Mutex
	inst *instance
	id   string
}

var _ policy.Link = (*Link)(nil)

// Name is the filter's name.
func (l *Link) Name() string { return l.name }

// Kind is pb.KindPolicy or pb.KindSanitizer.
func (l *Link) Kind() string { return l.kind }

// Filter returns the policy.Link of f, a policy or sanitizer filter that
// names this plugin. The config is validated against the plugin's schema
// (a *ConfigError with the filter's source if it fails) and the plugin
// configures its instance now, so config errors surface at load.
func (p *Plugin) Filter(ctx context.Context, f *config.Filter) (*Link, error) {
	kind, raw, err := p.checkFilter(f)
	if err != nil {
		return nil, err
	}
	return p.newLink(ctx, kind, f.Name, raw, f.Limits.Timeout)
}

// checkFilter checks that the plugin serves f's kind and that f's config
// matches the kind's schema; it returns the kind and the config as JSON.
func (p *Plugin) checkFilter(f *config.Filter) (string, json.RawMessage, error) {
	kind := pb.KindPolicy
	if f.Kind == "sanitizer" {
		kind = pb.KindSanitizer
	}
	if !p.Info().Has(kind) {
		return "", nil, p.kindErr(kind)
	}
	raw, err := configJSON(f.Config)
	if err != nil {
		return "", nil, fmt.Errorf("filter %q: config: %v", f.Name, err)
	}
	problems, err := p.validate(kind, raw)
	if err != nil {
		return "", nil, err
	}
	if len(problems) > 0 {
		return "", nil, &ConfigError{Plugin: p.cfg.Name, Kind: kind, User: "filter " + strconv.Quote(f.Name),
			Source: f.Source, Pointer: "/config", Problems: problems}
	}
	return kind, raw, nil
}

// DefaultCallTimeout bounds one Decide or Sanitize call of a filter whose
// config sets no limits { timeout }.
const DefaultCallTimeout = 5 * time.Second

// TimeoutError is a filter call that overran its limit. The plugin process
// was killed (it restarts for the next call) and the call fails closed.
type TimeoutError struct {
	Plugin, Filter, Call string
	Limit                time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("plugin %q (filter %q) did not answer %s within its %s limit, so it was stopped and restarts for the next call; "+
		"if it needs longer, raise limits { timeout } on the filter block", e.Plugin, e.Filter, e.Call, e.Limit)
}

// Timeout makes it a net.Error-like timeout.
func (e *TimeoutError) Timeout() bool { return true }

// Policy returns a policy link named name with config (JSON; nil is {}).
func (p *Plugin) Policy(ctx context.Context, name string, cfg json.RawMessage) (*Link, error) {
	return p.checkedLink(ctx, pb.KindPolicy, name, cfg)
}

// Sanitizer returns a sanitizer link named name with config.
func (p *Plugin) Sanitizer(ctx context.Context, name string, cfg json.RawMessage) (*Link, error) {
	return p.checkedLink(ctx, pb.KindSanitizer, name, cfg)
}

func (p *Plugin) checkedLink(ctx context.Context, kind, name string, cfg json.RawMessage) (*Link, error) {
	if !p.Info().Has(kind) {
		return nil, p.kindErr(kind)
	}
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	problems, err := p.validate(kind, cfg)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Plugin: p.cfg.Name, Kind: kind, User: "filter " + strconv.Quote(name), Problems: problems}
	}
	return p.newLink(ctx, kind, name, cfg, 0)
}

func (p *Plugin) newLink(ctx context.Context, kind, name string, cfg json.RawMessage, timeout time.Duration) (*Link, error) {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	l := &Link{p: p, kind: kind, name: name, config: cfg, timeout: timeout}
	if _, _, err := l.instance(ctx, nil); err != nil {
		return nil, err
	}
	return l, nil
}

// FilterError is an error a plugin's filter returned (not a crash).
type FilterError struct {
	Plugin string
	Call   string // "Decide", "Sanitize", "NewPolicy", "NewSanitizer"
	Msg    string
}

func (e *FilterError) Error() string {
	return "plugin " + strconv.Quote(e.Plugin) + " " + e.Call + ": " + e.Msg
}

// instance returns the process and the instance id of this filter on it,
// configuring it on a process that has not seen it (the first call, or the
// first after a restart). stale is an instance id the plugin did not know.
func (l *Link) instance(ctx context.Context, stale *string) (*instance, string, error) {
	inst, err := l.p.get(ctx)
	if err != nil {
		return nil, "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inst == inst && (stale == nil || *stale != l.id) {
		return inst, l.id, nil
	}
	req := &pb.ConfigureRequest{Name: l.name, Config: l.config}
	var resp *pb.ConfigureResponse
	ctx, cancel := context.WithTimeoutCause(ctx, l.timeout, errOverrun)
	defer cancel()
	call := "NewPolicy"
	if l.kind == pb.KindSanitizer {
		call = "NewSanitizer"
		if inst.sanitizer == nil {
			return nil, "", l.p.kindErr(l.kind)
		}
		resp, err = inst.sanitizer.Configure(ctx, req)
	} else {
		if inst.policy == nil {
			return nil, "", l.p.kindErr(l.kind)
		}
		resp, err = inst.policy.Configure(ctx, req)
	}
	if err != nil {
		return nil, "", l.callErr(inst, ctx, call, err)
	}
	if resp == nil {
		return nil, "", &FilterError{Plugin: l.p.cfg.Name, Call: call, Msg: "no answer"}
	}
	l.inst, l.id = inst, resp.Instance
	return inst, l.id, nil
}

func (l *Link) callErr(inst *instance, ctx context.Context, call string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(context.Cause(ctx), errOverrun) {
		// The plugin, not the caller, ran out of time: it may be stuck
		// for good, so it is replaced rather than trusted again.
		inst.kill()
		return &TimeoutError{Plugin: l.p.cfg.Name, Filter: l.name, Call: call, Limit: l.timeout}
	}
	code := status.Code(err)
	var broke *fastError
	if code == codes.Unavailable || code == codes.Canceled || errors.As(err, &broke) || inst.dead() {
		// Generous: on a loaded machine the exit can trail the broken
		// call by a while, and a crash reported as an ordinary error
		// would not restart the plugin's state as a crash does.
		if inst.exitedWithin(crashWait) {
			return inst.goneError(l.kind + " " + call)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("plugin %q %s: %w", l.p.cfg.Name, call, ctx.Err())
	}
	msg := grpcMessage(err)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		// A panic's stack is for whoever debugs the plugin, not for the
		// person whose call was refused: one line here, all of it in the log.
		l.p.m.log.Error("plugin call failed", "plugin", l.p.cfg.Name, "filter", l.name, "call", call, "report", msg)
		msg = msg[:i] + " (the plugin's full report, with its stack, is in Nexus's log at level error)"
	}
	return &FilterError{Plugin: l.p.cfg.Name, Call: call, Msg: msg}
}

// errOverrun is the cause of a call's context that ran out of the
// filter's own time (not the caller's).
var errOverrun = errors.New("the plugin's time limit passed")

// unary is a Decide call of its own, for plugins without Decisions.
func (l *Link) unary(ctx context.Context, inst *instance, req *pb.DecideRequest) (*pb.DecideResponse, error) {
	// A call in flight ends the moment the process does.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(inst.ctx, cancel)
	defer stop()
	if l.kind == pb.KindSanitizer {
		return inst.sanitizer.Sanitize(cctx, req)
	}
	return inst.policy.Decide(cctx, req)
}

// send makes one Decide (or Sanitize) call: over the fast path where the
// plugin serves it, else on the Decisions stream, else unary.
func (l *Link) send(ctx context.Context, inst *instance, req *pb.DecideRequest) (*pb.DecideResponse, error) {
	if inst.fast != nil {
		kind := pb.FramePolicy
		if l.kind == pb.KindSanitizer {
			kind = pb.FrameSanitizer
		}
		resp, err := inst.fast.call(ctx, kind, req)
		if !errors.Is(err, errNoFastPath) {
			return resp, err
		}
	}
	ds, err := inst.decisions(l.kind == pb.KindSanitizer)
	if err == nil {
		// The stream ends the moment the process does, failing the call.
		resp, err := ds.call(ctx, req)
		if status.Code(err) != codes.Unimplemented {
			return resp, err
		}
	} else if !errors.Is(err, errUnary) {
		return nil, err
	}
	return l.unary(ctx, inst, req)
}

// Handle sends the event to the plugin and returns its decision. A crash
// fails the call at once with a *CrashError.
func (l *Link) Handle(ctx context.Context, e *event.Event) (event.Decision, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return event.Decision{}, err
	}
	var stale *string
	for attempt := 0; ; attempt++ {
		inst, id, err := l.instance(ctx, stale)
		if err != nil {
			return event.Decision{}, err
		}
		call := "Decide"
		if l.kind == pb.KindSanitizer {
			call = "Sanitize"
		}
		req := &pb.DecideRequest{Instance: id, Event: b}
		cctx, cancel := context.WithTimeoutCause(ctx, l.timeout, errOverrun)
		resp, err := l.send(cctx, inst, req)
		if err != nil {
			if status.Code(err) == codes.NotFound && attempt == 0 {
				cancel()
				stale = &id // a reattached plugin restarted: configure again
				continue
			}
			err = l.callErr(inst, cctx, call, err)
			cancel()
			return event.Decision{}, err
		}
		cancel()
		var d event.Decision
		if err := json.Unmarshal(resp.Decision, &d); err != nil {
			return event.Decision{}, &FilterError{Plugin: l.p.cfg.Name, Call: call, Msg: "the decision is not valid JSON: " + err.Error()}
		}
		return d, nil
	}
}
