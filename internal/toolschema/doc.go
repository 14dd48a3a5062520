// Package toolschema derives the JSON Schemas (draft 2020-12) of MCP tools from Go types:
// the input schema from the type a tool's arguments decode into, the output schema from
// the type of its results. A tool is declared once, by its types, and the schemas a
// client gets say all the types say: nested objects, enums, which values may be null.
//
// The schema describes what encoding/json writes and reads: property names and hiding
// follow its rules (json tags, "-", embedded structs), time.Time is an RFC 3339 string,
// json.RawMessage any value, []byte a base64 string, a map an object. A type with its own
// MarshalJSON needs a Rule saying what it writes ([Type]), and so does a named string type:
// its constants, which become an enum ([Enum]), or any text ([Text]). Without one it is an
// error, so that a declaration cannot forget an enum.
//
// Arguments and results follow different conventions (DESIGN, "Result shapes"):
//
//   - Input ([Input], [Deriver.InputFor]): a property is optional unless its field is
//     tagged `toolschema:"required"`. A pointer is not nullable: it tells a left-out
//     argument from a zero one, and null means the same as leaving it out, so saying so
//     would only cost the model's context. Every property must have a description (the
//     `jsonschema:"..."` tag) that tells an agent what to give; one without is an error.
//   - Output ([Output], [Deriver.OutputFor]): every property is required, since a result
//     always has every field (null where it does not apply), unless omitempty or omitzero
//     lets encoding/json leave it out. A pointer is nullable, and so is a field tagged
//     `toolschema:"nullable"` (a slice or map that is nil where it does not apply); other
//     slices and maps are not, so a result must fill them. Descriptions are optional.
//
// Neither says "additionalProperties": false. An unknown argument is refused by the
// decoder, with a message naming the valid ones, and a client must not refuse a result
// for a field added later; the tests check results strictly (internal/schematest).
//
// A field's toolschema tag is a comma-separated list of: required, nullable, minimum=N,
// maximum=N (for numbers) and default=JSON (a literal: 300, "line", true). An unknown word
// is an error, so that a misspelt option cannot pass unnoticed.
//
// A named struct type that occurs more than once in one schema is written once under
// "$defs" and referred to by "$ref" (a nullable one by "anyOf" with null), so that each
// schema stays whole on its own; a type that occurs once stays in place. The schemas are
// maps marshalled by encoding/json, so their keys are sorted and their bytes stable:
// golden files can pin them. [Measure] sizes a tools/list answer for its budgets.
package toolschema
