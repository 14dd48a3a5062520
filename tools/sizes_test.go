package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestResultSizes prints the sizes of what the tools answer on large graphs: the text a
// model reads and the structuredContent (compact JSON) another client gives it, for the
// graphs of issue 13 (200 tasks with 3 KB logs; 10,000 tasks with 2 KB logs; 900 tasks
// with every earlier task as a dependency, 404,550 dependencies), and the tools/list
// answer. It runs the graphs for real, so it takes a minute or more: it runs only when
// asked,
//
//	MCPH_SIZES=1 go test ./tools -run TestResultSizes -v -timeout 30m
//
// and BENCHMARKS.md ("Result sizes") records its output. With MCPH_SIZES_WS=dir the
// workspace is dir and is kept, for measuring the operator CLI on the same graphs.
func TestResultSizes(t *testing.T) {
	if os.Getenv("MCPH_SIZES") == "" {
		t.Skip("set MCPH_SIZES=1 to measure result sizes (takes minutes)")
	}
	s := newTestServer(t, func(c *testConfig) {
		if dir := os.Getenv("MCPH_SIZES_WS"); dir != "" {
			c.Workspace = dir
		}
	})
	row := func(graph, call string, args map[string]any) map[string]any {
		t.Helper()
		res := callTool(t, s, call, args)
		if res.IsError {
			t.Fatalf("%s: %s", call, text(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		what := call
		if extra := argsNote(args); extra != "" {
			what += " " + extra
		}
		t.Logf("| %s | %s | %s | %s |", graph, what, commas(len(text(res))), commas(len(b)))
		return structured(t, res)
	}
	t.Logf("| Graph | Call | Text (bytes) | structuredContent (bytes) |")
	t.Logf("| --- | --- | ---: | ---: |")

	// tools/list.
	resp := s.MCPServer().HandleMessage(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	all, _ := json.Marshal(resp)
	var list struct {
		Result struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	json.Unmarshal(all, &list)
	read := 0
	for _, tl := range list.Result.Tools {
		read += len(tl["name"]) + len(tl["description"]) + len(tl["inputSchema"])
	}
	t.Logf("| — | tools/list (whole response) | %s | — |", commas(len(all)))
	t.Logf("| — | tools/list: names, descriptions, input schemas | %s | — |", commas(read))

	wait := func(id string) {
		for {
			st := callTool(t, s, "tasks_status", map[string]any{"graphId": id, "waitMs": 30000, "logTail": 0, "taskIds": []string{}})
			var head struct {
				Status string `json:"status"`
			}
			b, _ := json.Marshal(st.StructuredContent)
			json.Unmarshal(b, &head)
			if head.Status != "running" {
				return
			}
		}
	}

	// 200 tasks, 3 KB logs, one in twenty failing.
	var ts []any
	for i := 0; i < 200; i++ {
		cmd := "printf '%3071s\\n' log"
		if i%20 == 7 {
			cmd += "; exit 1"
		}
		ts = append(ts, map[string]any{"id": fmt.Sprintf("t%d", i), "command": cmd})
	}
	g := "200 tasks, 3 KB logs"
	id := row(g, "tasks_run", map[string]any{"tasks": ts})["graphId"].(string)
	wait(id)
	row(g, "tasks_status", map[string]any{"graphId": id})
	row(g, "tasks_status", map[string]any{"graphId": id, "logTail": 0})
	row(g, "tasks_graph", map[string]any{"graphId": id})
	row(g, "tasks_list", map[string]any{"limit": 1000})
	t.Logf("200 tasks: graph %s", id)

	// 10,000 tasks in layers of 100, 2 KB logs.
	ts = nil
	for i := 0; i < 10000; i++ {
		tk := map[string]any{"id": fmt.Sprintf("t%d", i), "command": "printf '%2047s\\n' log"}
		if i >= 100 {
			layer := (i/100 - 1) * 100
			deps := []string{fmt.Sprintf("t%d", layer+i%100)}
			if i%100 != (i*7)%100 {
				deps = append(deps, fmt.Sprintf("t%d", layer+(i*7)%100))
			}
			tk["dependsOn"] = deps
		}
		ts = append(ts, tk)
	}
	g = "10,000 tasks, 2 KB logs"
	id = row(g, "tasks_run", map[string]any{"tasks": ts})["graphId"].(string)
	wait(id)
	row(g, "tasks_status", map[string]any{"graphId": id})
	row(g, "tasks_status", map[string]any{"graphId": id, "logTail": 0})
	row(g, "tasks_graph", map[string]any{"graphId": id})
	row(g, "tasks_list", map[string]any{"limit": 1000})
	t.Logf("10,000 tasks: graph %s", id)
	g = "10,000 tasks, cancelled at once"
	id = row(g, "tasks_run", map[string]any{"tasks": ts, "maxParallel": 1})["graphId"].(string)
	row(g, "tasks_cancel", map[string]any{"graphId": id, "graceMs": 0})
	wait(id)

	// 900 tasks, each depending on every earlier one.
	ts = nil
	for i := 0; i < 900; i++ {
		deps := make([]string, i)
		for j := range deps {
			deps[j] = fmt.Sprintf("t%d", j)
		}
		ts = append(ts, map[string]any{"id": fmt.Sprintf("t%d", i), "command": "true", "dependsOn": deps})
	}
	g = "900 tasks, 404,550 dependencies"
	id = row(g, "tasks_run", map[string]any{"tasks": ts, "maxParallel": 1})["graphId"].(string)
	row(g+", running", "tasks_graph", map[string]any{"graphId": id})
	wait(id)
	row(g, "tasks_status", map[string]any{"graphId": id})
	row(g, "tasks_graph", map[string]any{"graphId": id})
	t.Logf("404,550 dependencies: graph %s", id)
}

func argsNote(args map[string]any) string {
	var parts []string
	for _, k := range []string{"logTail", "limit", "graceMs"} {
		if v, ok := args[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
