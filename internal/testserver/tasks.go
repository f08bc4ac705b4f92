package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The conformance suite's fixtures for the tasks extension
// (io.modelcontextprotocol/tasks, the tasks-* server scenarios): greet
// answers at once; slow_compute, failing_job, protocol_error_job,
// confirm_delete and multi_input run as tasks for a modern client that
// declares the extension (failing_job only so: it is "required");
// test_tool_with_task settles its question as an MRTR round, then becomes
// a task whose result carries the answer.

// maxComputeSeconds bounds slow_compute's sleep.
const maxComputeSeconds = 600

func addTasksConformance(srv *mcp.Server) {
	srv.AddTool(mcp.Tool{Name: "greet", Description: "Greets name at once (never a task).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Name string }
			json.Unmarshal(req.Arguments, &a)
			return textResult("Hello, " + a.Name + "!"), nil
		})
	srv.AddTaskTool(mcp.Tool{Name: "slow_compute", Description: "Sleeps seconds (at most 600), then answers with its label; a task when the client can take one.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}`)}, "optional", false,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct {
				Seconds float64
				Label   string
			}
			json.Unmarshal(req.Arguments, &a)
			d := time.Duration(min(max(a.Seconds, 0), maxComputeSeconds) * float64(time.Second))
			if !sleep(ctx, d) {
				return nil, ctx.Err()
			}
			return textResult(fmt.Sprintf("Computed %q after %gs", a.Label, a.Seconds)), nil
		})
	srv.AddTaskTool(noArgs("failing_job", "Runs as a task only; reports a tool error after a second."), "required", false,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !sleep(ctx, time.Second) {
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("the job failed: its input was rejected")}, IsError: true}, nil
		})
	srv.AddTaskTool(noArgs("protocol_error_job", "Fails with a JSON-RPC internal error (the task fails)."), "optional", false,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "protocol_error_job: the job's worker crashed"}
		})
	srv.AddTaskTool(mcp.Tool{Name: "confirm_delete", Description: "Asks the user to confirm deleting filename (the task waits in input_required).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}}}`)}, "optional", false,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Filename string }
			json.Unmarshal(req.Arguments, &a)
			r, err := req.Session.Elicit(ctx, confirmParams("Delete "+a.Filename+"?"))
			if err != nil {
				return nil, err
			}
			if r.Action != "accept" {
				return textResult("Kept " + a.Filename), nil
			}
			return textResult("Deleted " + a.Filename), nil
		})
	srv.AddTaskTool(noArgs("multi_input", "Asks two questions at once (two inputRequests outstanding)."), "optional", false,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			type answer struct {
				r   *mcp.ElicitResult
				err error
			}
			ch := make(chan answer, 2)
			for _, q := range []string{"First question: your name?", "Second question: confirm?"} {
				go func() {
					r, err := req.Session.Elicit(ctx, confirmParams(q))
					ch <- answer{r, err}
				}()
			}
			n := 0
			for range 2 {
				a := <-ch
				if a.err != nil {
					return nil, a.err
				}
				if a.r.Action == "accept" {
					n++
				}
			}
			return textResult(fmt.Sprintf("Both inputs received (%d accepted)", n)), nil
		})
	srv.AddTaskTool(noArgs("test_tool_with_task", "Asks the user's name (input_required), then becomes a task that greets them."), "required", true,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
			if err != nil {
				return nil, err
			}
			name, _ := r.Content["name"].(string)
			req.StartTask(ctx)
			if !sleep(ctx, 200*time.Millisecond) {
				return nil, ctx.Err()
			}
			return textResult("Hello, " + name + "! (from the task)"), nil
		})
}

func confirmParams(msg string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: msg,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"},"name":{"type":"string"}}}`)}
}
