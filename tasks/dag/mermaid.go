package dag

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds of a drawn Mermaid chart. The edge and text bounds are Mermaid's own defaults
// (maxEdges 500, maxTextSize 50000): past them GitHub and most Markdown viewers show an
// error box instead of a diagram. 500 nodes is about where a flowchart stops being
// readable anyway.
const (
	MermaidMaxNodes = 500
	MermaidMaxEdges = 500
	MermaidMaxBytes = 50000
)

// mermaidClasses styles each state: the colours of GitHub's own status labels, light
// fills with dark text so that they read in light and dark themes.
var mermaidClasses = []struct {
	state State
	style string
}{
	{Pending, "fill:#f6f8fa,stroke:#8c959f,color:#1f2328"},
	{Running, "fill:#ddf4ff,stroke:#0969da,color:#1f2328"},
	{Succeeded, "fill:#dafbe1,stroke:#1a7f37,color:#1f2328"},
	{Failed, "fill:#ffebe9,stroke:#cf222e,color:#1f2328"},
	{Cancelled, "fill:#fff8c5,stroke:#9a6700,color:#1f2328"},
	{Skipped, "fill:#ffffff,stroke:#8c959f,color:#59636e,stroke-dasharray: 5 5"},
}

// mermaidChart draws the graph as a Mermaid flowchart, top-down, dependencies above their
// dependents. Node keys are n0, n1... (the index), never the id, so nothing a stored id
// holds can break the syntax; labels are quoted and escaped.
func mermaidChart(nodes []Node, start, adj []int32) string {
	if len(nodes) > MermaidMaxNodes || len(adj) > MermaidMaxEdges {
		return mermaidOmitted(len(nodes), len(adj))
	}
	var b strings.Builder
	b.Grow(64 * (len(nodes) + len(adj) + len(mermaidClasses)))
	b.WriteString("flowchart TD\n")
	for i := range nodes {
		fmt.Fprintf(&b, "    n%d[\"%s<br/>%s\"]\n", i, mermaidText(nodes[i].ID), mermaidText(string(nodes[i].Status)))
	}
	for i := range nodes {
		for _, d := range adj[start[i]:start[i+1]] {
			fmt.Fprintf(&b, "    n%d --> n%d\n", d, i)
		}
	}
	for _, c := range mermaidClasses {
		fmt.Fprintf(&b, "    classDef %s %s\n", c.state, c.style)
	}
	for _, c := range mermaidClasses {
		first := true
		for i := range nodes {
			if nodes[i].Status != c.state {
				continue
			}
			if first {
				b.WriteString("    class ")
				first = false
			} else {
				b.WriteByte(',')
			}
			b.WriteByte('n')
			b.WriteString(strconv.Itoa(i))
		}
		if !first {
			fmt.Fprintf(&b, " %s\n", c.state)
		}
	}
	if b.Len() > MermaidMaxBytes {
		return mermaidOmitted(len(nodes), len(adj))
	}
	return b.String()
}

// mermaidOmitted is the chart of a graph too large to draw: still valid Mermaid, so a
// client that renders it shows why there is no picture.
func mermaidOmitted(tasks, deps int) string {
	return mermaidNotDrawn + fmt.Sprintf(" at most %d tasks, %d dependencies and %d characters render\n"+
		"    omitted[\"%d tasks and %d dependencies - too large to draw, see nodes and edges\"]\n",
		MermaidMaxNodes, MermaidMaxEdges, MermaidMaxBytes, tasks, deps)
}

// mermaidNotDrawn starts the chart of a graph too large to draw. A drawn chart cannot
// start so: its labels escape '%' (mermaidText).
const mermaidNotDrawn = "flowchart TD\n    %% not drawn:"

// drawn reports whether a chart of Analyze draws its graph.
func Drawn(chart string) bool { return !strings.HasPrefix(chart, mermaidNotDrawn) }

// mermaidText escapes s for a quoted Mermaid label: everything but letters, digits,
// space, '.', '_' and '-' becomes a #code; entity, so quotes, '#', HTML and line breaks
// cannot end the label or inject markup.
func mermaidText(s string) string {
	safe := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != ' ' && c != '.' && c != '_' && c != '-' {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && (isAlnum(byte(r)) || r == ' ' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
			continue
		}
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(int(r)))
		b.WriteByte(';')
	}
	return b.String()
}
