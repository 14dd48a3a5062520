//go:build cgo

package store

import (
	"errors"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// This file holds what names go-sqlite3's types, which exist only when cgo compiles the
// driver; driver_nocgo.go stands in for it so that every package still type-checks for
// targets built without a C compiler.

// driverErr reports why the SQLite driver cannot be used: never, in a cgo build.
func driverErr() error { return nil }

// isBusy reports whether err is SQLite refusing a transaction because another connection
// holds the lock (after its busy timeout ran out), so that write can retry it.
func isBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}
