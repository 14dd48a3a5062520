//go:build !linux

package server

import "log/slog"

// startReaper does nothing here: only Linux has child subreapers.
func startReaper(*slog.Logger) (stop func()) { return func() {} }
