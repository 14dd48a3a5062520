package tasks

// wholeReport is a stored graph's whole Report, every node and edge in one value: what
// ExplainPage's pages add up to, and what the CLI writes out item by item.
func wholeReport(s Snapshot) Report {
	v := AnalyzeGraph(s)
	r := Report{GraphID: s.Graph.ID, Name: s.Graph.Name, Status: s.Progress().State(),
		Nodes: make([]ReportNode, 0, len(v.Nodes)), Edges: make([]ReportEdge, 0, len(v.Edges)),
		Order: orEmpty(v.Order), Mermaid: &v.Mermaid}
	for _, n := range v.Nodes {
		r.Nodes = append(r.Nodes, ReportNodeOf(n))
	}
	for _, e := range v.Edges {
		r.Edges = append(r.Edges, ReportEdge(e))
	}
	return r
}
