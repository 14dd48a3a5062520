// Command goclient measures a cold start as the official Go SDK's client sees it, for
// bench/startup.mjs: it spawns each server given, connects (initialize, initialized), lists
// its tools, and prints how long that took, from just before the spawn to ListTools
// returned. The servers take turns, runs times over, so that a load that comes and goes
// falls on all of them alike.
//
//	goclient '{"runs": 10, "servers": [{"name": "a", "command": ["bin", "stdio"], "dir": "/w"}]}'
//
// It prints {"a": [ms, ...], ...} and exits 1 when a start fails.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type spec struct {
	Runs    int `json:"runs"`
	Servers []struct {
		Name    string   `json:"name"`
		Command []string `json:"command"`
		Dir     string   `json:"dir"`
	} `json:"servers"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goclient '<json spec>' (see the package doc)")
		os.Exit(2)
	}
	var s spec
	if err := json.Unmarshal([]byte(os.Args[1]), &s); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(2)
	}
	out := map[string][]float64{}
	for range max(s.Runs, 1) {
		for _, srv := range s.Servers {
			ms, tools, err := coldStart(srv.Command, srv.Dir)
			if err != nil {
				fmt.Fprintf(os.Stderr, "goclient: %s: %v\n", srv.Name, err)
				os.Exit(1)
			}
			if tools == 0 {
				fmt.Fprintf(os.Stderr, "goclient: %s listed no tools\n", srv.Name)
				os.Exit(1)
			}
			out[srv.Name] = append(out[srv.Name], ms)
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// coldStart spawns command in dir, connects and lists the tools; it returns the time that
// took in milliseconds and how many tools were listed, then closes the session (closing
// the server's stdin, as a client does) and waits for the server to exit.
func coldStart(command []string, dir string) (float64, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-harness-bench", Version: "1"}, nil)
	t0 := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return 0, 0, err
	}
	res, err := cs.ListTools(ctx, nil)
	elapsed := time.Since(t0)
	closeErr := cs.Close()
	if err != nil {
		return 0, 0, err
	}
	if closeErr != nil {
		return 0, 0, fmt.Errorf("close: %w", closeErr)
	}
	return float64(elapsed.Microseconds()) / 1000, len(res.Tools), nil
}
