// Package objstore keeps finished graphs' archives in object storage: a bucket named by a
// URL (s3://bucket/prefix?region=...&endpoint=..., or file:///a/directory for a shared
// file system), opened with gocloud.dev/blob and its S3 and file drivers only (the other
// clouds' drivers would bring their SDKs into every build; their storage speaks S3 or can be
// mounted), credentials from the standard AWS chain (the AWS_* variables, the shared config
// and credentials files, the instance's role). The task engine uploads an archive once it
// is written, checks the upload by sha256 (the object read back must hash to what was
// written: what is stored is what the record says), and serves log slices of an expired
// graph by range reads of the object (see tasks/archive's LogIndex).
//
// An s3 URL's path is a prefix of every key: s3://artifacts/ci/mcp-harness puts a graph's
// archive at ci/mcp-harness/<graphId>.tar.gz in bucket artifacts; a file URL's path is the
// directory itself. Query parameters other than the driver's own are not accepted (a typo
// must not go unnoticed).
package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"strings"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://
	_ "gocloud.dev/blob/s3blob"   // s3://
	"gocloud.dev/gcerrors"
)

// Bucket is a bucket and a key prefix in it.
type Bucket struct {
	b      *blob.Bucket
	url    string // the URL it was opened with
	base   string // scheme://bucket, for the URLs of keys
	prefix string // "" or ending in "/"
}

// Open opens the bucket raw names. It contacts nothing: a bucket that does not exist or
// credentials that do not work are found at the first upload (or by Check).
func Open(ctx context.Context, raw string) (*Bucket, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("artifacts URL %q: %v", raw, err)
	}
	open := *u
	var base, prefix string
	switch {
	case u.Scheme == "s3" && u.Host != "":
		prefix = strings.Trim(u.Path, "/")
		if prefix != "" {
			prefix += "/"
		}
		open.Path = ""
		base = u.Scheme + "://" + u.Host + "/"
	case u.Scheme == "file" && u.Host == "" && path.IsAbs(u.Path) && path.Clean(u.Path) != "/":
		// The directory is the bucket: keys are file names in it.
		open.Path = path.Clean(u.Path)
		base = "file://" + open.Path + "/"
	default:
		return nil, fmt.Errorf("artifacts URL %q: want s3://bucket/prefix?region=... or file:///a/directory (object storage of other clouds: through their S3 endpoint)", raw)
	}
	b, err := blob.OpenBucket(ctx, open.String())
	if err != nil {
		return nil, fmt.Errorf("artifacts URL %q: %v", raw, err)
	}
	return &Bucket{b: b, url: raw, base: base, prefix: prefix}, nil
}

// URL is the URL the bucket was opened with: Open(URL) opens it again (the operator CLI
// does, from the artifact's record).
func (b *Bucket) URL() string { return b.url }

// Key is the key of a graph's archive.
func (b *Bucket) Key(graphID string) string { return b.prefix + graphID + ".tar.gz" }

// Display is how a key is named in results: scheme://bucket/key.
func (b *Bucket) Display(key string) string { return b.base + key }

// Close closes the bucket.
func (b *Bucket) Close() error { return b.b.Close() }

// Check reports whether the bucket answers to this server's credentials: it lists one
// key under the prefix.
func (b *Bucket) Check(ctx context.Context) error {
	it := b.b.List(&blob.ListOptions{Prefix: b.prefix})
	if _, err := it.Next(ctx); err != nil && err != io.EOF {
		return fmt.Errorf("artifacts bucket %s: %v", b.base+b.prefix, err)
	}
	return nil
}

// ErrMismatch reports an upload whose object, read back, does not have the sha256 (or
// size) written.
var ErrMismatch = errors.New("the uploaded archive does not match what was written")

// Upload puts the file at path under key, then reads it back and checks its size and
// sha256 against size and sum (hex), which the writer of the file took: a mismatch
// (ErrMismatch) leaves the object removed. The sha256 is stored with it as metadata.
func (b *Bucket) Upload(ctx context.Context, key, path string, size int64, sum string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := b.b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: "application/gzip", Metadata: map[string]string{"sha256": sum}})
	if err != nil {
		return fmt.Errorf("upload %s: %v", b.Display(key), err)
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Close()
		return fmt.Errorf("upload %s: %v", b.Display(key), err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("upload %s: %v", b.Display(key), err)
	}
	gotSize, gotSum, err := b.hash(ctx, key)
	if err != nil {
		return fmt.Errorf("read back %s: %v", b.Display(key), err)
	}
	if gotSize != size || gotSum != sum {
		b.b.Delete(context.WithoutCancel(ctx), key)
		return fmt.Errorf("%w: %s holds %d bytes with sha256 %s, want %d bytes with sha256 %s", ErrMismatch, b.Display(key), gotSize, gotSum, size, sum)
	}
	return nil
}

// hash reads the object at key and returns its size and sha256 (hex).
func (b *Bucket) hash(ctx context.Context, key string) (int64, string, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		return 0, "", err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// RangeReader reads length bytes of the object at key from offset (length < 0: to its
// end). An object that is not there is fs.ErrNotExist.
func (b *Bucket) RangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	r, err := b.b.NewRangeReader(ctx, key, offset, length, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%s: %w", b.Display(key), fs.ErrNotExist)
	}
	return r, err
}

// Exists reports whether there is an object at key.
func (b *Bucket) Exists(ctx context.Context, key string) (bool, error) {
	return b.b.Exists(ctx, key)
}

// KeyOf is the key of an object given by Display (scheme://bucket/key), if it is in this
// bucket.
func (b *Bucket) KeyOf(display string) (string, bool) {
	key, ok := strings.CutPrefix(display, b.base)
	return path.Clean("/" + key)[1:], ok && key != ""
}
