package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The allowed list, through the built binary under the default sandbox (no
// --sandbox flag): "builds that work on a developer machine keep working: go build and go
// test with the default caches, npm ci, pip install into a venv in the workspace, cargo
// build, git commit in the workspace, a dev server binding a port". Each runs as a task,
// and go, git and the dev server also as commands typed into a shell. None uses the
// network: every dependency is a fixture in the workspace (a file:// Go proxy, a vendored
// npm tarball, a vendored sdist with an in-tree build backend, a crate without
// dependencies).
//
// The server's HOME is a directory outside every temp directory, so that what the builds
// write there lands in the caches the sandbox grants (checked after each build) and a
// write anywhere else in it is refused (the first subtest): otherwise the test would prove
// nothing about the caches.
func TestSandbox_AllowedBuilds(t *testing.T) {
	h := newBuildHome(t)
	ws := t.TempDir()
	s := startCmd(t, h.command("stdio", "--workspace", ws, "--log-level", "info"))
	s.initialize()

	t.Run("home outside the caches is refused", func(t *testing.T) {
		r := runTask(t, s, `touch "$HOME/not-a-cache"`, nil)
		if r.exitCode == 0 {
			t.Errorf("touch $HOME/not-a-cache exited 0; want it refused: %s", r.output)
		}
		if _, err := os.Lstat(filepath.Join(h.dir, "not-a-cache")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("$HOME/not-a-cache: %v, want it absent", err)
		}
	})

	builds := []struct {
		name    string
		typed   bool // also typed into a shell
		fixture func(t *testing.T, h *buildHome, dir string) (line string, check func(t *testing.T, out string))
	}{
		{"go", true, goBuild},
		{"npm", false, npmBuild},
		{"pip", false, pipBuild},
		{"cargo", false, cargoBuild},
		{"git", true, gitBuild},
	}
	t.Run("task", func(t *testing.T) {
		for _, b := range builds {
			t.Run(b.name, func(t *testing.T) {
				line, check := b.fixture(t, h, filepath.Join(ws, "task-"+b.name))
				t0 := time.Now()
				r := runTask(t, s, line, nil)
				if r.exitCode != 0 {
					t.Fatalf("task %q exited %d, want 0:\n%s\n%s", line, r.exitCode, r.output, r.text)
				}
				wantConfined(t, r.sandbox)
				check(t, r.output)
				t.Logf("%s as a task: %v", b.name, time.Since(t0).Round(time.Millisecond))
			})
		}
		t.Run("dev server", func(t *testing.T) {
			dir, port, body := devServerFixture(t, ws, "task")
			run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{
				"id": "serve", "command": devServerLine(port), "cwd": filepath.Base(dir),
			}}}))
			graphID := run["graphId"].(string)
			t.Cleanup(func() {
				select {
				case <-s.exited:
				default:
					s.toolCall("tasks_cancel", map[string]any{"graphId": graphID, "graceMs": 500})
				}
			})
			// The task never says it is ready (a log line is no state change): poll the port.
			waitFor(t, "dev server on port "+strconv.Itoa(port), func() bool { return fetch(port) == body })
			structuredOf(t, s.toolCall("tasks_cancel", map[string]any{"graphId": graphID, "graceMs": 500}))
			final := s.waitGraph(graphID)
			tk := tasksOf(final)["serve"]
			if tk["status"] != "cancelled" {
				t.Errorf("dev server task = %v (%v), want cancelled by us:\n%v", tk["status"], tk["errorCode"], tk["log"])
			}
			wantConfined(t, tk["sandbox"])
		})
	})

	t.Run("typed", func(t *testing.T) {
		id, open := openShell(t, s, nil)
		wantConfined(t, structuredOf(t, open)["sandbox"])
		for _, b := range builds {
			if !b.typed {
				continue
			}
			t.Run(b.name, func(t *testing.T) {
				line, check := b.fixture(t, h, filepath.Join(ws, "typed-"+b.name))
				t0 := time.Now()
				r := typeLine(t, s, id, line)
				if r.exitCode != 0 {
					t.Fatalf("typed %q exited %d, want 0:\n%s\n%s", line, r.exitCode, r.output, r.text)
				}
				check(t, r.output)
				t.Logf("%s typed: %v", b.name, time.Since(t0).Round(time.Millisecond))
			})
		}
		t.Run("dev server", func(t *testing.T) {
			dir, port, body := devServerFixture(t, ws, "typed")
			res := s.toolCall("shell_io", map[string]any{"sessionId": id, "input": "cd " + dir + " && " + devServerLine(port) + "\n",
				"waitPort": port, "timeoutMs": 20000})
			if sc := structuredOf(t, res); sc["reason"] != "port" {
				t.Fatalf("start the dev server = reason %v, want port: %s", sc["reason"], resultText(res))
			}
			if got := fetch(port); got != body {
				t.Errorf("GET from the dev server = %q, want %q", got, body)
			}
			res = s.toolCall("shell_io", map[string]any{"sessionId": id, "keys": []string{"C-c"}, "timeoutMs": 20000})
			if c, _ := structuredOf(t, res)["command"].(map[string]any); structuredOf(t, res)["reason"] != "prompt" || c["done"] != true {
				t.Errorf("C-c to the dev server = %s, want the prompt back", resultText(res))
			}
		})
	})
}

// wantConfined fails unless a result's sandbox is the default: workspace-write, network on.
func wantConfined(t *testing.T, sandbox any) {
	t.Helper()
	m, _ := sandbox.(map[string]any)
	if m["mode"] != "workspace-write" || m["network"] != "on" {
		t.Errorf("sandbox = %v, want workspace-write with the network on (the default, enforced here)", sandbox)
	}
}

// buildHome is a developer's machine for these tests: a home directory outside every temp
// directory, with what the person's installers made there (a warm Go build cache, rustup's
// toolchains), and the server's environment pointing at it.
type buildHome struct {
	dir       string
	env       []string
	cargoHome bool // ~/.cargo was made before the server started, as rustup's installer does
}

// cacheVars name caches somewhere else than their default under HOME (GOENV names a file
// that may, GOFLAGS could change how the fixture builds): the server gets none of them,
// so every build uses the default cache locations in the new home.
var cacheVars = []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV", "GOFLAGS", "XDG_CACHE_HOME",
	"npm_config_cache", "NPM_CONFIG_CACHE", "CARGO_HOME", "RUSTUP_HOME", "PIP_CACHE_DIR", "PIP_NO_CACHE_DIR",
	"GRADLE_USER_HOME"}

// newBuildHome makes the home directory (root: under /var/lib; otherwise under the user's
// own home) and removes it when the test ends. It seeds ~/.cache/go-build from the test's
// own Go build cache, as a developer's is warm: a cold one makes go test compile the
// standard library (about 25 s on two CPUs). Where rustup provides cargo, ~/.rustup links
// to its toolchains and ~/.cargo exists, as rustup's installer leaves them.
func newBuildHome(t *testing.T) *buildHome {
	t.Helper()
	parent := "/var/lib"
	if os.Geteuid() != 0 {
		var err error
		if parent, err = os.UserHomeDir(); err != nil {
			t.Skipf("no home directory to make a test home in: %v", err)
		}
	}
	dir, err := os.MkdirTemp(parent, "mcp-harness-e2e-home-")
	if err != nil {
		t.Skipf("a home directory outside the temp directories: %v", err)
	}
	t.Cleanup(func() { removeTree(t, dir) })
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	for _, tmp := range []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"} {
		if real, err := filepath.EvalSymlinks(tmp); err == nil && (dir == real || strings.HasPrefix(dir, real+"/")) {
			t.Skipf("home %s is inside the temp directory %s, writable anyway: the test would prove nothing", dir, tmp)
		}
	}
	h := &buildHome{dir: dir}
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		h.seedGoCache(t, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("rustup", "show", "home").Output(); err == nil {
		if err := os.Symlink(strings.TrimSpace(string(out)), filepath.Join(dir, ".rustup")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, ".cargo"), 0o755); err != nil {
			t.Fatal(err)
		}
		h.cargoHome = true
	}
	drop := map[string]bool{"HOME": true, "SHELL": true}
	for _, k := range cacheVars {
		drop[k] = true
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			h.env = append(h.env, kv)
		}
	}
	h.env = append(h.env, "HOME="+dir)
	if bash, err := exec.LookPath("bash"); err == nil {
		h.env = append(h.env, "SHELL="+bash)
	}
	return h
}

// command is the built binary with args, in the home's environment.
func (h *buildHome) command(args ...string) *exec.Cmd {
	cmd := exec.Command(binPath, args...)
	cmd.Env = h.env
	return cmd
}

// seedGoCache fills ~/.cache/go-build with hard links to the entries of the Go build cache
// at from (in a second; copies would take several). Go never rewrites a good entry: an
// output (-d) is named by its content, and an index entry (-a) is written again only when
// it is unreadable or its output is gone. So that no output goes from this copy (and no
// entry is rewritten for that), trim.txt is fresh: Go trims a cache at most once a day.
// Links need one file system; across two the cache stays cold (slower, as correct).
func (h *buildHome) seedGoCache(t *testing.T, from string) {
	t.Helper()
	t0 := time.Now()
	to := filepath.Join(h.dir, ".cache", "go-build")
	subdirs, err := os.ReadDir(from)
	if err != nil {
		return
	}
	n := 0
	for _, sub := range subdirs {
		if !sub.IsDir() || len(sub.Name()) != 2 {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(from, sub.Name()))
		if err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Join(to, sub.Name()), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			err := os.Link(filepath.Join(from, sub.Name(), e.Name()), filepath.Join(to, sub.Name(), e.Name()))
			if errors.Is(err, syscall.EXDEV) || errors.Is(err, fs.ErrPermission) {
				t.Logf("Go build cache left cold (%v): go test compiles the standard library", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	trim := strconv.FormatInt(time.Now().Unix(), 10) + "\n"
	if err := os.WriteFile(filepath.Join(to, "trim.txt"), []byte(trim), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("Go build cache: %d entries from %s in %v", n, from, time.Since(t0).Round(time.Millisecond))
}

// goCacheEntries is the set of entries in ~/.cache/go-build.
func (h *buildHome) goCacheEntries(t *testing.T) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	root := filepath.Join(h.dir, ".cache", "go-build")
	subdirs, _ := os.ReadDir(root)
	for _, sub := range subdirs {
		entries, _ := os.ReadDir(filepath.Join(root, sub.Name()))
		for _, e := range entries {
			got[sub.Name()+"/"+e.Name()] = true
		}
	}
	return got
}

// removeTree removes dir, making its directories writable first: Go makes its module
// cache read-only.
func removeTree(t *testing.T, dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove the test home: %v", err)
	}
}

// needTool skips the test unless name is on PATH, saying what to install.
func needTool(t *testing.T, name, install string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (%s)", name, install)
	}
}

// writeTree writes files (relative path -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// nonce is unique to this run of this (sub)test: built into a fixture, it makes the
// build a cache miss, so a build must write its cache.
func nonce(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

// goBuild is a Go module with a dependency served by a file:// proxy in the workspace,
// and a test: go mod tidy, go build and go test, with the default build and module
// caches. It checks that the build wrote new entries to ~/.cache/go-build and unpacked
// the dependency into ~/go/pkg/mod.
func goBuild(t *testing.T, h *buildHome, dir string) (string, func(*testing.T, string)) {
	t.Helper()
	needTool(t, "go", "https://go.dev/dl, or Debian's golang-go")
	proxy := filepath.Join(dir, "goproxy", "example.com", "dep", "@v")
	writeTree(t, proxy, map[string]string{
		"list":        "v1.0.0\n",
		"v1.0.0.info": `{"Version":"v1.0.0"}`,
		"v1.0.0.mod":  "module example.com/dep\n\ngo 1.22\n",
	})
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for name, body := range map[string]string{
		"example.com/dep@v1.0.0/go.mod": "module example.com/dep\n\ngo 1.22\n",
		"example.com/dep@v1.0.0/dep.go": "// Package dep is a dependency fetched from a file:// proxy.\npackage dep\n\n// Two is 2.\nconst Two = 2\n",
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proxy, "v1.0.0.zip"), zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTree(t, filepath.Join(dir, "mod"), map[string]string{
		"go.mod": "module example.com/tiny\n\ngo 1.22\n\nrequire example.com/dep v1.0.0\n",
		"tiny.go": fmt.Sprintf("// Package tiny adds.\npackage tiny\n\nimport \"example.com/dep\"\n\n// Nonce makes each build new.\nconst Nonce = %q\n\n"+
			"// Add adds.\nfunc Add(a, b int) int { return a + b }\n\n// Four is 4.\nvar Four = Add(dep.Two, dep.Two)\n", nonce(t)),
		"tiny_test.go": "package tiny\n\nimport \"testing\"\n\nfunc TestFour(t *testing.T) {\n\tif Four != 4 {\n\t\tt.Fatal(Four)\n\t}\n}\n",
	})
	before := h.goCacheEntries(t)
	line := fmt.Sprintf("cd %s && export GOPROXY=file://%s GOSUMDB=off GOTOOLCHAIN=local && go mod tidy && go build ./... && go test ./...",
		filepath.Join(dir, "mod"), filepath.Join(dir, "goproxy"))
	return line, func(t *testing.T, out string) {
		if !strings.Contains(out, "ok") || !strings.Contains(out, "example.com/tiny") {
			t.Errorf("go test printed %q, want ok example.com/tiny", out)
		}
		added := 0
		for e := range h.goCacheEntries(t) {
			if !before[e] {
				added++
			}
		}
		if added == 0 {
			t.Errorf("no new entries in %s/.cache/go-build: the build did not use the default cache", h.dir)
		}
		if _, err := os.Stat(filepath.Join(h.dir, "go", "pkg", "mod", "example.com", "dep@v1.0.0", "dep.go")); err != nil {
			t.Errorf("the dependency is not in the default module cache: %v", err)
		}
	}
}

// npmBuild is a package whose one dependency is a vendored tarball in its lock file: npm
// ci installs it offline and caches it in ~/.npm/_cacache.
func npmBuild(t *testing.T, h *buildHome, dir string) (string, func(*testing.T, string)) {
	t.Helper()
	needTool(t, "npm", "Debian: apt-get install nodejs npm")
	tgz := tarGz(t, map[string]string{
		"package/package.json": `{"name":"dep","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     fmt.Sprintf("// %s\nmodule.exports = (a, b) => a + b;\n", nonce(t)),
	})
	sum := sha512.Sum512(tgz)
	lock := map[string]any{
		"name": "tiny", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"": map[string]any{"name": "tiny", "version": "1.0.0", "dependencies": map[string]string{"dep": "file:vendor/dep-1.0.0.tgz"}},
			"node_modules/dep": map[string]any{"version": "1.0.0", "resolved": "file:vendor/dep-1.0.0.tgz",
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:])},
		},
	}
	lockJSON, _ := json.MarshalIndent(lock, "", "  ")
	writeTree(t, dir, map[string]string{
		"package.json":         `{"name":"tiny","version":"1.0.0","private":true,"dependencies":{"dep":"file:vendor/dep-1.0.0.tgz"}}`,
		"package-lock.json":    string(lockJSON),
		"vendor/dep-1.0.0.tgz": string(tgz),
	})
	line := fmt.Sprintf(`cd %s && export npm_config_update_notifier=false && npm ci --offline --no-audit --no-fund && node -e 'if (require("dep")(2, 2) !== 4) process.exit(1)'`, dir)
	return line, func(t *testing.T, out string) {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "dep", "index.js")); err != nil {
			t.Errorf("npm ci did not install the dependency: %v", err)
		}
		if n := countFiles(filepath.Join(h.dir, ".npm", "_cacache", "content-v2")); n == 0 {
			t.Errorf("nothing in %s/.npm/_cacache: npm ci did not use its default cache", h.dir)
		}
	}
}

// pipSources is a Python package whose project file names an in-tree PEP 517 backend
// that zips the package into a wheel: a real build with no setuptools, wheel or index.
var pipSources = map[string]string{
	"pyproject.toml": "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n\n[project]\nname = \"tiny\"\nversion = \"0.1.0\"\n",
	"PKG-INFO":       "Metadata-Version: 2.1\nName: tiny\nVersion: 0.1.0\n",
	"backend.py": `"""A PEP 517 backend with no dependencies: it zips tiny/ into a wheel."""
import base64, hashlib, os, zipfile

INFO = "tiny-0.1.0.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {"tiny/__init__.py": open(os.path.join("tiny", "__init__.py"), "rb").read(),
             INFO + "/METADATA": b"Metadata-Version: 2.1\nName: tiny\nVersion: 0.1.0\n",
             INFO + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[INFO + "/RECORD"] = ("\n".join(record + [INFO + "/RECORD,,"]) + "\n").encode()
    name = "tiny-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return name
`,
}

// pipBuild makes a venv in the workspace and pip-installs a vendored sdist into it, with
// no index: pip builds the wheel and keeps it in its default cache, ~/.cache/pip.
func pipBuild(t *testing.T, h *buildHome, dir string) (string, func(*testing.T, string)) {
	t.Helper()
	needTool(t, "python3", "Debian: apt-get install python3 python3-venv")
	if err := exec.Command("python3", "-c", "import venv, ensurepip").Run(); err != nil {
		t.Skipf("python3 cannot make a venv with pip (Debian: apt-get install python3-venv): %v", err)
	}
	files := map[string]string{"tiny-0.1.0/tiny/__init__.py": fmt.Sprintf("# %s\ndef add(a, b):\n    return a + b\n", nonce(t))}
	for name, body := range pipSources {
		files["tiny-0.1.0/"+name] = body
	}
	writeTree(t, dir, map[string]string{"vendor/tiny-0.1.0.tar.gz": string(tarGz(t, files))})
	line := fmt.Sprintf("cd %s && export PIP_DISABLE_PIP_VERSION_CHECK=1 && python3 -m venv .venv && "+
		".venv/bin/pip install --no-index --no-build-isolation vendor/tiny-0.1.0.tar.gz && "+
		".venv/bin/python -c 'import tiny; assert tiny.add(2, 2) == 4'", dir)
	return line, func(t *testing.T, out string) {
		wheels, _ := filepath.Glob(filepath.Join(h.dir, ".cache", "pip", "wheels", "*", "*", "*", "*", "tiny-0.1.0-py3-none-any.whl"))
		if len(wheels) == 0 {
			t.Errorf("no tiny wheel in %s/.cache/pip/wheels: pip did not use its default cache:\n%s", h.dir, out)
		}
	}
}

// cargoBuild is a crate with no dependencies, built offline; cargo keeps its package
// cache lock and global cache database in ~/.cargo.
func cargoBuild(t *testing.T, h *buildHome, dir string) (string, func(*testing.T, string)) {
	t.Helper()
	needTool(t, "cargo", "Debian: apt-get install cargo, or rustup")
	writeTree(t, dir, map[string]string{
		"Cargo.toml":  "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
		"src/main.rs": fmt.Sprintf("// %s\nfn main() {\n    println!(\"tiny {}\", 2 + 2);\n}\n", nonce(t)),
	})
	line := fmt.Sprintf("cd %s && cargo build --offline && ./target/debug/tiny", dir)
	return line, func(t *testing.T, out string) {
		if !strings.Contains(out, "tiny 4") {
			t.Errorf("the crate printed %q, want tiny 4", out)
		}
		if countFiles(filepath.Join(h.dir, ".cargo")) == 0 {
			// Without rustup nothing made ~/.cargo before the server started, and the
			// sandbox grants only existing cache directories.
			t.Errorf("nothing in %s/.cargo (it existed before the server started: %v): cargo did not use CARGO_HOME", h.dir, h.cargoHome)
		}
	}
}

// gitBuild makes a repository in the workspace and commits a file.
func gitBuild(t *testing.T, h *buildHome, dir string) (string, func(*testing.T, string)) {
	t.Helper()
	needTool(t, "git", "Debian: apt-get install git")
	msg := nonce(t)
	writeTree(t, dir, map[string]string{"README": msg + "\n"})
	line := fmt.Sprintf("cd %s && git init -q && git add . && git -c user.name=t -c user.email=t@t commit -q -m %q", dir, msg)
	return line, func(t *testing.T, out string) {
		got, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%s").Output()
		if err != nil || strings.TrimSpace(string(got)) != msg {
			t.Errorf("git log = %q, %v; want the commit %q", got, err, msg)
		}
	}
}

// devServerFixture makes a directory with a page to serve and picks a free port.
func devServerFixture(t *testing.T, ws, name string) (dir string, port int, body string) {
	t.Helper()
	needTool(t, "python3", "Debian: apt-get install python3")
	dir = filepath.Join(ws, "site-"+name)
	body = nonce(t)
	writeTree(t, dir, map[string]string{"index.html": body})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	return dir, port, body
}

func devServerLine(port int) string {
	return fmt.Sprintf("python3 -m http.server %d --bind 127.0.0.1", port)
}

// fetch is the body of the dev server's index page, or "" when it does not answer.
func fetch(port int) string {
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// tarGz is a gzipped tar of files, in a fixed order and with fixed times.
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, name := range sortedKeys(files) {
		body := files[name]
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1e9, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// countFiles counts the regular files under dir.
func countFiles(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}
