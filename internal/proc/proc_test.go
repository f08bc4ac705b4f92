//go:build unix

package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// The test binary doubles as a host: NEXUS_PROC_HOST=guard starts a child
// with Start, =bare with only the process attributes, =restart kills the
// watchdog between two children. The child starts a grandchild; the host
// prints the grandchildren's PIDs and waits to be killed.
func TestMain(m *testing.M) {
	if mode := os.Getenv("NEXUS_PROC_HOST"); mode != "" {
		runHost(mode)
		return
	}
	os.Exit(m.Run())
}

func runHost(mode string) {
	spawn := func() int {
		cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo $!; wait")
		out, err := cmd.StdoutPipe()
		if err != nil {
			panic(err)
		}
		if mode == "bare" {
			cmd.SysProcAttr = attr()
			err = cmd.Start()
		} else {
			_, err = Start(cmd)
		}
		if err != nil {
			panic(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			panic(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			panic(err)
		}
		return pid
	}
	pids := []int{spawn()}
	if mode == "restart" {
		wd.mu.Lock()
		p := wd.proc
		wd.mu.Unlock()
		_ = p.Kill() // left for send to find and reap
		for testenv.Running(p.Pid) {
			time.Sleep(time.Millisecond)
		}
		pids = append(pids, spawn())
	}
	fmt.Println(strings.Trim(fmt.Sprint(pids), "[]"))
	select {}
}

// host starts the test binary as a host in mode and returns it and the
// PIDs of its grandchildren.
func host(t *testing.T, mode string) (*exec.Cmd, []int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NEXUS_PROC_HOST="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		lines <- l
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(60 * time.Second):
		t.Fatal("the host did not start its children within 60 s")
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("host said %q", line)
		}
		pids = append(pids, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	if len(pids) == 0 {
		t.Fatalf("host said %q", line)
	}
	return cmd, pids
}

func gone(pids []int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		n := 0
		for _, p := range pids {
			if testenv.Running(p) {
				n++
			}
		}
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SIGKILL of the host takes its children's children with it.
func TestHostKilled(t *testing.T) {
	for _, mode := range []string{"guard", "restart"} {
		t.Run(mode, func(t *testing.T) {
			h, pids := host(t, mode)
			_ = h.Process.Kill()
			_ = h.Wait()
			if !gone(pids, 10*time.Second) {
				t.Fatalf("grandchildren %v outlived the host's SIGKILL by 10 s", pids)
			}
		})
	}
}

// Without the watchdog a grandchild survives the host's SIGKILL (on
// Linux the parent-death signal reaches the direct child only): what
// TestHostKilled guards against is real.
func TestHostKilledBare(t *testing.T) {
	h, pids := host(t, "bare")
	_ = h.Process.Kill()
	_ = h.Wait()
	if gone(pids, 300*time.Millisecond) {
		t.Fatal("the grandchild died without the watchdog: this test no longer shows what the watchdog is for")
	}
}

// A leader that exits takes what is left of its group with it, and group
// signals after the reap are no-ops.
func TestWaitKillsLeftovers(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo $!")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if !gone([]int{pid}, 10*time.Second) {
		t.Fatal("the leader's child outlived it")
	}
	g.Term()
	g.Kill()
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.groups[g.PID()] {
		t.Error("the watchdog still guards a reaped group")
	}
}

// Term reaches the whole group.
func TestTerm(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo $!; wait")
	out, _ := cmd.StdoutPipe()
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	g.Term()
	_ = g.Wait()
	if code, sig := ExitStatus(cmd.ProcessState); code != -1 || sig != "SIGTERM" {
		t.Errorf("leader ended with %d %q, want SIGTERM", code, sig)
	}
	if !gone([]int{pid}, 10*time.Second) {
		t.Fatal("the grandchild outlived Term")
	}
}
