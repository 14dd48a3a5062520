//go:build e2e

package s3

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
)

// s3URL is the test cluster's bucket with a prefix of the test's own, or a skip.
func s3URL(t *testing.T) string {
	t.Helper()
	raw := os.Getenv("TESTCLUSTER_S3_URL")
	if raw == "" {
		t.Skip("no test S3: start the test cluster with e2e/cluster/up.sh, then set -a; . $TESTCLUSTER_RUN/env; set +a")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = fmt.Sprintf("/objstore/%s-%d", t.Name(), time.Now().UnixNano())
	return u.String()
}

// A file of n random bytes and its sha256.
func randomFile(t *testing.T, n int) (string, []byte, string) {
	t.Helper()
	data := make([]byte, n)
	rand.Read(data)
	p, sum := sourceFile(t, data)
	return p, data, sum
}

// An archive larger than a part goes up in parts (three, in flight together) and comes
// back whole and by ranges; one in a single request likewise; a missing key is
// fs.ErrNotExist; Check lists the prefix.
func TestS3Bucket_MultipartAndRanges(t *testing.T) {
	defer func(size int64) { defaultPartSize = size }(defaultPartSize)
	defaultPartSize = 5 << 20 // S3's smallest part
	b, err := objstore.Open(t.Context(), s3URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, n := range []int{11<<20 + 12345, 1000} {
		src, data, sum := randomFile(t, n)
		key := b.Key(fmt.Sprintf("g%d", n))
		if err := b.Upload(t.Context(), key, src, int64(n), sum); err != nil {
			t.Fatalf("Upload of %d bytes: %v", n, err)
		}
		if got := readRange(t, b, key, 0, -1); string(got) != string(data) {
			t.Fatalf("the object of %d bytes reads back as %d other bytes", n, len(got))
		}
		for _, r := range [][2]int64{{int64(n) - 10, -1}, {int64(n) / 2, 100}, {int64(n) - 3, 10}, {int64(n), -1}, {0, 0}} {
			want := data[min(r[0], int64(n)):]
			if r[1] >= 0 {
				want = want[:min(r[1], int64(len(want)))]
			}
			if got := readRange(t, b, key, r[0], r[1]); string(got) != string(want) {
				t.Errorf("range %d+%d of %d bytes: %d bytes, not the object's", r[0], r[1], n, len(got))
			}
		}
		if ok, err := b.Exists(t.Context(), key); !ok || err != nil {
			t.Errorf("Exists after the upload: %v, %v", ok, err)
		}
	}
	if err := b.Check(t.Context()); err != nil {
		t.Errorf("Check: %v", err)
	}
	if _, err := b.RangeReader(t.Context(), b.Key("missing"), 0, -1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing object: %v, want fs.ErrNotExist", err)
	}
	if ok, err := b.Exists(t.Context(), b.Key("missing")); ok || err != nil {
		t.Errorf("Exists of a missing object: %v, %v", ok, err)
	}
}

// An upload whose read-back does not hash to the writer's sum is refused and removed.
func TestS3Bucket_UploadMismatch(t *testing.T) {
	b, err := objstore.Open(t.Context(), s3URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src, _, _ := randomFile(t, 4096)
	wrong := strings.Repeat("0", 64)
	if err := b.Upload(t.Context(), b.Key("g"), src, 4096, wrong); !errors.Is(err, objstore.ErrMismatch) {
		t.Fatalf("Upload with a wrong sum: %v, want ErrMismatch", err)
	}
	if ok, err := b.Exists(t.Context(), b.Key("g")); ok || err != nil {
		t.Errorf("after a mismatch the object exists: %v, %v", ok, err)
	}
}

// Requests are signed (SigV4) with the credentials of the AWS chain: a wrong secret is
// refused by the server, so Check and Upload fail and nothing is stored.
func TestS3Bucket_WrongSecretRefused(t *testing.T) {
	raw := s3URL(t)
	good, err := objstore.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	b, err := objstore.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Check(t.Context()); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("Check with a wrong secret: %v, want the server's 403", err)
	}
	src, _, sum := randomFile(t, 100)
	if err := b.Upload(t.Context(), b.Key("g"), src, 100, sum); err == nil {
		t.Fatal("an upload with a wrong secret succeeded")
	}
	if ok, err := good.Exists(t.Context(), good.Key("g")); ok || err != nil {
		t.Errorf("after a refused upload the object exists: %v, %v", ok, err)
	}
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
func readRange(t *testing.T, b *objstore.Bucket, key string, off, n int64) []byte {
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
