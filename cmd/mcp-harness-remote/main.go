// Command mcp-harness-remote is mcp-harness's remote helper: it runs the Kubernetes tasks
// and reaches the S3 buckets of a server, which starts it when one of them is first
// needed (package internal/remote says why it is a program of its own). It is not run
// by hand: `mcp-harness-remote serve <protocol>` serves the listening socket it is given as
// descriptor 3 until its standard input ends.
package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcp-harness/mcp-harness/internal/remote"
	"github.com/mcp-harness/mcp-harness/internal/remote/helper"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "mcp-harness-remote is started by mcp-harness (the server), when a Kubernetes task or an s3:// bucket needs it; it is not run by hand")
		os.Exit(2)
	}
	if os.Args[2] != remote.Protocol {
		fmt.Fprintf(os.Stderr, "this mcp-harness-remote speaks protocol %s and the server %s: they come from different releases; install both from the same one\n", remote.Protocol, os.Args[2])
		os.Exit(2)
	}
	// Its life is its standard input's (the server's): a Ctrl-C at the server's terminal,
	// or a service manager's SIGTERM to the whole group, is the server's to act on, and the
	// server needs the helper for its shutdown (cancelling pods, an upload). Handled and
	// dropped, not ignored: what the helper starts (a credential plugin) gets them as usual.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-harness-remote: no listening socket as descriptor 3:", err)
		os.Exit(2)
	}
	err = helper.Serve(ln, os.Stdin, log)
	// The socket's directory is the server's, but a server killed cannot remove it: the
	// helper, the last to use it, does.
	if sock := ln.Addr().String(); strings.HasPrefix(filepath.Base(filepath.Dir(sock)), "mcp-harness-remote-") {
		os.RemoveAll(filepath.Dir(sock))
	}
	if err != nil {
		log.Error("serving", "err", err)
		os.Exit(1)
	}
}
