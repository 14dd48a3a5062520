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

// FuzzScannedReads checks the readers that scan a message rather than decode it
// (readMessage, members, toolCallOf) against encoding/json decoding the same text into
// the same shapes, on every input: valid JSON or not, an object or not.
func FuzzScannedReads(f *testing.F) {
	for _, s := range spanSeeds {
		f.Add(s)
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tasks_run","arguments":{"tasks":[]}}}`,
		`{"METHOD":"a","method":"b","Params":{"NAME":"x","name":"y","Arguments":null}}`,
		`{"method":5}`,
		`{"method":null,"result":{}}`,
		`{"name":7,"arguments":{}}`,
		`{"name":"x","arguments":[1]} `,
		`{"a":1,"a":2}`,
		`not json`,
		``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		raw := []byte(msg)
		var want rpcMessage
		wantOK := json.Unmarshal(raw, &want) == nil
		got, ok := readMessage(raw)
		if ok != wantOK || ok && (got.Method != want.Method || !sameRaw(got.ID, want.ID) || !sameRaw(got.Params, want.Params) || !sameRaw(got.Result, want.Result)) {
			t.Errorf("readMessage(%q) = %+v, %v; json.Unmarshal gives %+v, %v", msg, got, ok, want, wantOK)
		}
		if !json.Valid(raw) {
			return // members and toolCallOf read only what readMessage accepted
		}
		var wantMembers map[string]json.RawMessage
		if json.Unmarshal(raw, &wantMembers) != nil {
			wantMembers = nil
		}
		gotMembers := members(raw)
		if (gotMembers == nil) != (wantMembers == nil) || len(gotMembers) != len(wantMembers) {
			t.Fatalf("members(%q) = %q; json.Unmarshal gives %q", msg, gotMembers, wantMembers)
		}
		for k, v := range wantMembers {
			if !sameRaw(gotMembers[k], v) {
				t.Errorf("members(%q)[%q] = %q; json.Unmarshal gives %q", msg, k, gotMembers[k], v)
			}
		}
		var wantCall toolCall
		if json.Unmarshal(raw, &wantCall) != nil {
			wantCall = toolCall{}
		}
		gotCall := toolCallOf(raw)
		if gotCall.Name != wantCall.Name || !sameRaw(gotCall.Arguments, wantCall.Arguments) || !sameRaw(gotCall.Meta, wantCall.Meta) {
			t.Errorf("toolCallOf(%q) = %+v; json.Unmarshal gives %+v", msg, gotCall, wantCall)
		}
		if isObject(raw) != (wantMembers != nil) {
			t.Errorf("isObject(%q) = %v", msg, isObject(raw))
		}
	})
}

// sameRaw compares raw values as json.RawMessage holds them: nil and empty alike.
func sameRaw(a, b json.RawMessage) bool { return bytes.Equal(a, b) }
