package envpolicy

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLooksSecret(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"GITHUB_TOKEN", true},
		{"github_token", true},
		{"Api_Key", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"PGPASSWORD", true},
		{"MYSQL_PASSWD", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"npm_config__auth", true},
		{"SSH_AUTH_SOCK", true},
		// A plain substring rule: a word inside another word counts.
		{"KEYBOARD_LAYOUT", true},
		{"AUTHOR_NAME", true},
		{"MONKEY", true},
		{"PATH", false},
		{"HOME", false},
		{"LC_ALL", false},
		{"EDITOR", false},
		{"", false},
		// ASCII case only: the Kelvin sign (U+212A) is not a K.
		{"\u212aEY", false},
	} {
		if got := LooksSecret(tc.name); got != tc.want {
			t.Errorf("LooksSecret(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"AWS_*", "AWS_SECRET_ACCESS_KEY", true},
		{"AWS_*", "AWS_", true},
		{"AWS_*", "MY_AWS_KEY", false},
		{"*_TOKEN", "GITHUB_TOKEN", true},
		{"*_TOKEN", "GITHUB_TOKEN_FILE", false},
		{"*_TOKEN", "_TOKEN", true},
		{"*", "ANYTHING", true},
		{"*", "", true},
		{"**", "X", true},
		{"A*B*C", "AxxBxxC", true},
		{"A*B*C", "AxxBxx", false},
		{"A*B*C", "ABC", true},
		{"*KEY*", "MY_KEY_ID", true},
		{"GITHUB_TOKEN", "GITHUB_TOKEN", true},
		{"GITHUB_TOKEN", "github_token", false}, // case-sensitive
		{"GITHUB_TOKEN", "GITHUB_TOKENS", false},
		{"A?B", "AxB", false}, // only '*' is special
		{"A?B", "A?B", true},
		{"[x]", "x", false},
		{"[x]", "[x]", true},
		{`A\*`, `A\B`, true}, // no escapes: '\' is itself, '*' still a star
		{"*a*a*a*a*b", strings.Repeat("a", 64), false},
	} {
		if got := match(tc.pattern, tc.name); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestPolicy_Validate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  Policy
		wantErr string // "" for none
	}{
		{"Inherit", Policy{Mode: Inherit}, ""},
		{"Scrub", Policy{Mode: Scrub, Allow: []string{"GITHUB_TOKEN", "AWS_*", "*"}}, ""},
		{"Minimal", Policy{Mode: Minimal}, ""},
		{"ErrUnknownMode", Policy{Mode: "strict"}, `env policy "strict": want inherit, scrub or minimal`},
		{"ErrEmptyMode", Policy{}, `env policy "": want inherit, scrub or minimal`},
		{"ErrModeCase", Policy{Mode: "Scrub"}, `env policy "Scrub": want inherit, scrub or minimal`},
		{"ErrEmptyPattern", Policy{Mode: Scrub, Allow: []string{"A", ""}}, `env allow pattern "": want a variable name, or a pattern with *`},
		{"ErrAssignment", Policy{Mode: Scrub, Allow: []string{"TOKEN=abc"}}, `env allow pattern "TOKEN=abc": a variable name cannot contain '=' (give the name only, not NAME=value)`},
		{"ErrNUL", Policy{Mode: Scrub, Allow: []string{"A\x00B"}}, `env allow pattern "A\x00B": a variable name cannot contain a NUL byte`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("%+v.Validate() = %q, want %q", tc.policy, got, tc.wantErr)
			}
		})
	}
}

// environ is a server environment with a bit of everything.
var environ = []string{
	"PATH=/usr/bin:/bin",
	"HOME=/home/u",
	"GITHUB_TOKEN=ghp_x",
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
	"LC_CTYPE=C.UTF-8",
	"EDITOR=vi",
	"AWS_ACCESS_KEY_ID=AKIA",
	"AWS_REGION=eu-west-1",
	"KEYBOARD_LAYOUT=us",
	"Api_Key=k",
	"TERM=xterm",
	"MCP_HARNESS_WORKSPACE=/w",
	"TZ=UTC",
}

func TestPolicy_Apply(t *testing.T) {
	for _, tc := range []struct {
		name         string
		policy       Policy
		environ      []string
		kept, withhe []string
	}{
		{
			name:    "Inherit",
			policy:  Policy{Mode: Inherit},
			environ: environ,
			kept:    environ,
		},
		{
			name:    "Scrub",
			policy:  Policy{Mode: Scrub},
			environ: environ,
			kept: []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LC_CTYPE=C.UTF-8",
				"EDITOR=vi", "AWS_REGION=eu-west-1", "TERM=xterm", "MCP_HARNESS_WORKSPACE=/w", "TZ=UTC"},
			withhe: []string{"AWS_ACCESS_KEY_ID", "Api_Key", "GITHUB_TOKEN", "KEYBOARD_LAYOUT"},
		},
		{
			name:    "ScrubAllowName",
			policy:  Policy{Mode: Scrub, Allow: []string{"KEYBOARD_LAYOUT"}},
			environ: environ,
			kept: []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LC_CTYPE=C.UTF-8",
				"EDITOR=vi", "AWS_REGION=eu-west-1", "KEYBOARD_LAYOUT=us", "TERM=xterm", "MCP_HARNESS_WORKSPACE=/w", "TZ=UTC"},
			withhe: []string{"AWS_ACCESS_KEY_ID", "Api_Key", "GITHUB_TOKEN"},
		},
		{
			name:    "ScrubAllowPrefixGlob",
			policy:  Policy{Mode: Scrub, Allow: []string{"AWS_*"}},
			environ: environ,
			kept: []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LC_CTYPE=C.UTF-8",
				"EDITOR=vi", "AWS_ACCESS_KEY_ID=AKIA", "AWS_REGION=eu-west-1", "TERM=xterm", "MCP_HARNESS_WORKSPACE=/w", "TZ=UTC"},
			withhe: []string{"Api_Key", "GITHUB_TOKEN", "KEYBOARD_LAYOUT"},
		},
		{
			name:    "ScrubAllowSuffixGlob",
			policy:  Policy{Mode: Scrub, Allow: []string{"*_TOKEN"}},
			environ: []string{"GITHUB_TOKEN=a", "GITLAB_TOKEN=b", "GITHUB_TOKEN_FILE=c", "github_token=d"},
			kept:    []string{"GITHUB_TOKEN=a", "GITLAB_TOKEN=b"},
			withhe:  []string{"GITHUB_TOKEN_FILE", "github_token"},
		},
		{
			name:    "ScrubAllowAll",
			policy:  Policy{Mode: Scrub, Allow: []string{"*"}},
			environ: environ,
			kept:    environ,
		},
		{
			name:    "Minimal",
			policy:  Policy{Mode: Minimal},
			environ: environ,
			kept:    []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LC_CTYPE=C.UTF-8", "TERM=xterm", "TZ=UTC"},
			withhe:  []string{"AWS_ACCESS_KEY_ID", "AWS_REGION", "Api_Key", "EDITOR", "GITHUB_TOKEN", "KEYBOARD_LAYOUT", "MCP_HARNESS_WORKSPACE"},
		},
		{
			name:    "MinimalAllow",
			policy:  Policy{Mode: Minimal, Allow: []string{"EDITOR", "GITHUB_TOKEN"}},
			environ: environ,
			kept: []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "GITHUB_TOKEN=ghp_x", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
				"LC_CTYPE=C.UTF-8", "EDITOR=vi", "TERM=xterm", "TZ=UTC"},
			withhe: []string{"AWS_ACCESS_KEY_ID", "AWS_REGION", "Api_Key", "KEYBOARD_LAYOUT", "MCP_HARNESS_WORKSPACE"},
		},
		{
			// Minimal keeps no more than scrub: a locale name that looks secret is withheld.
			name:    "MinimalSecretLocale",
			policy:  Policy{Mode: Minimal},
			environ: []string{"LC_AUTH=x", "LC_NUMERIC=C", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "TMPDIR=/tmp"},
			kept:    []string{"LC_NUMERIC=C", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "TMPDIR=/tmp"},
			withhe:  []string{"LC_AUTH"},
		},
		{
			name:    "MinimalCaseSensitive",
			policy:  Policy{Mode: Minimal},
			environ: []string{"path=/x", "Home=/y", "lc_all=C"},
			withhe:  []string{"Home", "lc_all", "path"},
		},
		{
			// The last entry of a name decides, and stands where it stands, as in os/exec.
			name:    "DuplicatesLastWins",
			policy:  Policy{Mode: Scrub},
			environ: []string{"A=1", "B=2", "A=3", "TOKEN=x", "C=4", "TOKEN=y"},
			kept:    []string{"B=2", "A=3", "C=4"},
			withhe:  []string{"TOKEN"},
		},
		{
			name:    "Malformed",
			policy:  Policy{Mode: Scrub},
			environ: []string{"NOEQUALS", "", "=nameless", "GOOD=1", "NUL=a\x00b", "SECRET_NUL\x00=x", "EMPTY=", "X==y"},
			kept:    []string{"GOOD=1", "EMPTY=", "X==y"},
		},
		{
			// An invalid policy fails closed: an unknown mode is minimal, a bad pattern
			// allows nothing.
			name:    "InvalidFailsClosed",
			policy:  Policy{Mode: "bogus", Allow: []string{"EDITOR=vi", ""}},
			environ: []string{"PATH=/bin", "EDITOR=vi", "TOKEN=t"},
			kept:    []string{"PATH=/bin"},
			withhe:  []string{"EDITOR", "TOKEN"},
		},
		{
			name:   "Empty",
			policy: Policy{Mode: Scrub},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, withheld := tc.policy.Apply(slices.Clone(tc.environ))
			if diff := cmp.Diff(tc.kept, kept); diff != "" {
				t.Errorf("Apply kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.withhe, withheld); diff != "" {
				t.Errorf("Apply withheld (-want +got):\n%s", diff)
			}
		})
	}
}

// Apply leaves its input alone: the server's environment is shared by every command.
func TestPolicy_ApplyKeepsInput(t *testing.T) {
	in := []string{"B=1", "A=2", "B=3", "TOKEN=x"}
	orig := slices.Clone(in)
	Policy{Mode: Scrub}.Apply(in)
	if diff := cmp.Diff(orig, in); diff != "" {
		t.Errorf("Apply changed its input (-want +got):\n%s", diff)
	}
}

func TestWithheld(t *testing.T) {
	for _, tc := range []struct {
		name     string
		withheld []string
		callEnv  map[string]string
		want     []string
	}{
		{"NoCallEnv", []string{"A_KEY", "GITHUB_TOKEN"}, nil, []string{"A_KEY", "GITHUB_TOKEN"}},
		{"CallSetsOne", []string{"A_KEY", "GITHUB_TOKEN"}, map[string]string{"GITHUB_TOKEN": "mine"}, []string{"A_KEY"}},
		{"CallSetsEmpty", []string{"A_KEY"}, map[string]string{"A_KEY": ""}, nil},
		{"CallSetsAll", []string{"A_KEY", "B_KEY"}, map[string]string{"A_KEY": "1", "B_KEY": "2", "C": "3"}, nil},
		{"CaseSensitive", []string{"GITHUB_TOKEN"}, map[string]string{"github_token": "x"}, []string{"GITHUB_TOKEN"}},
		{"NothingWithheld", nil, map[string]string{"A": "1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Withheld(tc.withheld, tc.callEnv)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Withheld(%q, %v) (-want +got):\n%s", tc.withheld, tc.callEnv, diff)
			}
		})
	}
}

func TestModes(t *testing.T) {
	for _, m := range Modes() {
		if !m.Valid() {
			t.Errorf("%q.Valid() = false for a mode of Modes()", m)
		}
		if err := (Policy{Mode: m}).Validate(); err != nil {
			t.Errorf("Policy{Mode: %q}.Validate() = %v, want nil", m, err)
		}
	}
	for _, w := range SecretWords() {
		if !LooksSecret(w) || !LooksSecret(strings.ToLower(w)) {
			t.Errorf("LooksSecret(%q) = false for a secret word", w)
		}
	}
	for _, n := range MinimalNames() {
		if kept, _ := (Policy{Mode: Minimal}).Apply([]string{n + "=x"}); len(kept) != 1 {
			t.Errorf("Minimal withholds %s, a name of MinimalNames", n)
		}
	}
}

// Whatever the environment and the policy, Apply does not panic, every valid name is
// either kept or withheld and never both, withheld is sorted and unique, kept holds only
// entries of the input in their order, and each mode keeps no more than the looser one.
func FuzzApply(f *testing.F) {
	for _, e := range environ {
		f.Add(e, "AWS_*", "scrub")
	}
	f.Add("A=1\nB=2\nA=3", "*_TOKEN", "minimal")
	f.Add("NOEQ\n=x\nK\x00=v", "*", "inherit")
	f.Add("KEYBOARD_LAYOUT=us", "", "bogus")
	f.Fuzz(func(t *testing.T, env, allow, mode string) {
		environ := strings.Split(env, "\n")
		p := Policy{Mode: Mode(mode), Allow: strings.Split(allow, ",")}
		kept, withheld := p.Apply(environ)

		valid := map[string]bool{}
		for _, kv := range environ {
			if name, _, ok := strings.Cut(kv, "="); ok && name != "" && !strings.Contains(kv, "\x00") {
				valid[name] = true
			}
		}
		keptNames := map[string]bool{}
		next := 0 // kept is a subsequence of environ
		for _, kv := range kept {
			name, _, _ := strings.Cut(kv, "=")
			if keptNames[name] {
				t.Fatalf("Apply(%q) kept %s twice", environ, name)
			}
			keptNames[name] = true
			for next < len(environ) && environ[next] != kv {
				next++
			}
			if next == len(environ) {
				t.Fatalf("Apply(%q) kept %q, not an entry of the input in order", environ, kv)
			}
			next++
		}
		if !slices.IsSorted(withheld) || len(slices.Compact(slices.Clone(withheld))) != len(withheld) {
			t.Fatalf("Apply(%q) withheld %q: not sorted and unique", environ, withheld)
		}
		for _, name := range withheld {
			if keptNames[name] {
				t.Fatalf("Apply(%q): %s both kept and withheld", environ, name)
			}
		}
		if len(keptNames)+len(withheld) != len(valid) {
			t.Fatalf("Apply(%q) kept %q and withheld %q: want every one of %d valid names once", environ, kept, withheld, len(valid))
		}
		for name := range keptNames {
			if !valid[name] {
				t.Fatalf("Apply(%q) kept %q, not a valid name", environ, name)
			}
		}

		// Each mode keeps a subset of what the looser one keeps.
		prev := map[string]bool(nil)
		for _, m := range Modes() {
			k, _ := Policy{Mode: m, Allow: p.Allow}.Apply(environ)
			cur := map[string]bool{}
			for _, kv := range k {
				cur[kv] = true
				if prev != nil && !prev[kv] {
					t.Fatalf("%s keeps %q, which a looser mode withholds", m, kv)
				}
			}
			prev = cur
		}
	})
}

// match never panics, "*" matches everything and a pattern without '*' only itself.
func FuzzMatch(f *testing.F) {
	f.Add("AWS_*", "AWS_REGION")
	f.Add("*a*b", "aaab")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := match(pattern, name)
		if !strings.Contains(pattern, "*") && got != (pattern == name) {
			t.Errorf("match(%q, %q) = %v for a pattern without *", pattern, name, got)
		}
		if !match("*", name) || !match(name+"*", name) || !match("*"+name, name) {
			t.Errorf("a star around %q does not match it", name)
		}
		if strings.Trim(pattern, "*") == "" && pattern != "" && !got {
			t.Errorf("match(%q, %q) = false for an all-star pattern", pattern, name)
		}
	})
}
