package tools

import "testing"

// Every tool is classified as waiting or not: a new tool must be added to waitingTools.
func TestDispatch_ToolsClassified(t *testing.T) {
	s := newTestServer(t)
	for _, tool := range s.registry() {
		if _, ok := waitingTools[tool.Tool.Name]; !ok {
			t.Errorf("tool %s is not in waitingTools (waits.go): say whether its calls may wait", tool.Tool.Name)
		}
	}
}
