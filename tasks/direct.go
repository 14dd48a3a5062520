package tasks

// This file decides when a task's command can be run without a shell, as make does: a
// command that is only words of plain characters means the same to the shell as to
// execve, so the engine starts one process instead of two (the shell's start-up is most
// of a short task's cost). Anything else, or any doubt, runs under the shell as before.

import (
	"os/exec"
	"path/filepath"
	"strings"
)

// shellWords are the first words that need the shell: bash's builtins and reserved words
// (compgen -b -k), some of which also exist as programs that behave differently (a
// builtin pwd prints the logical directory, /usr/bin/time is not the keyword). true and
// false are left out: the programs do exactly what the builtins do when given no
// arguments, and directArgv only takes them bare.
var shellWords = map[string]bool{}

func init() {
	const words = ". : [ alias bg bind break builtin caller cd command compgen complete compopt " +
		"continue declare dirs disown echo enable eval exec exit export fc fg getopts hash help " +
		"history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly " +
		"return set shift shopt source suspend test times trap type typeset ulimit umask unalias " +
		"unset wait if then else elif fi case esac for select while until do done in function " +
		"time { } ! [[ ]] coproc"
	for _, w := range strings.Fields(words) {
		shellWords[w] = true
	}
}

// plainByte reports whether c means nothing to the shell: no quoting, expansion,
// globbing, redirection, grouping or separator can be made of these.
func plainByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_./=:,+-", c) >= 0
}

// directArgv returns the words of command when it can be exec'd without a shell, and nil
// when it needs one. It is conservative: only plain bytes and single spaces between
// words; the first word names a program found in PATH (no slash, no assignment, not a
// builtin or keyword); true and false only without arguments. The caller resolves the
// program with exec.LookPath and falls back to the shell when that or the start fails,
// so a missing or unrunnable program still gets the shell's message and exit status.
func directArgv(command string) []string {
	if command == "" || len(command) > 4096 {
		return nil
	}
	for i := 0; i < len(command); i++ {
		if c := command[i]; c != ' ' && !plainByte(c) {
			return nil
		}
	}
	argv := strings.Split(command, " ")
	for _, w := range argv {
		if w == "" { // leading, trailing or doubled spaces: leave them to the shell
			return nil
		}
	}
	first := argv[0]
	switch {
	case shellWords[first], strings.ContainsAny(first, "/="), first[0] == '-':
		return nil
	case (first == "true" || first == "false") && len(argv) > 1:
		return nil
	}
	return argv
}

// directCommand returns a command that runs argv without a shell, or nil when its program
// is not an absolute path found in PATH (a relative PATH entry, say).
func directCommand(argv []string) *exec.Cmd {
	path, err := exec.LookPath(argv[0])
	if err != nil || !filepath.IsAbs(path) {
		return nil
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0] // as the shell passes it
	return cmd
}
