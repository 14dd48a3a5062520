//go:build !linux && !darwin

package operator

import "net"

// checkPeer refuses every peer: this system's peer credentials are not read here, and
// without them anyone who can reach the socket could type into the sessions.
func checkPeer(*net.UnixConn) (Peer, error) {
	return Peer{}, refusedf("operator commands are not supported on this system: the server cannot check who connects")
}

// checkServer refuses every server: who listens is not read here (nor does a server
// here take a connection).
func checkServer(_ *net.UnixConn, e Endpoint) error {
	return notServerf(e, "this system does not say who listens on a socket")
}
