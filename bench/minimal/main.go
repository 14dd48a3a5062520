// Command minimal is the floor of the start-up benchmark (bench/startup.mjs): the least a
// Go stdio MCP server does before a client has its tool list. It is built on the official
// Go SDK, answers initialize and tools/list with one tool that has an input schema and no
// output schema, and opens nothing: what mcp-harness takes beyond it is its own start
// (its libraries' init, the workspace and store, its tools' schemas).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to send back"`
}

func main() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "minimal", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Send the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
}
