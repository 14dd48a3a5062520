package tools

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/internal/tooltest"
	"github.com/mcp-harness/mcp-harness/store"
)

func runGraph(t *testing.T, s *testServer, args map[string]any) string {
	t.Helper()
	return tooltest.RunGraph(t, caller(t, s), args)
}

func waitGraph(t *testing.T, s *testServer, graphID string, extra map[string]any) map[string]any {
	t.Helper()
	return tooltest.WaitGraph(t, caller(t, s), graphID, extra)
}

func taskByID(t *testing.T, st map[string]any, id string) map[string]any {
	t.Helper()
	for _, x := range st["tasks"].([]any) {
		if m := x.(map[string]any); m["id"] == id {
			return m
		}
	}
	t.Fatalf("no task %s in %v", id, st["tasks"])
	return nil
}

func TestTasks_DiamondAndTools(t *testing.T) {
	s := newTestServer(t)
	res := callTool(t, s, "tasks_run", map[string]any{"name": "ci", "tasks": []any{
		map[string]any{"id": "build", "command": "echo built"},
		map[string]any{"id": "unit", "command": "echo unit ok", "dependsOn": []string{"build"}},
		map[string]any{"id": "lint", "command": "echo lint failed >&2; exit 4", "dependsOn": []string{"build"}},
		map[string]any{"id": "package", "command": "true", "dependsOn": []string{"unit", "lint"}},
	}})
	run := structured(t, res)
	if diff := cmp.Diff(requiredFields(t, s, "tasks_run"), keys(run)); diff != "" {
		t.Errorf("tasks_run fields (-schema +got):\n%s", diff)
	}
	if run["created"] != true || run["name"] != "ci" || run["taskCount"] != float64(4) || run["detached"] != false {
		t.Errorf("tasks_run = %v", run)
	}
	id := run["graphId"].(string)

	st := waitGraph(t, s, id, nil)
	if diff := cmp.Diff(requiredFields(t, s, "tasks_status"), keys(st)); diff != "" {
		t.Errorf("tasks_status fields (-schema +got):\n%s", diff)
	}
	if st["status"] != "failed" || st["finishedAt"] == nil || st["artifact"] != nil {
		t.Errorf("graph = %v", st)
	}
	p := st["progress"].(map[string]any)
	if p["total"] != float64(4) || p["succeeded"] != float64(2) || p["failed"] != float64(1) || p["skipped"] != float64(1) || p["percent"] != float64(100) {
		t.Errorf("progress = %v", p)
	}
	lint := taskByID(t, st, "lint")
	if lint["errorCode"] != "EXIT_NONZERO" || lint["exitCode"] != float64(4) || lint["log"].(map[string]any)["text"] != "lint failed\n" {
		t.Errorf("lint = %v", lint)
	}
	pkg := taskByID(t, st, "package")
	if pkg["errorCode"] != "UPSTREAM_FAILED" || !strings.Contains(pkg["message"].(string), "lint") || pkg["startedAt"] != nil || pkg["durationMs"] != nil {
		t.Errorf("package = %v", pkg)
	}
	statusText := text(callTool(t, s, "tasks_status", map[string]any{"graphId": id}))
	if !strings.Contains(statusText, "2 succeeded, 1 failed") || !strings.Contains(statusText, "--- lint log") {
		t.Errorf("tasks_status text =\n%s", statusText)
	}

	graph := structured(t, callTool(t, s, "tasks_graph", map[string]any{"graphId": id}))
	if diff := cmp.Diff(requiredFields(t, s, "tasks_graph"), keys(graph)); diff != "" {
		t.Errorf("tasks_graph fields (-schema +got):\n%s", diff)
	}
	if len(graph["edges"].([]any)) != 4 || graph["order"].([]any)[0] != "build" || !strings.Contains(graph["mermaid"].(string), "flowchart") {
		t.Errorf("tasks_graph = %v", graph)
	}

	list := structured(t, callTool(t, s, "tasks_list", map[string]any{"status": "failed"}))
	if diff := cmp.Diff(requiredFields(t, s, "tasks_list"), keys(list)); diff != "" {
		t.Errorf("tasks_list fields (-schema +got):\n%s", diff)
	}
	if tl := list["tasks"].([]any); len(tl) != 1 || tl[0].(map[string]any)["id"] != "lint" || list["nextCursor"] != nil {
		t.Errorf("tasks_list(failed) = %v", list)
	}

	cancel := structured(t, callTool(t, s, "tasks_cancel", map[string]any{"graphId": id}))
	if cancel["graphId"] != id || len(cancel["tasks"].([]any)) != 0 {
		t.Errorf("tasks_cancel of a finished graph = %v, want nothing concerned", cancel)
	}
}

func TestTasks_CancelAndGraphReasons(t *testing.T) {
	s := newTestServer(t)
	id := runGraph(t, s, map[string]any{"maxParallel": 1, "tasks": []any{
		map[string]any{"id": "slow", "command": "sleep 600"},
		map[string]any{"id": "after", "command": "true", "dependsOn": []string{"slow"}},
		map[string]any{"id": "queued", "command": "true"},
	}})
	// Wait until slow runs, so the reasons below are settled.
	for wait := 0; ; wait = 30000 {
		st := structured(t, callTool(t, s, "tasks_status", map[string]any{"graphId": id, "taskIds": []string{"slow"}, "waitMs": wait, "until": "change"}))
		if taskByID(t, st, "slow")["status"] == "running" {
			break
		}
	}
	graph := structured(t, callTool(t, s, "tasks_graph", map[string]any{"graphId": id}))
	reasons := map[string]any{}
	for _, n := range graph["nodes"].([]any) {
		m := n.(map[string]any)
		reasons[m["id"].(string)] = m["reason"]
	}
	if diff := cmp.Diff(map[string]any{"slow": nil, "after": "waiting", "queued": "ready"}, reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}

	res := callTool(t, s, "tasks_cancel", map[string]any{"graphId": id, "graceMs": 0})
	outcomes := map[string]any{}
	for _, x := range structured(t, res)["tasks"].([]any) {
		m := x.(map[string]any)
		outcomes[m["id"].(string)] = m["outcome"]
	}
	if diff := cmp.Diff(map[string]any{"slow": "cancelling", "after": "cancelled", "queued": "cancelled"}, outcomes); diff != "" {
		t.Errorf("cancel outcomes (-want +got):\n%s", diff)
	}
	st := waitGraph(t, s, id, nil)
	if st["status"] != "cancelled" || taskByID(t, st, "slow")["errorCode"] != "CANCELLED" {
		t.Errorf("after cancel: %s", text(callTool(t, s, "tasks_status", map[string]any{"graphId": id})))
	}
}

func TestTasks_LogPagingAndIdempotency(t *testing.T) {
	s := newTestServer(t)
	args := map[string]any{"idempotencyKey": "k1", "tasks": []any{
		map[string]any{"id": "big", "command": "seq 1 400000"}, // about 2.7 MB
	}}
	id := runGraph(t, s, args)
	again := structured(t, callTool(t, s, "tasks_run", args))
	if again["graphId"] != id || again["created"] != false {
		t.Errorf("resubmit with the same key = %v, want graph %s not created", again, id)
	}
	waitGraph(t, s, id, nil)
	var all strings.Builder
	offset := 0.0
	for pages := 0; ; pages++ {
		st := structured(t, callTool(t, s, "tasks_status", map[string]any{"graphId": id, "taskIds": []string{"big"}, "logOffset": offset, "logLimit": 1 << 20}))
		log := taskByID(t, st, "big")["log"].(map[string]any)
		all.WriteString(log["text"].(string))
		offset = log["nextOffset"].(float64)
		if log["eof"] == true {
			break
		}
		if pages > 200 { // pages are cut to the 32 KiB result budget: about 90
			t.Fatal("too many pages")
		}
	}
	lines := strings.Split(strings.TrimSpace(all.String()), "\n")
	if len(lines) != 400000 || lines[0] != "1" || lines[len(lines)-1] != "400000" {
		t.Errorf("paged log has %d lines (%q..%q), want 1..400000", len(lines), lines[0], lines[len(lines)-1])
	}
	tail := taskByID(t, waitGraph(t, s, id, map[string]any{"logTail": 7}), "big")["log"].(map[string]any)
	if tail["text"] != "400000\n" || tail["eof"] != true {
		t.Errorf("tail = %v", tail)
	}
}

func TestTasks_ListPaging(t *testing.T) {
	s := newTestServer(t)
	var ids []string
	for g := 0; g < 3; g++ {
		ids = append(ids, runGraph(t, s, map[string]any{"tasks": []any{
			map[string]any{"id": "a", "command": "true"}, map[string]any{"id": "b", "command": "true"},
		}}))
	}
	var seen []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		args := map[string]any{"limit": 4}
		if cursor != "" {
			args["cursor"] = cursor
		}
		page := structured(t, callTool(t, s, "tasks_list", args))
		for _, x := range page["tasks"].([]any) {
			m := x.(map[string]any)
			seen = append(seen, m["graphId"].(string)+"/"+m["id"].(string))
		}
		if page["nextCursor"] == nil {
			break
		}
		cursor = page["nextCursor"].(string)
	}
	want := []string{ids[2] + "/a", ids[2] + "/b", ids[1] + "/a", ids[1] + "/b", ids[0] + "/a", ids[0] + "/b"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("paged list (-want +got):\n%s", diff)
	}
}

// Every refusal has a stable code and changes nothing: no row, no log, no process.
func TestTasks_BadInput(t *testing.T) {
	s := newTestServer(t, func(c *testConfig) { c.MaxTasks = 3 })
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(s.ws.Root, "escape")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(outside, "ran")
	cmd := "touch " + marker
	tk := func(id string, deps ...string) map[string]any {
		return map[string]any{"id": id, "command": cmd, "dependsOn": deps}
	}
	tests := []struct {
		tool string
		args map[string]any
		code string
		says string
	}{
		{"tasks_run", map[string]any{"tasks": []any{tk("build", "test"), tk("test", "build")}}, "CYCLE", "build -> test -> build"},
		{"tasks_run", map[string]any{"tasks": []any{tk("a", "a")}}, "CYCLE", "a -> a"},
		{"tasks_run", map[string]any{"tasks": []any{tk("a", "nope")}}, "UNKNOWN_DEPENDENCY", "nope"},
		{"tasks_run", map[string]any{"tasks": []any{tk("a"), tk("a")}}, "DUPLICATE_TASK_ID", `"a"`},
		{"tasks_run", map[string]any{"tasks": []any{tk("a"), tk("b"), tk("c"), tk("d")}}, "LIMIT_EXCEEDED", "3"},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "  "}}}, "INVALID_ARGUMENT", "command"},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "bad id", "command": "true"}}}, "INVALID_ARGUMENT", "bad id"},
		{"tasks_run", map[string]any{"detach": true, "tasks": []any{map[string]any{"id": "a", "command": "true"}}}, "INVALID_ARGUMENT", "cannot run detached"},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": cmd, "cwd": "escape"}}}, "CWD_OUTSIDE_WORKSPACE", "escape"},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": cmd, "cwd": "../x"}}}, "CWD_OUTSIDE_WORKSPACE", "outside"},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": cmd, "cwd": "missing"}}}, "INVALID_ARGUMENT", "does not exist"},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": cmd, "timeoutSec": -1}}}, "INVALID_ARGUMENT", "timeoutSec"},
		{"tasks_run", map[string]any{"tasks": []any{}}, "INVALID_ARGUMENT", "task"},
		{"tasks_run", map[string]any{"tasks": []any{tk("a")}, "maxParallel": -1}, "INVALID_ARGUMENT", "maxParallel"},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "cmd": "true"}}}, "INVALID_ARGUMENT",
			`tasks[0] has no field "cmd" (did you mean command?); its fields are: command, cwd, dependsOn, env, executor, id, network, resources, retries, sandbox, timeoutSec`},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true", "timeoutSec": "5"}}}, "INVALID_ARGUMENT",
			`tasks[0].timeoutSec must be an integer, not the string "5"`},
		{"tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true", "env": map[string]any{"A": 1}}}}, "INVALID_ARGUMENT",
			`tasks[0].env.A must be a string, not the number 1`},
		{"tasks_run", map[string]any{"tasks": "build"}, "INVALID_ARGUMENT", `tasks must be an array, not the string "build"`},
		{"tasks_status", map[string]any{}, "INVALID_ARGUMENT", "graphId is required"},
		{"tasks_status", map[string]any{"graphId": "g-nope"}, "NOT_FOUND", "tasks_list"},
		{"tasks_status", map[string]any{"graphId": "g-nope", "logTail": -1}, "INVALID_ARGUMENT", "logTail must be 0 or more (bytes), got -1"},
		{"tasks_status", map[string]any{"graphId": "g-nope", "cursor": "x"}, "NOT_FOUND", `no graph "g-nope" in this workspace; tasks_list shows`},
		{"tasks_status", map[string]any{"graphId": "g-nope", "logOffset": 0}, "INVALID_ARGUMENT", "exactly one"},
		{"tasks_status", map[string]any{"graphId": "g-nope", "until": "forever"}, "INVALID_ARGUMENT", "until"},
		{"tasks_list", map[string]any{"status": "done"}, "INVALID_ARGUMENT", "status"},
		{"tasks_list", map[string]any{"cursor": "garbage"}, "INVALID_ARGUMENT", "cursor"},
		{"tasks_list", map[string]any{"limit": 5000}, "INVALID_ARGUMENT", "limit"},
		{"tasks_cancel", map[string]any{"graphId": "g-nope"}, "NOT_FOUND", "g-nope"},
		{"tasks_cancel", map[string]any{"graphId": "g-nope", "graceMs": -5}, "INVALID_ARGUMENT", "graceMs"},
		{"tasks_graph", map[string]any{"graphId": "g-nope"}, "NOT_FOUND", "g-nope"},
		{"tasks_graph", map[string]any{}, "INVALID_ARGUMENT", "graphId"},
	}
	for _, tt := range tests {
		res := callTool(t, s, tt.tool, tt.args)
		got := text(res)
		if !res.IsError || !strings.HasPrefix(got, tt.code+": ") || !strings.Contains(got, tt.says) {
			t.Errorf("%s(%v) = %q, want %s mentioning %q", tt.tool, tt.args, got, tt.code, tt.says)
		}
	}
	if rows, _, err := s.db.ListTasks(t.Context(), store.ListFilter{Limit: 10}); err != nil || len(rows) != 0 {
		t.Errorf("stored tasks after refusals = %d, %v; want none", len(rows), err)
	}
	if entries, _ := os.ReadDir(s.ws.LogsDir()); len(entries) != 0 {
		t.Errorf("log dirs after refusals = %d, want none", len(entries))
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("a refused graph ran a command")
	}

	// Errors for a known graph: unknown task ids.
	id := runGraph(t, s, map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true"}}})
	for _, tool := range []string{"tasks_status", "tasks_cancel"} {
		res := callTool(t, s, tool, map[string]any{"graphId": id, "taskIds": []string{"zzz"}})
		if got := text(res); !res.IsError || !strings.HasPrefix(got, "NOT_FOUND: ") || !strings.Contains(got, "zzz") {
			t.Errorf("%s with an unknown task = %q", tool, got)
		}
	}
}

// tasks_status tails by lines: logLines is the last N lines of each log, winning over
// logTail; a byte tail starts at a line; both say what they skipped, in the result and in
// the text. logLines past 1000 or negative is refused.
func TestTasksStatus_LogTails(t *testing.T) {
	s := newTestServer(t)
	id := runGraph(t, s, map[string]any{"tasks": []any{map[string]any{"id": "seq", "command": "seq 1 100000"}}})
	waitGraph(t, s, id, nil)
	size := 0.0 // the bytes of seq 1 100000
	for i := 1; i <= 100000; i++ {
		size += float64(len(strconv.Itoa(i)) + 1)
	}
	var last20 strings.Builder
	for i := 99981; i <= 100000; i++ {
		last20.WriteString(strconv.Itoa(i) + "\n")
	}
	tests := []struct {
		name string
		args map[string]any
		want string // the log's text
		says string // in the text a model reads
	}{
		{"Lines", map[string]any{"logLines": 20}, last20.String(), "--- seq log (last 20 lines, 121 of 588895 bytes, 588774 skipped) ---\n99981\n"},
		{"LinesWinOverBytes", map[string]any{"logLines": 2, "logTail": 5}, "99999\n100000\n", "last 2 lines, 13 of 588895 bytes"},
		{"BytesFromALine", map[string]any{"logTail": 10}, "100000\n", "--- seq log (last 7 of 588895 bytes, 588888 skipped) ---\n100000"},
		{"NoLines", map[string]any{"logLines": 0}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"graphId": id}
			for k, v := range tt.args {
				args[k] = v
			}
			res := callTool(t, s, "tasks_status", args)
			if res.IsError {
				t.Fatalf("tasks_status %v = %s", tt.args, text(res))
			}
			log := taskByID(t, structured(t, res), "seq")["log"].(map[string]any)
			skipped := size - float64(len(tt.want))
			if log["text"] != tt.want || log["offset"] != skipped || log["skippedBytes"] != skipped || log["size"] != size {
				t.Errorf("tasks_status %v: log %.40q at %v, skippedBytes %v, size %v; want %.40q at %v of %v",
					tt.args, log["text"], log["offset"], log["skippedBytes"], log["size"], tt.want, skipped, size)
			}
			if !strings.Contains(text(res), tt.says) {
				t.Errorf("tasks_status %v text:\n%s\nwant it to hold %q", tt.args, text(res), tt.says)
			}
			if strings.Contains(text(res), "logTail") {
				t.Errorf("tasks_status %v text speaks of logTail, which logLines overrides:\n%s", tt.args, text(res))
			}
		})
	}
	for _, n := range []any{1001, -1, int64(1) << 53} {
		res := callTool(t, s, "tasks_status", map[string]any{"graphId": id, "logLines": n})
		if got := text(res); !res.IsError || !strings.HasPrefix(got, "INVALID_ARGUMENT: logLines must be 0..1000") {
			t.Errorf("tasks_status logLines %v = %s, want INVALID_ARGUMENT", n, got)
		}
	}
	// A huge logTail beside logLines is not used, so not reported cut.
	res := callTool(t, s, "tasks_status", map[string]any{"graphId": id, "logLines": 1, "logTail": int64(1) << 53})
	if got := text(res); res.IsError || strings.Contains(got, "was cut") || !strings.Contains(got, "last 1 line,") {
		t.Errorf("tasks_status logLines 1 with a huge logTail = %s", firstLines(got, 3))
	}
}
