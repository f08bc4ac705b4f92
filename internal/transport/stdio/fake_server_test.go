package stdio

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// modeEnv switches the test binary into a fake server (re-exec pattern), so
// the tests need no external programs.
const modeEnv = "NEXUS_STDIO_TEST_MODE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(fakeServer(mode))
	}
	os.Exit(m.Run())
}

func fakeServer(mode string) int {
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format, args...)
		out.Flush()
	}
	in := bufio.NewReader(os.Stdin)
	// echo copies n lines (all if n < 0) from stdin to stdout; false at EOF.
	echo := func(n int) bool {
		for i := 0; n < 0 || i < n; i++ {
			line, err := in.ReadBytes('\n')
			if len(line) > 0 {
				out.Write(line)
				out.Flush()
			}
			if err != nil {
				return false
			}
		}
		return true
	}
	forever := func() {
		for {
			time.Sleep(time.Hour)
		}
	}
	spawnSleeper := func() int {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), modeEnv+"=sleep")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "spawn:", err)
			os.Exit(99)
		}
		return cmd.Process.Pid
	}

	switch mode {
	case "echo":
		echo(-1)
	case "noise":
		for i := range 15 {
			say("noise line %d\n", i)
		}
		echo(1)
	case "crlf":
		say("{\"a\":1}\r\n\r\n   \t\r\n\n[1,2]\r\n  {\"b\":2}  \r\n")
		echo(-1)
	case "big":
		say(`{"x":"`)
		out.WriteString(strings.Repeat("a", 11<<20))
		say("\"}\n")
		forever()
	case "parts":
		// Each line comes out without its newline, and a line "." is a
		// newline: a test sends one frame in parts.
		for {
			line, err := in.ReadString('\n')
			if err != nil {
				return 0
			}
			if line = strings.TrimSuffix(line, "\n"); line == "." {
				line = "\n"
			}
			say("%s", line)
		}
	case "exit3":
		fmt.Fprintln(os.Stderr, "starting")
		fmt.Fprintln(os.Stderr, "fatal: something broke")
		return 3
	case "exitmid":
		echo(2)
		fmt.Fprintln(os.Stderr, "bye")
		return 5
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		say("{\"ready\":true}\n")
		forever()
	case "noread":
		say("{\"ready\":true}\n")
		forever()
	case "sleep":
		forever()
	case "grandchild-exit":
		say("{\"pid\":%d}\n", spawnSleeper())
		return 0
	case "grandchild-stay":
		say("{\"pid\":%d}\n", spawnSleeper())
		forever()
	case "env":
		env := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		b, _ := json.Marshal(env)
		say("%s\n", b)
	case "flood":
		for i := range 10000 {
			fmt.Fprintf(os.Stderr, "err %d\n", i)
		}
		for i := range 10000 {
			fmt.Fprintf(out, "{\"i\":%d}\n", i)
		}
		out.Flush()
	case "closestdout":
		os.Stdout.Close()
		echo(-1) // exits only once stdin is closed
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		return 98
	}
	return 0
}
