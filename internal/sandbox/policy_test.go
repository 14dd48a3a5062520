package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPolicy_Narrow(t *testing.T) {
	ww := Policy{Mode: WorkspaceWrite, Network: NetworkOn}
	ro := Policy{Mode: ReadOnly, Network: NetworkOff}
	off := Unconfined
	for _, tc := range []struct {
		name          string
		server        Policy
		mode, network string
		want          Policy
		err           error
	}{
		{"OK/nothingAsked", ww, "", "", ww, nil},
		{"OK/tighterMode", ww, "read-only", "", Policy{Mode: ReadOnly, Network: NetworkOn}, nil},
		{"OK/sameMode", ww, "workspace-write", "on", ww, nil},
		{"OK/networkOff", ww, "", "off", Policy{Mode: WorkspaceWrite, Network: NetworkOff}, nil},
		{"OK/fromOff", off, "read-only", "off", ro, nil},
		{"OK/offStaysOff", off, "off", "", off, nil},
		{"OK/networkOffAgain", ro, "read-only", "off", ro, nil},
		{"ErrLoosen/modeOff", ww, "off", "", ww, ErrLoosen},
		{"ErrLoosen/fromReadOnly", ro, "workspace-write", "", ro, ErrLoosen},
		{"ErrLoosen/networkOn", ro, "", "on", ro, ErrLoosen},
		{"ErrInvalid/mode", ww, "none", "", ww, ErrInvalid},
		{"ErrInvalid/network", ww, "", "maybe", ww, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.server.Narrow(tc.mode, tc.network)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("Narrow(%q, %q) error = %v, want %v", tc.mode, tc.network, err, tc.err)
			}
			if got != tc.want {
				t.Errorf("Narrow(%q, %q) = %s, want %s", tc.mode, tc.network, got, tc.want)
			}
		})
	}
}

// A refusal names what was asked, what the server allows and the flag that would allow
// it, in words a model can act on.
func TestLoosenError_Message(t *testing.T) {
	_, err := Policy{Mode: ReadOnly, Network: NetworkOff}.Narrow("", "on")
	msg := err.Error()
	for _, want := range []string{"network on", "network off", "--network on", "only tighten"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
}

func TestPolicy_Tighter(t *testing.T) {
	for _, tc := range []struct {
		own, rec, want Policy
	}{
		{Policy{WorkspaceWrite, NetworkOn}, Policy{ReadOnly, NetworkOn}, Policy{ReadOnly, NetworkOn}},
		{Policy{ReadOnly, NetworkOn}, Policy{WorkspaceWrite, NetworkOff}, Policy{ReadOnly, NetworkOff}},
		{Unconfined, Policy{WorkspaceWrite, NetworkOn}, Policy{WorkspaceWrite, NetworkOn}},
		{Policy{WorkspaceWrite, NetworkOff}, Unconfined, Policy{WorkspaceWrite, NetworkOff}},
	} {
		if got := tc.own.Tighter(tc.rec); got != tc.want {
			t.Errorf("%s.Tighter(%s) = %s, want %s", tc.own, tc.rec, got, tc.want)
		}
		if got := tc.rec.Tighter(tc.own); got != tc.want {
			t.Errorf("%s.Tighter(%s) = %s, want %s (not symmetric)", tc.rec, tc.own, got, tc.want)
		}
	}
}

// outsideTemp makes a directory outside the temp directories, which are writable roots
// themselves and would cover anything made under them: in the user's home directory.
func outsideTemp(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory to make a directory outside the temp directories in")
	}
	dir, err := os.MkdirTemp(home, ".mcp-harness-test-")
	if err != nil {
		t.Skipf("cannot make a directory in the home directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	real, _ := filepath.EvalSymlinks(dir)
	for _, tmp := range append([]string{os.TempDir()}, tempDirs...) {
		if r, err := filepath.EvalSymlinks(tmp); err == nil && (Root{Path: r}).Contains(real) {
			t.Skipf("the home directory %s is inside the temp directory %s", home, tmp)
		}
	}
	return real
}

func TestConfig_Roots(t *testing.T) {
	base := outsideTemp(t)
	home, ws, extra := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "extra")
	for _, d := range []string{"home/.cache/go-build", "home/.npm", "home/go/pkg/mod", "home/.cargo", "ws/sub", "extra"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nested := filepath.Join(ws, "sub")
	cfg := Config{Mode: WorkspaceWrite, Network: NetworkOn, Workspace: ws, Writable: []string{extra, nested, "/does/not/exist"},
		Env: []string{"HOME=" + home}}
	paths := func(roots []Root) map[string]RootKind {
		m := map[string]RootKind{}
		for _, r := range roots {
			m[r.Path] = r.Kind
		}
		return m
	}
	got := paths(cfg.Roots(WorkspaceWrite))
	for p, kind := range map[string]RootKind{
		ws: RootWorkspace, "/tmp": RootTemp, filepath.Join(home, ".cache"): RootCache, filepath.Join(home, ".npm"): RootCache,
		filepath.Join(home, "go/pkg/mod"): RootCache, filepath.Join(home, ".cargo"): RootCache, extra: RootWritable,
		"/dev/null": RootDevice,
	} {
		if got[p] != kind {
			t.Errorf("Roots(workspace-write)[%s] = %q, want %q", p, got[p], kind)
		}
	}
	for _, p := range []string{nested, filepath.Join(home, ".cache/go-build"), "/does/not/exist", home, filepath.Join(home, ".m2")} {
		if _, ok := got[p]; ok {
			t.Errorf("Roots(workspace-write) holds %s: covered by another root, or missing", p)
		}
	}
	ro := paths(cfg.Roots(ReadOnly))
	for _, p := range []string{filepath.Join(home, ".cache"), extra} {
		if _, ok := ro[p]; ok {
			t.Errorf("Roots(read-only) holds %s: read-only writes only the temp directories", p)
		}
	}
	if _, ok := ro["/dev/null"]; !ok {
		t.Errorf("Roots(read-only) = %v, want the devices", ro)
	}
	if r := cfg.Roots(Off); r != nil {
		t.Errorf("Roots(off) = %v, want nil: nothing is confined", r)
	}
}

func TestDedupRoots(t *testing.T) {
	in := []Root{
		{"/a/b", RootCache}, {"/a", RootWorkspace}, {"/a/b/c", RootWritable}, {"/ab", RootTemp},
		{"/dev/pts", RootDevice}, {"/dev/null", RootDevice}, {"/a", RootTemp},
	}
	want := []Root{{"/a", RootWorkspace}, {"/ab", RootTemp}, {"/dev/pts", RootDevice}, {"/dev/null", RootDevice}}
	if diff := cmp.Diff(want, dedupRoots(in)); diff != "" {
		t.Errorf("dedupRoots (-want +got):\n%s", diff)
	}
}
