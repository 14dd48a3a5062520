package tools

import (
	"bytes"
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
	checked, err := checkValue(raw, reflect.TypeOf(dst).Elem(), "", tool)
	if err != nil {
		return err
	}
	// The checked values are written out and read into dst, never the text as sent: a
	// member sent twice is checked as the map holds it, the last one, and the text would
	// decode both into the struct, one over the other.
	b, err := json.Marshal(checked)
	if err != nil {
		return invalidf("the arguments cannot be read (%v); send one JSON object", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return invalidf("the arguments cannot be read (%v); send one JSON object", err)
	}
	return nil
}

// checkValue checks a decoded JSON value against the Go type it will be decoded into and
// returns it, with integers too large for 64 bits saturated. path names the value in
// messages ("" for the arguments themselves); tool names the tool they are for.
func checkValue(v any, t reflect.Type, path, tool string) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return nil, nil // null: the argument's zero value, as if it were left out
	}
	if t.Implements(argCheckerType) { // a type that takes more than one kind of value
		return reflect.Zero(t).Interface().(argChecker).checkArg(v, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			if path == "" {
				return nil, invalidf("the arguments must be a JSON object, not %s", describe(v))
			}
			return nil, invalidf("%s must be an object, not %s", path, describe(v))
		}
		fields := jsonFields(t)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ft, ok := fields[k]
			if !ok {
				return nil, unknownField(path, tool, k, t)
			}
			checked, err := checkValue(m[k], ft, join(path, k), tool)
			if err != nil {
				return nil, err
			}
			m[k] = checked
		}
		return m, nil
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return nil, invalidf("%s must be an array, not %s", path, describe(v))
		}
		for i := range list {
			checked, err := checkValue(list[i], t.Elem(), path+"["+strconv.Itoa(i)+"]", tool)
			if err != nil {
				return nil, err
			}
			list[i] = checked
		}
		return list, nil
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, invalidf("%s must be an object, not %s", path, describe(v))
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			checked, err := checkValue(m[k], t.Elem(), path+"."+k, tool)
			if err != nil {
				return nil, err
			}
			m[k] = checked
		}
		return m, nil
	case reflect.String:
		if _, ok := v.(string); !ok {
			return nil, invalidf("%s must be a string, not %s", path, describe(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return nil, invalidf("%s must be true or false, not %s", path, describe(v))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, ok := wholeNumber(v)
		if !ok {
			return nil, invalidf("%s must be an integer, not %s", path, describe(v))
		}
		return n, nil
	}
	return v, nil
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

// jsonFields maps the JSON names of a struct's fields, those of embedded structs
// included, to their types. The map is made once per type and shared: it is looked up
// for every object of every call (each task of a tasks_run), and must not be changed.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsOfType.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m, _ := fieldsOfType.LoadOrStore(t, readJSONFields(t))
	return m.(map[string]reflect.Type)
}

// fieldsOfType holds jsonFields' maps by type.
var fieldsOfType sync.Map

func readJSONFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[name] = f.Type
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
