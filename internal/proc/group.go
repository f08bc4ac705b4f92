package proc

import (
	"os/exec"
	"sync"
)

// Group is a started child and everything it spawns.
type Group struct {
	cmd *exec.Cmd
	pid int

	// mu orders group signals against the reap: once the leader is
	// reaped its PID may be recycled, so nothing may signal -pid after.
	mu     sync.Mutex
	reaped bool
	//lint:ignore U1000 holds the job object on Windows; empty elsewhere
	plat    platform
	unwatch func()
}

// Start starts cmd as the leader of a new group that does not outlive the
// host. It sets cmd.SysProcAttr.
func Start(cmd *exec.Cmd) (*Group, error) {
	cmd.SysProcAttr = attr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &Group{cmd: cmd, pid: cmd.Process.Pid}
	g.started()
	return g, nil
}

// PID is the leader's process id.
func (g *Group) PID() int { return g.pid }

// Term asks the group to stop (SIGTERM; CTRL_BREAK on Windows). It does
// nothing once the leader is reaped.
func (g *Group) Term() { g.signal(term) }

// Kill kills the group. It does nothing once the leader is reaped.
func (g *Group) Kill() { g.signal(kill) }

func (g *Group) signal(f func(*Group)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped {
		f(g)
	}
}

// Wait waits for the leader to exit, kills what is left of its group at
// once, reaps the leader and stops guarding the group. It returns what
// cmd.Wait returns; cmd.ProcessState says how the leader ended.
func (g *Group) Wait() error {
	var err error
	if waitNoReap(g.pid) {
		// The zombie keeps the PID, and so the group id, from being
		// reused until the reap, so the kill cannot hit a stranger.
		g.mu.Lock()
		kill(g)
		err = g.cmd.Wait()
	} else {
		err = g.cmd.Wait()
		g.mu.Lock()
		kill(g)
	}
	g.reaped = true
	release(g)
	g.mu.Unlock()
	if g.unwatch != nil {
		g.unwatch()
	}
	return err
}
