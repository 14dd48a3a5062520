// Package schematest checks tool results against the output schemas the server sends,
// with a real JSON Schema validator (santhosh-tekuri/jsonschema, draft 2020-12), for the
// tests of tools (in process) and of the binary (end to end). Only tests import it.
//
// A result is held to more than a sent schema says. The server sends each tool's whole
// output schema (nested shapes, which fields may be null, enums, types), derived from the
// result's Go type and pinned in tools/testdata. The contract is stricter still (DESIGN,
// "Result shapes"): every field a schema lists is always present, and there is no other.
// So Compile makes a schema strict first, and a field added to a result but not to its
// schema, or one left out, fails the test that meets it.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile compiles a tool's output schema (as tools/list sends it, or whole), made strict.
func Compile(tool string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("output schema of %s: %w", tool, err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("output schema of %s is not an object", tool)
	}
	url := "mem://" + tool + ".json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, Strict(m)); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Strict returns a copy of schema in which every object schema with properties requires
// all of them and allows no other.
func Strict(schema map[string]any) map[string]any {
	out := make(map[string]any, len(schema)+2)
	for k, v := range schema {
		out[k] = strictValue(k, v)
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		names := make([]any, 0, len(props))
		for _, name := range slices.Sorted(maps.Keys(props)) {
			names = append(names, name)
		}
		out["required"] = names
		if _, set := schema["additionalProperties"]; !set {
			out["additionalProperties"] = false
		}
	}
	return out
}

func strictValue(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if key == "properties" {
			props := make(map[string]any, len(x))
			for name, p := range x {
				props[name] = strictIfSchema(p)
			}
			return props
		}
		return Strict(x)
	case []any:
		if key == "enum" {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = strictIfSchema(e)
		}
		return out
	}
	return v
}

// strictIfSchema is Strict of v when v is a schema (an object), and v itself otherwise: a
// property or a list entry that is not an object (true, false) has nothing to tighten.
func strictIfSchema(v any) any {
	if m, ok := v.(map[string]any); ok {
		return Strict(m)
	}
	return v
}

// Validate checks a result's structuredContent, as the Go value the server or a client
// decoded, against a compiled schema.
func Validate(sch *jsonschema.Schema, structured any) error {
	b, err := json.Marshal(structured)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%#v", err) // every failed keyword and where, not just the first line
	}
	return nil
}
