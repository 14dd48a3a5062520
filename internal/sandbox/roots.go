package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Config is the server's sandbox: its mode and network setting, the paths it adds, and
// what a confined command must never write.
type Config struct {
	Mode    Mode
	Network Network
	// Writable are the --writable paths, writable in workspace-write as the workspace is.
	Writable []string
	// Workspace is the workspace's absolute, symlink-free path.
	Workspace string
	// Protected are the server's state and artifacts directories: never writable by a
	// confined command, even where they lie inside a writable root (where the platform can
	// enforce that: see the package doc).
	Protected []string
	// Env is the server's environment, where the caches and the temp directory are found
	// (HOME, XDG_CACHE_HOME, GOCACHE, TMPDIR, ...). Nil: os.Environ().
	Env []string
	// Explicit says the mode was asked for on the command line or in the environment: a
	// system that cannot enforce it is then an error (New), where the default is only
	// degraded to Off and said so. Network off is always asked for, so always an error.
	Explicit bool
}

// Policy is the server's own policy: what a call gets unless it tightens it.
func (c Config) Policy() Policy { return Policy{Mode: c.Mode, Network: c.Network} }

// tempDirs are writable in every confined mode: programs put scratch files there, and a
// build that cannot is broken for no gain.
var tempDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// devices are the files every confined command may write: the null and random devices
// and terminals. Device files are not subject to read-only mounts, only to Landlock.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// Roots returns the paths a command confined in mode m may write under: for Off, none
// (nothing is confined); otherwise the temp directories and devices, and for
// WorkspaceWrite also the workspace, the build caches and the --writable paths. Paths are
// absolute, symlink-free and existing; a root inside another of the same mode is left
// out, as the outer one covers it.
func (c Config) Roots(m Mode) []Root {
	if m == Off {
		return nil
	}
	env := envMap(c.Env)
	var roots []Root
	add := func(kind RootKind, paths ...string) {
		for _, p := range paths {
			if p == "" || !filepath.IsAbs(p) {
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue // only existing paths can be granted
			}
			roots = append(roots, Root{Path: filepath.Clean(real), Kind: kind})
		}
	}
	add(RootTemp, append([]string{env["TMPDIR"]}, tempDirs...)...)
	if m == WorkspaceWrite {
		add(RootWorkspace, c.Workspace)
		for _, d := range cacheDirs(env) {
			add(RootCache, d.path)
		}
		add(RootWritable, c.Writable...)
	}
	add(RootDevice, devices...)
	return dedupRoots(roots)
}

// dedupRoots drops repeated roots and roots inside another directory root, keeping the
// first kind named for a path; devices are files and cover nothing below them.
func dedupRoots(roots []Root) []Root {
	var out []Root
	for _, r := range roots {
		covered := slices.ContainsFunc(out, func(o Root) bool { return o.Kind != RootDevice && o.Contains(r.Path) })
		if covered {
			continue
		}
		if r.Kind != RootDevice {
			out = slices.DeleteFunc(out, func(o Root) bool { return r.Contains(o.Path) })
		}
		out = append(out, r)
	}
	return out
}

// cacheDir is one place a build tool keeps its cache, and the program whose presence on
// PATH makes the server create it when missing (EnsureCaches): "" always, "-" never.
type cacheDir struct {
	path, tool string
}

// cacheDirs are where the user's build tools keep their caches: writable in
// workspace-write so that `go build`, `npm ci`, `pip install`, `cargo build` and Maven and
// Gradle builds work as they do on the person's machine. Each location honours the
// variable its tool reads.
func cacheDirs(env map[string]string) []cacheDir {
	home := env["HOME"]
	inHome := func(rel string) string {
		if home == "" || home == "/" {
			return ""
		}
		return filepath.Join(home, rel)
	}
	xdg := env["XDG_CACHE_HOME"]
	if xdg == "" {
		xdg = inHome(".cache")
	}
	gopath := inHome("go")
	if g := env["GOPATH"]; g != "" {
		gopath = filepath.SplitList(g)[0]
	}
	goModCache := env["GOMODCACHE"]
	if goModCache == "" && gopath != "" {
		goModCache = filepath.Join(gopath, "pkg", "mod")
	}
	goCache := env["GOCACHE"]
	if goCache == "" && xdg != "" {
		goCache = filepath.Join(xdg, "go-build")
	}
	return []cacheDir{
		{xdg, ""}, {goCache, "go"}, {goModCache, "go"},
		{orElse(env["npm_config_cache"], inHome(".npm")), "npm"},
		{orElse(env["CARGO_HOME"], inHome(".cargo")), "cargo"},
		{orElse(env["RUSTUP_HOME"], inHome(".rustup")), "-"}, // made by rustup's installer
		{inHome(".m2"), "mvn"},
		{orElse(env["GRADLE_USER_HOME"], inHome(".gradle")), "gradle"},
		{env["PIP_CACHE_DIR"], "-"}, // inside the XDG cache unless moved
		{macCaches(home), "-"},
	}
}

// macCaches is ~/Library/Caches, where macOS tools (pip, Go, Homebrew) keep caches.
func macCaches(home string) string {
	if runtime.GOOS != "darwin" || home == "" {
		return ""
	}
	return filepath.Join(home, "Library", "Caches")
}

// EnsureCaches creates the cache directories that build tools on PATH would create on
// their first run but could not once confined (the home directory is not writable): the
// XDG cache directory always, and each tool's own when the tool is on PATH (Go's, npm's,
// Cargo's, Maven's and Gradle's): an empty cache directory changes nothing for its tool.
// Errors are ignored: a cache that cannot be made is simply not writable, as before.
func (c Config) EnsureCaches() {
	env := envMap(c.Env)
	for _, d := range cacheDirs(env) {
		if d.path != "" && d.tool != "-" && (d.tool == "" || onPath(d.tool, env["PATH"])) {
			os.MkdirAll(d.path, 0o755)
		}
	}
}

func onPath(name, path string) bool {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if _, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// envMap reads environ (os.Environ() when nil) into a map; a name given twice keeps its
// last value, as os/exec does.
func envMap(environ []string) map[string]string {
	if environ == nil {
		environ = os.Environ()
	}
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
