package pluginwire

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// Frames round-trip, and a frame over the limit is refused before its
// body is read.
func TestDecideFrames(t *testing.T) {
	dl := time.Unix(1700000000, 123)
	req := &DecideRequest{Instance: "3", Event: []byte(`{"abi":1}`)}
	b, err := AppendDecideRequest([]byte("x"), FrameSanitizer, dl, req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := ReadFrame(bytes.NewReader(b[1:]), nil, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	kind, gotDL, got, err := ParseDecideRequest(body)
	if err != nil || kind != FrameSanitizer || !gotDL.Equal(dl) || !proto.Equal(got, req) {
		t.Fatalf("%c %v %v %v", kind, gotDL, got, err)
	}
	resp := &DecideResponse{Decision: []byte(`{"action":"allow"}`), Code: 5, Error: "x"}
	b, _ = AppendDecideResponse(nil, resp)
	body, _ = ReadFrame(bytes.NewReader(b), nil, 1<<10)
	if r, err := ParseDecideResponse(body); err != nil || !proto.Equal(r, resp) {
		t.Fatalf("%v %v", r, err)
	}
	huge := bytes.NewReader([]byte{0, 1, 0, 0}) // 65536 bytes announced, none sent
	if _, err := ReadFrame(huge, nil, 1<<10); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized frame: %v", err)
	}
}

// FuzzDecideFrame: whatever the other side sends, reading and parsing a
// frame returns an error or a value, never a panic, and a request that
// parses encodes back to one that parses the same.
func FuzzDecideFrame(f *testing.F) {
	good, _ := AppendDecideRequest(nil, FramePolicy, time.Unix(5, 0), &DecideRequest{Instance: "1", Event: []byte(`{}`)})
	for _, s := range [][]byte{good, {0, 0, 0, 0}, {0, 0, 0, 9, 'p', 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 2, 's'}, {0xff, 0xff, 0xff, 0xff}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := ReadFrame(bytes.NewReader(b), nil, 1<<12)
		if err != nil {
			return
		}
		ParseDecideResponse(body)
		kind, dl, req, err := ParseDecideRequest(body)
		if err != nil {
			return
		}
		again, err := AppendDecideRequest(nil, kind, dl, req)
		if err != nil {
			t.Fatal(err)
		}
		body2, err := ReadFrame(bytes.NewReader(again), nil, 1<<12)
		if err != nil {
			t.Fatal(err)
		}
		k2, dl2, req2, err := ParseDecideRequest(body2)
		if err != nil || k2 != kind || !dl2.Equal(dl) || !proto.Equal(req2, req) {
			t.Fatalf("%q: re-encoded request differs", b)
		}
	})
}
