package kube

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/tasks/snapshot"
)

// The container's wrapper and the delivery script work together in a real shell, as they
// do in a pod whose scratch volume is not mounted (the test cluster's nodes): the wrapper
// waits for the snapshot, the delivery unpacks it once (a second one changes nothing),
// and the command runs in its directory with stderr joined to stdout.
func TestWrapper_Shell(t *testing.T) {
	if _, err := os.Stat(mountPath); err == nil {
		t.Skipf("%s exists on this machine: the wrapper would use it", mountPath)
	}
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.WriteFile(filepath.Join(ws, "sub", "file.txt"), []byte("from the workspace\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755)
	snap, err := snapshot.Make(t.Context(), snapshot.Options{Root: ws, Mode: snapshot.All, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pod := t.TempDir() // the pod's working directory
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", wrapper, "mcp-harness", "sub", `cat file.txt; echo to-stderr >&2; ../run.sh`, syncWait)
	cmd.Dir, cmd.Stdout, cmd.Stderr = pod, &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the wrapper did not wait for the snapshot: %v, %q", err, out.String())
	case <-time.After(300 * time.Millisecond):
	}
	for range 2 {
		f, _ := os.Open(snap.Path)
		d := exec.Command("sh", "-c", deliver)
		d.Dir, d.Stdin = pod, f
		if b, err := d.CombinedOutput(); err != nil {
			t.Fatalf("delivery: %v: %s", err, b)
		}
		f.Close()
	}
	chk := exec.Command("sh", "-c", delivered)
	chk.Dir = pod
	if err := chk.Run(); err != nil {
		t.Errorf("delivered after a delivery: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wrapper: %v: %q", err, out.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the wrapper did not run the command after the delivery")
	}
	if got, want := out.String(), "from the workspace\nto-stderr\nran\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	// A directory that is not in the snapshot is said, and exits 125.
	bad := exec.Command("sh", "-c", wrapper, "mcp-harness", "missing", "true", syncNone)
	bad.Dir = t.TempDir()
	b, err := bad.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(string(b), "missing is not in the workspace") {
		t.Errorf("a missing directory: %v, %q; want exit 125 saying so", err, b)
	}
}
