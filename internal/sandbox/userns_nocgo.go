//go:build linux && !cgo

package sandbox

// Without cgo there is no start-up code to enter a user namespace (userns_linux.go).
const usernsCodeLinked = false

func usernsErrno() int { return -1 }
