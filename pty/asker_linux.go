package pty

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/procid"
)

// describeAsker says which process pid is, for a person about to answer it: its
// executable (unreadable, and so "", for a setuid program of another user), its command
// line, whether it runs with rights its user does not have (its real and effective ids
// differ, or its executable is setuid or setgid), and whether it is a relay.
func describeAsker(pid int) Asker {
	a := Asker{Pid: pid, start: procid.Identify(pid).ProcStart}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
		b = bytes.TrimRight(b, "\x00")
		if len(b) > 0 {
			a.Args = strings.Split(string(b), "\x00")
		}
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
		a.Exe = exe
		if fi, err := os.Stat(exe); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			a.Setuid = true
		}
	}
	if f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if ids, ok := strings.CutPrefix(line, "Uid:"); ok {
				a.Setuid = a.Setuid || idsDiffer(ids)
			} else if ids, ok := strings.CutPrefix(line, "Gid:"); ok {
				a.Setuid = a.Setuid || idsDiffer(ids)
			}
		}
		f.Close()
	}
	a.Relay = a.Exe != "" && relays[filepath.Base(a.Exe)] || len(a.Args) > 0 && relays[filepath.Base(a.Args[0])]
	return a
}

// idsDiffer reports whether a status line's real, effective, saved and file system ids
// are not all one.
func idsDiffer(line string) bool {
	f := strings.Fields(line)
	for _, id := range f {
		if id != f[0] {
			return true
		}
	}
	return false
}
