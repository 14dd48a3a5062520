// Package objstore keeps finished graphs' archives in object storage: a bucket named by a
// URL (s3://bucket/prefix?region=...&endpoint=..., or file:///a/directory for a shared
// file system). The task engine uploads an archive once it is written, checks the upload
// by sha256 (the object read back must hash to what was written: what is stored is what
// the record says), and serves log slices of an expired graph by range reads of the
// object (see tasks/archive's LogIndex).
//
// Why not a portable blob library: the package needs five calls (put, ranged get, exists,
// delete, list one key), and every server links what it imports, though most never use a
// bucket. gocloud.dev/blob with its S3 driver brought OpenTelemetry, gRPC and the Google
// API client with it; built alone, its S3 driver was about 21.6 MB of text against 7.4 MB
// for the AWS SDK v2's S3 client and config; in this binary the switch took it from 111.7
// to 107.2 MB (before tasks/kube left client-go's clientset). So s3:// goes through the
// SDK's S3 client directly (package objstore/s3, run by the remote helper: package remote)
// and file:// through a few lines of our own (file.go).
// Other clouds' storage is reached through its S3-compatible endpoint or a mount.
//
// Credentials come from the standard AWS chain (the AWS_* variables, the shared config
// and credentials files, the instance's or pod's role). An s3 URL's path is a prefix of
// every key: s3://artifacts/ci/mcp-harness puts a graph's archive at
// ci/mcp-harness/<graphId>.tar.gz in bucket artifacts; a file URL's path is the directory
// itself. Query parameters other than the ones documented in parseS3 are refused (a typo
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
)

// Backend is what a scheme provides. Keys are the full keys (prefix included).
type Backend interface {
	// Put stores size bytes of f under key, with sum as the object's sha256 metadata.
	Put(ctx context.Context, key string, f *os.File, size int64, sum string) error
	// RangeReader reads length bytes from offset (length < 0: to the end); an object that
	// is not there is fs.ErrNotExist.
	RangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	Exists(ctx context.Context, key string) (bool, error)
	Remove(ctx context.Context, key string) error
	// Check lists at most one key under prefix.
	Check(ctx context.Context, prefix string) error
	Close() error
}

// OpenS3 opens the backend of an s3:// bucket: bucket is the URL's host, query its query
// parameters, checked there (an unknown one is refused). It contacts nothing. In the
// server it is the remote helper's (package remote), so the AWS SDK is not linked into the
// server; in the helper, package objstore/s3's Open. nil refuses s3 URLs.
var OpenS3 func(ctx context.Context, bucket string, query url.Values) (Backend, error)

// Bucket is a bucket and a key prefix in it.
type Bucket struct {
	be     Backend
	url    string // the URL it was opened with
	base   string // scheme://bucket/, for the URLs of keys
	prefix string // "" or ending in "/"
}

// Open opens the bucket raw names. It contacts nothing: a bucket that does not exist or
// credentials that do not work are found at the first upload (or by Check).
func Open(ctx context.Context, raw string) (*Bucket, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("artifacts URL %q: %v", raw, err)
	}
	b := &Bucket{url: raw}
	switch {
	case u.Scheme == "s3" && u.Host != "":
		b.prefix = strings.Trim(u.Path, "/")
		if b.prefix != "" {
			b.prefix += "/"
		}
		b.base = "s3://" + u.Host + "/"
		if OpenS3 == nil {
			return nil, fmt.Errorf("artifacts URL %q: s3 buckets are not available in this program", raw)
		}
		if b.be, err = OpenS3(ctx, u.Host, u.Query()); err != nil {
			return nil, fmt.Errorf("artifacts URL %q: %v", raw, err)
		}
	case u.Scheme == "file" && u.Host == "" && path.IsAbs(u.Path) && path.Clean(u.Path) != "/":
		// The directory is the bucket: keys are file names in it.
		if u.RawQuery != "" {
			return nil, fmt.Errorf("artifacts URL %q: a file URL takes no query parameters", raw)
		}
		dir := path.Clean(u.Path)
		b.base = "file://" + dir + "/"
		if b.be, err = openDir(dir); err != nil {
			return nil, fmt.Errorf("artifacts URL %q: %v", raw, err)
		}
	default:
		return nil, fmt.Errorf("artifacts URL %q: want s3://bucket/prefix?region=... or file:///a/directory (object storage of other clouds: through their S3 endpoint)", raw)
	}
	return b, nil
}

// URL is the URL the bucket was opened with: Open(URL) opens it again (the operator CLI
// does, from the artifact's record).
func (b *Bucket) URL() string { return b.url }

// Key is the key of a graph's archive.
func (b *Bucket) Key(graphID string) string { return b.prefix + graphID + ".tar.gz" }

// Display is how a key is named in results: scheme://bucket/key.
func (b *Bucket) Display(key string) string { return b.base + key }

// Close closes the bucket.
func (b *Bucket) Close() error { return b.be.Close() }

// Check reports whether the bucket answers to this server's credentials: it lists one
// key under the prefix.
func (b *Bucket) Check(ctx context.Context) error {
	if err := b.be.Check(ctx, b.prefix); err != nil {
		return fmt.Errorf("artifacts bucket %s: %v", b.base+b.prefix, err)
	}
	return nil
}

// ErrMismatch reports an upload whose object, read back, does not have the sha256 (or
// size) written.
var ErrMismatch = errors.New("the uploaded archive does not match what was written")

// Upload puts the file at path under key, then reads it back and checks its size and
// sha256 against size and sum (hex), which the writer of the file took: a mismatch
// (ErrMismatch) leaves the object removed. The sha256 is stored with it as metadata (in
// S3; a directory keeps the file alone).
func (b *Bucket) Upload(ctx context.Context, key, path string, size int64, sum string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := b.be.Put(ctx, key, f, size, sum); err != nil {
		return fmt.Errorf("upload %s: %v", b.Display(key), err)
	}
	gotSize, gotSum, err := b.hash(ctx, key)
	if err != nil {
		return fmt.Errorf("read back %s: %v", b.Display(key), err)
	}
	if gotSize != size || gotSum != sum {
		b.be.Remove(context.WithoutCancel(ctx), key)
		return fmt.Errorf("%w: %s holds %d bytes with sha256 %s, want %d bytes with sha256 %s", ErrMismatch, b.Display(key), gotSize, gotSum, size, sum)
	}
	return nil
}

// hash reads the object at key and returns its size and sha256 (hex).
func (b *Bucket) hash(ctx context.Context, key string) (int64, string, error) {
	r, err := b.be.RangeReader(ctx, key, 0, -1)
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
	if offset < 0 {
		return nil, fmt.Errorf("%s: negative offset %d", b.Display(key), offset)
	}
	r, err := b.be.RangeReader(ctx, key, offset, length)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", b.Display(key), fs.ErrNotExist)
	}
	return r, err
}

// Exists reports whether there is an object at key.
func (b *Bucket) Exists(ctx context.Context, key string) (bool, error) {
	return b.be.Exists(ctx, key)
}

// KeyOf is the key of an object given by Display (scheme://bucket/key), if it is in this
// bucket.
func (b *Bucket) KeyOf(display string) (string, bool) {
	key, ok := strings.CutPrefix(display, b.base)
	return path.Clean("/" + key)[1:], ok && key != ""
}
