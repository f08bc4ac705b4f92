// Command relay starts the command named by its arguments and relays
// lines between it and its own stdin and stdout, both ways, doing nothing
// else: the least a stdio MCP proxy can do. The gateway benchmark measures
// `nexus serve` against it, so that what the second process in the chain
// costs on this machine (its wake-ups, its pipe, the scheduler putting
// three processes on few cores) is measured apart from the gateway's own
// work. With --listen ADDR it is the same for streamable HTTP: each POST's
// message goes to the command as a line and its answer comes back as the
// reply, the floor of `nexus serve --listen`.
package main
