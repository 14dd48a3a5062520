package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// decodeArgs refuses what does not fit the arguments with a sentence that names the
// argument by its JSON path and lists every valid name (not just those sent); it takes any
// JSON integer where an integer goes, one past 64 bits saturating.
func TestDecodeArgs(t *testing.T) {
	type inner struct {
		N int64 `json:"n,omitempty"`
	}
	type embedded struct {
		WaitMs *int64 `json:"waitMs,omitempty"`
	}
	type args struct {
		Name  string            `json:"name,omitempty"`
		Items []inner           `json:"items,omitempty"`
		Env   map[string]string `json:"env,omitempty"`
		On    bool              `json:"on,omitempty"`
		embedded
	}
	for _, tc := range []struct {
		in, want string // want: the error, or the decoded args as JSON
	}{
		{`{}`, `{}`},
		{`null`, `{}`},
		{`{"waitMs": 9007199254740992}`, `{"waitMs":9007199254740992}`},
		{`{"waitMs": 9223372036854775807}`, `{"waitMs":9223372036854775807}`},
		{`{"waitMs": 9223372036854775808}`, `{"waitMs":9223372036854775807}`},
		{`{"waitMs": 1e300}`, `{"waitMs":9223372036854775807}`},
		{`{"waitMs": -1e300}`, `{"waitMs":-9223372036854775808}`},
		{`{"waitMs": 2.0}`, `{"waitMs":2}`},
		{`{"waitMs": 1.5}`, `waitMs must be an integer, not the number 1.5`},
		{`{"waitMs": "5"}`, `waitMs must be an integer, not the string "5"`},
		{`{"wait": 5}`, `tool has no argument "wait" (did you mean waitMs?); its arguments are: env, items, name, on, waitMs`},
		{`{"nmae": "x"}`, `tool has no argument "nmae" (did you mean name?); its arguments are: env, items, name, on, waitMs`},
		{`{"zzz": 1}`, `tool has no argument "zzz"; its arguments are: env, items, name, on, waitMs`},
		{`{"items": [{"n": 1}, {"m": 2}]}`, `items[1] has no field "m"; its fields are: n`},
		{`{"items": [{"n": true}]}`, `items[0].n must be an integer, not true`},
		{`{"items": {"n": 1}}`, `items must be an array, not an object`},
		{`{"env": {"A": 1}}`, `env.A must be a string, not the number 1`},
		{`{"on": "yes"}`, `on must be true or false, not the string "yes"`},
		{`[1]`, `the arguments must be a JSON object, not an array`},
		// A member sent twice: the last one, whole, as it was checked; nothing of the
		// first leaks into it.
		{`{"items": [{"n": 1}], "env": {"A": "1"}, "items": [{}], "env": {"B": "2"}}`, `{"items":[{}],"env":{"B":"2"}}`},
		{`{"waitMs": "x", "waitMs": 2}`, `{"waitMs":2}`},
		{`"` + strings.Repeat("x", 200) + `"`, `the arguments must be a JSON object, not the string "xxxx`},
	} {
		req := mcp.CallToolRequest{}
		req.Params.RawArguments = json.RawMessage(tc.in)
		var a args
		err := decodeArgs("tool", req, &a)
		got := ""
		if err != nil {
			got = err.Error()
			if codeOf(err) != codeInvalidArgument {
				t.Errorf("%s: code %s, want INVALID_ARGUMENT", tc.in, codeOf(err))
			}
		} else {
			b, _ := json.Marshal(a)
			got = string(b)
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("decodeArgs(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}

	var none struct{}
	req := mcp.CallToolRequest{}
	req.Params.RawArguments = json.RawMessage(`{"all": true}`)
	if err := decodeArgs("shell_list", req, &none); err == nil || err.Error() != `shell_list takes no arguments, got "all"; call it with {}` {
		t.Errorf("an argument to a tool without any: %v", err)
	}
}

// Errors reach the model as a code and a sentence: the engine's operation names and the
// sentinel's own words ("invalid argument:") are the log's, not the model's.
func TestErrorText(t *testing.T) {
	s := newTestServer(t)
	for _, tc := range []struct {
		tool, want string
		args       map[string]any
	}{
		{"shell_io", `NOT_FOUND: no such session "s9" (open sessions: none); shell_list shows the sessions that exist`, map[string]any{"sessionId": "s9"}},
		{"shell_open", `INVALID_ARGUMENT: give cols and rows together, each 1..1000, got 80x0`, map[string]any{"cols": 80}},
		{"tasks_run", `INVALID_ARGUMENT: tasks is empty`, map[string]any{"tasks": []any{}}},
		{"tasks_status", `NOT_FOUND: no graph "g-x" in this workspace; tasks_list shows`, map[string]any{"graphId": "g-x"}},
	} {
		res := callTool(t, s, tc.tool, tc.args)
		if got := text(res); !res.IsError || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s(%v) = %q, want %q", tc.tool, tc.args, got, tc.want)
		}
	}
}

// TestSetArgAsUnmarshal checks that setArg sets every tool's arguments as writing the
// checked values out and reading them back with json.Unmarshal did: the same value for
// each kind of field (strings of named types, pointers, embedded structs, maps, slices of
// structs, a type that reads its own JSON), into a fresh value and into one that holds
// values already.
func TestSetArgAsUnmarshal(t *testing.T) {
	cases := []struct {
		typ  reflect.Type
		args string
	}{
		{reflect.TypeFor[runArgs](), `{"name":"n","maxParallel":3,"failFast":true,"idempotencyKey":"k","detach":false,"executor":"kubernetes",
			"tasks":[{"id":"a","command":"true","dependsOn":["b","c"],"cwd":"d","env":{"A":"1","B":""},"timeoutSec":9223372036854775807,
			"retries":2,"sandbox":"read-only","network":"off","executor":"local","resources":{"cpu":"500m","memory":"1Gi"}},
			{"id":"b","command":"x","env":null,"dependsOn":[],"resources":null},{"id":"c","command":"y","retries":1e2}]}`},
		{reflect.TypeFor[ioArgs](), `{"sessionId":"s","input":"ls\n","keys":["C-c","Enter"],"since":-3,"end":1e300,"run":"r","paste":true,
			"waitPort":80,"cols":100,"rows":null,"waitFor":"x$","idleMs":5,"timeoutMs":0,"maxBytes":16,"raw":true,"screen":"styled"}`},
		{reflect.TypeFor[ioArgs](), `{"sessionId":"s","screen":true}`},
		{reflect.TypeFor[ioArgs](), `{"sessionId":"s","screen":false,"keys":null}`},
		{reflect.TypeFor[openArgs](), `{"command":"bash","env":{"X":"y"},"integration":true,"sandbox":"off","cols":1,"rows":2,"screen":null}`},
		{reflect.TypeFor[statusArgs](), `{"graphId":"g","taskIds":["a"],"logTail":0,"logLines":3,"logOffset":4,"logLimit":5,"waitMs":6,"until":"change","cursor":"c"}`},
		{reflect.TypeFor[cancelArgs](), `{"graphId":"g","taskIds":["a","b"],"graceMs":100}`},
		{reflect.TypeFor[listArgs](), `{}`},
		{reflect.TypeFor[graphArgs](), `{"graphId":"g"}`},
		{reflect.TypeFor[closeArgs](), `{"sessionId":"s"}`},
		{reflect.TypeFor[shellListArgs](), `{}`},
	}
	// checked is the arguments as checkValue returns them, decoded afresh each time
	// (checkValue changes what it is given).
	checked := func(t *testing.T, typ reflect.Type, args string) any {
		dec := json.NewDecoder(strings.NewReader(args))
		dec.UseNumber()
		var raw any
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		v, err := checkValue(raw, typ, "tool")
		if err != nil {
			t.Fatalf("checkValue: %v", err)
		}
		return v
	}
	// asText sets dst the way decodeArgs did before setArg.
	asText := func(t *testing.T, dst any, v any) {
		text, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(text, dst); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		t.Run(tc.typ.Name(), func(t *testing.T) {
			got, want := reflect.New(tc.typ), reflect.New(tc.typ)
			if err := setArg(got.Elem(), checked(t, tc.typ, tc.args)); err != nil {
				t.Fatalf("setArg: %v", err)
			}
			asText(t, want.Interface(), checked(t, tc.typ, tc.args))
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("\nsetArg         %+v\njson.Unmarshal %+v", got.Elem().Interface(), want.Elem().Interface())
			}
		})
	}
}
