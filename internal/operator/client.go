package operator

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Client is a connection to one server's socket, from an operator command.
type Client struct {
	Endpoint
	c  *net.UnixConn
	sc *bufio.Scanner

	wmu sync.Mutex // one writer at a time: keys and size changes come from two goroutines
	enc *json.Encoder
}

// ErrGone reports a server whose process is gone: its socket is stale.
var ErrGone = errors.New("the server has gone")

// ErrNotServer reports a socket that another process than the server its name names
// listens on: nothing is sent to it (see checkServer).
var ErrNotServer = errors.New("not the server's socket")

// notServerf is an ErrNotServer for e's socket, saying why.
func notServerf(e Endpoint, format string, args ...any) error {
	return fmt.Errorf("%w: %s is named for server %d (pid %d), but %s; something else made it (a command that can write the state directory?), so nothing was sent to it",
		ErrNotServer, e.Name, e.Number, e.Pid, fmt.Sprintf(format, args...))
}

// Dial connects to server e's socket in stateDir. A server whose process is gone is
// ErrGone; so is one that no longer listens. A socket that is not the server's (another
// process listens on it, or a confined one: checkServer) is ErrNotServer, and nothing
// is sent to it: not a request, not a key, not an answer.
func Dial(stateDir string, e Endpoint) (*Client, error) {
	if !e.Live() {
		return nil, fmt.Errorf("server %d (pid %d): %w", e.Number, e.Pid, ErrGone)
	}
	c, err := dialSocket(stateDir, e.Name)
	if err != nil {
		return nil, fmt.Errorf("server %d (pid %d): %w: %w", e.Number, e.Pid, ErrGone, err)
	}
	if err := checkServer(c, e); err != nil {
		c.Close()
		return nil, err
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20) // a frame of a large screen with its styles
	return &Client{Endpoint: e, c: c, sc: sc, enc: json.NewEncoder(c)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

// Send writes a request.
func (c *Client) Send(r Request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.enc.Encode(r)
}

// SendLine sends an answer's line (a Request with OpLine and line as its Data) without
// encoding/json, whose pooled buffers would keep the line's base64 after the call: it is
// encoded into a buffer of its own, which is cleared once written.
func (c *Client) SendLine(line []byte) error {
	const head, tail = `{"op":"` + OpLine + `","data":"`, "\"}\n"
	buf := make([]byte, 0, len(head)+base64.StdEncoding.EncodedLen(len(line))+len(tail))
	buf = append(buf, head...)
	buf = base64.StdEncoding.AppendEncode(buf, line)
	buf = append(buf, tail...)
	defer clear(buf)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.c.Write(buf)
	return err
}

// Recv reads the next reply. A refusal is returned as an *Error; the connection's end
// (the server closed it, or exited) as io.EOF.
func (c *Client) Recv() (Reply, error) {
	if !c.sc.Scan() {
		if err := c.sc.Err(); err != nil {
			return Reply{}, err
		}
		return Reply{}, io.EOF
	}
	var r Reply
	if err := json.Unmarshal(c.sc.Bytes(), &r); err != nil {
		return Reply{}, fmt.Errorf("server %d sent what is not a reply: %w", c.Number, err)
	}
	if r.Error != nil {
		return r, r.Error
	}
	return r, nil
}

// Call sends r and reads the reply. A server that refused the connection may have
// closed it before the request went out: its refusal is read all the same.
func (c *Client) Call(r Request) (Reply, error) {
	if err := c.Send(r); err != nil {
		var refused *Error
		if reply, rerr := c.Recv(); errors.As(rerr, &refused) {
			return reply, rerr
		}
		return Reply{}, err
	}
	return c.Recv()
}

// SetDeadline bounds the reads and writes that follow (zero: no bound).
func (c *Client) SetDeadline(t time.Time) error { return c.c.SetDeadline(t) }

// SetWriteDeadline bounds the writes that follow (zero: no bound).
func (c *Client) SetWriteDeadline(t time.Time) error { return c.c.SetWriteDeadline(t) }

// SetReadDeadline bounds the reads that follow (zero: no bound).
func (c *Client) SetReadDeadline(t time.Time) error { return c.c.SetReadDeadline(t) }

// ServerSessions is what one server on the workspace said of itself and its sessions,
// or why it said nothing (Err: ErrGone for a stale socket, or a refusal).
type ServerSessions struct {
	Endpoint
	Server   ServerInfo
	Sessions []Session
	Err      error
}

// surveyTimeout bounds a server's answer to a listing.
const surveyTimeout = 5 * time.Second

// Survey asks every server with a socket in stateDir for its sessions, side by side, and
// returns their answers by server number; a stale socket's is ErrGone, asked nothing.
func Survey(ctx context.Context, stateDir string) ([]ServerSessions, error) {
	eps, err := Endpoints(stateDir)
	if err != nil {
		return nil, err
	}
	out := make([]ServerSessions, len(eps))
	var wg sync.WaitGroup
	for i, e := range eps {
		out[i].Endpoint = e
		wg.Go(func() { out[i].Server, out[i].Sessions, out[i].Err = sessionsOf(ctx, stateDir, e) })
	}
	wg.Wait()
	return out, nil
}

func sessionsOf(ctx context.Context, stateDir string, e Endpoint) (ServerInfo, []Session, error) {
	c, err := Dial(stateDir, e)
	if err != nil {
		return ServerInfo{}, nil, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(surveyTimeout)); err != nil {
		return ServerInfo{}, nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	r, err := c.Call(Request{Op: OpSessions})
	if err != nil {
		var refused *Error
		if errors.As(err, &refused) {
			return ServerInfo{}, nil, err
		}
		return ServerInfo{}, nil, fmt.Errorf("server %d (pid %d) did not answer: %w", e.Number, e.Pid, err)
	}
	if r.Server == nil {
		return ServerInfo{}, nil, fmt.Errorf("server %d (pid %d) did not say who it is", e.Number, e.Pid)
	}
	return *r.Server, r.Sessions, nil
}
