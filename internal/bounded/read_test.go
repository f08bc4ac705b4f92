package bounded

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(path, []byte("hello"), 0o600)
	if b, err := ReadFile(path, 5); err != nil || string(b) != "hello" {
		t.Fatalf("at the limit: %q %v", b, err)
	}
	var tl *TooLargeError
	if _, err := ReadFile(path, 4); !errors.As(err, &tl) || tl.Max != 4 || tl.Size != 5 {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	var nr *NotRegularError
	if _, err := ReadFile(dir, 10); !errors.As(err, &nr) || !nr.Mode.IsDir() {
		t.Fatalf("directory: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	if b, err := ReadFile(empty, 10); err != nil || len(b) != 0 {
		t.Fatalf("empty: %q %v", b, err)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, bytes.Repeat([]byte("x"), 300<<10), 0o600)
	if b, err := ReadFile(big, 1<<20); err != nil || len(b) != 300<<10 {
		t.Fatalf("big: %d %v", len(b), err)
	}
}

// A FIFO nobody writes to, and a device with no end, are refused at once:
// nothing waits for a writer, nothing reads forever.
func TestReadFileSpecial(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or /dev/zero on Windows")
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(fifo, 10)
		done <- err
	}()
	var nr *NotRegularError
	select {
	case err := <-done:
		if !errors.As(err, &nr) || nr.Mode&fs.ModeNamedPipe == 0 {
			t.Fatalf("fifo: %v", err)
		}
		if nr.Error() != fifo+" is a named pipe, not a file" {
			t.Errorf("message %q", nr.Error())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile waited for the FIFO's writer")
	}
	if _, err := ReadFile("/dev/zero", 10); !errors.As(err, &nr) || nr.Mode&fs.ModeDevice == 0 {
		t.Fatalf("/dev/zero: %v", err)
	}
}

// A file whose size says less than it holds (a /proc file says 0; a log
// that grows after the check) is read only to one byte past the limit.
func TestReadFileSizeLies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	fi, err := os.Stat("/proc/self/maps")
	if err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
		t.Fatalf("/proc/self/maps: %v %v", fi, err)
	}
	var tl *TooLargeError
	if _, err := ReadFile("/proc/self/maps", 100); !errors.As(err, &tl) || tl.Max != 100 {
		t.Fatalf("a file over the limit whose size says 0: %v", err)
	}
	if b, err := ReadFile("/proc/self/maps", 10<<20); err != nil || len(b) == 0 {
		t.Fatalf("within the limit: %d bytes, %v", len(b), err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{10 << 20: "10 MiB", 64 << 10: "64 KiB", 512: "512 bytes", 1500: "1500 bytes", 1: "1 byte"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
