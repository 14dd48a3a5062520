package tools

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// The tools' JSON schemas are written out by hand rather than generated from the args
// structs: the descriptions are the documentation a model reads before every call, so they
// are worth composing, and the output schemas must say exactly which fields may be null.

type schema = map[string]any

func object(props schema, required ...string) schema {
	if required == nil {
		required = []string{}
	}
	return schema{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func str(desc string) schema     { return schema{"type": "string", "description": desc} }
func boolean(desc string) schema { return schema{"type": "boolean", "description": desc} }

func integer(desc string, min int64, max ...int64) schema {
	s := schema{"type": "integer", "description": desc, "minimum": min}
	if len(max) > 0 {
		s["maximum"] = max[0]
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

// outputSchema sets a tool's hand-written output schema.
func outputSchema(s schema) mcp.ToolOption { return mcp.WithRawOutputSchema(mustJSON(s)) }
