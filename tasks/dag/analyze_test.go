package dag

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// node is a Node, written short for tables.
func node(id string, st State, deps ...string) Node {
	return Node{ID: id, Status: st, DependsOn: deps}
}

func TestAnalyze_Diamond(t *testing.T) {
	// a -> {b, c} -> d, plus e after b and f after d and e.
	nodes := []Node{
		node("a", Succeeded),
		node("b", Succeeded, "a"),
		node("c", Running, "a"),
		node("d", Pending, "b", "c"),
		node("e", Pending, "b"),
		node("f", Pending, "d", "e"),
	}
	want := View{
		Nodes: []NodeView{
			{ID: "a", Status: Succeeded, Depth: 0, Dependents: []string{"b", "c"}},
			{ID: "b", Status: Succeeded, Depth: 1, DependsOn: []string{"a"}, Dependents: []string{"d", "e"}},
			{ID: "c", Status: Running, Depth: 1, DependsOn: []string{"a"}, Dependents: []string{"d"}},
			{ID: "d", Status: Pending, Depth: 2, DependsOn: []string{"b", "c"}, Dependents: []string{"f"},
				Reason: ReasonWaiting, WaitingOn: []DepState{{"c", Running}}},
			{ID: "e", Status: Pending, Depth: 2, DependsOn: []string{"b"}, Dependents: []string{"f"}, Reason: ReasonReady},
			{ID: "f", Status: Pending, Depth: 3, DependsOn: []string{"d", "e"},
				Reason: ReasonWaiting, WaitingOn: []DepState{{"d", Pending}, {"e", Pending}}},
		},
		Edges: []Edge{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}, {"b", "e"}, {"d", "f"}, {"e", "f"}},
		Order: []string{"a", "b", "c", "d", "e", "f"},
	}
	got := Analyze(nodes)
	got.Mermaid = "" // pinned by TestAnalyze_Mermaid
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Analyze(diamond) mismatch (-want +got):\n%s", diff)
	}
}

func TestAnalyze_Chain(t *testing.T) {
	// Submitted last first, so Order must differ from the submitted order.
	nodes := []Node{
		node("deploy", Pending, "test"),
		node("test", Pending, "build"),
		node("build", Running),
	}
	want := View{
		Nodes: []NodeView{
			{ID: "deploy", Status: Pending, Depth: 2, DependsOn: []string{"test"},
				Reason: ReasonWaiting, WaitingOn: []DepState{{"test", Pending}}},
			{ID: "test", Status: Pending, Depth: 1, DependsOn: []string{"build"}, Dependents: []string{"deploy"},
				Reason: ReasonWaiting, WaitingOn: []DepState{{"build", Running}}},
			{ID: "build", Status: Running, Depth: 0, Dependents: []string{"test"}},
		},
		Edges: []Edge{{"test", "deploy"}, {"build", "test"}},
		Order: []string{"build", "test", "deploy"},
	}
	got := Analyze(nodes)
	got.Mermaid = ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Analyze(chain) mismatch (-want +got):\n%s", diff)
	}
}

func TestAnalyze_Blocked(t *testing.T) {
	nodes := []Node{
		node("build", Failed),
		node("lint", Cancelled),
		node("gen", Skipped, "build"),
		node("test", Pending, "build", "lint"),
		node("docs", Pending, "ghost", "gen"), // blocked wins over waiting
		node("deploy", Pending, "test"),       // only direct dependencies count
		node("orphan", Pending, "ghost"),      // an id not in the graph is waited on
		node("fine", Pending, "build", "fixed"),
		node("fixed", Succeeded),
	}
	got := Analyze(nodes)
	type reasons struct {
		Reason    string
		WaitingOn []DepState
		BlockedBy []DepState
	}
	want := map[string]reasons{
		"build":  {},
		"lint":   {},
		"gen":    {},
		"test":   {ReasonBlocked, nil, []DepState{{"build", Failed}, {"lint", Cancelled}}},
		"docs":   {ReasonBlocked, nil, []DepState{{"gen", Skipped}}},
		"deploy": {ReasonWaiting, []DepState{{"test", Pending}}, nil},
		"orphan": {ReasonWaiting, []DepState{{"ghost", ""}}, nil},
		"fine":   {ReasonBlocked, nil, []DepState{{"build", Failed}}},
		"fixed":  {},
	}
	gotReasons := map[string]reasons{}
	for _, n := range got.Nodes {
		gotReasons[n.ID] = reasons{n.Reason, n.WaitingOn, n.BlockedBy}
	}
	if diff := cmp.Diff(want, gotReasons); diff != "" {
		t.Errorf("Analyze(blocked) reasons mismatch (-want +got):\n%s", diff)
	}
	// "ghost" is no node: it draws no edge and adds no depth.
	if d := got.Nodes[4].Depth; d != 2 {
		t.Errorf("Analyze(blocked): docs depth = %d, want 2", d)
	}
	if d := got.Nodes[6].Depth; d != 0 {
		t.Errorf("Analyze(blocked): orphan depth = %d, want 0", d)
	}
	for _, e := range got.Edges {
		if e.From == "ghost" {
			t.Errorf("Analyze(blocked) has edge %v to a missing node", e)
		}
	}
}

func TestAnalyze_Ready(t *testing.T) {
	got := Analyze([]Node{node("a", Succeeded), node("b", Pending, "a"), node("c", Pending)})
	for _, i := range []int{1, 2} {
		if n := got.Nodes[i]; n.Reason != ReasonReady || n.WaitingOn != nil || n.BlockedBy != nil {
			t.Errorf("Analyze: %s = %+v, want ready with no lists", n.ID, n)
		}
	}
}

// TestAnalyze_NotADAG feeds what Validate would refuse: the result is still complete.
func TestAnalyze_NotADAG(t *testing.T) {
	nodes := []Node{
		node("a", Pending, "b"),
		node("b", Pending, "a"),
		node("c", Pending, "c"),
		node("d", Pending, "a", "a", "x", "x"),
		node("a", Succeeded), // a second "a": references mean the first
	}
	got := Analyze(nodes)
	if want := []string{"a", "a", "b", "c", "d"}; !cmp.Equal(slices.Sorted(slices.Values(got.Order)), want) {
		t.Errorf("Analyze().Order = %q, want each node once", got.Order)
	}
	if want := []DepState{{"a", Pending}, {"x", ""}}; !cmp.Equal(got.Nodes[3].WaitingOn, want) {
		t.Errorf("Analyze(): d.WaitingOn = %v, want %v (each dependency once)", got.Nodes[3].WaitingOn, want)
	}
	if want := []Edge{{"b", "a"}, {"a", "b"}, {"c", "c"}, {"a", "d"}}; !cmp.Equal(got.Edges, want) {
		t.Errorf("Analyze().Edges = %v, want %v", got.Edges, want)
	}
	if want := []string{"b", "d"}; !cmp.Equal(got.Nodes[0].Dependents, want) {
		t.Errorf("Analyze(): a.Dependents = %q, want %q", got.Nodes[0].Dependents, want)
	}
	for _, n := range got.Nodes {
		if n.Depth < 0 || n.Depth >= len(nodes) {
			t.Errorf("Analyze(): %s.Depth = %d, want 0..%d", n.ID, n.Depth, len(nodes)-1)
		}
	}
	checkMermaid(t, nodes, got.Mermaid)
}

func TestAnalyze_Empty(t *testing.T) {
	got := Analyze(nil)
	if len(got.Nodes) != 0 || len(got.Edges) != 0 || len(got.Order) != 0 || strings.Contains(got.Mermaid, "    n") {
		t.Errorf("Analyze(nil) = %+v, want an empty view and an empty chart", got)
	}
	checkMermaid(t, nil, got.Mermaid)
}

func TestAnalyze_Mermaid(t *testing.T) {
	nodes := []Node{
		node("build", Succeeded),
		node("lint", Failed, "build"),
		node("test", Running, "build"),
		node("e2e", Cancelled, "build"),
		node("package", Skipped, "lint", "test"),
		node("deploy", Pending, "package", "e2e"),
	}
	const want = `flowchart TD
    n0["build<br/>succeeded"]
    n1["lint<br/>failed"]
    n2["test<br/>running"]
    n3["e2e<br/>cancelled"]
    n4["package<br/>skipped"]
    n5["deploy<br/>pending"]
    n0 --> n1
    n0 --> n2
    n0 --> n3
    n1 --> n4
    n2 --> n4
    n4 --> n5
    n3 --> n5
    classDef pending fill:#f6f8fa,stroke:#8c959f,color:#1f2328
    classDef running fill:#ddf4ff,stroke:#0969da,color:#1f2328
    classDef succeeded fill:#dafbe1,stroke:#1a7f37,color:#1f2328
    classDef failed fill:#ffebe9,stroke:#cf222e,color:#1f2328
    classDef cancelled fill:#fff8c5,stroke:#9a6700,color:#1f2328
    classDef skipped fill:#ffffff,stroke:#8c959f,color:#59636e,stroke-dasharray: 5 5
    class n5 pending
    class n2 running
    class n0 succeeded
    class n1 failed
    class n3 cancelled
    class n4 skipped
`
	got := Analyze(nodes).Mermaid
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Analyze().Mermaid mismatch (-want +got):\n%s", diff)
	}
	checkMermaid(t, nodes, got)
}

func TestAnalyze_MermaidEscapes(t *testing.T) {
	// Stored ids are valid, but the chart must not depend on it.
	nodes := []Node{node(`a"b<c>#d`, "weird]\n"), node("é", Pending, `a"b<c>#d`)}
	got := Analyze(nodes).Mermaid
	for _, want := range []string{
		`    n0["a#34;b#60;c#62;#35;d<br/>weird#93;#10;"]` + "\n",
		`    n1["#233;<br/>pending"]` + "\n",
		"    n0 --> n1\n",
		"    class n1 pending\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Analyze().Mermaid = %q, want it to contain %q", got, want)
		}
	}
	checkMermaid(t, nodes, got)
}

func TestAnalyze_MermaidSize(t *testing.T) {
	independent := func(n int, id func(int) string) []Node {
		ns := make([]Node, n)
		for i := range ns {
			ns[i] = node(id(i), Pending)
		}
		return ns
	}
	short := func(i int) string { return "t" + strconv.Itoa(i) }
	complete := independent(40, short) // every task after all earlier ones: 780 edges
	for i := range complete {
		for j := range i {
			complete[i].DependsOn = append(complete[i].DependsOn, complete[j].ID)
		}
	}
	for _, tt := range []struct {
		name  string
		nodes []Node
		drawn bool
		tasks int
		deps  int
	}{
		{"500Tasks", independent(500, short), true, 500, 0},
		{"501Tasks", independent(501, short), false, 501, 0},
		{"780Dependencies", complete, false, 40, 780},
		{"LongText", independent(500, func(i int) string { return strings.Repeat(`"`, 30) + strconv.Itoa(i) }), false, 500, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Analyze(tt.nodes).Mermaid
			if drawn := strings.Contains(got, "    n0["); drawn != tt.drawn {
				t.Errorf("Analyze().Mermaid drawn = %v, want %v", drawn, tt.drawn)
			}
			if !tt.drawn {
				want := "flowchart TD\n" +
					"    %% not drawn: at most 500 tasks, 500 dependencies and 50000 characters render\n" +
					fmt.Sprintf("    omitted[\"%d tasks and %d dependencies - too large to draw, see nodes and edges\"]\n", tt.tasks, tt.deps)
				if got != want {
					t.Errorf("Analyze().Mermaid = %q, want %q", got, want)
				}
			}
			if len(got) > MermaidMaxBytes {
				t.Errorf("Analyze().Mermaid is %d bytes, want at most %d", len(got), MermaidMaxBytes)
			}
			checkMermaid(t, tt.nodes, got)
		})
	}
}

// mermaidLine matches every line the chart may have.
var mermaidLine = regexp.MustCompile(`^(flowchart TD` +
	`|    n\d+\["[A-Za-z0-9 ._#;-]*<br/>[A-Za-z0-9 ._#;-]*"\]` +
	`|    n\d+ --> n\d+` +
	`|    classDef (pending|running|succeeded|failed|cancelled|skipped) [a-z-]+: ?[#0-9a-z ]+(,[a-z-]+: ?[#0-9a-z ]+)*` +
	`|    class n\d+(,n\d+)* (pending|running|succeeded|failed|cancelled|skipped)` +
	`|    %% [a-z0-9 :,]+` +
	`|    omitted\["[A-Za-z0-9 ,-]+"\])$`)

var mermaidLabel = regexp.MustCompile(`^    n(\d+)\["(.*)<br/>(.*)"\]$`)

var mermaidCode = regexp.MustCompile(`#(\d+);`)

// checkMermaid fails t unless every line of chart is one the generator may write, and each
// drawn label reads back as its node's id and state.
func checkMermaid(t testing.TB, nodes []Node, chart string) {
	t.Helper()
	if !strings.HasPrefix(chart, "flowchart TD\n") || !strings.HasSuffix(chart, "\n") {
		t.Fatalf("chart %q: want flowchart TD first and a final newline", chart)
	}
	decode := func(s string) string {
		return mermaidCode.ReplaceAllStringFunc(s, func(code string) string {
			r, _ := strconv.Atoi(code[1 : len(code)-1])
			return string(rune(r))
		})
	}
	for _, line := range strings.Split(strings.TrimSuffix(chart, "\n"), "\n") {
		if !mermaidLine.MatchString(line) {
			t.Fatalf("chart line %q is not one Analyze writes", line)
		}
		if m := mermaidLabel.FindStringSubmatch(line); m != nil {
			i, _ := strconv.Atoi(m[1])
			if i >= len(nodes) {
				t.Fatalf("chart line %q: no node %d", line, i)
			}
			id, st := nodes[i].ID, string(nodes[i].Status)
			if utf8.ValidString(id) && utf8.ValidString(st) && (decode(m[2]) != id || decode(m[3]) != st) {
				t.Fatalf("chart line %q reads as %q, %q; want %q, %q", line, decode(m[2]), decode(m[3]), id, st)
			}
		}
	}
}

// layeredNodes is layeredTasks as stored nodes, in random states.
func layeredNodes(n int, seed uint64, shuffle bool) []Node {
	states := []State{Pending, Running, Succeeded, Failed, Cancelled, Skipped}
	r := rand.New(rand.NewPCG(seed, 2))
	ts := layeredTasks(n, seed, shuffle)
	nodes := make([]Node, n)
	for i, t := range ts {
		nodes[i] = Node{ID: t.ID, Status: states[r.IntN(len(states))], DependsOn: t.DependsOn}
	}
	return nodes
}

func TestAnalyze_Large(t *testing.T) {
	// Unshuffled, every dependency comes earlier, so depths follow in one pass.
	nodes := layeredNodes(DefaultMaxTasks, 7, false)
	got := Analyze(nodes)
	depth := map[string]int{}
	for i, n := range nodes {
		for _, d := range n.DependsOn {
			depth[n.ID] = max(depth[n.ID], depth[d]+1)
		}
		if got.Nodes[i].Depth != depth[n.ID] {
			t.Fatalf("Analyze(): %s.Depth = %d, want %d", n.ID, got.Nodes[i].Depth, depth[n.ID])
		}
	}
	if len(got.Edges) != 3*(DefaultMaxTasks-100) {
		t.Errorf("Analyze() has %d edges, want %d", len(got.Edges), 3*(DefaultMaxTasks-100))
	}
	checkMermaid(t, nodes, got.Mermaid)

	shuffled := layeredNodes(DefaultMaxTasks, 8, true)
	checkViewOrder(t, shuffled, Analyze(shuffled).Order)
}

// checkViewOrder fails t unless order is a topological order of nodes (ids unique),
// dependencies on missing ids aside.
func checkViewOrder(t testing.TB, nodes []Node, order []string) {
	t.Helper()
	index := map[string]int{}
	for i, n := range nodes {
		index[n.ID] = i
	}
	spec := Spec{Tasks: make([]TaskSpec, len(nodes))}
	for i, n := range nodes {
		spec.Tasks[i].ID = n.ID
		for _, d := range n.DependsOn {
			if _, ok := index[d]; ok { // a missing id orders nothing
				spec.Tasks[i].DependsOn = append(spec.Tasks[i].DependsOn, d)
			}
		}
	}
	idx := make([]int, len(order))
	for k, id := range order {
		idx[k] = index[id]
	}
	if err := orderError(spec, idx); err != nil {
		t.Errorf("Analyze().Order: %v", err)
	}
}

// TestAnalyze_Cheap checks that analyzing a large graph stays linear.
func TestAnalyze_Cheap(t *testing.T) {
	checkCheap(t, func(n int) func() {
		nodes := layeredNodes(n, 9, true)
		return func() { Analyze(nodes) }
	})
}

func BenchmarkAnalyze(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		nodes := layeredNodes(n, 10, true)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Analyze(nodes)
			}
		})
	}
}
