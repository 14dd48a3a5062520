package tools

import "github.com/mark3labs/mcp-go/server"

// registry is the one list of the tools this server offers: every tool is added here.
func (s *Table) registry() []server.ServerTool {
	return append(s.shellTools(), s.taskTools()...)
}
