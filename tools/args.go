package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// decodeArgs decodes a tool call's arguments into dst, a pointer to an args struct whose
// json tags name the arguments. Unknown arguments are refused: a model that writes
// "timeout" for "timeoutMs" must hear about it rather than get the default silently.
func decodeArgs(req mcp.CallToolRequest, dst any) error {
	raw := req.GetRawArguments()
	if raw == nil {
		raw = map[string]any{}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return invalidf("arguments are not JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
		return argumentError(err, dst)
	}
	return nil
}

// argumentError rewrites encoding/json's messages (written for Go programmers) into ones a
// model can act on.
func argumentError(err error, dst any) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return invalidf("arguments must be an object")
		}
		return invalidf("%s must be %s, not a JSON %s", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return invalidf("arguments are not valid JSON: %v", err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return invalidf("unknown argument %s; the arguments are: %s", name, strings.Join(argNames(dst), ", "))
	}
	return invalidf("%v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return "a " + goKind
}

// argNames lists the json names of an args struct, sorted.
func argNames(dst any) []string {
	b, _ := json.Marshal(dst)
	var m map[string]any
	json.Unmarshal(b, &m)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// maxGraceMs bounds tasks_cancel's graceMs (shell_close's bound is pty.MaxGrace).
const maxGraceMs = 60_000

// millis turns an optional millisecond argument into a duration: def when absent, and an
// error when negative or above max.
func millis(name string, v *int64, def, max time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v < 0 {
		return 0, invalidf("%s must be 0 or more, got %d", name, *v)
	}
	d := time.Duration(*v) * time.Millisecond
	if max > 0 && d > max {
		return 0, invalidf("%s must be at most %d, got %d", name, max.Milliseconds(), *v)
	}
	return d, nil
}

// msOr turns an optional millisecond argument into the duration it stands for, def when
// absent, for an engine that checks durations itself (pty): a negative one reaches it as
// negative and is refused there. A value too large for a Duration saturates rather than
// wrapping round to a negative one.
func msOr(v *int64, def time.Duration) time.Duration {
	switch {
	case v == nil:
		return def
	case *v > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	case *v < math.MinInt64/int64(time.Millisecond):
		return math.MinInt64
	}
	return time.Duration(*v) * time.Millisecond
}

// clampWait applies --max-wait to a requested wait and reports whether it cut it.
func (s *Server) clampWait(d time.Duration) (time.Duration, bool) {
	if d > s.cfg.MaxWait {
		return s.cfg.MaxWait, true
	}
	return d, false
}

// fmtBytes writes a byte count for a header line.
func fmtBytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
