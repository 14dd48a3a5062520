package toolschema

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcp-harness/mcp-harness/internal/schematest"
)

// color is a named string type with constants, as the engines have (tasks.State).
type color string

const (
	red   color = "red"
	green color = "green"
)

func colors() []color { return []color{red, green} }

// stamp encodes itself, as tasks.Time does.
type stamp struct{ t time.Time }

func (s stamp) MarshalJSON() ([]byte, error) { return json.Marshal(s.t.UTC().Format(time.RFC3339)) }

var derive = New(Enum(colors()), Type[stamp](DateTime()), Text[label]())

// compact is a JSON text without its insignificant spaces, for comparing schemas.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return b.String()
}

func mustInput[T any](t *testing.T) json.RawMessage {
	t.Helper()
	b, err := Input[T](derive)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustOutput[T any](t *testing.T) json.RawMessage {
	t.Helper()
	b, err := Output[T](derive)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type ioArgs struct {
	SessionID string            `json:"sessionId" jsonschema:"From shell_open." toolschema:"required"`
	Cols      *int              `json:"cols,omitempty" jsonschema:"With rows." toolschema:"minimum=1,maximum=1000"`
	IdleMs    *int64            `json:"idleMs,omitempty" jsonschema:"Quiet time that ends the wait." toolschema:"default=300"`
	Keys      []string          `json:"keys,omitempty" jsonschema:"Sent after input."`
	Env       map[string]string `json:"env,omitempty" jsonschema:"Added to the environment."`
	Paint     color             `json:"paint,omitempty" jsonschema:"The colour."`
	Ratio     float64           `json:"ratio,omitempty" jsonschema:"A fraction." toolschema:"minimum=0.5"`
}

// An input schema: optional unless required, pointers not nullable, bounds and defaults
// from the tag, enums from the rule.
func TestInput(t *testing.T) {
	got := string(mustInput[ioArgs](t))
	want := compact(t, `{
		"type": "object",
		"properties": {
			"sessionId": {"type": "string", "description": "From shell_open."},
			"cols": {"type": "integer", "description": "With rows.", "minimum": 1, "maximum": 1000},
			"idleMs": {"type": "integer", "description": "Quiet time that ends the wait.", "default": 300},
			"keys": {"type": "array", "items": {"type": "string"}, "description": "Sent after input."},
			"env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Added to the environment."},
			"paint": {"type": "string", "enum": ["red", "green"], "description": "The colour."},
			"ratio": {"type": "number", "description": "A fraction.", "minimum": 0.5}
		},
		"required": ["sessionId"]
	}`)
	if diff := cmp.Diff(decode(t, want), decode(t, got)); diff != "" {
		t.Errorf("input schema (-want +got):\n%s", diff)
	}
	// Keys sorted, so that golden files are stable.
	if got != compactSorted(t, got) {
		t.Errorf("keys not sorted: %s", got)
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return v
}

func compactSorted(t *testing.T, s string) string {
	b, err := json.Marshal(decode(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type cursor struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

type screen struct {
	Lines  []string `json:"lines"`
	Cursor cursor   `json:"cursor"`
}

type ioResult struct {
	SessionID string   `json:"sessionId" jsonschema:"The session."`
	ExitCode  *int     `json:"exitCode"`
	Reason    color    `json:"reason"`
	Previous  *color   `json:"previous"`
	Screen    *screen  `json:"screen"`
	Ports     []int    `json:"ports"`
	Commands  []string `json:"commands" toolschema:"nullable"`
	Started   stamp    `json:"started"`
	Finished  *stamp   `json:"finished"`
	Note      string   `json:"note,omitempty"`
	Internal  string   `json:"-"`
}

// An output schema: every property required but the omitempty one, pointers and tagged
// fields nullable, a nullable enum listing null, a single occurrence inline.
func TestOutput(t *testing.T) {
	got := string(mustOutput[ioResult](t))
	want := compact(t, `{
		"type": "object",
		"properties": {
			"sessionId": {"type": "string", "description": "The session."},
			"exitCode": {"type": ["integer", "null"]},
			"reason": {"type": "string", "enum": ["red", "green"]},
			"previous": {"type": ["string", "null"], "enum": ["red", "green", null]},
			"screen": {
				"type": ["object", "null"],
				"properties": {
					"lines": {"type": "array", "items": {"type": "string"}},
					"cursor": {
						"type": "object",
						"properties": {"row": {"type": "integer"}, "col": {"type": "integer"}},
						"required": ["row", "col"]
					}
				},
				"required": ["lines", "cursor"]
			},
			"ports": {"type": "array", "items": {"type": "integer"}},
			"commands": {"type": ["array", "null"], "items": {"type": "string"}},
			"started": {"type": "string", "format": "date-time"},
			"finished": {"type": ["string", "null"], "format": "date-time"},
			"note": {"type": "string"}
		},
		"required": ["sessionId", "exitCode", "reason", "previous", "screen", "ports", "commands", "started", "finished"]
	}`)
	if diff := cmp.Diff(decode(t, want), decode(t, got)); diff != "" {
		t.Errorf("output schema (-want +got):\n%s", diff)
	}
}

type progress struct {
	Total int `json:"total"`
	Done  int `json:"done"`
}

type graph struct {
	ID       string    `json:"id"`
	Progress progress  `json:"progress" jsonschema:"Of the graph's tasks."`
	Last     *progress `json:"last"`
}

type listing struct {
	Graphs  []graph  `json:"graphs"`
	Summary progress `json:"summary"`
	Single  cursor   `json:"single"`
}

// A struct type met more than once is written once under $defs; each occurrence refers to
// it, a nullable one through anyOf, a described one with its description beside the $ref.
// A type met once stays in place, even inside a definition.
func TestDefs(t *testing.T) {
	got := string(mustOutput[listing](t))
	want := compact(t, `{
		"type": "object",
		"properties": {
			"graphs": {
				"type": "array",
				"items": {
					"type": "object",
					"properties": {
						"id": {"type": "string"},
						"progress": {"$ref": "#/$defs/progress", "description": "Of the graph's tasks."},
						"last": {"anyOf": [{"$ref": "#/$defs/progress"}, {"type": "null"}]}
					},
					"required": ["id", "progress", "last"]
				}
			},
			"summary": {"$ref": "#/$defs/progress"},
			"single": {
				"type": "object",
				"properties": {"row": {"type": "integer"}, "col": {"type": "integer"}},
				"required": ["row", "col"]
			}
		},
		"required": ["graphs", "summary", "single"],
		"$defs": {
			"progress": {
				"type": "object",
				"properties": {"total": {"type": "integer"}, "done": {"type": "integer"}},
				"required": ["total", "done"]
			}
		}
	}`)
	if diff := cmp.Diff(decode(t, want), decode(t, got)); diff != "" {
		t.Errorf("output schema (-want +got):\n%s", diff)
	}
}

type node struct {
	Name     string `json:"name"`
	Children []node `json:"children"`
}

type forest struct {
	Main  node  `json:"main"`
	Spare *node `json:"spare"`
}

// Cycle in the types: a recursive type goes under $defs, and a document's own type refers
// to the document.
func TestRecursive(t *testing.T) {
	got := string(mustOutput[forest](t))
	want := compact(t, `{
		"type": "object",
		"properties": {
			"main": {"$ref": "#/$defs/node"},
			"spare": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}
		},
		"required": ["main", "spare"],
		"$defs": {
			"node": {
				"type": "object",
				"properties": {
					"name": {"type": "string"},
					"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
				},
				"required": ["name", "children"]
			}
		}
	}`)
	if diff := cmp.Diff(decode(t, want), decode(t, got)); diff != "" {
		t.Errorf("forest (-want +got):\n%s", diff)
	}
	got = string(mustOutput[node](t))
	if !strings.Contains(got, `"items":{"$ref":"#"}`) {
		t.Errorf("node: its children do not refer to the document: %s", got)
	}
	validate(t, compile(t, got), node{Name: "a", Children: []node{{Name: "b", Children: []node{}}}})
}

// Cookie shares its name with net/http's: both are qualified by their package.
type Cookie struct {
	Flavour string `json:"flavour"`
}

type jar struct {
	A, B Cookie
	C, D http.Cookie
}

func TestDefNames(t *testing.T) {
	s, err := derive.OutputFor(reflect.TypeFor[jar]())
	if err != nil {
		t.Fatal(err)
	}
	defs := slices.Sorted(maps.Keys(s["$defs"].(map[string]any)))
	if want := []string{"http.Cookie", "toolschema.Cookie"}; !slices.Equal(defs, want) {
		t.Errorf("$defs %v, want %v", defs, want)
	}
}

// everything is a result with one field of each kind the package handles.
type everything struct {
	Name     string            `json:"name"`
	Count    *int              `json:"count"`
	Ratio    float64           `json:"ratio"`
	OK       bool              `json:"ok"`
	Tags     []string          `json:"tags"`
	Extra    []string          `json:"extra" toolschema:"nullable"`
	Env      map[string]string `json:"env"`
	ByID     map[int]bool      `json:"byId"`
	Colour   color             `json:"colour"`
	Maybe    *color            `json:"maybe"`
	Colours  []color           `json:"colours"`
	At       time.Time         `json:"at"`
	When     *time.Time        `json:"when"`
	Stamp    stamp             `json:"stamp"`
	Raw      json.RawMessage   `json:"raw"`
	Data     []byte            `json:"data"`
	Any      any               `json:"any"`
	Pair     [2]int            `json:"pair"`
	Start    cursor            `json:"start"`
	End      *cursor           `json:"end"`
	Graphs   []graph           `json:"graphs"`
	Skipped  string            `json:"-"`
	Optional int               `json:"optional,omitempty"`
	Anon     struct {
		Depth int `json:"depth"`
	} `json:"anon"`
	embeddedPart
	*Pointed
}

type embeddedPart struct {
	Part string `json:"part"`
}

type Pointed struct {
	Through string `json:"through"`
}

func sample() everything {
	one := 1
	blue := green
	when := time.Date(2026, 12, 1, 22, 30, 0, 0, time.UTC)
	v := everything{
		Name: "n", Count: &one, Ratio: 0.5, OK: true, Tags: []string{"a"}, Extra: nil,
		Env: map[string]string{"A": "1"}, ByID: map[int]bool{3: true}, Colour: red, Maybe: &blue,
		Colours: []color{green, red}, At: when, When: nil, Stamp: stamp{when},
		Raw: json.RawMessage(`{"x":[1,null]}`), Data: []byte("bytes"), Any: []any{1, "x"},
		Pair: [2]int{1, 2}, Start: cursor{1, 2}, End: nil,
		Graphs:  []graph{{ID: "g", Progress: progress{2, 1}, Last: &progress{1, 0}}, {ID: "h"}},
		Skipped: "never sent", embeddedPart: embeddedPart{"p"}, Pointed: &Pointed{"t"},
	}
	v.Anon.Depth = 3
	return v
}

func compile(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // date-time is checked, not only noted
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatalf("the derived schema does not compile: %v\n%s", err, schema)
	}
	return s
}

func instance(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func validate(t *testing.T, s *jsonschema.Schema, v any) {
	t.Helper()
	if err := s.Validate(instance(t, v)); err != nil {
		t.Errorf("%#v\ndoes not validate: %v", v, err)
	}
}

// What encoding/json writes of a value validates against the schema derived from its
// type, and the values the schema does not allow are refused.
func TestValuesValidate(t *testing.T) {
	s := compile(t, string(mustOutput[everything](t)))
	validate(t, s, sample())
	validate(t, s, everything{Tags: []string{}, Env: map[string]string{}, ByID: map[int]bool{},
		Colour: green, Colours: []color{}, Data: []byte{}, Graphs: []graph{}, Pointed: &Pointed{}})

	bad := map[string]func(m map[string]any){
		"an enum value not listed":       func(m map[string]any) { m["colour"] = "blue" },
		"an enum item not listed":        func(m map[string]any) { m["colours"] = []any{"red", "blue"} },
		"a nullable enum value unlisted": func(m map[string]any) { m["maybe"] = "blue" },
		"null where not nullable":        func(m map[string]any) { m["name"] = nil },
		"null for a plain enum":          func(m map[string]any) { m["colour"] = nil },
		"null for a slice not nullable":  func(m map[string]any) { m["tags"] = nil },
		"null for an inline object":      func(m map[string]any) { m["start"] = nil },
		"null for a $ref":                func(m map[string]any) { m["graphs"].([]any)[0].(map[string]any)["progress"] = nil },
		"a required property missing":    func(m map[string]any) { delete(m, "exitCode"); delete(m, "count") },
		"missing in a nested object":     func(m map[string]any) { delete(m["start"].(map[string]any), "row") },
		"missing in a $defs object": func(m map[string]any) {
			delete(m["graphs"].([]any)[0].(map[string]any)["last"].(map[string]any), "total")
		},
		"missing, promoted by embedding": func(m map[string]any) { delete(m, "part") },
		"a string for an integer":        func(m map[string]any) { m["pair"] = []any{"1", 2} },
		"too many items in an array":     func(m map[string]any) { m["pair"] = []any{1, 2, 3} },
		"not a date-time":                func(m map[string]any) { m["at"] = "yesterday" },
		"a number for a map value":       func(m map[string]any) { m["env"] = map[string]any{"A": 1} },
	}
	for name, spoil := range bad {
		m := instance(t, sample()).(map[string]any)
		spoil(m)
		if err := s.Validate(m); err == nil {
			t.Errorf("%s: validates", name)
		}
	}

	// Left out by Marshal, so not required: omitempty, and fields behind a nil embedded
	// pointer.
	v := sample()
	v.Optional, v.Pointed = 0, nil
	validate(t, s, v)
}

// The values a tool decodes its arguments into validate as well: an input schema allows
// what the arguments allow.
func TestInputValidates(t *testing.T) {
	s := compile(t, string(mustInput[ioArgs](t)))
	cols := 80
	validate(t, s, ioArgs{SessionID: "s", Cols: &cols, Keys: []string{"Enter"}, Paint: red})
	for name, args := range map[string]string{
		"sessionId missing":  `{"cols": 80}`,
		"cols below minimum": `{"sessionId": "s", "cols": 0}`,
		"cols above maximum": `{"sessionId": "s", "cols": 1001}`,
		"an unknown colour":  `{"sessionId": "s", "paint": "blue"}`,
	} {
		if err := s.Validate(decode(t, args)); err == nil {
			t.Errorf("%s: %s validates", name, args)
		}
	}
}

type A struct {
	Name  string
	Shown int `json:"shown"`
}

type B struct {
	Name  string
	Shown int
}

type hidden struct {
	Exported string `json:"exported"`
}

type C struct {
	Name string `json:"Name"`
}

// conflicts exercises encoding/json's rules: Name at depth one cancels out between A and
// B, but C's tagged Name would win at its depth; the outer Shown hides the embedded ones;
// an unexported embedded struct promotes its exported fields; a tag name encoding/json
// refuses leaves the Go name; a struct embedded twice at one depth cancels out.
type conflicts struct {
	A
	B
	Shown string `json:"shown"`
	hidden
	//lint:ignore SA5008 the tag is one encoding/json refuses, on purpose: the test is what it does then
	Weird  string `json:"a\"b"`
	Tagged A      `json:"tagged"`
	Twice  struct {
		Left  struct{ P }
		Right struct{ P }
	} `json:"twice"`
	inner
}

type P struct{ Q int }

type inner struct {
	C
}

// The properties of a derived schema are the keys encoding/json writes.
func TestFieldsAsEncodingJSON(t *testing.T) {
	for _, v := range []any{conflicts{}, sample(), ioResult{Note: "set"}, struct {
		Twice1, Twice2 struct{ P }
		P
	}{}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var written map[string]any
		json.Unmarshal(b, &written)
		s, err := derive.OutputFor(reflect.TypeOf(v))
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(maps.Keys(s["properties"].(map[string]any)))
		want := slices.Sorted(maps.Keys(written))
		if ev, ok := v.(everything); ok && ev.Optional == 0 {
			want = append(want, "optional") // left out by omitempty
			slices.Sort(want)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%T: properties %v, encoding/json writes %v", v, got, want)
		}
	}
}

type undescribed struct {
	SessionID string `json:"sessionId" jsonschema:"From shell_open."`
	Cols      *int   `json:"cols,omitempty"`
	Tasks     []struct {
		ID      string `json:"id" jsonschema:"The task."`
		Command string `json:"command"`
	} `json:"tasks" jsonschema:"The tasks."`
}

type wrong struct {
	Stamp2 struct{ T selfEncoding } `json:"stamp2"`
	Typo   int                      `json:"typo" toolschema:"minimun=1"`
	Bound  string                   `json:"bound" toolschema:"maximum=3"`
	Keyed  map[cursor]int           `json:"keyed"`
	Ch     chan int                 `json:"ch"`
	Both   *int                     `json:"both,omitempty" toolschema:"required"`
	AsText int                      `json:"asText,string"`
	Word   word                     `json:"word"`
	Label  label                    `json:"label"`
}

// word is a named string type without a rule, label one with Text.
type (
	word  string
	label string
)

type selfEncoding struct{}

func (*selfEncoding) MarshalJSON() ([]byte, error) { return []byte(`7`), nil }

// A declaration cannot forget what the schema needs: an argument without a description,
// a type that encodes itself without a rule, a misspelt option are errors that name
// where they are.
func TestProblems(t *testing.T) {
	_, err := Input[undescribed](derive)
	if err == nil {
		t.Fatal("arguments without descriptions derive")
	}
	for _, want := range []string{"cols: no description", "tasks[].command: no description"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "sessionId") || strings.Contains(err.Error(), "tasks[].id") {
		t.Errorf("error %q names a described argument", err)
	}
	// Results need no descriptions.
	if _, err := Output[undescribed](derive); err != nil {
		t.Errorf("results without descriptions: %v", err)
	}

	_, err = Output[wrong](derive)
	if err == nil {
		t.Fatal("wrong derives")
	}
	for _, want := range []string{
		"stamp2.T: toolschema.selfEncoding has its own MarshalJSON",
		`typo: toolschema tag "minimun=1": unknown option`,
		"bound: minimum and maximum are for numbers",
		"keyed: a map keyed by toolschema.cursor",
		"ch: chan int has no JSON encoding",
		"both: tagged required, but Marshal may leave it out",
		`asText: the ",string" option`,
		"word: toolschema.word is a named string type",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}

	if strings.Contains(err.Error(), "label") {
		t.Errorf("a named string type with a Text rule is refused: %v", err)
	}

	if _, err := Output[[]int](derive); err == nil {
		t.Error("a slice derives as a tool's results")
	}
}

// Every tool's schemas come from one Deriver used by many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	done := make(chan string)
	for range 4 {
		go func() {
			b, err := Output[everything](derive)
			if err != nil {
				done <- err.Error()
				return
			}
			done <- string(b)
		}()
	}
	first := <-done
	for range 3 {
		if got := <-done; got != first {
			t.Errorf("derivations differ:\n%s\n%s", first, got)
		}
	}
}

func TestRules(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("two rules for one type do not panic")
		}
	}()
	New(Enum(colors()), Enum([]color{red}))
}

// The tests of the tools hold results to their schemas made strict (every property
// required, no other allowed); that works through $defs, $ref and anyOf too.
func TestStrict(t *testing.T) {
	s, err := schematest.Compile("everything", mustOutput[everything](t))
	if err != nil {
		t.Fatal(err)
	}
	v := sample()
	v.Optional = 1 // strict requires even what omitempty may leave out (DESIGN has no omitempty)
	if err := schematest.Validate(s, v); err != nil {
		t.Errorf("sample: %v", err)
	}
	m := instance(t, v).(map[string]any)
	m["graphs"].([]any)[0].(map[string]any)["last"].(map[string]any)["extra"] = 1
	if err := s.Validate(m); err == nil {
		t.Error("a property not in a $defs object validates strictly")
	}
}
