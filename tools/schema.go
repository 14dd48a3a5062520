package tools

import (
	"encoding/json"

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

// outputSchema sets a tool's output schema, sent compact (see compact).
func outputSchema(s schema) mcp.ToolOption { return mcp.WithRawOutputSchema(mustJSON(compact(s))) }

// compact is an output schema as it is sent in tools/list: its shape (the fields of every
// object, which fields are lists or objects, which of those may be null) and the values
// of its enums. tools/list is read at the start of every conversation (DESIGN: at most
// 12 KiB), a model reads a result's text rather than its schema, and a client that checks
// results against the schema compiles it at every start, so the rest stays here in the
// code for its readers: descriptions, bounds, the types of scalar fields ("graphId": {} is
// sent for a string), and "required" and "additionalProperties", since every field a
// schema lists is always present and no other is (DESIGN, "Result shapes"). The tests hold
// every result to that by validating it against the sent schema made strict: every
// property required, no other allowed.
func compact(s schema) schema {
	return compactAt(s, true)
}

func compactAt(s schema, top bool) schema {
	if _, hasEnum := s["enum"]; !hasEnum && !top && scalar(s["type"]) {
		return schema{}
	}
	out := schema{}
	for k, v := range s {
		if k == "type" && v == "object" && !top && s["properties"] != nil {
			continue
		}
		switch k {
		case "description", "required", "minimum", "maximum":
			continue
		case "additionalProperties":
			if v == false {
				continue
			}
		}
		switch x := v.(type) {
		case schema:
			if k == "properties" {
				props := schema{}
				for name, p := range x {
					props[name] = compactAt(p.(schema), false)
				}
				v = props
			} else if v = compactAt(x, false); k == "items" && len(v.(schema)) == 0 {
				continue // a list of scalars: "items": {} says nothing
			}
		}
		out[k] = v
	}
	return out
}

// Output field types, for the output schemas (compact sends nothing else of them).
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

// scalar reports whether a schema's type is a string, number, integer or boolean, or one of
// them or null.
func scalar(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "string" || t == "integer" || t == "number" || t == "boolean"
	case []any:
		return len(t) == 2 && t[1] == "null" && scalar(t[0])
	}
	return false
}
