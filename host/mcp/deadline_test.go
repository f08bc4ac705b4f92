package mcp

import (
	"errors"
	"testing"
	"time"
)

func TestReadDeadline(t *testing.T) {
	var got []time.Time
	rd := NewReadDeadline(func(d time.Time) error { got = append(got, d); return nil })
	soon := time.Now().Add(30 * time.Second)
	if err := rd.Arm(soon); err != nil || len(got) != 1 || !got[0].Equal(soon) {
		t.Fatalf("arm: %v %v", err, got)
	}
	// A deadline a little later keeps the one set: no system call.
	if rd.Arm(soon.Add(time.Millisecond)); len(got) != 1 {
		t.Errorf("a nearly equal deadline was set again: %v", got)
	}
	rd.Clear()
	if last := got[len(got)-1]; !last.IsZero() {
		t.Errorf("clear set %v", last)
	}
	rd.Interrupt()
	if err := rd.Arm(soon); !errors.Is(err, ErrReadTimeout) {
		t.Errorf("arm after an interrupt: %v", err)
	}
	if err := rd.Arm(soon); err != nil {
		t.Errorf("the interrupt counted twice: %v", err)
	}
	if rd.TimedOut() {
		t.Error("bounded before any bound")
	}
	bound := time.Now().Add(time.Second)
	rd.Bound(bound)
	if last := got[len(got)-1]; !last.Equal(bound) {
		t.Errorf("bound not applied: %v", last)
	}
	rd.Clear()
	if last := got[len(got)-1]; !last.Equal(bound) {
		t.Errorf("clear lifted the bound: %v", last)
	}
	if err := rd.Arm(soon); err != nil || !got[len(got)-1].Equal(bound) {
		t.Errorf("a later deadline passed the bound: %v", got[len(got)-1])
	}
	if !rd.TimedOut() {
		t.Error("not reported as bounded")
	}
}
