package tools

import (
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// The tools' JSON schemas are written out by hand rather than generated from the args
// structs: the descriptions are the documentation a model reads before every call, so they
// are worth composing, and the output schemas must say exactly which fields may be null.

type schema = map[string]any

// object is an input object. It does not say "additionalProperties": false, though an
// unknown argument is refused: the refusal names the valid ones (args.go), which is what a
// model needs, and tools/list is read in every conversation.
func object(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) schema     { return schema{"type": "string", "description": desc} }
func boolean(desc string) schema { return schema{"type": "boolean", "description": desc} }

// integer is an integer argument; bounds are its minimum and maximum, if given. A minimum
// of 0 goes without saying (tools/list is read in every conversation), and an argument
// clamped to its maximum (milliseconds, bytes) gives none: any larger value is accepted.
func integer(desc string, bounds ...int64) schema {
	s := schema{"type": "integer", "description": desc}
	if len(bounds) > 0 && bounds[0] != 0 {
		s["minimum"] = bounds[0]
	}
	if len(bounds) > 1 {
		s["maximum"] = bounds[1]
	}
	return s
}

func array(desc string, items schema) schema {
	return schema{"type": "array", "description": desc, "items": items}
}

func stringMap(desc string) schema {
	return schema{"type": "object", "description": desc, "additionalProperties": schema{"type": "string"}}
}

// nullable lets a typed schema also be null (for fields that do not apply). An enum must
// list null too: JSON Schema checks "enum" apart from "type", so an enum without null
// refuses a null the type allows, and clients that validate results (the TypeScript SDK)
// then reject the whole result.
func nullable(s schema) schema {
	out := schema{}
	for k, v := range s {
		out[k] = v
	}
	out["type"] = []any{s["type"], "null"}
	if values, ok := s["enum"].([]any); ok {
		out["enum"] = append(values[:len(values):len(values)], nil)
	}
	return out
}

func enum[S ~string](desc string, values ...S) schema {
	list := make([]any, len(values))
	for i, v := range values {
		list[i] = string(v)
	}
	return schema{"type": "string", "description": desc, "enum": list}
}

// bare is a set of properties without their descriptions, for a tool whose description
// says where they are described (shell_open's read arguments are shell_io's).
func bare(props schema) schema {
	out := schema{}
	for name, p := range props {
		q := schema{}
		for k, v := range p.(schema) {
			if k != "description" {
				q[k] = v
			}
		}
		out[name] = q
	}
	return out
}

func mustJSON(s schema) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // the schemas are literals in this package: a failure is a programming error
	}
	return b
}

// inputSchema sets a tool's hand-written input schema. mcp.WithRawInputSchema alone leaves
// NewTool's default structured schema in place too, and such a tool fails to marshal.
func inputSchema(s schema) mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.InputSchema = mcp.ToolInputSchema{}
		t.RawInputSchema = mustJSON(s)
	}
}

// outputSchema sets a tool's output schema. The whole schema, as written here, is the
// contract of the tool's results: their fields and nested shapes, which fields may be
// null, enum values, the types of scalars, descriptions. tools/list sends only the names
// of the result's fields (see sent); the whole schema is kept in contracts, pinned in
// tools/testdata/<tool>.output.json, and the tests hold every result to both.
func outputSchema(s schema) mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.RawOutputSchema = mustJSON(sent(s))
		contracts.Store(t.Name, s)
	}
}

// contracts holds each tool's whole output schema by tool name, as outputSchema was given
// it; the same for every Table (the schemas are literals in this package). Only the tests
// read it: a client gets what sent makes of it.
var contracts sync.Map // string -> schema

// sent is an output schema as tools/list sends it: an object and the names of its fields.
// Every field a schema lists is always present and there is no other (DESIGN, "Result
// shapes"), so the names say what a result holds; the rest stays in the code. Sending it
// costs: tools/list is read at the start of every conversation, and a client that checks
// results against the schemas (the TypeScript SDK, with ajv) compiles each one at every
// start, before it can use the server. The whole schemas took the TypeScript client about
// 12 ms to compile here, the field names about 1.5 ms (bench/startup.mjs).
func sent(s schema) schema {
	fields := schema{}
	for name := range s["properties"].(schema) {
		fields[name] = schema{}
	}
	return schema{"type": "object", "properties": fields}
}

// Output field types, for the output schemas.
var (
	tString = schema{"type": "string"}
	tInt    = schema{"type": "integer"}
	tBool   = schema{"type": "boolean"}
	tIDs    = schema{"type": "array", "items": tString}
)

// props is an output object: its fields, every one always present.
func props(fields schema) schema { return schema{"type": "object", "properties": fields} }

// list is an output array of items.
func list(items schema) schema { return schema{"type": "array", "items": items} }

// sparse leaves out of a tool's annotations the hints that say what a client assumes
// anyway (MCP's defaults: not read-only, not idempotent, open world), and those that mean
// nothing for a read-only tool (destructive, idempotent): mcp.NewTool sets all four, and
// tools/list is read in every conversation. A tool that writes always says whether it
// destroys. What each tool says is pinned by TestTools_Contract and the golden schemas.
func sparse(a mcp.ToolAnnotation) mcp.ToolAnnotation {
	isSet := func(p *bool) bool { return p != nil && *p }
	readOnly := isSet(a.ReadOnlyHint)
	if !readOnly {
		a.ReadOnlyHint = nil
	} else {
		a.DestructiveHint, a.IdempotentHint = nil, nil
	}
	if !isSet(a.IdempotentHint) {
		a.IdempotentHint = nil
	}
	if a.OpenWorldHint != nil && *a.OpenWorldHint {
		a.OpenWorldHint = nil
	}
	return a
}
