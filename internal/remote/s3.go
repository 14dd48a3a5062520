package remote

import (
	"context"
	"io"
	"net/url"
	"os"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
)

// OpenS3 returns, as objstore.OpenS3 takes it, the s3 backends of h's helper: opening one
// starts the helper and has it check the URL's query and load its configuration.
func (h *Helper) OpenS3(ctx context.Context, bucket string, query url.Values) (objstore.Backend, error) {
	b := &s3Backend{h: h, c: S3Call{Bucket: bucket, Query: query.Encode()}}
	if err := h.call(ctx, PathS3Open, b.c, nil); err != nil {
		return nil, err
	}
	return b, nil
}

// s3Backend is a bucket of the helper's.
type s3Backend struct {
	h *Helper
	c S3Call // the bucket
}

// with is b's call with the call's own arguments set by set.
func (b *s3Backend) with(set func(*S3Call)) S3Call {
	c := b.c
	set(&c)
	return c
}

// Put has the helper upload the file f names: it runs on this machine, and reads the
// file itself.
func (b *s3Backend) Put(ctx context.Context, key string, f *os.File, size int64, sum string) error {
	return b.h.call(ctx, PathS3Put, b.with(func(c *S3Call) { c.Key, c.Path, c.Size, c.Sum = key, f.Name(), size, sum }), nil)
}

func (b *s3Backend) RangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	return b.h.post(ctx, PathS3Range, b.with(func(c *S3Call) { c.Key, c.Offset, c.Length = key, offset, length }))
}

func (b *s3Backend) Exists(ctx context.Context, key string) (bool, error) {
	var res S3Result
	err := b.h.call(ctx, PathS3Exists, b.with(func(c *S3Call) { c.Key = key }), &res)
	return res.Exists, err
}

func (b *s3Backend) Remove(ctx context.Context, key string) error {
	return b.h.call(ctx, PathS3Remove, b.with(func(c *S3Call) { c.Key = key }), nil)
}

func (b *s3Backend) Check(ctx context.Context, prefix string) error {
	return b.h.call(ctx, PathS3Check, b.with(func(c *S3Call) { c.Prefix = prefix }), nil)
}

// Close lets go of nothing: the helper keeps a bucket it opened until it exits (a bucket
// is a configuration and a pool of connections).
func (b *s3Backend) Close() error { return nil }
