package tools

import (
	"encoding/json"
	"regexp"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
	"github.com/mcp-harness/mcp-harness/internal/schematest"
)

// compiled caches the strict form of each output schema, sent or whole, by its text.
var compiled sync.Map // string -> *jsonschema.Schema

// checkResult holds every tool result a test receives to the contract, so that no test
// has to remember to and no new field can drift: its text and its structuredContent (as
// JSON) fit the server's --max-result; a successful result's structuredContent validates
// against the output schema the tool sends, the whole contract of its results, made
// strict (every field present, no other); and an error's text is a code and a sentence with no Go names in it.
func checkResult(t testing.TB, s *testServer, name string, res *mcp.CallToolResult) {
	t.Helper()
	limit := s.maxResult()
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok && len(tc.Text) > limit {
			t.Errorf("%s: text is %d bytes, over --max-result %d", name, len(tc.Text), limit)
		}
	}
	if res.StructuredContent != nil {
		if n := jsonsize.Of(res.StructuredContent); n > limit {
			t.Errorf("%s: structuredContent is %d bytes, over --max-result %d", name, n, limit)
		}
	}
	if res.IsError {
		if got := text(res); !errorShape.MatchString(got) || goName.MatchString(got) {
			t.Errorf("%s: error text %q: want CODE: a sentence, without Go names", name, got)
		}
		return
	}
	if res.StructuredContent == nil {
		t.Errorf("%s: a successful result without structuredContent", name)
		return
	}
	if err := schematest.Validate(outputSchemaOf(t, s, name), res.StructuredContent); err != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if len(b) > 2000 {
			b = append(b[:2000], "..."...)
		}
		t.Errorf("%s: structuredContent does not match the output schema it sends: %v\n%s", name, err, b)
	}
}

var (
	errorShape = regexp.MustCompile(`^[A-Z_]+: \S`)
	// goName matches what leaked of Go into error texts before: an operation ("pty.IO:"),
	// a struct field path ("readArgs.timeoutMs"), the sentinel's words after the code.
	goName = regexp.MustCompile(`\b(pty|tasks|store|tools)\.[A-Z]\w*|[a-z]+Args\.|^[A-Z_]+: invalid argument:|^[A-Z_]+: limit exceeded:`)
)

// outputSchemaOf compiles the strict form of the output schema tool sends.
func outputSchemaOf(t testing.TB, s *testServer, tool string) *jsonschema.Schema {
	t.Helper()
	for _, st := range s.registry() {
		if st.Tool.Name != tool {
			continue
		}
		return compileOnce(t, tool, string(st.Tool.RawOutputSchema))
	}
	t.Fatalf("no tool %s", tool)
	return nil
}

// compileOnce compiles the strict form of tool's schema raw, once per distinct schema.
func compileOnce(t testing.TB, tool, raw string) *jsonschema.Schema {
	t.Helper()
	if sch, ok := compiled.Load(raw); ok {
		return sch.(*jsonschema.Schema)
	}
	sch, err := schematest.Compile(tool, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	compiled.Store(raw, sch)
	return sch
}
