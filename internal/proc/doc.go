// Package proc starts the processes Nexus runs (stdio servers and plugins)
// so that each is a group that stops as one and none outlives the host.
//
// A child starts as the leader of its own process group (a job object on
// Windows), so a terminal's Ctrl-C reaches the host alone, which then stops
// its children in order, and so a stop reaches everything the child
// spawned. When the leader exits, whatever is left of its group is killed
// at once: a descendant holding the leader's pipes would otherwise keep a
// dead server looking alive.
//
// The host may die without cleaning up (SIGKILL, a crash, the OOM killer).
// Linux's parent-death signal then kills each direct child, but not its
// descendants, and other Unix systems have no such signal. So on Unix a
// watchdog, one small /bin/sh process per host started with the first
// child, holds the read end of a pipe whose write end only the host has;
// the host tells it each group it starts and stops. The kernel closes the
// pipe when the host dies however it dies, the watchdog reads end of file
// and kills every group still registered. It sits in its own process group
// and ignores the terminal's signals, so what stops the host does not stop
// it first. A descendant that leaves its group (setsid, a daemon) escapes
// both the group kill and the watchdog; run such servers under a service
// manager. On Windows the job object is created with KILL_ON_JOB_CLOSE:
// the kernel kills the job when the host's last handle to it closes, which
// includes the host dying. macOS has the same watchdog as Linux, without
// the parent-death signal.
package proc
