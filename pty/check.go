package pty

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// readOpts is ReadOptions validated, with defaults applied.
type readOpts struct {
	since    *int64
	re       *regexp.Regexp
	idle     time.Duration // 0: no idle ending
	timeout  time.Duration
	maxBytes int
	raw      bool
	idleSet  bool // idle was given, not defaulted
	end      *int64
	port     int
}

func resolveRead(op string, r ReadOptions) (readOpts, error) {
	switch {
	case r.Since != nil && *r.Since < 0:
		return readOpts{}, invalidf(op, "since must be 0 or more, got %d", *r.Since)
	case r.Idle < 0:
		return readOpts{}, invalidf(op, "idle must be 0 or more, got %v", r.Idle)
	case r.Timeout < 0:
		return readOpts{}, invalidf(op, "timeout must be 0 or more, got %v", r.Timeout)
	case r.MaxBytes < 0 || r.MaxBytes > MaxReadBytes:
		return readOpts{}, invalidf(op, "maxBytes must be 1..%d, got %d", MaxReadBytes, r.MaxBytes)
	}
	if err := checkRange(op, r); err != nil {
		return readOpts{}, err
	}
	o := readOpts{since: r.Since, re: r.WaitFor, idle: r.Idle, timeout: r.Timeout, maxBytes: r.MaxBytes, raw: r.Raw,
		idleSet: r.Idle > 0, end: r.End, port: r.WaitPort}
	if o.idle == 0 && o.re == nil {
		o.idle = DefaultIdle
	}
	if o.maxBytes == 0 {
		o.maxBytes = DefaultMaxBytes
	}
	return o, nil
}

// checkSize refuses a terminal size out of range; a caller for which both zero means "not
// given" checks that first.
func checkSize(op string, cols, rows int) error {
	switch {
	case cols >= 1 && cols <= MaxSize && rows >= 1 && rows <= MaxSize:
		return nil
	case (cols == 0) != (rows == 0):
		return invalidf(op, "give cols and rows together, each 1..%d, got %dx%d", MaxSize, cols, rows)
	}
	return invalidf(op, "cols and rows must be 1..%d, got %dx%d", MaxSize, cols, rows)
}

// checkOpen refuses OpenOptions that cannot start a program, before anything is started.
func checkOpen(op string, o OpenOptions) error {
	if err := checkSize(op, o.Cols, o.Rows); err != nil {
		return err
	}
	// Sizes first: a megabyte of command is refused before it is scanned or quoted.
	switch {
	case len(o.Command) > MaxCommandBytes:
		return invalidf(op, "command is %d bytes, at most %d are accepted; put a long script in a file in the workspace and run that",
			len(o.Command), MaxCommandBytes)
	case len(o.Name) > MaxNameLen:
		return invalidf(op, "name is %d bytes long; give one of at most %d", len(o.Name), MaxNameLen)
	case len(o.Env) > MaxEnvVars:
		return invalidf(op, "env has %d variables, at most %d are accepted", len(o.Env), MaxEnvVars)
	}
	envBytes := 0
	for _, k := range slices.Sorted(maps.Keys(o.Env)) { // sorted: the same call gets the same message
		if len(o.Env[k]) > MaxEnvValueBytes {
			return invalidf(op, "env %s is %d bytes long, at most %d are accepted per value; pass a long value in a file instead",
				quote.Short(k), len(o.Env[k]), MaxEnvValueBytes)
		}
		envBytes += len(k) + len(o.Env[k])
	}
	if envBytes > MaxEnvBytes {
		return invalidf(op, "env is %d bytes (names and values), at most %d are accepted", envBytes, MaxEnvBytes)
	}
	if err := checkDir(op, o); err != nil {
		return err
	}
	switch {
	case o.Command != "" && strings.TrimSpace(o.Command) == "":
		return invalidf(op, "command is blank; omit it to start an interactive shell")
	case strings.ContainsRune(o.Command, 0):
		return invalidf(op, "command contains a NUL byte, which no command line can carry; remove it")
	}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return invalidf(op, "env name %s is not a valid variable name; use a non-empty name without '=' or NUL", quote.Short(k))
		}
		if strings.ContainsRune(o.Env[k], 0) {
			return invalidf(op, "env %s contains a NUL byte, which no program can receive; remove it", quote.Short(k))
		}
	}
	return nil
}

// checkDir refuses a working directory the program could not start in. exec reports a
// missing directory as the shell missing ("fork/exec /bin/sh: no such file or
// directory"), which would send a model looking in the wrong place.
func checkDir(op string, o OpenOptions) error {
	if o.Dir == "" {
		if o.EnterDir != "" {
			return invalidf(op, "enterDir is given without the dir it enters")
		}
		return nil
	}
	if !filepath.IsAbs(o.Dir) {
		return invalidf(op, "dir must be an absolute path, got %s", quote.Short(o.Dir))
	}
	if fi, err := os.Stat(o.enterDir()); err != nil || !fi.IsDir() {
		return invalidf(op, "dir %s is not a directory that exists; give an existing directory", quote.Short(o.Dir))
	}
	return nil
}

// enterDir is the path the program changes into (see OpenOptions.EnterDir).
func (o OpenOptions) enterDir() string {
	if o.EnterDir != "" {
		return o.EnterDir
	}
	return o.Dir
}
