package toolschema

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Size is what a tools/list answer costs, in bytes of compact JSON.
type Size struct {
	// Total is the whole answer: what goes over the wire at the start of every
	// conversation, output schemas included.
	Total int
	// Model is what a model reads of it: each tool's name, description and input schema
	// (a client puts those in the model's context; output schemas it keeps to itself).
	Model int
}

// Measure sizes a tools/list answer: the JSON-RPC response or its result
// ({"tools": [...]}), compact or indented (it is measured compact).
func Measure(answer []byte) (Size, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, answer); err != nil {
		return Size{}, fmt.Errorf("toolschema: a tools/list answer that is not JSON: %w", err)
	}
	var msg struct {
		Result *struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		} `json:"result"`
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(buf.Bytes(), &msg); err != nil {
		return Size{}, fmt.Errorf("toolschema: not a tools/list answer: %w", err)
	}
	tools := msg.Tools
	if msg.Result != nil {
		tools = msg.Result.Tools
	}
	if tools == nil {
		return Size{}, fmt.Errorf("toolschema: not a tools/list answer: no tools")
	}
	s := Size{Total: buf.Len()}
	for _, t := range tools {
		s.Model += len(t["name"]) + len(t["description"]) + len(t["inputSchema"])
	}
	return s, nil
}
