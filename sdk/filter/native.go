//go:build !wasip1

package filter

import (
	abi "github.com/nexus-mcp/nexus/internal/filterabi"

	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// This file runs a filter natively, without a host: the same handlers, the
// same event decoding and decision encoding as in WASM, with the host
// functions answered from the decoded event. A filter's unit tests use it
// (Configure, Call), and so does Main, which makes a natively built filter
// a small process that decides events from stdin: handy for debugging,
// and the out-of-process baseline of the host's benchmarks.

var (
	nativeMu      sync.Mutex
	nativeSession = "native-session"
	nativeLog     func(Level, string)
)

// SetSession sets the session id the native harness reports (the host
// makes an unguessable one).
func SetSession(s string) {
	nativeMu.Lock()
	nativeSession = s
	nativeMu.Unlock()
}

// SetLogger sends the filter's log to fn instead of stderr, in the native
// harness.
func SetLogger(fn func(level Level, msg string)) {
	nativeMu.Lock()
	nativeLog = fn
	nativeMu.Unlock()
}

func logHost(level Level, msg string) {
	nativeMu.Lock()
	fn := nativeLog
	nativeMu.Unlock()
	if fn != nil {
		fn(level, msg)
		return
	}
	fmt.Fprintf(os.Stderr, "[%s] %s\n", level, msg)
}

func fieldHost(v *View, id abi.Field) (string, int32) {
	e, err := v.Event()
	if err != nil {
		return "", abi.Absent
	}
	nativeMu.Lock()
	session := nativeSession
	nativeMu.Unlock()
	return abi.FieldOf(e, id, session)
}

func rawFieldHost(v *View, id abi.Field) ([]byte, bool) {
	s, n := fieldHost(v, id)
	if n < 0 {
		return nil, false
	}
	return []byte(s), true
}

func contentTextHost(v *View, i int) (string, int32) {
	if !v.textsDone {
		v.textsDone = true
		if e, err := v.Event(); err == nil {
			v.texts = abi.ContentTexts(e.Result)
		}
	}
	return abi.ContentTextOf(v.texts, i)
}

// Configure hands config (JSON) to the registered config handler, as the
// host's nx_configure does.
func Configure(config []byte) error { return configure(config) }

// Call decides one event (JSON) with the registered handlers and returns
// the decision JSON the host would receive. Calls are serialized, as they
// are in one WASM instance.
func Call(eventJSON []byte) []byte {
	callMu.Lock()
	defer callMu.Unlock()
	d := onEvent(eventJSON)
	return append([]byte(nil), d...)
}

var callMu sync.Mutex

// CallEvent decides an event that is already decoded, with no JSON in
// between: the filter's logic as if it were built into the host, the
// native baseline of the host's benchmarks.
func CallEvent(e *event.Event) event.Decision {
	callMu.Lock()
	defer callMu.Unlock()
	var v View
	v.reset(nil)
	v.ev, v.decoded = e, true
	return decide(&v)
}

// Main runs a natively built filter as a process. With NEXUS_FILTER_PIPE=1
// it serves frames on stdin and stdout, each a 4-byte big-endian length
// and a payload: the first frame in is the config, every later one an
// event; the answer to the config is "ok" or the error, to an event the
// decision JSON. Otherwise it reads one event from stdin, with the config
// from $NEXUS_FILTER_CONFIG, and prints the decision.
func Main() {
	if os.Getenv("NEXUS_FILTER_PIPE") == "1" {
		if err := servePipe(os.Stdin, os.Stdout); !errors.Is(err, io.EOF) {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := Configure([]byte(os.Getenv("NEXUS_FILTER_CONFIG"))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ev, err := io.ReadAll(io.LimitReader(os.Stdin, maxInput))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(append(Call(ev), '\n'))
}

// servePipe serves the frame protocol of Main on r and w until r ends.
func servePipe(r io.Reader, w io.Writer) error {
	br, bw := bufio.NewReader(r), bufio.NewWriter(w)
	first := true
	var buf []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxInput {
			return fmt.Errorf("frame of %d bytes is over the limit", n)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		var reply []byte
		if first {
			first = false
			reply = []byte("ok")
			if err := Configure(buf); err != nil {
				reply = []byte(err.Error())
			}
		} else {
			reply = Call(buf)
		}
		binary.BigEndian.PutUint32(hdr[:], uint32(len(reply)))
		bw.Write(hdr[:])
		bw.Write(reply)
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}
