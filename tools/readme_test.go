package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The README's tool reference is written from the declarations, between these markers:
// go test ./tools -update rewrites it, and this test fails while it is stale, so that
// the reference says what tools/list says.
const (
	referenceBegin = "<!-- tool reference: generated from the declarations in tools/ by `go test ./tools -update`; do not edit -->"
	referenceEnd   = "<!-- end of the tool reference -->"
)

func TestReadme_ToolReference(t *testing.T) {
	path := filepath.Join("..", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := strings.Index(string(readme), referenceBegin), strings.Index(string(readme), referenceEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md has no tool reference between %q and %q", referenceBegin, referenceEnd)
	}
	got := string(readme[begin+len(referenceBegin) : end])
	want := "\n" + toolReference(t) + "\n"
	if *update {
		out := string(readme[:begin+len(referenceBegin)]) + want + string(readme[end:])
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("README.md's tool reference is stale (-declarations +README); run go test ./tools -update:\n%s", diff)
	}
}

// toolReference is the reference of every tool: what it does, its hints, its arguments
// and its result's fields.
func toolReference(t *testing.T) string {
	var b strings.Builder
	for i, d := range declarations {
		def := definitions[i]
		var in, out map[string]any
		if err := json.Unmarshal(def.RawInputSchema, &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(def.RawOutputSchema, &out); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "**`%s`**: %s\n\n", def.Name, def.Description)
		var hints []string
		a := def.Annotations
		switch {
		case a.ReadOnlyHint != nil && *a.ReadOnlyHint:
			hints = append(hints, "read-only")
		case a.DestructiveHint != nil && *a.DestructiveHint:
			hints = append(hints, "may change or end what runs")
		}
		if a.IdempotentHint != nil && *a.IdempotentHint {
			hints = append(hints, "safe to repeat")
		}
		switch w := d.waiting(); {
		case w.always:
			hints = append(hints, "may wait (counts against the cap on waiting calls, see Limits)")
		case w.whenPositive != "":
			hints = append(hints, fmt.Sprintf("may wait with `%s` (counts against the cap on waiting calls, see Limits)", w.whenPositive))
		}
		fmt.Fprintf(&b, "%s.\n\n", upperFirst(strings.Join(hints, ", ")))
		b.WriteString("| argument | type | |\n| --- | --- | --- |\n")
		arguments(&b, "", in)
		fmt.Fprintf(&b, "\nResult (`structuredContent`): %s.\n\n", strings.Join(fields(out), ", "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// arguments writes a row per argument of object schema s, nested ones by their path.
func arguments(b *strings.Builder, at string, s map[string]any) {
	props, _ := s["properties"].(map[string]any)
	required, _ := s["required"].([]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.SortFunc(names, func(x, y string) int { // required ones first, then by name
		rx, ry := slices.Contains(required, any(x)), slices.Contains(required, any(y))
		if rx != ry {
			if rx {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	for _, name := range names {
		p := props[name].(map[string]any)
		typ := typeOf(p)
		if slices.Contains(required, any(name)) {
			typ += ", required"
		}
		desc, _ := p["description"].(string)
		fmt.Fprintf(b, "| `%s%s` | %s | %s |\n", at, name, typ, strings.ReplaceAll(desc, "|", `\|`))
		if items, ok := p["items"].(map[string]any); ok && items["properties"] != nil {
			arguments(b, at+name+"[].", items)
		}
	}
}

// typeOf says a schema's type in a few words: "integer 1-1000", "one of done, change".
func typeOf(p map[string]any) string {
	if enum, ok := p["enum"].([]any); ok {
		words := make([]string, 0, len(enum))
		for _, v := range enum {
			if v != nil {
				words = append(words, fmt.Sprint(v))
			}
		}
		return "one of " + strings.Join(words, ", ")
	}
	typ := fmt.Sprint(p["type"])
	switch typ {
	case "array":
		item, _ := p["items"].(map[string]any)
		if item["properties"] != nil {
			return "array of objects"
		}
		return "array of " + typeOf(item)
	case "object":
		if v, ok := p["additionalProperties"].(map[string]any); ok {
			return "object of " + typeOf(v)
		}
	case "integer":
		lo, hasLo := p["minimum"]
		hi, hasHi := p["maximum"]
		switch {
		case hasLo && hasHi:
			typ += fmt.Sprintf(" %v-%v", lo, hi)
		case hasLo:
			typ += fmt.Sprintf(" ≥ %v", lo)
		}
	}
	return typ
}

// fields names the top-level fields of a result, in order.
func fields(out map[string]any) []string {
	props, _ := out["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, "`"+name+"`")
	}
	slices.Sort(names)
	return names
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
