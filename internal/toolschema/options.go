package toolschema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// options are what a field's toolschema tag says, beyond its description (which is the
// jsonschema tag, as in the official Go SDK and google/jsonschema-go).
type options struct {
	required     bool
	nullable     bool
	minimum      any // an int64 or a float64; nil when not given
	maximum      any
	hasDefault   bool
	defaultValue any
}

// parseOptions reads a toolschema tag: comma-separated words, each one of
//
//	required       an argument that must be given
//	nullable       a value that may be null besides what its type says (a slice or map
//	               that is nil where it does not apply)
//	minimum=N      the least value of a number
//	maximum=N      the greatest value of a number
//	default=JSON   the value used when the argument is left out (a JSON literal: 300,
//	               "line", true; a default with a comma goes in the description instead)
//
// An unknown word is an error, so that a misspelt option does not go unnoticed.
func parseOptions(tag string) (options, error) {
	var o options
	if tag == "" {
		return o, nil
	}
	for word := range strings.SplitSeq(tag, ",") {
		key, value, hasValue := strings.Cut(strings.TrimSpace(word), "=")
		var err error
		switch {
		case key == "required" && !hasValue:
			o.required = true
		case key == "nullable" && !hasValue:
			o.nullable = true
		case key == "minimum" && hasValue:
			o.minimum, err = parseNumber(value)
		case key == "maximum" && hasValue:
			o.maximum, err = parseNumber(value)
		case key == "default" && hasValue:
			o.hasDefault = true
			err = json.Unmarshal([]byte(value), &o.defaultValue)
		default:
			return o, fmt.Errorf("toolschema tag %q: unknown option %q", tag, word)
		}
		if err != nil {
			return o, fmt.Errorf("toolschema tag %q: %s: %v", tag, key, err)
		}
	}
	return o, nil
}

// parseNumber keeps an integer an integer, so that it is written without an exponent.
func parseNumber(s string) (any, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	return strconv.ParseFloat(s, 64)
}
