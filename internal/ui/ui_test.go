package ui

import (
	"regexp"
	"strings"
	"testing"
)

// Each view is small and self-contained: at most MaxViewBytes, and nothing in it reaches
// the network (the host's default content security policy would block it, and a view
// that needs it would show nothing).
func TestViews_SizeAndNoNetwork(t *testing.T) {
	remote := regexp.MustCompile(`(?i)(src|href|action)\s*=\s*["']?\s*(https?:)?//|\bfetch\s*\(|XMLHttpRequest|WebSocket|EventSource|@import|url\(\s*["']?(https?:)?//|https?://`)
	for _, v := range Views() {
		t.Logf("%s: %d bytes (at most %d)", v.URI, len(v.HTML), MaxViewBytes)
		if len(v.HTML) == 0 || len(v.HTML) > MaxViewBytes {
			t.Errorf("%s is %d bytes, want 1..%d", v.URI, len(v.HTML), MaxViewBytes)
		}
		if m := remote.FindString(v.HTML); m != "" {
			t.Errorf("%s reaches the network: %q", v.URI, m)
		}
		for _, need := range []string{"ui/initialize", "ui/notifications/initialized", "ui/notifications/tool-result", "ui/notifications/tool-input", `"tools/call"`} {
			if !strings.Contains(v.HTML, need) {
				t.Errorf("%s does not speak %s", v.URI, need)
			}
		}
	}
}

func TestLinkFor(t *testing.T) {
	for tool, want := range map[string]string{
		"tasks_run": GraphURI, "tasks_status": GraphURI, "tasks_graph": GraphURI,
		"shell_open": TerminalURI, "shell_io": TerminalURI,
		"shell_close": "", "shell_list": "", "tasks_list": "", "tasks_cancel": "",
	} {
		if got := LinkFor(tool); got != want {
			t.Errorf("LinkFor(%s) = %q, want %q", tool, got, want)
		}
	}
}
