package archive

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/klauspost/compress/gzip"
)

// ReadLogs reads the logs of taskIDs out of an artifact in one pass: it is compressed, so
// reaching an entry costs reading everything before it, and one pass for several logs
// costs what reading the last of them alone would. It calls read with each log it finds,
// in the artifact's order, with the log's size and a reader of its content that is valid
// until read returns, and stops once every log asked for was found; a task without a log
// in the artifact is not reported. An error from read ends the pass with that error.
func ReadLogs(artifact string, taskIDs []string, read func(taskID string, size int64, r io.Reader) error) error {
	if len(taskIDs) == 0 {
		return nil
	}
	want := make(map[string]string, len(taskIDs)) // entry name -> task id
	for _, id := range taskIDs {
		want[LogEntry(id)] = id
	}
	f, err := os.Open(artifact)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for found := 0; found < len(want); {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		id, ok := want[h.Name]
		if !ok {
			continue
		}
		found++
		if err := read(id, h.Size, tr); err != nil {
			return err
		}
	}
	return nil
}

// OpenLog opens a task's log inside an artifact for reading from its start, and says how
// long it is. It returns fs.ErrNotExist when the task has no log there.
func OpenLog(artifact, taskID string) (io.ReadCloser, int64, error) {
	f, err := os.Open(artifact)
	if err != nil {
		return nil, 0, err
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			f.Close()
			return nil, 0, fmt.Errorf("%s in %s: %w", LogEntry(taskID), artifact, fs.ErrNotExist)
		}
		if err != nil {
			f.Close()
			return nil, 0, err
		}
		if h.Name == LogEntry(taskID) {
			return struct {
				io.Reader
				io.Closer
			}{tr, f}, h.Size, nil
		}
	}
}

// OpenIndexed reads the content of the log ix names out of r, which reads the artifact
// from ix.Offset on (a range read of the log's member, at least ix.Length bytes). Only the
// member is decompressed, and only as far as the caller reads.
func OpenIndexed(r io.Reader, ix LogIndex) (io.Reader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", LogEntry(ix.TaskID), err)
	}
	gz.Multistream(false) // the member is the log's; what follows is another's
	if _, err := io.CopyN(io.Discard, gz, ix.Skip); err != nil {
		return nil, fmt.Errorf("%s: %w", LogEntry(ix.TaskID), err)
	}
	return io.LimitReader(gz, ix.Size), nil
}
