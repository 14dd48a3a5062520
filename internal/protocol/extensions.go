package protocol

import (
	"maps"
	"runtime"
	"sync"
	"weak"

	"github.com/mark3labs/mcp-go/server"
)

// mcp-go keeps one map of the extensions a server declares in initialize
// (server.WithExtensions), and each call replaces it: the Tasks extension (declared here
// when a session or the HTTP transport is made) and MCP Apps (declared by the tool table)
// would each drop the other. DeclareExtension adds one and keeps the rest, remembering
// what each server declared; the memory goes with the server (a weak key, dropped when
// the server is collected), so the many servers tests make do not pile up.
var (
	extMu    sync.Mutex
	declared = map[weak.Pointer[server.MCPServer]]map[string]any{}
)

// DeclareExtension adds extension name, with its settings, to those s declares in its
// initialize answer (capabilities.extensions). Call it before s serves anything.
func DeclareExtension(s *server.MCPServer, name string, settings any) {
	key := weak.Make(s)
	extMu.Lock()
	defer extMu.Unlock()
	exts, ok := declared[key]
	if !ok {
		runtime.AddCleanup(s, func(k weak.Pointer[server.MCPServer]) {
			extMu.Lock()
			delete(declared, k)
			extMu.Unlock()
		}, key)
	}
	// A new map each time: the one mcp-go holds may be read by an initialize already.
	exts = maps.Clone(exts)
	if exts == nil {
		exts = map[string]any{}
	}
	exts[name] = settings
	declared[key] = exts
	server.WithExtensions(exts)(s)
}
