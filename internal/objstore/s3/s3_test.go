package s3

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
)

// The tests open s3 URLs through objstore.Open, as the helper does.
func init() { objstore.OpenS3 = Open }

// What an s3 URL's query says, parsed, and what is refused with the reason.
func TestParseS3(t *testing.T) {
	o, err := parseS3(mustQuery(t, "endpoint=127.0.0.1:8333&disable_https=true&use_path_style=true&region=r1&request_checksum_calculation=when_required"))
	if err != nil {
		t.Fatal(err)
	}
	if o.endpoint != "http://127.0.0.1:8333" || !o.pathStyle || !o.noHTTPS || o.region != "r1" || o.checksum == 0 {
		t.Errorf("parsed %+v", o)
	}
	if o, err := parseS3(mustQuery(t, "endpoint=https%3A%2F%2Fs3.example.com")); err != nil || o.endpoint != "https://s3.example.com" {
		t.Errorf("an endpoint with its scheme: %+v, %v", o, err)
	}
	for q, want := range map[string]string{
		"regoin=x":                            `unknown query parameter "regoin"`,
		"use_path_style=yes":                  "want true or false",
		"endpoint=ftp%3A%2F%2Fhost":           "want http(s)://host[:port]",
		"region=a&region=b":                   "given 2 times",
		"request_checksum_calculation=always": "want when_supported or when_required",
	} {
		if _, err := parseS3(mustQuery(t, q)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseS3(%q) = %v, want an error saying %q", q, err, want)
		}
	}
}

// An s3 URL whose region no parameter, variable or profile gives is refused at Open,
// before any request would fail to be signed.
func TestOpen_S3NoRegion(t *testing.T) {
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	_, err := objstore.Open(t.Context(), "s3://bucket/p?endpoint=http%3A%2F%2F127.0.0.1%3A1")
	if err == nil || !strings.Contains(err.Error(), "no region") {
		t.Fatalf("Open without a region: %v", err)
	}
	b, err := objstore.Open(t.Context(), "s3://bucket/p?endpoint=http%3A%2F%2F127.0.0.1%3A1&region=any")
	if err != nil {
		t.Fatalf("Open with a region: %v", err)
	}
	b.Close()
}

func mustQuery(t *testing.T, q string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
