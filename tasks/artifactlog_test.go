package tasks

// readArtifactLog reads up to limit bytes from offset of a task's log inside an artifact
// (offset < 0: the last -offset bytes, limit then being -offset), through the reader the
// engine itself uses for an expired graph's logs (readArtifactLogs), for tests to check
// what an archive holds.
func readArtifactLog(artifact, taskID string, offset, limit int64) (LogSlice, error) {
	q := LogQuery{Tail: -offset}
	if offset >= 0 {
		q = LogQuery{Offset: &offset, Limit: limit}
	}
	logs, err := readArtifactLogs(artifact, []string{taskID}, q)
	return logs[taskID], err
}
