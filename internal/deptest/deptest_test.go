package deptest

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reaches imports internal/quote through reaches/middle (both under testdata/, which
// ./... leaves out), so that the checker has a banned import to find, one step removed.
const (
	reaches = Module + "/internal/deptest/testdata/reaches"
	middle  = reaches + "/middle"
	quote   = Module + "/internal/quote"
)

func needGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
}

func TestDepChecker_Violations(t *testing.T) {
	needGo(t)
	tests := []struct {
		name    string
		banned  map[string]string
		allowed []string
		want    []Violation
	}{
		{
			name:   "ErrBannedThroughAnother",
			banned: map[string]string{quote: "quoting is banned here"},
			want:   []Violation{{Dep: quote, Ban: quote, Reason: "quoting is banned here", Chain: []string{reaches, middle, quote}}},
		},
		{
			name:   "ErrBannedPrefix",
			banned: map[string]string{Module + "/internal/": "no helpers"},
			want: []Violation{
				{Dep: middle, Ban: Module + "/internal/", Reason: "no helpers", Chain: []string{reaches, middle}},
				{Dep: quote, Ban: Module + "/internal/", Reason: "no helpers", Chain: []string{reaches, middle, quote}},
			},
		},
		{
			name:    "ErrBanMoreSpecificThanAllowed",
			banned:  map[string]string{quote: "not this one"},
			allowed: []string{Module},
			want:    []Violation{{Dep: quote, Ban: quote, Reason: "not this one", Chain: []string{reaches, middle, quote}}},
		},
		{
			name:    "AllowedMoreSpecificThanBan",
			banned:  map[string]string{Module: "nothing of the project"},
			allowed: []string{Module + "/internal/quote"},
			want:    []Violation{{Dep: middle, Ban: Module, Reason: "nothing of the project", Chain: []string{reaches, middle}}},
		},
		{
			name:   "OK",
			banned: NoAdapters(),
		},
		{
			// A ban is a path and what is below it, not any string it starts: quote is not
			// below .../internal/quo.
			name:   "OKPrefixIsAPathElement",
			banned: map[string]string{Module + "/internal/quo": "a prefix of a name, not a parent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DepChecker{Pkg: "./testdata/reaches", Banned: tt.banned, Allowed: tt.allowed}.Violations(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Violations() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDepChecker_ViolationsOfAnotherSystem(t *testing.T) {
	needGo(t)
	// internal/procid reads sysctl through x/sys/unix on macOS only.
	sys := map[string]string{"golang.org/x/sys": "no system calls beyond the standard library"}
	for goos, want := range map[string]int{"linux": 0, "darwin": 1} {
		got, err := DepChecker{Pkg: Module + "/internal/procid", Banned: sys, GOOS: goos, GOARCH: "arm64"}.Violations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Errorf("GOOS=%s: Violations() = %v, want %d", goos, got, want)
		}
	}
}

func TestDepChecker_ErrNoPackage(t *testing.T) {
	needGo(t)
	_, err := DepChecker{Pkg: "./testdata/nosuchpackage", Banned: NoAdapters()}.Violations(t.Context())
	if err == nil || !strings.Contains(err.Error(), "go list -deps ./testdata/nosuchpackage") {
		t.Errorf("Violations() of a missing package = %v, want the go list error", err)
	}
}

// recorder is a testing.TB that keeps the failures Check reports instead of failing the
// test that runs it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Check fails the test it is given, and the message names the banned import, the reason
// and the chain that reaches it.
func TestDepChecker_CheckFails(t *testing.T) {
	needGo(t)
	r := &recorder{TB: t}
	DepChecker{Pkg: "./testdata/reaches", Banned: map[string]string{quote: "quoting is banned here"}}.Check(r)
	want := []string{reaches + " imports " + quote + " (" + reaches + " -> " + middle + " -> " + quote + "): banned because quoting is banned here"}
	if diff := cmp.Diff(want, r.errors); diff != "" {
		t.Errorf("Check() failures mismatch (-want +got):\n%s", diff)
	}
}
