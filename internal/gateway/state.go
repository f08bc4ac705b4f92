package gateway

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The requestState the bridge hands a modern agent when a legacy
// upstream asks it something mid-call (bridge.go). The agent holds it
// between the attempts, so it is sealed (AES-256-GCM) with a key the
// replicas share, and names what it may be used for: the agent, the
// request (method, tool/prompt name or uri, a hash of the arguments),
// the replica holding the upstream call, the call and its round (used
// once), and an expiry. Nothing in it is secret from the gateway's
// point of view, but the agent can neither read nor change it.

// statePrefix marks a requestState the gateway sealed. A modern
// upstream's own requestState is handed to the agent sealed too (inner),
// bound like the bridge's to the agent and the request, so a state
// echoed to another request, or by another agent, is refused before
// anything reaches an upstream; a requestState without the prefix is
// never one this gateway handed out.
const statePrefix = "nxs1."

// sealer seals and opens requestState.
type sealer struct {
	aead    cipher.AEAD
	replica [8]byte // this process's replica id
}

func newSealer(key []byte, replica [8]byte) (*sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("the requestState key is %d bytes; it must be 32", len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: a, replica: replica}, nil
}

// binding is the request a state belongs to.
type binding struct {
	method string   // tools/call, resources/read, prompts/get
	target string   // the tool's or prompt's name, or the uri
	args   [16]byte // sha256 of the arguments, cut
}

// bindingOf is the binding of a request: args is the arguments' JSON
// (any spacing: it is compacted first).
func bindingOf(method, target string, args json.RawMessage) binding {
	b := binding{method: method, target: target}
	h := sha256.New()
	h.Write(compactJSON(args))
	copy(b.args[:], h.Sum(nil))
	return b
}

func compactJSON(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}")
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			// Copy the string as it is, escapes included.
			j := i + 1
			for j < len(raw) && raw[j] != '"' {
				if raw[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(raw))
			out = append(out, raw[i:end]...)
			i = end - 1
			continue
		}
		out = append(out, c)
	}
	return out
}

// state is what a sealed requestState says.
type state struct {
	call    [16]byte // the bridged call
	round   uint32   // the park it was handed out at: used once
	replica [8]byte  // the replica holding the upstream call
	expires int64    // unix seconds
	agent   string
	bind    binding
	// upstream marks a modern upstream's call's state (passInput), not
	// a bridged call's. inner is that upstream's own requestState (empty
	// if it gave none), sealed for the agent to hold: the retry opens it
	// and passes inner on, to whichever replica it reaches.
	upstream bool
	inner    string
	// What a modern upstream's call carries to its retry, so the chain
	// decides it once (engine.Attempt; call is its id): the request's
	// params as the first attempt's policies left them ("" unchanged),
	// and the questions handed to the agent, whose answers pass the
	// chain's response half with the request they answer.
	params string
	asks   []asked
}

// asked is one question a modern upstream's state carries: its key, and
// the request as the chain let it through to the agent.
type asked struct {
	key, method string
	params      json.RawMessage
}

// maxInner bounds an upstream's requestState the gateway seals for an
// agent: larger ones are refused rather than handed out.
const maxInner = 64 << 10

// maxCarried bounds what else a modern upstream's state carries (the
// questions, the params a policy changed): a call whose questions are
// larger is refused, saying so, since their answers could not pass the
// chain with them.
const maxCarried = 1 << 20

// Errors of a requestState that cannot be used, as the agent gets them:
// invalid params (the spec's error for state that fails verification),
// saying what to do.
func badState(why string) error {
	return mcp.InvalidParams("requestState %s; send the request again without inputResponses and requestState to start over", why)
}

// stateVersion 2 carries flags, params and asks; 1 (before them) is
// not read.
const stateVersion = 2

// flagUpstream: the state is a modern upstream's call's (state.upstream).
const flagUpstream = 1

// seal encodes st: version, call, round, replica, expiry, the binding's
// hash, agent, method, target, inner, params and asks, then encrypts it
// with a random nonce.
func (sl *sealer) seal(st *state) string {
	var buf [256]byte
	p := buf[:0]
	if n := len(st.inner) + len(st.params) + st.carried(); n > len(buf)-80 {
		p = make([]byte, 0, n+80+len(st.agent)+len(st.bind.target))
	}
	p = append(p, stateVersion)
	var flags byte
	if st.upstream {
		flags |= flagUpstream
	}
	p = append(p, flags)
	p = append(p, st.call[:]...)
	p = binary.BigEndian.AppendUint32(p, st.round)
	p = append(p, st.replica[:]...)
	p = binary.BigEndian.AppendUint64(p, uint64(st.expires))
	p = append(p, st.bind.args[:]...)
	p = appendString(p, st.agent)
	p = appendString(p, st.bind.method)
	p = appendString(p, st.bind.target)
	p = appendString(p, st.inner)
	p = appendString(p, st.params)
	p = binary.AppendUvarint(p, uint64(len(st.asks)))
	for _, a := range st.asks {
		p = appendString(p, a.key)
		p = appendString(p, a.method)
		p = appendString(p, string(a.params))
	}
	ns := sl.aead.NonceSize()
	out := make([]byte, ns, ns+len(p)+sl.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic("gateway: no randomness for a requestState nonce: " + err.Error())
	}
	out = sl.aead.Seal(out, out[:ns], p, []byte(statePrefix))
	enc := base64.RawURLEncoding
	s := make([]byte, len(statePrefix)+enc.EncodedLen(len(out)))
	copy(s, statePrefix)
	enc.Encode(s[len(statePrefix):], out)
	return string(s)
}

func appendString(p []byte, s string) []byte {
	p = binary.AppendUvarint(p, uint64(len(s)))
	return append(p, s...)
}

// carried is the size of what st carries beside the upstream's state:
// the params a policy changed and the questions, with their keys.
func (st *state) carried() int {
	n := len(st.params)
	for _, a := range st.asks {
		n += len(a.key) + len(a.method) + len(a.params)
	}
	return n
}

// maxState bounds a requestState the gateway opens: an upstream's
// (maxInner) and what it carries (maxCarried), sealed and encoded, and
// what is around them.
const maxState = (maxInner+maxCarried)*4/3 + 4<<10

// open decrypts a requestState; the error says why it is not one this
// gateway sealed.
func (sl *sealer) open(s string) (*state, error) {
	if len(s) > maxState {
		return nil, badState(fmt.Sprintf("is %d bytes, longer than any this gateway hands out", len(s)))
	}
	body, ok := strings.CutPrefix(s, statePrefix)
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	ns := sl.aead.NonceSize()
	if !ok || err != nil || len(raw) < ns+sl.aead.Overhead() {
		return nil, badState("failed its integrity check (it was changed, or it is not this gateway's)")
	}
	var buf [256]byte
	p, err := sl.aead.Open(buf[:0], raw[:ns], raw[ns:], []byte(statePrefix))
	if err != nil {
		return nil, badState("failed its integrity check (it was changed, or was sealed with another key: do the gateway replicas share state_key?)")
	}
	st := &state{}
	const fixed = 1 + 1 + 16 + 4 + 8 + 8 + 16
	if len(p) < fixed || p[0] != stateVersion {
		return nil, badState("is of a version this gateway does not read")
	}
	st.upstream = p[1]&flagUpstream != 0
	i := 2
	i += copy(st.call[:], p[i:])
	st.round = binary.BigEndian.Uint32(p[i:])
	i += 4
	i += copy(st.replica[:], p[i:i+8])
	st.expires = int64(binary.BigEndian.Uint64(p[i:]))
	i += 8
	i += copy(st.bind.args[:], p[i:i+16])
	bad := false
	str := func() string {
		n, w := binary.Uvarint(p[i:])
		if bad || w <= 0 || uint64(len(p)-i-w) < n {
			bad = true
			return ""
		}
		i += w
		s := string(p[i : i+int(n)])
		i += int(n)
		return s
	}
	st.agent, st.bind.method, st.bind.target, st.inner, st.params = str(), str(), str(), str(), str()
	n, w := binary.Uvarint(p[i:])
	// Each question takes three bytes at least.
	if bad || w <= 0 || n > uint64(len(p)-i-w)/3 {
		return nil, badState("is malformed")
	}
	i += w
	if n > 0 {
		st.asks = make([]asked, n)
		for k := range st.asks {
			st.asks[k] = asked{key: str(), method: str(), params: json.RawMessage(str())}
		}
	}
	if bad || i != len(p) {
		return nil, badState("is malformed")
	}
	return st, nil
}

// check holds an opened state to the retry it came with: the agent that
// sends it and the request it repeats, and its expiry.
func (st *state) check(agent string, b binding, now time.Time) error {
	if now.Unix() > st.expires {
		return badState("has expired (the call waited too long for its input and was ended)")
	}
	if st.agent != agent {
		return badState("was handed to another agent")
	}
	if st.bind.method != b.method || st.bind.target != b.target {
		return badState(fmt.Sprintf("was handed out for another request (%s %q)", st.bind.method, st.bind.target))
	}
	if st.bind.args != b.args {
		return badState(fmt.Sprintf("was handed out for %s %q with other arguments", st.bind.method, st.bind.target))
	}
	return nil
}
