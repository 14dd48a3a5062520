package tools

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// decodeArgs decodes a tool call's arguments into dst, a pointer to an args struct whose
// json tags name the arguments. It checks them against dst's type first, so that every
// refusal names the argument by its JSON path (tasks[2].timeoutSec) and says what it must
// be: an unknown argument is refused with the list of the valid ones (a model that writes
// "timeout" for "timeoutMs" must hear about it rather than get the default silently), and
// an integer argument takes any JSON integer, one too large for 64 bits saturating (the
// handlers clamp it to the argument's maximum) rather than being refused.
func decodeArgs(tool string, req mcp.CallToolRequest, dst any) error {
	var raw any = map[string]any{}
	switch a := req.GetRawArguments().(type) {
	case nil:
	case json.RawMessage:
		if len(bytes.TrimSpace(a)) > 0 && !bytes.Equal(bytes.TrimSpace(a), []byte("null")) {
			dec := json.NewDecoder(bytes.NewReader(a))
			dec.UseNumber()
			if err := dec.Decode(&raw); err != nil {
				return invalidf("the arguments are not valid JSON (%v); send one JSON object", err)
			}
		}
	default:
		raw = a
	}
	target := reflect.ValueOf(dst).Elem()
	checked, err := checkValue(raw, target.Type(), tool)
	if err != nil {
		return err
	}
	// The checked values are set into dst, never the text as sent: a member sent twice is
	// checked as the map holds it, the last one, and the text would decode both into the
	// struct, one over the other.
	if err := setArg(target, checked); err != nil {
		return invalidf("the arguments cannot be read (%v); send one JSON object", err)
	}
	return nil
}

// setArg sets dst to v, a value checkValue returned, as json.Unmarshal would set it from
// v's JSON text: without writing that text out and reading it back, which for a tasks_run
// of 100,000 tasks was two more passes over megabytes and most of the call's garbage
// (issue 29). A type that reads its own JSON (json.Unmarshaler, encoding.TextUnmarshaler),
// and a kind no argument has, is still given its value's text.
func setArg(dst reflect.Value, v any) error {
	t := dst.Type()
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return setArgFromText(dst, v)
	}
	if v == nil { // null: as json.Unmarshal, zero for what can be nil, the rest untouched
		switch t.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			dst.SetZero()
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		if dst.IsNil() {
			dst.Set(reflect.New(t.Elem()))
		}
		return setArg(dst.Elem(), v)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return setArgFromText(dst, v)
		}
		fields := jsonFields(t)
		for k, x := range m {
			field, ok := fields[k]
			if !ok {
				continue // json.Unmarshal ignores it too; checkValue refused it already
			}
			// jsonFields follows embedded structs, never embedded pointers: the path has no
			// nil on it.
			if err := setArg(dst.FieldByIndex(field.index), x); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return setArgFromText(dst, v)
		}
		out := reflect.MakeSlice(t, len(list), len(list))
		for i, x := range list {
			if err := setArg(out.Index(i), x); err != nil {
				return err
			}
		}
		dst.Set(out)
		return nil
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			return setArgFromText(dst, v)
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMapWithSize(t, len(m)))
		}
		for k, x := range m {
			e := reflect.New(t.Elem()).Elem()
			if err := setArg(e, x); err != nil {
				return err
			}
			dst.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), e)
		}
		return nil
	case reflect.String:
		if x, ok := v.(string); ok {
			dst.SetString(x)
			return nil
		}
	case reflect.Bool:
		if x, ok := v.(bool); ok {
			dst.SetBool(x)
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if x, ok := v.(json.Number); ok {
			n, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil || dst.OverflowInt(n) {
				return fmt.Errorf("the number %s does not fit a %s", x, t)
			}
			dst.SetInt(n)
			return nil
		}
	}
	return setArgFromText(dst, v)
}

// setArgFromText sets dst from v's JSON text, as json.Unmarshal does.
func setArgFromText(dst reflect.Value, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst.Addr().Interface())
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkValue checks decoded JSON arguments against the Go type they will be decoded into
// and returns them, with integers too large for 64 bits saturated; tool names the tool
// they are for.
func checkValue(v any, t reflect.Type, tool string) (any, error) {
	c := argCheck{tool: tool}
	return c.value(v, t)
}

// argCheck is one run of checkValue: where in the arguments it is, kept as a stack and
// spelt out only for a refusal. Spelling every value's path as it went ("tasks[7].env.A")
// cost a string for each of the hundreds of thousands of values of a big tasks_run.
type argCheck struct {
	tool  string
	steps []pathStep
}

// pathStep is one step down from a value: a field or a map key by name, or an index.
type pathStep struct {
	name  string
	index int
	kind  byte // 'f' a struct field, 'k' a map key, 'i' an index
}

// path names the value being checked, as the refusals name it: tasks[2].env.A.
func (c *argCheck) path() string {
	p := ""
	for _, s := range c.steps {
		switch s.kind {
		case 'f':
			p = join(p, s.name)
		case 'k':
			p += "." + s.name
		default:
			p += "[" + strconv.Itoa(s.index) + "]"
		}
	}
	return p
}

// in checks v, the value at step s down from the current one, as t.
func (c *argCheck) in(s pathStep, v any, t reflect.Type) (any, error) {
	c.steps = append(c.steps, s)
	out, err := c.value(v, t)
	c.steps = c.steps[:len(c.steps)-1]
	return out, err
}

func (c *argCheck) value(v any, t reflect.Type) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return nil, nil // null: the argument's zero value, as if it were left out
	}
	if t.Implements(argCheckerType) { // a type that takes more than one kind of value
		return reflect.Zero(t).Interface().(argChecker).checkArg(v, c.path())
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			if len(c.steps) == 0 {
				return nil, invalidf("the arguments must be a JSON object, not %s", describe(v))
			}
			return nil, invalidf("%s must be an object, not %s", c.path(), describe(v))
		}
		fields := jsonFields(t)
		check := func(k string) error {
			field, ok := fields[k]
			if !ok {
				return unknownField(c.path(), c.tool, k, t)
			}
			checked, err := c.in(pathStep{name: k, kind: 'f'}, m[k], field.typ)
			if err != nil {
				return err
			}
			m[k] = checked
			return nil
		}
		if err := checkMembers(m, check); err != nil {
			return nil, err
		}
		return m, nil
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return nil, invalidf("%s must be an array, not %s", c.path(), describe(v))
		}
		for i := range list {
			checked, err := c.in(pathStep{index: i, kind: 'i'}, list[i], t.Elem())
			if err != nil {
				return nil, err
			}
			list[i] = checked
		}
		return list, nil
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, invalidf("%s must be an object, not %s", c.path(), describe(v))
		}
		check := func(k string) error {
			checked, err := c.in(pathStep{name: k, kind: 'k'}, m[k], t.Elem())
			if err != nil {
				return err
			}
			m[k] = checked
			return nil
		}
		if err := checkMembers(m, check); err != nil {
			return nil, err
		}
		return m, nil
	case reflect.String:
		if _, ok := v.(string); !ok {
			return nil, invalidf("%s must be a string, not %s", c.path(), describe(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return nil, invalidf("%s must be true or false, not %s", c.path(), describe(v))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, ok := wholeNumber(v)
		if !ok {
			return nil, invalidf("%s must be an integer, not %s", c.path(), describe(v))
		}
		return n, nil
	}
	return v, nil
}

// checkMembers runs check on each member of m, and when one is refused, again in name order
// up to the first refused: a call with several faults always hears of the same one. The
// first pass goes in the map's order, as sorting the names of every object of every call
// cost more than the check; a member checked twice is checked as it was returned the
// first time, which passes again.
func checkMembers(m map[string]any, check func(k string) error) error {
	for k := range m {
		if check(k) != nil {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if err := check(k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// wholeNumber reads a JSON number that is a whole number as an int64, saturating one
// beyond the int64 range (1e300 is "very large", and every integer argument has a maximum
// it is clamped to).
func wholeNumber(v any) (json.Number, bool) {
	var text string
	switch n := v.(type) {
	case json.Number:
		text = n.String()
	case float64:
		text = strconv.FormatFloat(n, 'f', -1, 64)
	case int:
		return json.Number(strconv.Itoa(n)), true
	case int64:
		return json.Number(strconv.FormatInt(n, 10)), true
	default:
		return "", false
	}
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		return json.Number(strconv.FormatInt(i, 10)), true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !strings.Contains(err.Error(), "range") || math.IsNaN(f) || f != math.Trunc(f) {
		return "", false
	}
	switch {
	case f >= math.MaxInt64:
		return json.Number(strconv.FormatInt(math.MaxInt64, 10)), true
	case f <= math.MinInt64:
		return json.Number(strconv.FormatInt(math.MinInt64, 10)), true
	}
	return json.Number(strconv.FormatInt(int64(f), 10)), true
}

// describe says what a JSON value is, for "must be X, not Y".
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return "the string " + quote.Short(x)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return "the number " + x.String()
	case float64:
		return "the number " + strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unknownField refuses a member an args struct does not have, listing the ones it has and
// the one most like it.
func unknownField(path, tool, name string, t reflect.Type) error {
	names := fieldNames(t)
	guess := ""
	if c := closest(name, names); c != "" {
		guess = " (did you mean " + c + "?)"
	}
	switch {
	case path == "" && len(names) == 0:
		return invalidf("%s takes no arguments, got %s; call it with {}", tool, quote.Short(name))
	case path == "":
		return invalidf("%s has no argument %s%s; its arguments are: %s", tool, quote.Short(name), guess, strings.Join(names, ", "))
	}
	return invalidf("%s has no field %s%s; its fields are: %s", path, quote.Short(name), guess, strings.Join(names, ", "))
}

// jsonField is a struct field as the arguments name it: its type, and its index (through
// embedded structs) for reflect.Value.FieldByIndex.
type jsonField struct {
	typ   reflect.Type
	index []int
}

// jsonFields maps the JSON names of a struct's fields, those of embedded structs
// included, to the fields. The map is made once per type and shared: it is looked up
// for every object of every call (each task of a tasks_run), and must not be changed.
func jsonFields(t reflect.Type) map[string]jsonField {
	if m, ok := fieldsOfType.Load(t); ok {
		return m.(map[string]jsonField)
	}
	m, _ := fieldsOfType.LoadOrStore(t, readJSONFields(t))
	return m.(map[string]jsonField)
}

// fieldsOfType holds jsonFields' maps by type.
var fieldsOfType sync.Map

func readJSONFields(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, sub := range jsonFields(f.Type) {
				out[k] = jsonField{typ: sub.typ, index: append([]int{i}, sub.index...)}
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[name] = jsonField{typ: f.Type, index: []int{i}}
	}
	return out
}

// fieldNames lists the JSON names of a struct's fields, sorted.
func fieldNames(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := make([]string, 0, t.NumField())
	for k := range jsonFields(t) {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// closest is the name most like a mistyped one: the same but for case, one that starts
// with it or with which it starts ("timeout" for "timeoutMs"), one it abbreviates ("cmd"
// for "command"), or one a couple of edits away; "" when none is close.
func closest(name string, names []string) string {
	lower := strings.ToLower(name)
	for _, n := range names {
		if strings.ToLower(n) == lower {
			return n
		}
	}
	if len(name) >= 3 {
		for _, n := range names {
			if l := strings.ToLower(n); strings.HasPrefix(l, lower) || strings.HasPrefix(lower, l) {
				return n
			}
		}
		for _, n := range names { // an abbreviation: "cmd" for "command"
			if l := strings.ToLower(n); l[0] == lower[0] && subsequence(lower, l) {
				return n
			}
		}
	}
	best, bestD := "", 3
	for _, n := range names {
		if d := tasks.EditDistance(lower, strings.ToLower(n)); d < bestD && d < len(name)/2+1 {
			best, bestD = n, d
		}
	}
	return best
}

// subsequence reports whether the letters of a appear in b in order.
func subsequence(a, b string) bool {
	for i := 0; i < len(b) && a != ""; i++ {
		if b[i] == a[0] {
			a = a[1:]
		}
	}
	return a == ""
}

// maxGraceMs bounds tasks_cancel's graceMs (shell_close's bound is pty.MaxGrace).
const maxGraceMs = 60_000

// clampNotes collects the sentences a result adds when it cut an argument to its maximum.
type clampNotes []string

// ms turns an optional millisecond argument into a duration: def when absent, refused
// when negative, and above max cut to max, which c records as a sentence ending in why
// (", the server's --max-wait").
func (c *clampNotes) ms(name string, v *int64, def, max time.Duration, why string) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v < 0 {
		return 0, invalidf("%s must be 0 or more (milliseconds), got %d", name, *v)
	}
	if *v > max.Milliseconds() {
		*c = append(*c, fmt.Sprintf("%s %d was cut to %d%s.", name, *v, max.Milliseconds(), why))
		return max, nil
	}
	return time.Duration(*v) * time.Millisecond, nil
}

// bytes reads an optional byte count argument: def when absent, refused below min, and
// above max cut to max, which c records.
func (c *clampNotes) bytes(name string, v *int64, def, min, max int64, why string) (int64, error) {
	if v == nil {
		return def, nil
	}
	if *v < min {
		return 0, invalidf("%s must be %d or more (bytes), got %d", name, min, *v)
	}
	if *v > max {
		*c = append(*c, fmt.Sprintf("%s %d was cut to %d%s.", name, *v, max, why))
		return max, nil
	}
	return *v, nil
}

// fmtBytes writes a byte count for a header line.
func fmtBytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
