//go:build wasip1

package filter

import (
	abi "github.com/nexus-mcp/nexus/internal/filterabi"

	"errors"
	"unsafe"
)

// This file is the guest side of the ABI for the standard Go toolchain
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared). It is the only
// place with pointers and unsafe; filters never see them.

// The buffers the host shares with the guest. There is one of each, reused
// for every call: per-call buffers kept alive in a map (so the GC does not
// free them while the host writes) crash the Go runtime after a few
// hundred thousand calls.
var in []byte // the input buffer handed out by nx_input_buf

// inputBuffer returns the input buffer, grown to at least n bytes. Its
// address stays the same until it has to grow.
func inputBuffer(n int) []byte {
	if n < 0 || n > maxInput {
		return nil
	}
	if cap(in) < n || cap(in) == 0 {
		in = make([]byte, max(n, 4096))
	}
	return in[:cap(in)]
}

var errInputOutside = errors.New("nx_on_event: the event is not in the input buffer")

//go:wasmimport nexus log
func hostLog(level int32, ptr unsafe.Pointer, n int32)

//go:wasmimport nexus field
func hostField(id int32, ptr unsafe.Pointer, n int32) int32

//go:wasmimport nexus content_text
func hostContentText(index int32, ptr unsafe.Pointer, n int32) int32

//go:wasmexport nexus_filter_abi_v1
func exportMarker() {}

//go:wasmexport nx_abi_minor
func exportMinor() int32 { return abi.ABIMinor }

//go:wasmexport nx_input_buf
func exportInputBuf(n int32) uint32 {
	b := inputBuffer(int(n))
	if b == nil {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

//go:wasmexport nx_configure
func exportConfigure(ptr, n uint32) int32 {
	input, ok := inputAt(ptr, n)
	if !ok {
		logHost(LevelError, "nx_configure: the config is not in the input buffer")
		return 1
	}
	if err := configure(input); err != nil {
		logHost(LevelError, err.Error())
		return 1
	}
	return 0
}

//go:wasmexport nx_on_event
func exportOnEvent(ptr, n uint32) uint64 {
	input, ok := inputAt(ptr, n)
	var d []byte
	if !ok {
		out = appendDecision(out[:0], Fail(errInputOutside))
		d = out
	} else {
		d = onEvent(input)
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(d))))<<32 | uint64(len(d))
}

// inputAt is the input the host wrote at ptr: it must lie in the buffer
// nx_input_buf handed out.
func inputAt(ptr, n uint32) ([]byte, bool) {
	if n == 0 {
		return nil, true
	}
	if cap(in) == 0 {
		return nil, false
	}
	base := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
	if ptr < base || uint64(ptr)+uint64(n) > uint64(base)+uint64(cap(in)) {
		return nil, false
	}
	off := ptr - base
	return in[off : off+n : off+n], true
}

func logHost(level Level, msg string) {
	hostLog(int32(level), unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}

// scratch receives fields from the host; it grows to the longest field.
var scratch = make([]byte, 256)

func fieldHost(_ *View, id abi.Field) (string, int32) {
	for {
		n := hostField(int32(id), unsafe.Pointer(unsafe.SliceData(scratch)), int32(len(scratch)))
		if n < 0 {
			return "", n
		}
		if int(n) <= len(scratch) {
			return string(scratch[:n]), n
		}
		scratch = make([]byte, n)
	}
}

// rawHint is the length each JSON field had last time: a first guess at
// the buffer to fetch it into.
var rawHint [numFields]int32

func rawFieldHost(_ *View, id abi.Field) ([]byte, bool) {
	b := make([]byte, max(rawHint[id], 64))
	for {
		n := hostField(int32(id), unsafe.Pointer(unsafe.SliceData(b)), int32(len(b)))
		if n < 0 {
			return nil, false
		}
		rawHint[id] = n
		if int(n) <= len(b) {
			return b[:n:n], true
		}
		b = make([]byte, n)
	}
}

func contentTextHost(_ *View, i int) (string, int32) {
	for {
		n := hostContentText(int32(i), unsafe.Pointer(unsafe.SliceData(scratch)), int32(len(scratch)))
		if n < 0 {
			return "", n
		}
		if int(n) <= len(scratch) {
			return string(scratch[:n]), n
		}
		scratch = make([]byte, n)
	}
}

// Main does nothing in a WASM build: the host drives the filter through
// its exports. (A natively built filter serves events on stdin instead.)
func Main() {}
