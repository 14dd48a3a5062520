//go:build !cgo

package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// A build without cgo refuses to open a database, says how to fix it, and leaves no file.
func TestOpen_ErrNoCgo(t *testing.T) {
	path := filepath.Join(t.TempDir(), workspace.DBFileName)
	_, err := Open(t.Context(), path)
	if !errors.Is(err, errNoCgo) || !strings.Contains(err.Error(), "CGO_ENABLED=1") {
		t.Errorf("Open() error = %v, want errNoCgo saying CGO_ENABLED=1", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open() without cgo left %s behind: %v", path, err)
	}
}
