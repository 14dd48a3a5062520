package tasks

import (
	"io"

	"github.com/mcp-harness/mcp-harness/tasks/archive"
)

// readArtifactLog reads up to limit bytes from offset of a task's log inside an artifact
// (offset < 0: the last -offset bytes), as ReadLog reads a live log, for tests to check
// what an archive holds. The archive is compressed, so this reads through it up to the
// slice: it costs in proportion to the offset, unlike a live log.
func readArtifactLog(artifact, taskID string, offset, limit int64) (LogSlice, error) {
	s := LogSlice{Path: artifact + "#" + archive.LogEntry(taskID), EOF: true} // EOF stays: the task has no log
	err := archive.ReadLogs(artifact, []string{taskID}, func(_ string, size int64, r io.Reader) error {
		s.Size = size
		if offset < 0 {
			offset = max(size+offset, 0)
		}
		offset = min(offset, size)
		limit = min(limit, MaxLogSlice, size-offset)
		if _, err := io.CopyN(io.Discard, r, offset); err != nil {
			return err
		}
		buf := make([]byte, limit)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		s.Offset, s.Text, s.NextOffset = offset, string(buf), offset+limit
		s.EOF = s.NextOffset >= size
		return nil
	})
	return s, err
}
