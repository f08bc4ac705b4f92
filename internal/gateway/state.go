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
	// inner is a modern upstream's own requestState, sealed for the
	// agent to hold (passInput): the retry opens it and passes inner on,
	// to whichever replica it reaches. Empty for a bridged call's state.
	inner string
}

// maxInner bounds an upstream's requestState the gateway seals for an
// agent: larger ones are refused rather than handed out.
const maxInner = 64 << 10

// Errors of a requestState that cannot be used, as the agent gets them:
// invalid params (the spec's error for state that fails verification),
// saying what to do.
func badState(why string) error {
	return mcp.InvalidParams("requestState %s; send the request again without inputResponses and requestState to start over", why)
}

const stateVersion = 1

// seal encodes st: version, call, round, replica, expiry, the binding's
// hash, agent, method and target, then encrypts it with a random nonce.
func (sl *sealer) seal(st *state) string {
	var buf [256]byte
	p := buf[:0]
	p = append(p, stateVersion)
	p = append(p, st.call[:]...)
	p = binary.BigEndian.AppendUint32(p, st.round)
	p = append(p, st.replica[:]...)
	p = binary.BigEndian.AppendUint64(p, uint64(st.expires))
	p = append(p, st.bind.args[:]...)
	p = appendString(p, st.agent)
	p = appendString(p, st.bind.method)
	p = appendString(p, st.bind.target)
	p = appendString(p, st.inner)
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

// maxState bounds a requestState the gateway opens: an upstream's
// (maxInner), sealed and encoded, and what is around it.
const maxState = maxInner*4/3 + 1<<10

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
	const fixed = 1 + 16 + 4 + 8 + 8 + 16
	if len(p) < fixed || p[0] != stateVersion {
		return nil, badState("is of a version this gateway does not read")
	}
	i := 1
	i += copy(st.call[:], p[i:])
	st.round = binary.BigEndian.Uint32(p[i:])
	i += 4
	i += copy(st.replica[:], p[i:i+8])
	st.expires = int64(binary.BigEndian.Uint64(p[i:]))
	i += 8
	i += copy(st.bind.args[:], p[i:i+16])
	var strs [4]string
	for k := range strs {
		n, w := binary.Uvarint(p[i:])
		if w <= 0 || uint64(len(p)-i-w) < n {
			return nil, badState("is malformed")
		}
		i += w
		strs[k] = string(p[i : i+int(n)])
		i += int(n)
	}
	st.agent, st.bind.method, st.bind.target, st.inner = strs[0], strs[1], strs[2], strs[3]
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
