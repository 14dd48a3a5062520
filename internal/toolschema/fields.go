package toolschema

import (
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// field is one property of a struct as encoding/json sees it: a field of the struct or
// one promoted from an embedded struct, after encoding/json's rules for hiding and
// conflicts. The schema has to describe what Marshal writes and Unmarshal reads, so it
// follows those rules rather than reflect.VisibleFields (which knows nothing of json tags).
type field struct {
	name   string // the JSON name
	tagged bool   // the name comes from a json tag (it wins a conflict at the same depth)
	index  []int  // the path of field indexes from the struct, as for FieldByIndex
	sf     reflect.StructField

	omitEmpty bool // omitempty or omitzero: Marshal may leave the property out
	// viaPointer: promoted through an embedded pointer; Marshal leaves the property out
	// when that pointer is nil.
	viaPointer bool
	asString   bool // the ",string" option
}

// embedded is a struct whose fields are being collected: the root, or one embedded in it.
type embedded struct {
	t          reflect.Type
	index      []int
	viaPointer bool
}

// jsonFields lists the properties of struct type t in field order. encoding/json
// collects them breadth first over embedded structs: a name at a shallower depth hides
// the same name deeper down, and two at the same depth cancel each other out unless
// exactly one of them has its name from a tag.
func jsonFields(t reflect.Type) []field {
	var found []field
	level := []embedded{{t: t}}
	seen := map[reflect.Type]bool{}
	for len(level) > 0 {
		// A struct embedded twice at one depth gives each of its fields twice, so that
		// they cancel out below, as encoding/json does.
		times := map[reflect.Type]int{}
		for _, e := range level {
			times[e.t]++
		}
		var next []embedded
		for _, e := range level {
			if seen[e.t] {
				continue
			}
			seen[e.t] = true
			for i := range e.t.NumField() {
				sf := e.t.Field(i)
				ft := sf.Type
				if sf.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue // an unexported embedded non-struct has nothing to promote
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validName(name) {
					name = ""
				}
				index := append(slices.Clip(e.index), i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, embedded{t: ft, index: index, viaPointer: e.viaPointer || sf.Type.Kind() == reflect.Pointer})
					continue
				}
				f := field{
					name:       name,
					tagged:     name != "",
					index:      index,
					sf:         sf,
					omitEmpty:  hasOption(opts, "omitempty") || hasOption(opts, "omitzero"),
					viaPointer: e.viaPointer,
					asString:   hasOption(opts, "string"),
				}
				if f.name == "" {
					f.name = sf.Name
				}
				found = append(found, f)
				if times[e.t] > 1 {
					found = append(found, f)
				}
			}
		}
		level = next
	}
	return dominant(found)
}

// dominant keeps, of the fields that share a JSON name, the one encoding/json uses, and
// drops names it cannot decide; the result is in field order.
func dominant(fields []field) []field {
	slices.SortStableFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var out []field
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		i = j
		// The sort put the shallowest first and, at that depth, a tagged field first.
		if len(group) > 1 && len(group[1].index) == len(group[0].index) && group[1].tagged == group[0].tagged {
			continue
		}
		out = append(out, group[0])
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	return out
}

func hasOption(opts, want string) bool {
	for opt := range strings.SplitSeq(opts, ",") {
		if opt == want {
			return true
		}
	}
	return false
}

// validName is encoding/json's test of a tag's name: a name it does not accept leaves
// the field its Go name.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false // quotes, a backslash, a comma, controls
		}
	}
	return true
}
