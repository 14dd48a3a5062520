package tools

import (
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// Every result is bounded by --max-result (Config.MaxResult): its text, in bytes, and its
// structuredContent, as the compact JSON the server sends. The task tools fit their
// reports in the tasks package (paging, shrinking log tails); the shell tools cap their
// output with maxBytes. bound, run on every result on its way out, is the last word: it
// cuts a text that is still too long in the middle, and the output of a shell result
// whose escaping made it too long, and turns anything else that would pass the budget
// into an error rather than send it.

// outputReserve is what a shell result needs besides its output: the other fields of the
// structured result, the header line of the text.
const outputReserve = 4 << 10

// maxResult is the budget of one result.
func (s *Table) maxResult() int {
	if s.cfg.MaxResult <= 0 {
		return tasks.DefaultMaxResult
	}
	return max(s.cfg.MaxResult, tasks.MinMaxResult)
}

// maxOutput is the most output a shell result carries, so that the result fits.
func (s *Table) maxOutput() int { return s.maxResult() - outputReserve }

// bound makes res fit the result budget (see above).
func (s *Table) bound(tool string, res *mcp.CallToolResult) *mcp.CallToolResult {
	limit := s.maxResult()
	if res.StructuredContent != nil && jsonsize.Of(res.StructuredContent) > limit {
		switch sc := res.StructuredContent.(type) {
		case readResult:
			sc.Output, sc.OmittedBytes = cutOutput(sc.Output, sc.OmittedBytes, limit-jsonsize.Of(withOutput(sc, "")))
			res.StructuredContent = sc
		case openResult: // shell_open's read, with what it adds
			rest := sc
			rest.readResult = withOutput(sc.readResult, "")
			sc.Output, sc.OmittedBytes = cutOutput(sc.Output, sc.OmittedBytes, limit-jsonsize.Of(rest))
			res.StructuredContent = sc
		case closeResult:
			sc.Output, _ = cutOutput(sc.Output, 0, limit-jsonsize.Of(closeResult{SessionID: sc.SessionID, ExitCode: sc.ExitCode, Signal: sc.Signal}))
			res.StructuredContent = sc
		case listResult:
			res.StructuredContent = cutCommands(sc, limit)
		}
		if n := jsonsize.Of(res.StructuredContent); n > limit {
			s.log.Error("result larger than --max-result", "tool", tool, "bytes", n, "max", limit)
			return mcp.NewToolResultError(fmt.Sprintf("%s: %s failed: its result (%d bytes) would pass the server's --max-result of %d bytes (the details are in the server's log); ask for less, e.g. fewer tasks or a smaller maxBytes",
				codeInternal, tool, n, limit))
		}
	}
	for i, c := range res.Content {
		tc, ok := c.(mcp.TextContent)
		if !ok || len(tc.Text) <= limit {
			continue
		}
		tc.Text = cutText(tc.Text, limit)
		res.Content[i] = tc
	}
	return res
}

// withOutput is r with another output, for sizing the rest of it.
func withOutput(r readResult, out string) readResult {
	r.Output = out
	return r
}

// cutOutput cuts the middle out of a shell output whose JSON takes more than room bytes,
// as the engine's maxBytes cut does: the head (a quarter) and the tail kept, a marker in
// between. omitted grows by what was cut.
func cutOutput(out string, omitted int64, room int) (string, int64) {
	if jsonsize.String(out)-2 <= room {
		return out, omitted
	}
	const markerRoom = 96 // the marker, escaped, with its number
	room = max(room-markerRoom, 0)
	head := jsonsize.Head(out, room/4)
	tail, _ := jsonsize.Tail(out[len(head):], room-(jsonsize.String(head)-2))
	cut := len(out) - len(head) - len(tail)
	marker := fmt.Sprintf("[... %d bytes omitted to fit the result; ask for less with maxBytes ...]\n", cut)
	if head != "" && !strings.HasSuffix(head, "\n") {
		marker = "\n" + marker
	}
	return head + marker + tail, omitted + int64(cut)
}

// cutText cuts the middle out of a text longer than limit bytes, keeping its start (where
// the header is) and its end, on line boundaries where there are some.
func cutText(text string, limit int) string {
	const markerRoom = 128
	keep := max(limit-markerRoom, 0)
	head := text[:keep/2]
	if i := strings.LastIndexByte(head, '\n'); i > len(head)/2 {
		head = head[:i+1]
	}
	tail := text[len(text)-(keep-len(head)):]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	head, tail = strings.ToValidUTF8(head, ""), strings.ToValidUTF8(tail, "")
	return fmt.Sprintf("%s\n[... %d bytes of this text omitted: results are limited to %d bytes ...]\n%s",
		head, len(text)-len(head)-len(tail), limit, tail)
}

// cutCommands shortens the longest command lines of a session list until it fits limit:
// each to the same length, the shorter ones whole (a command may be 128 KiB).
func cutCommands(r listResult, limit int) listResult {
	sessions := append([]sessionInfo(nil), r.Sessions...)
	sizes := make([]int, len(sessions))
	for i := range sessions {
		sizes[i] = jsonsize.String(sessions[i].Command) - 2
		sessions[i].Command = ""
	}
	const ellipsis = " [...]"
	level := jsonsize.Level(sizes, limit-jsonsize.Of(listResult{Sessions: sessions})-len(sessions)*len(ellipsis))
	for i, in := range r.Sessions {
		if sizes[i] <= level {
			sessions[i].Command = in.Command
		} else {
			sessions[i].Command = jsonsize.Head(in.Command, level) + ellipsis
		}
	}
	r.Sessions = sessions
	return r
}
