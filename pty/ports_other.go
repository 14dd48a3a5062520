//go:build !linux

package pty

// portsKnown is false where the package cannot map sockets to processes: sessions list
// no ports and waitPort is refused.
const portsKnown = false

func sessionPorts(sids map[int]bool, port int) map[int][]int { return nil }
