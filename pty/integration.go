package pty

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Shell integration: when a session's program is an interactive shell the package knows,
// it is started with a few lines of shell script that make it report, in the output
// stream, where each prompt starts (OSC 133;A) and ends (B), where a command's output
// starts (C) and where it ended with which status (D;status), and its directory (OSC 7).
// The session's reader takes these marks out of the stream (see marks.Filter) and keeps
// the shell's state and command history from them (see shellState).
//
// Marks are authenticated: every session has a nonce of its own (markNonce), which the
// shell gets in MCP_HARNESS_NONCE and which every mark it prints carries (see package
// marks). Each script reads the variable into a shell variable that is not exported and
// unsets it before the user's files run, and the prompt variables that hold marks are
// not exported either, so the commands the shell runs do not inherit the nonce: a mark a
// program prints (a terminal test, cat of a recorded session) is its output, never a
// prompt, a command's end or its exit status. What this does not stop is a program that
// sets out to read the shell's own state: its variables (a command line the shell itself
// expands, such as echo $__mh_nonce or set), its memory, or /proc/<shell>/environ, which
// keeps the environment the shell was started with. That is deliberate spoofing, and the
// agent's own commands have no reason to do it. An rc file that leaves allexport on
// (set -a, setopt allexport) or xtrace (set -x, setopt xtrace) changes none of this: the
// scripts run with both off and put them back after, and every hook turns them off for
// itself (bash's local -, zsh's localoptions), so nothing that holds the nonce is
// exported and no trace line shows a mark. Bash still traces the line of PROMPT_COMMAND
// that calls a hook (++ __mh_precmd), which holds neither. sh and dash have no hooks:
// their prompts are assigned once, with allexport off, and never again. A bash that loads the hooks from
// PROMPT_COMMAND (below) holds the variable until its first prompt, so what a login
// shell's profile starts inherits it.
//
// The scripts are injected without taking the user's own rc files away:
//
//   - bash: --rcfile names our file, which reads /etc/bash.bashrc and ~/.bashrc as bash
//     would have, then installs the hooks. Where bash reads no rc file of ours (--norc,
//     --rcfile, a login shell, --posix), PROMPT_COMMAND in the environment loads the hooks
//     at the first prompt instead.
//   - zsh: ZDOTDIR points at our directory, whose .zshenv, .zprofile and .zshrc read the
//     user's own from where zsh would have found them (their ZDOTDIR, or HOME), and put
//     ZDOTDIR back for the user once .zshrc has run.
//   - fish: --init-command sources our file after the user's configuration.
//   - sh, dash, ash: ENV names our file, which reads the user's ENV file first and then
//     puts the marks into PS1 (these shells have no prompt hook; $? in PS1 is the status).
//
// A command line counts as starting a shell when it is nothing but the shell's name (or
// path), optionally after "exec", with options that keep it interactive (no -c, no script
// file): "bash", "exec zsh -l", "bash --norc --noprofile -i". Such a command is run
// directly rather than through sh -c, so the shell is the session's program, and the
// package can tell the shell itself reading its terminal from a program it started.

//go:embed shell
var shellScripts embed.FS

// shellKind names a shell the package integrates with; kindNone is anything else.
type shellKind string

const (
	kindNone shellKind = ""
	kindBash shellKind = "bash"
	kindZsh  shellKind = "zsh"
	kindFish shellKind = "fish"
	kindSh   shellKind = "sh" // dash, ash, and any sh: marks in PS1 through $ENV
)

// kindOf maps a shell's file name to its kind.
func kindOf(path string) shellKind {
	switch filepath.Base(path) {
	case "bash":
		return kindBash
	case "zsh":
		return kindZsh
	case "fish":
		return kindFish
	case "sh", "dash", "ash":
		return kindSh
	}
	return kindNone
}

// plainWord is a word of a command line that means the same to sh -c as it does on its
// own: no quoting, expansion, redirection or operator.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./=+:,@%-]+$`)

// shellCommand reports whether command (empty: the default shell, whose argv is given)
// starts an interactive shell the package integrates with, and if so the argv to run it
// directly (no sh -c) and its kind.
func shellCommand(command string, argv, env []string) ([]string, shellKind, bool) {
	if command == "" {
		k := kindOf(argv[0])
		return argv, k, k != kindNone
	}
	words := strings.Fields(command)
	if len(words) > 0 && words[0] == "exec" {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil, kindNone, false
	}
	for _, w := range words {
		if !plainWord.MatchString(w) {
			return nil, kindNone, false
		}
	}
	k := kindOf(words[0])
	if k == kindNone || !interactiveArgs(k, words[1:]) {
		return nil, kindNone, false
	}
	path := lookPath(words[0], env)
	if path == "" {
		return nil, kindNone, false // sh -c reports "not found" better than we would
	}
	if k == kindZsh && hasArg(words[1:], "-f", "--no-rcs", "--norcs") {
		return nil, kindNone, false // reads no startup file, so no ZDOTDIR of ours either
	}
	return append([]string{path}, words[1:]...), k, true
}

// optionWithValue lists the shell options whose value is the next word.
var optionWithValue = map[string]bool{
	"-o": true, "+o": true, "-O": true, "+O": true,
	"--rcfile": true, "--init-file": true, "-C": true, "--init-command": true,
}

// interactiveArgs reports whether a shell given these arguments reads commands from the
// terminal: no -c (or --command), no script file.
func interactiveArgs(k shellKind, args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return i == len(args)-1
		case optionWithValue[a]:
			i++
		case a == "--command" || strings.HasPrefix(a, "--command="):
			return false
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.ContainsRune(a[1:], 'c') {
				return false // -c, -ic, -lc...: a command string, not the terminal
			}
		default:
			return false // a script file
		}
	}
	return true
}

func hasArg(args []string, names ...string) bool {
	for _, a := range args {
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}

// lookPath finds a command's file the way sh would, in the session's PATH.
func lookPath(name string, env []string) string {
	if strings.Contains(name, "/") {
		if filepath.IsAbs(name) && isExecutable(name) {
			return name
		}
		return ""
	}
	path := getenv(env, "PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

// getenv returns the value the program will see for key: the last one in env.
func getenv(env []string, key string) string {
	v, _ := lookupEnv(env, key)
	return v
}

func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// nonceVar is the environment variable that gives a shell its session's nonce.
const nonceVar = "MCP_HARNESS_NONCE"

// markNonce returns a session's nonce: random, and made of letters and digits only, so it
// needs no quoting in any shell or prompt string.
func markNonce() string { return rand.Text() }

// integrate returns the argv and environment that start a shell of kind k with the
// integration scripts in dir, its marks carrying nonce.
func integrate(k shellKind, argv, env []string, dir, nonce string) ([]string, []string) {
	env = append(env, nonceVar+"="+nonce)
	args := argv[1:]
	switch k {
	case kindBash:
		// A login shell, --norc, an rc file of the user's choosing or POSIX mode do not
		// read ours: load the hooks from PROMPT_COMMAND at the first prompt instead.
		login := strings.HasPrefix(filepath.Base(argv[0]), "-")
		for _, a := range args {
			if a == "--login" || a == "--norc" || a == "--rcfile" || a == "--init-file" || a == "--posix" ||
				len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'l') {
				login = true
			}
		}
		if login {
			loader := "__mh_load=1 . '" + filepath.Join(dir, "bash.sh") + "'"
			if pc := getenv(env, "PROMPT_COMMAND"); pc != "" {
				loader += "\n" + pc
			}
			return argv, append(env, "PROMPT_COMMAND="+loader)
		}
		// Long options must come before bash's one-letter ones.
		return append([]string{argv[0], "--rcfile", filepath.Join(dir, "bashrc.sh")}, args...), env
	case kindZsh:
		if v, ok := lookupEnv(env, "ZDOTDIR"); ok {
			env = append(env, "MCP_HARNESS_ZDOTDIR="+v)
		}
		return argv, append(env, "ZDOTDIR="+filepath.Join(dir, "zsh"))
	case kindFish:
		src := "source " + fishQuote(filepath.Join(dir, "fish.fish"))
		return append([]string{argv[0], "--init-command", src}, args...), env
	case kindSh:
		if v, ok := lookupEnv(env, "ENV"); ok {
			env = append(env, "MCP_HARNESS_ENV="+v)
		}
		return argv, append(env, "ENV="+filepath.Join(dir, "sh.sh"))
	}
	return argv, env
}

// fishQuote quotes s for fish: single quotes, with \ and ' escaped.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// shellFiles is the directory the integration scripts are read from. It is shared by
// every server of the user and version, at a fixed name in the temporary directory, and
// never removed: a server killed with SIGKILL leaves nothing behind, and a shell reads its
// files when it starts, whichever server started it. Before each use the directory is
// checked: ours (owner, mode 0700, no symlinks) and the files exactly the embedded ones;
// anything else at that name (another user's, a changed file) is not used, and a private
// directory is made instead, which Shutdown removes.
type shellFiles struct {
	parent  string // where the directory is made; "" is the temp directory (Config.ScriptsDir)
	mu      sync.Mutex
	dir     string
	private bool // dir is this Manager's own: remove it at Shutdown
}

// scriptFiles maps the embedded scripts to their names on disk; zsh's must start with a
// dot, which go:embed would not pick up in the source tree.
var scriptFiles = map[string]string{
	"shell/bash.sh":          "bash.sh",
	"shell/bashrc.sh":        "bashrc.sh",
	"shell/sh.sh":            "sh.sh",
	"shell/fish.fish":        "fish.fish",
	"shell/zsh/mh.zsh":       "zsh/mh.zsh",
	"shell/zsh/zshenv.zsh":   "zsh/.zshenv",
	"shell/zsh/zprofile.zsh": "zsh/.zprofile",
	"shell/zsh/zshrc.zsh":    "zsh/.zshrc",
}

// sharedName is the shared directory's name: the user and a hash of the scripts, so a
// server of another version never reads this one's.
var sharedName = sync.OnceValue(func() string {
	h := sha256.New()
	for _, src := range slices.Sorted(maps.Keys(scriptFiles)) {
		b, _ := shellScripts.ReadFile(src)
		fmt.Fprintf(h, "%s %d\n", scriptFiles[src], len(b))
		h.Write(b)
	}
	return fmt.Sprintf("mcp-harness-shell-%d-%x", os.Getuid(), h.Sum(nil)[:6])
})

// path returns the directory holding the scripts, writing them if needed.
func (f *shellFiles) path() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dir != "" && intact(f.dir) {
		return f.dir, nil
	}
	if f.private && f.dir != "" {
		_ = os.RemoveAll(f.dir)
	}
	f.dir, f.private = "", false
	parent := f.parent
	if parent == "" {
		parent = os.TempDir()
	}
	shared := filepath.Join(parent, sharedName())
	if intact(shared) {
		f.dir = shared
		return shared, nil
	}
	tmp, err := writeScripts(parent)
	if err != nil {
		return "", err
	}
	// Moved into place whole, so no shell ever reads a half-written directory. A rename
	// onto an existing directory fails: another server was quicker (then its copy is
	// used), or the name is taken by something that is not ours (then ours stays
	// private).
	if os.Rename(tmp, shared) == nil || intact(shared) {
		_ = os.RemoveAll(tmp)
		f.dir = shared
		return shared, nil
	}
	f.dir, f.private = tmp, true
	return tmp, nil
}

// writeScripts writes the scripts into a new private directory in parent.
func writeScripts(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, "mcp-harness-shell-")
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, "zsh"), 0o700)
	}
	for src, dst := range scriptFiles {
		if err != nil {
			break
		}
		var b []byte
		if b, err = shellScripts.ReadFile(src); err == nil {
			err = os.WriteFile(filepath.Join(dir, dst), b, 0o600)
		}
	}
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return "", fmt.Errorf("shell integration files: %w", err)
	}
	return dir, nil
}

// intact reports whether dir holds exactly our scripts and nobody else could have put
// them there: every directory and file ours, not a symlink, closed to other users.
func intact(dir string) bool {
	for _, d := range []string{dir, filepath.Join(dir, "zsh")} {
		if !privateTo(d, true) {
			return false
		}
	}
	for src, dst := range scriptFiles {
		p := filepath.Join(dir, dst)
		want, _ := shellScripts.ReadFile(src)
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) || !privateTo(p, false) {
			return false
		}
	}
	return true
}

// privateTo reports whether path is a directory (or a regular file) of this user that
// other users cannot write, and not a symlink.
func privateTo(path string, dir bool) bool {
	fi, err := os.Lstat(path)
	if err != nil || fi.IsDir() != dir || !dir && !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// remove deletes a private directory; the shared one stays for the next server.
func (f *shellFiles) remove() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.private && f.dir != "" {
		_ = os.RemoveAll(f.dir)
	}
	f.dir, f.private = "", false
}
