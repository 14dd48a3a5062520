// Package archivetest holds what tests of the artifact format and of the engine that
// writes it both look at in an archive, as httptest does for net/http.
package archivetest

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// Members counts the gzip members of the file at path: the format writes one per log
// (or per level of logs), and a reader must find them all.
func Members(t testing.TB, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f) // one buffer across members: Reset must not lose what it read
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, zr); err != nil {
			t.Fatal(err)
		}
		n++
		if err := zr.Reset(br); err == io.EOF {
			return n
		} else if err != nil {
			t.Fatal(err)
		}
	}
}
