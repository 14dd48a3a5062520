//go:build !cgo

package store

import "errors"

// errNoCgo is what Open says in a build without cgo: go-sqlite3 is a C library, and its
// cgo-less stub would fail later with a message that names neither this program nor a fix.
var errNoCgo = errors.New("this mcp-harness was built without cgo; the SQLite driver needs it: build with CGO_ENABLED=1 and a C compiler")

// driverErr reports why the SQLite driver cannot be used.
func driverErr() error { return errNoCgo }

// isBusy is never true: without the driver no transaction runs.
func isBusy(error) bool { return false }
