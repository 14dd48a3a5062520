// Package s3 is the s3:// bucket of package objstore, through the AWS SDK v2's S3 client:
// a small archive in one PutObject, a large one in parts read straight from the file
// (nothing is held in memory but the parts in flight), ranged GetObject for log slices.
// It is linked into the remote helper alone (package remote): the server reaches it
// through that helper, and does not carry the SDK.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
)

// s3Options are an s3 URL's query parameters.
type s3Options struct {
	region, endpoint, profile string
	pathStyle, noHTTPS, anon  bool
	checksum                  aws.RequestChecksumCalculation
}

// s3Params are the query parameters an s3 URL takes, with what each does (the error for
// an unknown one lists them).
var s3Params = []string{
	"region",                       // the bucket's region (else AWS_REGION or the profile's)
	"endpoint",                     // an S3-compatible server, http(s)://host:port
	"use_path_style",               // true: bucket in the path, not the host name (most S3-compatible servers)
	"disable_https",                // true: plain http to an endpoint given without a scheme
	"profile",                      // a profile of the shared config and credentials files
	"anonymous",                    // true: unsigned requests (a public bucket)
	"request_checksum_calculation", // when_required for servers that reject the SDK's default checksums
}

func parseS3(q url.Values) (s3Options, error) {
	var o s3Options
	for name, vals := range q {
		if !slices.Contains(s3Params, name) {
			return o, fmt.Errorf("unknown query parameter %q (an s3 URL takes %s)", name, strings.Join(s3Params, ", "))
		}
		if len(vals) != 1 {
			return o, fmt.Errorf("query parameter %q given %d times", name, len(vals))
		}
	}
	o.region, o.endpoint, o.profile = q.Get("region"), q.Get("endpoint"), q.Get("profile")
	for name, dst := range map[string]*bool{"use_path_style": &o.pathStyle, "disable_https": &o.noHTTPS, "anonymous": &o.anon} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, fmt.Errorf("query parameter %s=%q: want true or false", name, v)
			}
			*dst = b
		}
	}
	switch v := q.Get("request_checksum_calculation"); v {
	case "":
	case "when_supported":
		o.checksum = aws.RequestChecksumCalculationWhenSupported
	case "when_required":
		o.checksum = aws.RequestChecksumCalculationWhenRequired
	default:
		return o, fmt.Errorf("query parameter request_checksum_calculation=%q: want when_supported or when_required", v)
	}
	if o.endpoint != "" {
		if !strings.Contains(o.endpoint, "://") {
			scheme := "https://"
			if o.noHTTPS {
				scheme = "http://"
			}
			o.endpoint = scheme + o.endpoint
		}
		if u, err := url.Parse(o.endpoint); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return o, fmt.Errorf("query parameter endpoint=%q: want http(s)://host[:port]", q.Get("endpoint"))
		}
	}
	return o, nil
}

type s3Bucket struct {
	name     string
	c        *awss3.Client
	tr       *http.Transport // the client's own, so that Close drops its connections
	partSize int64
}

// defaultPartSize is the size of an upload's parts: archives up to it go in one request;
// S3 takes 10,000 parts at most, so parts grow beyond 160 GB. A bucket takes it when it
// is opened (the tests use S3's smallest part, 5 MiB, to upload in parts).
var defaultPartSize int64 = 16 << 20

// partsAtOnce is how many parts of one upload are in flight.
const partsAtOnce = 4

func openS3(ctx context.Context, bucket string, o s3Options) (*s3Bucket, error) {
	var load []func(*config.LoadOptions) error
	if o.region != "" {
		load = append(load, config.WithRegion(o.region))
	}
	if o.profile != "" {
		load = append(load, config.WithSharedConfigProfile(o.profile))
	}
	if o.anon {
		load = append(load, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	if o.checksum != 0 {
		load = append(load, config.WithRequestChecksumCalculation(o.checksum))
	}
	// Reads the environment and the shared files only: credentials are fetched at the
	// first request.
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, err
	}
	// The SDK's client as configured (a CA bundle of AWS_CA_BUNDLE, its timeouts), on a
	// transport of our own, so that Close can drop its idle connections and their
	// goroutines: the SDK's client keeps its transport to itself.
	bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		return nil, fmt.Errorf("unexpected HTTP client %T in the AWS configuration", cfg.HTTPClient)
	}
	tr := bc.GetTransport()
	cfg.HTTPClient = &http.Client{Transport: tr, Timeout: bc.GetTimeout(), CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // as the SDK's own client: a redirect is S3's answer, not a hop
	}}
	if cfg.Region == "" {
		return nil, errors.New("no region: add region=... to the URL (any value for most S3-compatible servers) or set AWS_REGION")
	}
	c := awss3.NewFromConfig(cfg, func(so *awss3.Options) {
		so.UsePathStyle = o.pathStyle
		so.EndpointOptions.DisableHTTPS = o.noHTTPS
		if o.endpoint != "" {
			so.BaseEndpoint = aws.String(o.endpoint)
		}
	})
	return &s3Bucket{name: bucket, c: c, tr: tr, partSize: defaultPartSize}, nil
}

func (b *s3Bucket) Put(ctx context.Context, key string, f *os.File, size int64, sum string) error {
	meta := map[string]string{"sha256": sum}
	if size <= b.partSize {
		_, err := b.c.PutObject(ctx, &awss3.PutObjectInput{Bucket: &b.name, Key: &key, Body: io.NewSectionReader(f, 0, size),
			ContentLength: aws.Int64(size), ContentType: aws.String("application/gzip"), Metadata: meta})
		return err
	}
	part := max(b.partSize, (size+9999)/10000)
	up, err := b.c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &b.name, Key: &key,
		ContentType: aws.String("application/gzip"), Metadata: meta})
	if err != nil {
		return err
	}
	parts, err := b.uploadParts(ctx, key, up.UploadId, f, size, part)
	if err == nil {
		_, err = b.c.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: &b.name, Key: &key,
			UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	}
	if err != nil {
		// Parts of an upload never completed are kept (and billed) until aborted.
		b.c.AbortMultipartUpload(context.WithoutCancel(ctx), &awss3.AbortMultipartUploadInput{Bucket: &b.name, Key: &key, UploadId: up.UploadId})
		return err
	}
	return nil
}

// uploadParts sends the parts of f, partsAtOnce at a time, each read from the file as it
// is sent; the first failure stops the rest.
func (b *s3Bucket) uploadParts(ctx context.Context, key string, id *string, f *os.File, size, part int64) ([]types.CompletedPart, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := int((size + part - 1) / part)
	parts := make([]types.CompletedPart, n)
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(partsAtOnce, n) {
		wg.Go(func() {
			for i := range next {
				off := int64(i) * part
				length := min(part, size-off)
				num := int32(i + 1)
				out, err := b.c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: &b.name, Key: &key, UploadId: id,
					PartNumber: &num, Body: io.NewSectionReader(f, off, length), ContentLength: aws.Int64(length)})
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("part %d: %w", num, err)
					}
					mu.Unlock()
					cancel()
					continue
				}
				parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: &num,
					ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C,
					ChecksumCRC64NVME: out.ChecksumCRC64NVME, ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return parts, nil
}

func (b *s3Bucket) RangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if length == 0 {
		if ok, err := b.Exists(ctx, key); err != nil || !ok {
			if err == nil {
				err = fs.ErrNotExist
			}
			return nil, err
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	in := &awss3.GetObjectInput{Bucket: &b.name, Key: &key}
	switch {
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := b.c.GetObject(ctx, in)
	switch status(err) {
	case 0:
		return out.Body, nil
	case http.StatusNotFound:
		return nil, fs.ErrNotExist
	case http.StatusRequestedRangeNotSatisfiable:
		// From the object's end or beyond: nothing to read, as from a file.
		return io.NopCloser(strings.NewReader("")), nil
	}
	return nil, err
}

func (b *s3Bucket) Exists(ctx context.Context, key string) (bool, error) {
	_, err := b.c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &b.name, Key: &key})
	switch status(err) {
	case 0:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, err
}

func (b *s3Bucket) Remove(ctx context.Context, key string) error {
	_, err := b.c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &b.name, Key: &key})
	return err
}

func (b *s3Bucket) Check(ctx context.Context, prefix string) error {
	_, err := b.c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &b.name, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	return err
}

func (b *s3Bucket) Close() error {
	b.tr.CloseIdleConnections()
	return nil
}

// status is the HTTP status of the S3 error err (0 for nil, -1 for an error with no
// response, such as a refused connection).
func status(err error) int {
	if err == nil {
		return 0
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return -1
}

// Open opens the s3 bucket named bucket with the options of an s3 URL's query (see
// objstore.OpenS3). It contacts nothing.
func Open(ctx context.Context, bucket string, query url.Values) (objstore.Backend, error) {
	o, err := parseS3(query)
	if err != nil {
		return nil, err
	}
	return openS3(ctx, bucket, o)
}
