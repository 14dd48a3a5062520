package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// handler is what a tool does once its arguments are decoded: call one engine method and
// shape the result. An error it returns becomes a coded tool result (see toolError).
type handler[A any] func(ctx context.Context, req mcp.CallToolRequest, args A) (*mcp.CallToolResult, error)

// bind makes a ServerTool of a tool's definition and its handler, the name said once: the
// arguments are decoded into A (an unknown argument is refused with the list of valid
// ones) before the handler runs, and any error, from decoding or from the handler, is
// answered as an isError result that starts with its stable code and is logged under the
// tool's name. A call that comes while the server still opens its store waits for it
// (Table.ready); if that open found the database locked by another process, the call
// answers BUSY and the next one opens it again (Table.openFailure). Every result is
// bounded by --max-result on its way out (budget.go). Each tool has one constructor that
// returns bind(...): its schema, annotations and handler side by side.
func bind[A any](s *Table, tool mcp.Tool, h handler[A]) server.ServerTool {
	name := tool.Name
	tool.Annotations = sparse(tool.Annotations)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := s.ready(ctx); err != nil {
			return s.openFailure(name, err), nil
		}
		var args A
		if err := decodeArgs(name, req, &args); err != nil {
			return s.toolError(name, err), nil
		}
		res, err := h(ctx, req, args)
		if err != nil {
			return s.toolError(name, err), nil
		}
		return s.bound(name, res), nil
	}}
}
