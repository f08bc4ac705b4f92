// Package stdio runs a local MCP server as a subprocess and speaks
// newline-delimited JSON-RPC with it over stdin and stdout. It implements
// mcp.Conn.
//
// Local servers are arbitrary programs (npx packages, Python scripts) that the
// host launches on the user's behalf, so the transport assumes they may be
// careless or hostile and guarantees the following:
//
//   - Secrets stay in the host. The child gets only SafeEnvKeys, the
//     variables named in EnvPassthrough, and explicit Env values; API keys and
//     tokens in the host environment never reach it.
//   - What runs is what the user configured. The command is resolved against
//     the PATH the child will see (PATHEXT-aware on Windows), never against
//     the current directory, and failures say which PATH was searched.
//   - No process outlives its session. The server runs in its own process
//     group (a job object on Windows); Close escalates from stdin EOF to
//     SIGTERM to SIGKILL of the whole group and always reaps; when the
//     server exits on its own, whatever it spawned is killed with it; on
//     Linux the kernel kills the server if the host dies.
//   - A server cannot exhaust host memory or hang the host. Frames are
//     capped (mcp.MaxFrameSize by default) and an oversized one ends the
//     session as soon as it is detected; stderr is drained continuously so the
//     child never blocks on it, and only bounded tails of it are kept; writes
//     to a server that stopped reading honour the caller's context.
//   - Failures explain themselves. A server that dies yields an *ExitError
//     with its exit code or signal and the last lines of stderr, and a server
//     that cannot start yields a *StartError classified for the diagnostics
//     layer. Servers that log to stdout are tolerated: non-JSON lines are
//     skipped, logged a few times, and kept for the error report.
//
// Conn is an mcp.DirectReader: a caller reads its own reply. On Linux the
// server's stdout stays out of the runtime's network poller (see
// internal/pollpipe), and a caller expecting its reply waits for it in
// ppoll(2) for up to pollpipe.Window (at most GOMAXPROCS-1 at once), so
// the kernel wakes that thread alone; longer waits go through the poller
// and hold no thread.
package stdio
