package objstore

// This file is the file:// bucket: a directory (often a file system several servers
// share) whose keys are file paths under it. An object appears whole or not at all: it is
// written to a temporary file next to its place, synced, and renamed over it, so a reader
// on another server never sees half an archive.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

type dirBucket struct{ dir string }

func openDir(dir string) (*dirBucket, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return &dirBucket{dir: dir}, nil
}

// file is the path of key; keys that would leave the directory are refused.
func (d *dirBucket) file(key string) (string, error) {
	p := filepath.FromSlash(key)
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("key %q is not a path inside %s", key, d.dir)
	}
	return filepath.Join(d.dir, p), nil
}

// tempPrefix starts the names of objects being written; they are not keys anyone asks for
// (archives are named after graph ids).
const tempPrefix = ".upload-"

func (d *dirBucket) Put(ctx context.Context, key string, f *os.File, size int64, sum string) error {
	dst, err := d.file(key)
	if err != nil {
		return err
	}
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmpName := filepath.Join(parent, tempPrefix+hex.EncodeToString(rnd[:])+"-"+filepath.Base(dst))
	// 0644 less the umask, as any file written there: the directory is shared by servers
	// that may run as other users of one group.
	tmp, err := os.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, ctxReader{ctx, io.NewSectionReader(f, 0, size)})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmpName, dst)
	}
	if err != nil {
		os.Remove(tmpName)
		return err
	}
	// The rename is durable once the directory is synced: an archive whose local copy is
	// removed next must not vanish with a crash.
	if dirf, err := os.Open(parent); err == nil {
		dirf.Sync()
		dirf.Close()
	}
	return nil
}

func (d *dirBucket) RangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	p, err := d.file(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err // fs.ErrNotExist when there is no such object
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s: %w", p, fs.ErrNotExist)
		}
		return nil, err
	}
	if length < 0 {
		length = 1<<63 - 1 - offset
	}
	return sectionReadCloser{io.NewSectionReader(f, offset, length), f}, nil
}

type sectionReadCloser struct {
	*io.SectionReader
	f *os.File
}

func (s sectionReadCloser) Close() error { return s.f.Close() }

func (d *dirBucket) Exists(ctx context.Context, key string) (bool, error) {
	p, err := d.file(key)
	if err != nil {
		return false, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return fi.Mode().IsRegular(), nil
}

func (d *dirBucket) Remove(ctx context.Context, key string) error {
	p, err := d.file(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Check reads the directory (the prefix of a file bucket is always empty).
func (d *dirBucket) Check(ctx context.Context, prefix string) error {
	f, err := os.Open(filepath.Join(d.dir, filepath.FromSlash(strings.TrimSuffix(prefix, "/"))))
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err != nil && err != io.EOF {
		return err
	}
	return nil
}

func (d *dirBucket) Close() error { return nil }

// ctxReader stops a copy once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
