package toolschema_test

import (
	"fmt"

	"github.com/mcp-harness/mcp-harness/internal/toolschema"
)

// Reason is a typed word with a list of its values, as the engines export them.
type Reason string

func Reasons() []Reason { return []Reason{"matched", "exited", "timeout"} }

type readArgs struct {
	SessionID string `json:"sessionId" jsonschema:"From shell_open." toolschema:"required"`
	WaitPort  int    `json:"waitPort,omitempty" jsonschema:"End the wait when this TCP port listens." toolschema:"minimum=1,maximum=65535"`
}

type readResult struct {
	Output   string `json:"output" jsonschema:"What the program printed."`
	Reason   Reason `json:"reason" jsonschema:"Why the call returned."`
	ExitCode *int   `json:"exitCode"`
}

// One Deriver, with the rules for the typed words, serves every tool.
func Example() {
	d := toolschema.New(toolschema.Enum(Reasons()))
	in := toolschema.Must(toolschema.Input[readArgs](d))
	out := toolschema.Must(toolschema.Output[readResult](d))
	fmt.Println(string(in))
	fmt.Println(string(out))
	// Output:
	// {"properties":{"sessionId":{"description":"From shell_open.","type":"string"},"waitPort":{"description":"End the wait when this TCP port listens.","maximum":65535,"minimum":1,"type":"integer"}},"required":["sessionId"],"type":"object"}
	// {"properties":{"exitCode":{"type":["integer","null"]},"output":{"description":"What the program printed.","type":"string"},"reason":{"description":"Why the call returned.","enum":["matched","exited","timeout"],"type":"string"}},"required":["output","reason","exitCode"],"type":"object"}
}

// Measure sizes a tools/list answer against its budgets.
func ExampleMeasure() {
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[
		{"name":"echo","description":"Says it back.","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}}`)
	size, err := toolschema.Measure(answer)
	if err != nil {
		panic(err)
	}
	fmt.Println(size.Total, size.Model)
	// Output: 156 38
}
