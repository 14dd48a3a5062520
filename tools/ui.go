package tools

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/ui"
)

// offerViews offers the MCP Apps views (internal/ui) on the table's server, unless
// Config.NoUI: the resources, and the extension in initialize. The tools are linked to
// them in tools/list (linked). A client without MCP Apps ignores both; the results are
// the same for every client.
func (s *Table) offerViews() {
	if s.cfg.NoUI {
		return
	}
	ui.Register(s.mcp)
	protocol.DeclareExtension(s.mcp, ui.Extension, ui.Settings())
}

// linked is def as tools/list sends it: with _meta.ui.resourceUri naming its view, when
// it has one and views are offered. _meta is not what a model reads (names,
// descriptions, input schemas): a host reads it to know where to show the results.
func (s *Table) linked(def mcp.Tool) mcp.Tool {
	if uri := ui.LinkFor(def.Name); uri != "" && !s.cfg.NoUI {
		def.Meta = ui.ToolMeta(uri)
	}
	return def
}
