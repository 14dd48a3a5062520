package toolschema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Rule gives the schema of one Go type that walking the type cannot find: a named string
// type whose values are a fixed set of constants (Enum), or a type that encodes itself
// (Type). A Deriver uses a rule wherever its type occurs.
type Rule struct {
	t      reflect.Type
	schema map[string]any
}

// Enum is the rule for a named string type whose values are exactly values, in that
// order (the order the schema lists them). The engines export such lists (for example
// func Reasons() []Reason), so that a constant added there is in the schema too. Where
// the type may be null (an output pointer, a nullable field), the enum lists null as
// well: JSON Schema checks "enum" apart from "type", and an enum without null refuses the
// null the type allows.
func Enum[S ~string](values []S) Rule {
	if len(values) == 0 {
		panic(fmt.Sprintf("toolschema: the enum of %v has no values", reflect.TypeFor[S]()))
	}
	list := make([]any, len(values))
	for i, v := range values {
		list[i] = string(v)
	}
	return Rule{t: reflect.TypeFor[S](), schema: map[string]any{"type": "string", "enum": list}}
}

// Text is the rule for a named string type whose values are any text rather than a set
// of constants (a Deriver refuses a named string type without a rule, so that an enum
// cannot be forgotten).
func Text[S ~string]() Rule {
	return Rule{t: reflect.TypeFor[S](), schema: map[string]any{"type": "string"}}
}

// Type is the rule for a type whose values encode as schema says, for a type with its own
// MarshalJSON (a walk of its fields would describe the wrong thing, so a Deriver refuses
// such a type without a rule). schema is copied.
func Type[T any](schema map[string]any) Rule {
	return Rule{t: reflect.TypeFor[T](), schema: cloneMap(schema)}
}

// DateTime is the schema of a timestamp written as an RFC 3339 string, as time.Time is.
func DateTime() map[string]any { return map[string]any{"type": "string", "format": "date-time"} }

// builtin are the rules every Deriver has, for standard types that encode themselves.
var builtin = []Rule{
	Type[time.Time](DateTime()),
	Type[json.RawMessage](map[string]any{}), // any JSON value
	Type[json.Number](map[string]any{"type": "number"}),
}

// A Deriver derives the input and output schemas of tools from Go types, with a set of
// rules for the types that need one. It is safe for concurrent use.
type Deriver struct {
	rules map[reflect.Type]map[string]any
}

// New returns a Deriver with the given rules besides the built-in ones (time.Time,
// json.RawMessage, json.Number). Two rules for one type are a programming error.
func New(rules ...Rule) *Deriver {
	d := &Deriver{rules: map[reflect.Type]map[string]any{}}
	for _, r := range builtin {
		d.rules[r.t] = r.schema
	}
	given := map[reflect.Type]bool{}
	for _, r := range rules {
		if given[r.t] {
			panic(fmt.Sprintf("toolschema: two rules for %v", r.t))
		}
		given[r.t] = true
		d.rules[r.t] = r.schema
	}
	return d
}

// InputFor derives the input schema of a tool whose arguments decode into struct type t
// (or a pointer to one): every property optional unless tagged required, a pointer not
// nullable (leaving an argument out says what null would), and every property with a
// description. The schema is a tree of map[string]any, []any and scalars, for a caller
// that adjusts it before sending it; json.Marshal writes it with its keys sorted.
func (d *Deriver) InputFor(t reflect.Type) (map[string]any, error) { return d.derive(t, true) }

// OutputFor derives the output schema of a tool whose results are values of struct type
// t (or a pointer to one): every property required (unless omitempty lets Marshal leave
// it out), a pointer nullable, descriptions where the fields have them.
func (d *Deriver) OutputFor(t reflect.Type) (map[string]any, error) { return d.derive(t, false) }

// Input is the input schema of a tool whose arguments are a T, as JSON (see InputFor).
func Input[T any](d *Deriver) (json.RawMessage, error) {
	return marshal(d.InputFor(reflect.TypeFor[T]()))
}

// Output is the output schema of a tool whose results are T values, as JSON (see
// OutputFor).
func Output[T any](d *Deriver) (json.RawMessage, error) {
	return marshal(d.OutputFor(reflect.TypeFor[T]()))
}

// Must returns schema, or panics with err: for schemas derived from the program's own
// types, where an error is a programming error that the tests meet first.
func Must(schema json.RawMessage, err error) json.RawMessage {
	if err != nil {
		panic(err)
	}
	return schema
}

func marshal(schema map[string]any, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	return json.Marshal(schema)
}

// siteKey marks, in the tree of the first pass, where a named struct type occurs. The
// second pass replaces the mark by the struct's schema or by a $ref to it, once it knows
// how often the type occurs. It cannot be a JSON name (encoding/json refuses control
// characters in a tag's name).
const siteKey = "\x00site"

type site struct {
	t        reflect.Type
	nullable bool
}

// walk derives one schema document. A named struct type's schema (its body) is built once,
// at its first occurrence; every occurrence is counted. Each body ends up once in the
// document, in place of its only occurrence or under $defs, so the occurrences counted in
// the bodies are the occurrences in the document.
type walk struct {
	d     *Deriver
	input bool
	root  reflect.Type

	bodies   map[reflect.Type]map[string]any
	refs     map[reflect.Type]int
	order    []reflect.Type // the named struct types, in the order met
	defNames map[reflect.Type]string
	problems []string
}

func (d *Deriver) derive(t reflect.Type, input bool) (map[string]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("toolschema: %v is not a struct: a tool's arguments and results are JSON objects", t)
	}
	w := &walk{d: d, input: input, root: t, bodies: map[reflect.Type]map[string]any{}, refs: map[reflect.Type]int{}}
	w.bodies[t] = nil // met: an occurrence inside refers to the document itself
	body := w.body(t, "")
	w.bodies[t] = body
	if len(w.problems) > 0 {
		return nil, fmt.Errorf("toolschema: %v:\n\t%s", t, strings.Join(w.problems, "\n\t"))
	}
	w.nameDefs()
	doc := w.resolve(body).(map[string]any)
	defs := map[string]any{}
	for _, dt := range w.order {
		if name, ok := w.defNames[dt]; ok {
			defs[name] = w.resolve(w.bodies[dt])
		}
	}
	if len(defs) > 0 {
		doc["$defs"] = defs
	}
	return doc, nil
}

func (w *walk) problem(at, format string, args ...any) {
	if at == "" {
		at = "(the object)"
	}
	w.problems = append(w.problems, at+": "+fmt.Sprintf(format, args...))
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface)
}

// schemaOf is the schema of the values of t, at: where they are in the document (for
// problems).
func (w *walk) schemaOf(t reflect.Type, at string) map[string]any {
	if r, ok := w.d.rules[t]; ok {
		return cloneMap(r)
	}
	if t.Kind() == reflect.Pointer {
		s := w.schemaOf(t.Elem(), at)
		if !w.input {
			nullable(s) // Marshal writes a nil pointer as null
		}
		return s
	}
	if implements(t, jsonMarshaler) {
		w.problem(at, "%v has its own MarshalJSON: give its schema with toolschema.Type", t)
		return map[string]any{}
	}
	if implements(t, textMarshaler) {
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		if t.PkgPath() != "" {
			w.problem(at, "%v is a named string type: give its values with toolschema.Enum (or toolschema.Text if any text goes)", t)
		}
		return map[string]any{"type": "string"}
	case reflect.Interface:
		return map[string]any{} // whatever the value is
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Uint8 && !implements(e, jsonMarshaler) && !implements(e, textMarshaler) {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": w.schemaOf(t.Elem(), at+"[]")}
	case reflect.Array:
		return map[string]any{"type": "array", "items": w.schemaOf(t.Elem(), at+"[]"), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		switch k := t.Key(); {
		case k.Kind() == reflect.String, implements(k, textMarshaler):
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr:
		default:
			w.problem(at, "a map keyed by %v is not a JSON object", k)
		}
		return map[string]any{"type": "object", "additionalProperties": w.schemaOf(t.Elem(), at+"{}")}
	case reflect.Struct:
		if t.Name() == "" {
			return w.body(t, at) // an anonymous struct cannot occur elsewhere by name
		}
		w.refs[t]++
		if _, met := w.bodies[t]; !met {
			w.bodies[t] = nil // met: a recursive occurrence is counted, not built again
			w.order = append(w.order, t)
			w.bodies[t] = w.body(t, at)
		}
		return map[string]any{siteKey: &site{t: t}}
	}
	w.problem(at, "%v has no JSON encoding", t)
	return map[string]any{}
}

// body is the schema of struct type t: an object with a property per field.
func (w *walk) body(t reflect.Type, at string) map[string]any {
	props := map[string]any{}
	required := []any{}
	for _, f := range jsonFields(t) {
		p := f.name
		if at != "" {
			p = at + "." + f.name
		}
		s, req := w.property(f, p)
		props[f.name] = s
		if req {
			required = append(required, f.name)
		}
	}
	b := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		b["required"] = required
	}
	return b
}

// property is the schema of one field and whether the object requires it.
func (w *walk) property(f field, at string) (map[string]any, bool) {
	opts, err := parseOptions(f.sf.Tag.Get("toolschema"))
	if err != nil {
		w.problem(at, "%v", err)
	}
	if f.asString {
		w.problem(at, `the ",string" option is not supported`)
	}
	s := w.schemaOf(f.sf.Type, at)
	if opts.nullable {
		nullable(s)
	}
	if desc := f.sf.Tag.Get("jsonschema"); desc != "" {
		s["description"] = desc
	} else if w.input {
		w.problem(at, "no description: an argument needs a jsonschema tag that says what it is for")
	}
	if opts.minimum != nil || opts.maximum != nil {
		k := f.sf.Type
		for k.Kind() == reflect.Pointer {
			k = k.Elem()
		}
		if _, ruled := w.d.rules[k]; ruled || !isNumber(k.Kind()) {
			w.problem(at, "minimum and maximum are for numbers, not %v", f.sf.Type)
		}
		if opts.minimum != nil {
			s["minimum"] = opts.minimum
		}
		if opts.maximum != nil {
			s["maximum"] = opts.maximum
		}
	}
	if opts.hasDefault {
		s["default"] = opts.defaultValue
	}
	if w.input {
		return s, opts.required
	}
	may := f.omitEmpty || f.viaPointer
	if opts.required && may {
		w.problem(at, "tagged required, but Marshal may leave it out (omitempty, omitzero or an embedded pointer)")
	}
	return s, !may
}

func isNumber(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uintptr || k == reflect.Float32 || k == reflect.Float64
}

// nullable lets s be null too, in place: a null added to its type (and to its enum, which
// JSON Schema checks apart from the type), or, for a schema without a type (a $ref), an
// alternative.
func nullable(s map[string]any) {
	if st, ok := s[siteKey].(*site); ok {
		st.nullable = true
		return
	}
	switch typ := s["type"].(type) {
	case string:
		s["type"] = []any{typ, "null"}
	case []any:
		if !slices.Contains(typ, any("null")) {
			s["type"] = append(slices.Clip(typ), "null")
		}
	case nil:
		if len(s) == 0 {
			return // any value, null among them
		}
		inner := maps.Clone(s)
		clear(s)
		s["anyOf"] = []any{inner, map[string]any{"type": "null"}}
		return
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, nil) {
		s["enum"] = append(slices.Clip(enum), nil)
	}
}

// nameDefs names the struct types that occur more than once, the ones that go under
// $defs: by their Go name, qualified by their package where two share a name.
func (w *walk) nameDefs() {
	w.defNames = map[reflect.Type]string{}
	var hoisted []reflect.Type
	byName := map[string]int{}
	for _, t := range w.order {
		if w.refs[t] > 1 {
			hoisted = append(hoisted, t)
			byName[defName(t.Name())]++
		}
	}
	for _, t := range hoisted {
		name := defName(t.Name())
		if byName[name] > 1 {
			name = defName(path.Base(t.PkgPath()) + "." + t.Name())
		}
		w.defNames[t] = name
	}
	// Two packages of one name with types of one name: the whole import path decides.
	seen := map[string]reflect.Type{}
	for _, t := range hoisted {
		if other, ok := seen[w.defNames[t]]; ok {
			w.defNames[other] = defName(other.PkgPath() + "." + other.Name())
			w.defNames[t] = defName(t.PkgPath() + "." + t.Name())
		}
		seen[w.defNames[t]] = t
	}
}

var unsafeDefChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// defName makes a name safe in a JSON pointer and readable (a generic type's brackets and
// an import path's slashes become underscores).
func defName(s string) string { return unsafeDefChars.ReplaceAllString(s, "_") }

// resolve is the second pass: it copies the tree with every site replaced.
func (w *walk) resolve(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if st, ok := x[siteKey].(*site); ok {
			return w.expand(st, x)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = w.resolve(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = w.resolve(e)
		}
		return out
	}
	return v
}

// expand is the schema at a site: the struct's body where this is its only occurrence, a
// $ref otherwise, with what the field adds (its description, say).
func (w *walk) expand(st *site, at map[string]any) map[string]any {
	var s map[string]any
	switch name, hoisted := w.defNames[st.t]; {
	case st.t == w.root:
		s = map[string]any{"$ref": "#"}
	case hoisted:
		s = map[string]any{"$ref": "#/$defs/" + name}
	default:
		s = w.resolve(w.bodies[st.t]).(map[string]any)
	}
	if st.nullable {
		nullable(s)
	}
	for k, v := range at {
		if k != siteKey {
			s[k] = w.resolve(v)
		}
	}
	return s
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}
