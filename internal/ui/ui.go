// Package ui holds the MCP Apps views of mcp-harness (the io.modelcontextprotocol/ui
// extension, 2026-01-26): two self-contained HTML pages, embedded in the binary, that a
// host which renders MCP Apps shows beside the tool calls linked to them. graph.html
// draws a task graph (tasks_run, tasks_status, tasks_graph); terminal.html draws a
// terminal session's screen in colour (shell_open, shell_io). Each refreshes itself by
// calling tools through the host (postMessage JSON-RPC), never over the network: the
// host's default content security policy allows no connection, so the pages load
// nothing and fetch nothing. Clients without MCP Apps see the same tools and the same
// text results; they ignore the resources and the tools' _meta.
package ui

import (
	"context"
	_ "embed"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const (
	// Extension is the MCP Apps extension's identifier, declared in initialize.
	Extension = "io.modelcontextprotocol/ui"
	// MIMEType is the type of an MCP App's HTML page.
	MIMEType = "text/html;profile=mcp-app"
	// GraphURI and TerminalURI name the two views.
	GraphURI    = "ui://mcp-harness/graph"
	TerminalURI = "ui://mcp-harness/terminal"
	// MaxViewBytes bounds each page: it is read at the start of a conversation that shows
	// it, and small pages are what keeps them plain (TestViews_Size).
	MaxViewBytes = 64 << 10
)

var (
	//go:embed graph.html
	graphHTML string
	//go:embed terminal.html
	terminalHTML string
)

// View is one of the views: its resource and its page.
type View struct {
	URI, Name, Title, Description string
	HTML                          string
}

// Views are the views the server offers.
func Views() []View {
	return []View{
		{URI: GraphURI, Name: "graph", Title: "Task graph",
			Description: "A task graph drawn by depth, with states, durations and progress; a task's log tail on click; cancel.",
			HTML:        graphHTML},
		{URI: TerminalURI, Name: "terminal", Title: "Terminal",
			Description: "A terminal session's screen with its colours and cursor, refreshed while the program runs.",
			HTML:        terminalHTML},
	}
}

// LinkFor is the view a tool's results are shown in, "" for none.
func LinkFor(tool string) string {
	switch tool {
	case "tasks_run", "tasks_status", "tasks_graph":
		return GraphURI
	case "shell_open", "shell_io":
		return TerminalURI
	}
	return ""
}

// ToolMeta is the _meta a linked tool carries in tools/list.
func ToolMeta(uri string) *mcp.Meta {
	return mcp.NewMetaFromMap(map[string]any{"ui": map[string]any{"resourceUri": uri}})
}

// Register offers the views on s: resources/list and resources/read answer them, and
// initialize declares the resources capability. The extension itself is declared by the
// caller (protocol.DeclareExtension), which keeps the other extensions s declares.
func Register(s *server.MCPServer) {
	server.WithResourceCapabilities(false, false)(s)
	for _, v := range Views() {
		res := mcp.Resource{URI: v.URI, Name: v.Name, Title: v.Title, Description: v.Description, MIMEType: MIMEType}
		contents := mcp.TextResourceContents{URI: v.URI, MIMEType: MIMEType, Text: v.HTML,
			// No connection and no frame source: the pages need none (the default policy).
			Meta: map[string]any{"ui": map[string]any{"prefersBorder": true}}}
		s.AddResource(res, func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{contents}, nil
		})
	}
}

// Settings are the extension's settings in initialize's capabilities.
func Settings() map[string]any {
	return map[string]any{"mimeTypes": []string{MIMEType}}
}
