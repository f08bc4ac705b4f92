package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// A handler written against the legacy API asks the client with
// ServerSession.CreateMessage, Elicit or ListRoots. On a modern request
// there is nobody to ask mid-request, so the server role turns those
// calls into a Multi Round-Trip Request by itself: a question the request
// has no answer to yet ends the round (the call returns errInputPending,
// whatever the handler then returns is dropped) and the request is
// answered input_required with every question the handler asked; the
// client's retry runs the handler again from the start, and this time
// each question, asked in the same order, gets its answer. Answers of
// earlier rounds travel in requestState, sealed with a key of this
// Server's (HMAC-SHA256) and bound to the method, the tool, resource or
// prompt, and an expiry, so a client can neither forge nor move them.
// The handler therefore runs once per round: it must not do before its
// questions what it would regret doing twice. A handler that returns its
// own *InputRequiredError is answered with that instead.

// errInputPending ends a round: the handler asked what the request has
// no answer to yet.
var errInputPending = errors.New("the client's answer is needed first (this request is answered input_required, and runs again on the retry)")

// askTTL bounds how long a sealed requestState stays good.
const askTTL = 10 * time.Minute

// askPrefix marks a requestState this file sealed (others are a
// handler's own, left to it).
const askPrefix = "nexus-ask."

type askedKey struct{}

// asked is one modern request's questions and answers.
type asked struct {
	mu      sync.Mutex
	n       int
	answers InputResponses
	pending InputRequests
}

// ask answers a legacy-style request to the client from a modern
// request's handler: handled is false outside one (the legacy path goes
// on); otherwise the answer is decoded into out, or err is
// errInputPending and the question is recorded for this round's answer.
func ask(ctx context.Context, method string, params any, out any) (handled bool, err error) {
	if t := taskOf(ctx); t != nil && t.isDetached() {
		// A task asks in its input_required (server_tasks.go).
		return true, t.ask(ctx, method, params, out)
	}
	a, _ := ctx.Value(askedKey{}).(*asked)
	if a == nil {
		return false, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	key := fmt.Sprintf("%s-%d", strings.ReplaceAll(method, "/", "."), a.n)
	a.n++
	if raw, ok := a.answers[key]; ok {
		if err := json.Unmarshal(raw, out); err != nil {
			return true, InvalidParams("inputResponses[%q] is not a %s result: %v", key, method, err)
		}
		return true, nil
	}
	var p json.RawMessage
	if params != nil {
		if p, err = json.Marshal(params); err != nil {
			return true, err
		}
	}
	a.pending[key] = InputRequest{Method: method, Params: p}
	return true, errInputPending
}

// startAsking puts a fresh record of questions into a modern request's
// ctx: the answers of earlier rounds (from a requestState this server
// sealed) and of this retry.
func (s *Server) startAsking(ctx context.Context, method string, params json.RawMessage, in *InputParams) (context.Context, *asked, error) {
	a := &asked{answers: InputResponses{}, pending: InputRequests{}}
	if in != nil && strings.HasPrefix(in.RequestState, askPrefix) {
		earlier, err := s.openAsked(in.RequestState, method, askTarget(params))
		if err != nil {
			return ctx, nil, InvalidParams("requestState: %v; send the request again without inputResponses and requestState to start over", err)
		}
		for k, v := range earlier {
			a.answers[k] = v
		}
	}
	if in != nil {
		for k, v := range in.InputResponses {
			a.answers[k] = v
		}
	}
	return context.WithValue(ctx, askedKey{}, a), a, nil
}

// result is the input_required answer for the questions this round
// asked, nil when it asked none.
func (a *asked) result(s *Server, method string, params json.RawMessage) (*InputRequiredError, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending) == 0 {
		return nil, nil
	}
	state, err := s.sealAsked(a.answers, method, askTarget(params))
	if err != nil {
		return nil, err
	}
	return &InputRequiredError{Result: &InputRequiredResult{InputRequests: a.pending, RequestState: state}}, nil
}

// askTarget is what a request is about: a tool's or prompt's name, or a
// resource's uri.
func askTarget(params json.RawMessage) string {
	for _, k := range []string{"name", "uri"} {
		var v string
		if raw := Member(params, k); raw != nil && json.Unmarshal(raw, &v) == nil {
			return v
		}
	}
	return ""
}

type askState struct {
	Method  string         `json:"m"`
	Target  string         `json:"t"`
	Expires int64          `json:"e"`
	Answers InputResponses `json:"a"`
}

func (s *Server) askMAC(payload []byte) []byte {
	s.askOnce.Do(func() {
		if _, err := rand.Read(s.askKey[:]); err != nil {
			panic("mcp: no randomness for the requestState key: " + err.Error())
		}
	})
	m := hmac.New(sha256.New, s.askKey[:])
	m.Write(payload)
	return m.Sum(nil)
}

func (s *Server) sealAsked(answers InputResponses, method, target string) (string, error) {
	payload, err := json.Marshal(askState{Method: method, Target: target, Expires: time.Now().Add(askTTL).Unix(), Answers: answers})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return askPrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(s.askMAC(payload)), nil
}

func (s *Server) openAsked(state, method, target string) (InputResponses, error) {
	body, mac, ok := strings.Cut(strings.TrimPrefix(state, askPrefix), ".")
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(body)
	sum, err2 := enc.DecodeString(mac)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(sum, s.askMAC(payload)) {
		return nil, errors.New("it is not the one this server handed out (changed, or from another server process)")
	}
	var st askState
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("it does not decode: %v", err)
	}
	if st.Method != method || st.Target != target {
		return nil, fmt.Errorf("it was handed out for %s %q, not %s %q", st.Method, st.Target, method, target)
	}
	if time.Now().Unix() > st.Expires {
		return nil, fmt.Errorf("it expired (it is good for %s)", askTTL)
	}
	return st.Answers, nil
}
