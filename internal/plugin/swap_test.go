package plugin

import (
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"
)

// A binary swapped in at the path after its checksum was verified must not
// be what runs: the bytes that were hashed are (issue 20, item 11).
func TestChecksumThenSwap(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses /bin/echo and /bin/false")
	}
	copyFile := func(t *testing.T, from, to string) []byte {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		tmp := to + ".new"
		if err := os.WriteFile(tmp, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, to); err != nil { // an atomic swap, as an attacker would do it
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return sum[:]
	}
	for _, c := range []struct {
		name           string
		good, bad      string // what is verified, what is swapped in
		script, output string
	}{
		{name: "binary", good: "/bin/echo", bad: "/bin/false", output: "verified\n"},
		{name: "script", script: "#!/bin/sh\necho verified\n", output: "verified\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plugin")
			var sum []byte
			if c.script != "" {
				os.WriteFile(path, []byte(c.script), 0o755)
				s := sha256.Sum256([]byte(c.script))
				sum = s[:]
			} else {
				sum = copyFile(t, c.good, path)
			}
			v := <-verifyChecksum(path, sum)
			if v.err != nil {
				t.Fatal(v.err)
			}
			defer v.release()
			// The swap, between the check and the exec.
			if c.script != "" {
				os.WriteFile(path+".new", []byte("#!/bin/sh\necho swapped\n"), 0o755)
				os.Rename(path+".new", path)
			} else {
				copyFile(t, c.bad, path)
			}
			cmd := exec.Command(path, "verified")
			cmd.Path = v.exec
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			v.closeAfterStart()
			got, _ := io.ReadAll(out)
			if err := cmd.Wait(); err != nil || string(got) != c.output {
				t.Fatalf("ran %q (%v), want the verified program's %q", got, err, c.output)
			}
		})
	}
	// A mismatch is refused before anything runs.
	path := filepath.Join(t.TempDir(), "plugin")
	os.WriteFile(path, []byte("#!/bin/sh\necho hi\n"), 0o755)
	v := <-verifyChecksum(path, make([]byte, 32))
	if v.err != goplugin.ErrChecksumsDoNotMatch || v.exec != "" {
		t.Errorf("mismatch: %+v", v)
	}
	if _, err := os.Stat(path); err != nil || strings.Contains(v.exec, "nexus-plugin-") {
		t.Errorf("after a mismatch: %v %q", err, v.exec)
	}
}
