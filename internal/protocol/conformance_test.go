package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The conformance cases in testdata/*.txtar are request lines in and response lines out,
// for a server whose one tool, echo, answers its text: what the session does on the wire,
// read as data. A case has an "in" section (the client's lines, sent in order, then the
// end of input) and an "out" section (every line written, in any order: calls run side by
// side). A line of in may be just "<oversized>", a message over MaxLineBytes.
func TestConformance(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			sections := readTxtar(t, file)
			in := strings.ReplaceAll(sections["in"], "<oversized>\n",
				`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+strings.Repeat("x", MaxLineBytes)+`"}}}`+"\n")
			mcpServer := server.NewMCPServer("conformance", "1", server.WithToolCapabilities(false))
			mcpServer.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(req.GetString("text", "")), nil
			})
			var out bytes.Buffer
			s := New(t.Context(), Config{MCP: mcpServer}, &out)
			if err := ServeStdio(t.Context(), s, strings.NewReader(in)); err != nil {
				t.Fatalf("ServeStdio = %v", err)
			}
			got, want := canonical(t, out.String()), canonical(t, sections["out"])
			if !slices.Equal(got, want) {
				t.Errorf("wrote (sorted):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// readTxtar reads a txtar file's sections: "-- name --" lines start them.
func readTxtar(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	name := ""
	for line := range strings.Lines(string(b)) {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") {
			name = strings.TrimSuffix(strings.TrimPrefix(trimmed, "-- "), " --")
			continue
		}
		if name != "" {
			sections[name] += line
		}
	}
	return sections
}

// canonical is each JSON line of s re-encoded (keys sorted, numbers as written), sorted,
// blank lines left out.
func canonical(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(s) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		// Numbers are kept as written: an id must come back as it was sent.
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}
