package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strconv"

	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// The registered handlers. A filter registers them from init functions:
// with -buildmode=c-shared the Go runtime runs package initialization when
// the host instantiates the module, and never calls main.
var (
	policyFn, sanitizerFn     func(*event.Event) event.Decision
	policyView, sanitizerView func(*View) event.Decision
	configureFn               func([]byte) error
)

// Policy registers fn for request events: it decides whether a request may
// go out (Allow, Deny, or ModifyParams). The event is decoded in full; use
// PolicyView for a policy that only looks at a few fields.
func Policy(fn func(e *event.Event) event.Decision) { policyFn, policyView = fn, nil }

// Sanitizer registers fn for response events: it decides what of a result
// may come back (Allow, Deny, or ModifyResult).
func Sanitizer(fn func(e *event.Event) event.Decision) { sanitizerFn, sanitizerView = fn, nil }

// PolicyView registers fn for request events, like Policy, but hands it a
// View: fields are fetched from the host one at a time, so a policy that
// checks a tool name never parses the event.
func PolicyView(fn func(v *View) event.Decision) { policyView, policyFn = fn, nil }

// SanitizerView registers fn for response events, like Sanitizer, with a
// View of the event.
func SanitizerView(fn func(v *View) event.Decision) { sanitizerView, sanitizerFn = fn, nil }

// Config registers fn to receive the filter's config (the `config` of its
// block in nexus.hcl), decoded into a T. The host calls it once per
// instance, before any event; an error refuses the filter at load, with the
// error's text. Unknown fields are an error, so a misspelt setting is
// caught rather than ignored.
func Config[T any](fn func(cfg T) error) {
	configureFn = func(raw []byte) error {
		var cfg T
		if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
			if err := decodeConfig(raw, &cfg); err != nil {
				return wrapError{"config: ", err}
			}
		}
		return fn(cfg)
	}
}

// ConfigRaw registers fn to receive the filter's config as JSON ("null"
// or empty when there is none).
func ConfigRaw(fn func(raw []byte) error) { configureFn = fn }

// Allow lets the request or result through unchanged.
func Allow() event.Decision { return event.Decision{Action: event.Allow} }

// Deny stops the request (or withholds the result) and tells the user why.
func Deny(reason string) event.Decision {
	return event.Decision{Action: event.Deny, Reason: reason}
}

// Denyf is Deny with a formatted reason.
func Denyf(format string, args ...any) event.Decision {
	return Deny(fmt.Sprintf(format, args...))
}

// Warn lets a tools/list event's tool through, with flags: findings about
// its definition, one sentence each. The host logs them, and nexus lock
// refuses to pin a flagged tool unless told to accept it.
func Warn(flags ...string) event.Decision {
	return event.Decision{Action: event.Allow, Flags: flags}
}

// Withhold denies a tools/list event's tool (the agent does not see it
// and cannot call it) because of flags, which the host logs; reason is
// the one-sentence summary the user sees.
func Withhold(reason string, flags ...string) event.Decision {
	return event.Decision{Action: event.Deny, Reason: reason, Flags: flags}
}

// ModifyParams replaces the request's params with params (JSON).
func ModifyParams(params json.RawMessage, reason string) event.Decision {
	return event.Decision{Action: event.Modify, Params: params, Reason: reason}
}

// ModifyResult replaces the response's result with result (JSON).
func ModifyResult(result json.RawMessage, reason string) event.Decision {
	return event.Decision{Action: event.Modify, Result: result, Reason: reason}
}

// actionFail is the SDK's private marker for Fail; it is written to the
// host as {"error": "..."}, never as an action.
const actionFail = "\x00fail"

// Fail reports that the filter could not decide. The host treats it like a
// trap: a policy fails closed (denies) and a sanitizer withholds the
// result, unless the filter's on_error says otherwise.
func Fail(err error) event.Decision {
	if err == nil {
		err = errors.New("failed")
	}
	return event.Decision{Action: actionFail, Reason: err.Error()}
}

// Log sends msg to the host's log, tagged with the filter's name.
func Log(level Level, msg string) { logHost(level, msg) }

// Debugf logs at debug level.
func Debugf(format string, args ...any) { logHost(LevelDebug, fmt.Sprintf(format, args...)) }

// Infof logs at info level.
func Infof(format string, args ...any) { logHost(LevelInfo, fmt.Sprintf(format, args...)) }

// Warnf logs at warn level.
func Warnf(format string, args ...any) { logHost(LevelWarn, fmt.Sprintf(format, args...)) }

// Errorf logs at error level.
func Errorf(format string, args ...any) { logHost(LevelError, fmt.Sprintf(format, args...)) }

// The decision of the last call, and the view of the event being
// decided: one of each, reused for every call (see the input buffer in
// abi_wasip1.go).
var (
	out  []byte
	view View
)

// maxInput bounds an input: the host never sends more.
const maxInput = 256 << 20

// configure runs the registered config handler.
func configure(raw []byte) error {
	if configureFn == nil {
		if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" && string(t) != "{}" {
			logHost(LevelWarn, "this filter takes no config; the config given is ignored")
		}
		return nil
	}
	return configureFn(raw)
}

// onEvent decides one event and returns the decision JSON, valid until the
// next call.
func onEvent(input []byte) []byte {
	d := dispatch(input)
	out = appendDecision(out[:0], d)
	return out
}

func dispatch(input []byte) event.Decision {
	view.reset(input)
	return decide(&view)
}

// decide runs the handler for the view's event, turning a panic into a
// failure (with the stack in the log) rather than a crashed instance.
func decide(view *View) (d event.Decision) {
	defer func() {
		if r := recover(); r != nil {
			msg := "panic: " + panicText(r)
			logHost(LevelError, msg+"\n"+string(debug.Stack()))
			d = Fail(errors.New(msg))
		}
	}()
	if policyFn == nil && sanitizerFn == nil && policyView == nil && sanitizerView == nil {
		return Fail(errors.New("the filter registered no handler: call filter.Policy or filter.Sanitizer from an init function"))
	}
	fn, vfn := policyFn, policyView
	if view.Phase() == event.PhaseResponse {
		fn, vfn = sanitizerFn, sanitizerView
	}
	switch {
	case vfn != nil:
		return vfn(view)
	case fn != nil:
		e, err := view.Event()
		if err != nil {
			return Fail(err)
		}
		return fn(e)
	}
	// A policy sees no responses and a sanitizer no requests; the host only
	// sends them if the config says so, and then they pass.
	return Allow()
}

var allowJSON = []byte(`{"action":"allow"}`)

// appendDecision writes d as the decision JSON of the ABI.
func appendDecision(b []byte, d event.Decision) []byte {
	if d.Action == event.Allow && d.Reason == "" && d.Params == nil && d.Result == nil && d.Flags == nil {
		return append(b, allowJSON...)
	}
	if d.Action == actionFail {
		b = append(b, `{"error":`...)
		b = wire.AppendString(b, d.Reason)
		return append(b, '}')
	}
	b = append(b, `{"action":`...)
	b = wire.AppendString(b, d.Action)
	if d.Reason != "" {
		b = append(b, `,"reason":`...)
		b = wire.AppendString(b, d.Reason)
	}
	if len(d.Params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, d.Params...)
	}
	if len(d.Result) > 0 {
		b = append(b, `,"result":`...)
		b = append(b, d.Result...)
	}
	if len(d.Flags) > 0 {
		b = append(b, `,"flags":[`...)
		for i, f := range d.Flags {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendString(b, f)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// panicText is what fmt's %v prints for the usual panic values (strings,
// errors and numbers), without fmt (see decodeConfig). (Not Stringers: a
// call through interface{ String() string } keeps the String method of
// every type in the module.)
func panicText(r any) string {
	switch x := r.(type) {
	case string:
		return x
	case error:
		return x.Error()
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return "a value of type " + reflect.TypeOf(r).String()
}

// wrapError is fmt.Errorf's prefix + %w, without fmt.
type wrapError struct {
	prefix string
	err    error
}

func (e wrapError) Error() string { return e.prefix + e.err.Error() }
func (e wrapError) Unwrap() error { return e.err }
