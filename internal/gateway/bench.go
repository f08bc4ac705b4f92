//go:build nexusbench && unix

package gateway

import (
	"encoding/json"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"
)

// What a build with the nexusbench tag adds, for
// BenchmarkBridgeRoundGateway (bridge_cpu_test.go), which builds nexus
// so and measures `nexus serve`'s own CPU in a process of its own: the
// floor of an MRTR round, and a CPU profile of that process. No other
// build has this file; the binary the benchmark measures is the same
// code but for benchFloor being set.
//
// Why in the gateway binary and not elsewhere: the floor must be the
// gateway's own CPU, counted by the same process clock as the round's
// and the plain calls', in the same process, interleaved with them; a
// tool of the upstream would run in the upstream's process, and an
// in-process model of the gateway would count the agent and the
// upstream too. Why a build tag and not a hidden option: nothing a
// config, an environment or a client sends can turn it on in a real
// build.
//
// The floor is two plain calls (echo), the second of them, echo
// {"message":"floor"}, doing beside what a plain call does what an MRTR
// round must pay on top of the agent's two round trips, whatever the
// bridge: its requestState sealed (as park seals it) and opened and
// checked (as a retry's is); and the upstream call's answer handed
// across one goroutine more, as a call held across the agent's two
// requests must be (the server's question reaches the bridge on a
// goroutine that is not the one the agent's request waits on, and waits
// there for the answer). Everything else a round does beyond that is
// the bridge's own cost.

// floorArgs is the binding hash of the floor's arguments: only those
// calls do the floor's work (a 16-byte compare for every other).
var floorArgs = bindingOf("tools/call", "echo", json.RawMessage(`{"message":"floor"}`)).args

// floorHand is where the floor's calls hand their outcome across (ran):
// to one goroutine waiting, as a bridged call's held server request
// waits, which closes the call's done.
var floorHand = make(chan chan struct{})

func init() {
	benchFloor = floor
	go func() {
		for done := range floorHand {
			close(done)
		}
	}()
	if path := os.Getenv("NEXUS_BENCH_CPUPROFILE"); path != "" {
		go capture(path, func(f io.Writer) error {
			// 2 kHz, not the default 100 Hz: a round is a few hundred µs
			// of CPU, and differences of tens of µs between batches need
			// the samples. (StartCPUProfile then warns that the rate is
			// set already, and keeps it.)
			runtime.SetCPUProfileRate(2000)
			return pprof.StartCPUProfile(f)
		}, pprof.StopCPUProfile)
	}
	if path := os.Getenv("NEXUS_BENCH_TRACE"); path != "" {
		go capture(path, trace.Start, trace.Stop)
	}
}

func floor(br *bridge, c *bcall) {
	if c.bind.args != floorArgs || c.bind.target != "echo" {
		return
	}
	now := time.Now()
	s := br.seal.seal(&state{call: c.id, round: 1, replica: br.seal.replica, expires: now.Add(br.ttl).Unix() + 1, agent: c.agent, bind: c.bind})
	st, err := br.seal.open(s)
	if err == nil {
		err = st.check(c.agent, c.bind, now)
	}
	if err != nil {
		panic("gateway bench: the floor's requestState did not open: " + err.Error())
	}
	c.hand = floorHand
}

// capture writes a CPU profile or an execution trace of the process to
// path between the first SIGUSR1 and the second (the benchmark's timed
// loop), then writes path+".done".
func capture(path string, start func(io.Writer) error, stop func()) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1)
	<-sig
	f, err := os.Create(path)
	if err != nil {
		return
	}
	if start(f) != nil {
		f.Close()
		return
	}
	<-sig
	stop()
	f.Close()
	os.WriteFile(path+".done", nil, 0o600)
}
