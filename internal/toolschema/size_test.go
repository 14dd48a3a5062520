package toolschema

import "testing"

// Measure counts compact bytes whether it gets the response or its result, indented or
// not, and refuses what is not a tools/list answer.
func TestMeasure(t *testing.T) {
	result := `{"tools": [
		{"name": "a", "description": "Ab.", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
		{"name": "b", "inputSchema": {"type": "object"}}
	]}`
	compactResult := `{"tools":[{"name":"a","description":"Ab.","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"}}]}`
	model := len(`"a"`+`"Ab."`+`{"type":"object"}`) + len(`"b"`+`{"type":"object"}`)
	for _, answer := range []string{result, `{"jsonrpc": "2.0", "id": 1, "result": ` + result + `}`} {
		got, err := Measure([]byte(answer))
		if err != nil {
			t.Fatal(err)
		}
		total := len(compactResult)
		if answer != result {
			total += len(`{"jsonrpc":"2.0","id":1,"result":}`)
		}
		if want := (Size{Total: total, Model: model}); got != want {
			t.Errorf("Measure(%s) = %+v, want %+v", answer, got, want)
		}
	}
	for _, bad := range []string{`{"tools": `, `{"id": 1}`, `[]`} {
		if _, err := Measure([]byte(bad)); err == nil {
			t.Errorf("Measure(%s) succeeds", bad)
		}
	}
}
