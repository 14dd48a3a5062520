package objstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openTestDir opens a file:// bucket on a directory of the test's, closed with the test.
func openTestDir(t *testing.T) (*Bucket, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := Open(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, dir
}

// sourceFile writes data to a file of the test's and returns its path and sha256 (hex),
// as the archive writer hands them to Upload.
func sourceFile(t *testing.T, data []byte) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "archive.tar.gz")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return p, hex.EncodeToString(sum[:])
}

// readRange reads length bytes of key from off.
func readRange(t *testing.T, b *Bucket, key string, off, n int64) []byte {
	t.Helper()
	rc, err := b.RangeReader(t.Context(), key, off, n)
	if err != nil {
		t.Fatalf("range %d+%d: %v", off, n, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("range %d+%d: %v", off, n, err)
	}
	return got
}

// An archive uploaded to a file:// bucket: checked by sha256 on the way in, read back by
// ranges, named by a URL the bucket maps back to its key; a missing object is
// fs.ErrNotExist.
func TestFileBucket_UploadAndRanges(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Check(t.Context()); err != nil {
		t.Fatalf("Check of an empty directory: %v", err)
	}
	data := []byte(strings.Repeat("0123456789", 1000))
	src := filepath.Join(t.TempDir(), "g1.tar.gz")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	key := b.Key("g1")
	if err := b.Upload(t.Context(), key, src, int64(len(data)), hex.EncodeToString(sum[:])); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "g1.tar.gz")); err != nil || string(got) != string(data) {
		t.Fatalf("the directory holds %d bytes (%v), want the archive", len(got), err)
	}
	display := b.Display(key)
	if want := "file://" + dir + "/g1.tar.gz"; display != want {
		t.Errorf("Display = %q, want %q", display, want)
	}
	if k, ok := b.KeyOf(display); !ok || k != key {
		t.Errorf("KeyOf(%q) = %q, %v; want %q", display, k, ok, key)
	}
	rc, err := b.RangeReader(t.Context(), key, 4995, 10)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != "5678901234" {
		t.Errorf("range 4995+10 = %q, %v", got, err)
	}
	if _, err := b.RangeReader(t.Context(), b.Key("missing"), 0, -1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing object: %v, want fs.ErrNotExist", err)
	}
}

// An upload whose object does not hash to the sum the writer took is refused and leaves
// no object behind.
func TestFileBucket_UploadMismatch(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src := filepath.Join(t.TempDir(), "a")
	if err := os.WriteFile(src, []byte("what was written"), 0o644); err != nil {
		t.Fatal(err)
	}
	wrong := sha256.Sum256([]byte("something else"))
	err = b.Upload(t.Context(), b.Key("g2"), src, 16, hex.EncodeToString(wrong[:]))
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Upload with a wrong sum: %v, want ErrMismatch", err)
	}
	if ok, err := b.Exists(t.Context(), b.Key("g2")); err != nil || ok {
		t.Errorf("after a mismatch the object exists: %v, %v", ok, err)
	}
}

// URLs Open refuses, saying what it takes: other clouds' schemes (their drivers are not
// built in), an s3 URL without a bucket, a relative or root file URL, an unknown query
// parameter.
func TestOpen_Refused(t *testing.T) {
	for _, raw := range []string{
		"gs://bucket/prefix",
		"azblob://container/prefix",
		"s3:///prefix",
		"file://relative/dir",
		"file:///",
		"s3://bucket/p?regoin=us-east-1",
		"/just/a/path",
		"file:///nonexistent/directory/of/archives",
		"file:///tmp?create_dir=true",
	} {
		b, err := Open(t.Context(), raw)
		if err == nil {
			b.Close()
			t.Errorf("Open(%q) succeeded, want an error", raw)
			continue
		}
		if !strings.Contains(err.Error(), "artifacts URL") {
			t.Errorf("Open(%q) = %v, want it to name the artifacts URL", raw, err)
		}
	}
}

// A file bucket writes through a temporary file renamed into place: after an upload the
// directory holds the archive alone; ranges from and past the end read nothing; a key
// that would leave the directory is refused and writes nothing.
func TestFileBucket_AtomicAndBounds(t *testing.T) {
	b, dir := openTestDir(t)
	src, sum := sourceFile(t, []byte("0123456789"))
	if err := b.Upload(t.Context(), b.Key("g"), src, 10, sum); err != nil {
		t.Fatal(err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 || names[0].Name() != "g.tar.gz" {
		t.Errorf("the directory holds %v, want g.tar.gz alone", names)
	}
	for _, c := range []struct {
		off, n int64
		want   string
	}{{0, -1, "0123456789"}, {7, -1, "789"}, {10, -1, ""}, {12, 3, ""}, {8, 5, "89"}, {3, 0, ""}} {
		if got := readRange(t, b, b.Key("g"), c.off, c.n); string(got) != c.want {
			t.Errorf("range %d+%d = %q, want %q", c.off, c.n, got, c.want)
		}
	}
	outside := filepath.Join(filepath.Dir(dir), "escaped.tar.gz")
	if err := b.Upload(t.Context(), "../escaped.tar.gz", src, 10, sum); err == nil {
		t.Errorf("an upload to ../escaped.tar.gz succeeded")
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("an upload wrote %s, outside the bucket", outside)
	}
	if _, err := b.RangeReader(t.Context(), b.Key("g"), -1, 3); err == nil {
		t.Errorf("a negative offset was read")
	}
}
