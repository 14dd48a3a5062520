// Package deptest checks in a test what a package imports, directly or through others,
// after the idea of tailscale's tstest/deptest: the import direction of the design (an
// engine never imports the MCP adapter or the CLI) holds because a test fails the moment
// it breaks, not because reviewers remember it. Each banned import carries its reason, so
// the failure says why the edge is wrong as well as where it is.
package deptest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// Module is this module's path: the prefix of every package of the project.
const Module = "github.com/mcp-harness/mcp-harness"

// NoAdapters returns, as a new map a caller may add to, the bans that keep a package free of
// what only the adapters use: the MCP libraries (the MCP adapter alone speaks MCP; the
// official SDK is only a second client in tests) and the command-line libraries (the CLI
// alone parses flags).
func NoAdapters() map[string]string {
	return map[string]string{
		"github.com/mark3labs/mcp-go":            "only the MCP adapter (tools/ and the protocol and server code it is built on) speaks MCP; engines stay usable without it",
		"github.com/modelcontextprotocol/go-sdk": "the official MCP SDK is a test client of the adapter; nothing below the adapter speaks MCP",
		"github.com/spf13/cobra":                 "only the command line (main and its CLI package) parses flags; engines take options, not flags",
		"github.com/spf13/pflag":                 "only the command line (main and its CLI package) parses flags; engines take options, not flags",
	}
}

// DepChecker says what one package must not import, directly or through any package it
// imports (test files excluded: tests may use what the code may not).
type DepChecker struct {
	// Pkg is the package to check, as go list takes it: an import path, or "." for the
	// package of the test that runs the check.
	Pkg string
	// Banned maps an import path to the reason it is banned. A path bans itself and every
	// package below it ("github.com/spf13/cobra" bans ".../cobra/doc" too).
	Banned map[string]string
	// Allowed lifts a ban for a path and what is below it, where it is more specific than
	// the ban: with Module banned and Module+"/internal" allowed, the helpers of internal/
	// may be imported and the rest of the project may not. Pkg itself is always allowed.
	Allowed []string
	// GOOS and GOARCH select the build target whose files are listed, for imports that
	// only one system's files make; "" is the host's.
	GOOS, GOARCH string
}

// Violation is one banned package that the checked package reaches.
type Violation struct {
	Dep    string   // the banned package reached
	Ban    string   // the key of Banned that matched it
	Reason string   // Banned[Ban]
	Chain  []string // a shortest path of imports from the checked package to Dep
}

// String is v as a failure message says it, after the name of the checked package.
func (v Violation) String() string {
	return fmt.Sprintf("imports %s (%s): banned because %s", v.Dep, strings.Join(v.Chain, " -> "), v.Reason)
}

// Check fails t once for each banned package that c.Pkg reaches, naming the package, the
// reason and the chain of imports that reaches it. It skips when there is no go command
// to list the imports with.
func (c DepChecker) Check(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list imports:", err)
	}
	vs, err := c.Violations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var target string // which files were listed, when not the host's
	if c.GOOS != "" {
		target += " GOOS=" + c.GOOS
	}
	if c.GOARCH != "" {
		target += " GOARCH=" + c.GOARCH
	}
	if target != "" {
		target = " (" + target[1:] + ")"
	}
	for _, v := range vs {
		t.Errorf("%s%s %s", v.Chain[0], target, v)
	}
}

// Violations lists the banned packages c.Pkg reaches, sorted by path. An error means the
// imports could not be listed.
func (c DepChecker) Violations(ctx context.Context) ([]Violation, error) {
	g, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	var vs []Violation
	for dep := range g.imports {
		if dep == g.root {
			continue
		}
		ban, banLen := longestMatch(dep, keys(c.Banned))
		if banLen == 0 {
			continue
		}
		if _, allowLen := longestMatch(dep, c.Allowed); allowLen > banLen {
			continue
		}
		vs = append(vs, Violation{Dep: dep, Ban: ban, Reason: c.Banned[ban], Chain: g.chain(dep)})
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Dep < vs[j].Dep })
	return vs, nil
}

// graph is the import graph go list printed: each package's direct imports.
type graph struct {
	root    string
	imports map[string][]string
}

// list runs go list -deps on c.Pkg. Its one line per package is the import path, whether
// the package is only a dependency (true for all but Pkg), and the direct imports.
func (c DepChecker) list(ctx context.Context) (*graph, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f", "{{.ImportPath}} {{.DepOnly}} {{join .Imports \" \"}}", c.Pkg)
	cmd.Env = os.Environ()
	if c.GOOS != "" {
		cmd.Env = append(cmd.Env, "GOOS="+c.GOOS)
	}
	if c.GOARCH != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+c.GOARCH)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %v\n%s", c.Pkg, err, stderr.Bytes())
	}
	g := &graph{imports: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20) // a package may import many
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			return nil, fmt.Errorf("go list -deps %s: unexpected line %q", c.Pkg, sc.Text())
		}
		g.imports[f[0]] = f[2:]
		if f[1] == "false" {
			g.root = f[0]
		}
	}
	if g.root == "" {
		return nil, fmt.Errorf("go list -deps %s: the package itself is not listed", c.Pkg)
	}
	return g, nil
}

// chain is a shortest import path from the root to dep, found breadth first.
func (g *graph) chain(dep string) []string {
	from := map[string]string{g.root: ""}
	queue := []string{g.root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == dep {
			var path []string
			for ; p != ""; p = from[p] {
				path = append([]string{p}, path...)
			}
			return path
		}
		for _, q := range g.imports[p] {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	return []string{g.root, "...", dep} // unreachable: go list lists only what the root reaches
}

// longestMatch returns the longest of paths that is dep or a parent of it, and its length
// (0: none is).
func longestMatch(dep string, paths []string) (string, int) {
	best, bestLen := "", 0
	for _, p := range paths {
		trimmed := strings.TrimSuffix(p, "/")
		if (dep == trimmed || strings.HasPrefix(dep, trimmed+"/")) && len(trimmed) > bestLen {
			best, bestLen = p, len(trimmed)
		}
	}
	return best, bestLen
}

func keys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
