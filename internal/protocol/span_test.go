package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

// decodedSpan is memberSpan as a decoder finds it: the reference the scanner must agree
// with on every valid JSON object.
func decodedSpan(msg []byte, match func(string) bool) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	start, end = -1, -1
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		name, _ := t.(string)
		var value json.RawMessage
		if dec.Decode(&value) != nil {
			return 0, 0, false
		}
		if match(name) {
			end = int(dec.InputOffset())
			start = end - len(value)
		}
	}
	return start, end, start >= 0
}

var spanSeeds = []string{
	`{"id":1}`,
	` { "jsonrpc" : "2.0" , "id" : "a\"}b" , "method":"x"} `,
	`{"ID":7,"id":8}`,
	`{"\u0069d":[1,{"id":2}],"x":"}"}`,
	`{"params":{"name":"tasks_run","arguments":{"tasks":[{"id":"t0","command":"echo \"{[\\\\\"; true"}]},"_meta":{"progressToken":12345678901234567890}}}`,
	`{"params":{"_META":{"progressToken":"tok","progresstoken":1}}}`,
	`{}`,
	`{"id":null,"a":true,"b":false,"c":-1.5e+10}`,
	"{\n\t\"id\"\r\n:\n\"x\"\n}",
	`{"é":1,"id":"ü\u00fc"}`,
	`[1,2]`,
	`"id"`,
	`{"a":{"b":{"c":[[[]]]}},"id":{}}`,
}

func FuzzMemberSpan(f *testing.F) {
	for _, s := range spanSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if !json.Valid([]byte(msg)) {
			return // every caller's line was decoded whole first
		}
		for _, match := range []struct {
			name string
			fn   func(string) bool
		}{{"id", folded("id")}, {"params", exactly("params")}, {"_meta", folded("_meta")}, {"progressToken", exactly("progressToken")}} {
			s, e, ok := memberSpan([]byte(msg), match.fn)
			ws, we, wok := decodedSpan([]byte(msg), match.fn)
			if ok != wok || ok && (s != ws || e != we) {
				t.Errorf("memberSpan(%q, %s) = %d, %d, %v; a decoder finds %d, %d, %v", msg, match.name, s, e, ok, ws, we, wok)
			}
		}
	})
}
