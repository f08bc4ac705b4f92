//go:build unix

package proc

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// watchdog is the script of the process that kills the host's groups when
// the host dies (see the package doc). It reads "+ID" and "-ID" lines, a
// group to guard and one to forget, until end of file, then kills every
// group it still guards. It ignores the terminal's signals, so a Ctrl-C or
// a hangup that stops the host does not stop it first.
const watchdog = `trap '' INT HUP QUIT
g=' '
while IFS= read -r l; do
	case $l in
	+*) g="$g${l#+} " ;;
	-*) x=${l#-}
		case $g in *" $x "*) g="${g%% $x *} ${g#* $x }" ;; esac ;;
	esac
done
for x in $g; do kill -KILL -"$x" 2>/dev/null; done
`

// The host's one watchdog, started with the first guarded group.
var wd struct {
	mu     sync.Mutex
	w      *os.File // the pipe's write end; nil: no watchdog running
	proc   *os.Process
	groups map[int]bool
}

// watchdogShell is the shell the watchdog runs in.
var watchdogShell = "/bin/sh"

// watch tells the watchdog to kill group pgid if the host dies, and
// returns the function that tells it to forget the group.
func watch(pgid int) (unwatch func()) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.groups == nil {
		wd.groups = map[int]bool{}
	}
	wd.groups[pgid] = true
	send("+" + strconv.Itoa(pgid) + "\n")
	return func() {
		wd.mu.Lock()
		defer wd.mu.Unlock()
		if wd.groups[pgid] {
			delete(wd.groups, pgid)
			send("-" + strconv.Itoa(pgid) + "\n")
		}
	}
}

// send writes a line to the watchdog, starting one (told every guarded
// group) when none runs or the one running stopped reading. Called with
// wd.mu held. A host where no watchdog can start keeps the rest of its
// protection (process groups, Linux's parent-death signal); it tries again
// with the next group.
func send(line string) {
	if wd.w != nil && write(line) {
		return
	}
	stop()
	if !start() {
		return
	}
	for g := range wd.groups {
		if !write("+" + strconv.Itoa(g) + "\n") {
			stop()
			return
		}
	}
}

// write gives the watchdog a second to take a line: it reads continuously,
// so a full pipe means it is stopped or gone.
func write(line string) bool {
	_ = wd.w.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := wd.w.Write([]byte(line))
	return err == nil
}

func start() bool {
	r, w, err := os.Pipe()
	if err != nil {
		return false
	}
	cmd := exec.Command(watchdogShell, "-c", watchdog)
	cmd.Stdin = r // stdout and stderr are /dev/null: it must hold none of the host's pipes
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return false
	}
	r.Close()
	// Not waited for until stopped: a goroutine waiting all the host's
	// life would be one more for every leak check, and a watchdog that
	// ends early is noticed (and reaped) at the next write.
	wd.w, wd.proc = w, cmd.Process
	return true
}

// stop ends a watchdog that stopped reading: closing its pipe would make
// it kill every guarded group, so it is killed first. (os.Process.Kill
// cannot reach a stranger that reused the PID of one already reaped.)
func stop() {
	if wd.w == nil {
		return
	}
	_ = wd.proc.Kill()
	_, _ = wd.proc.Wait()
	_ = wd.w.Close()
	wd.w, wd.proc = nil, nil
}
