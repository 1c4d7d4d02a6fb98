package client

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"skyloop/extern"
)

// conn is one connection to skyloop, framed as docs/protocol.md says.
type conn struct {
	c     net.Conn
	r     *bufio.Reader
	rbuf  []byte
	wbuf  []byte
	ended bool // skyloop sent END
}

func newConn(c net.Conn) conn { return conn{c: c, r: bufio.NewReaderSize(c, 64<<10)} }

func (k *conn) write(f *extern.Frame) error {
	var err error
	if k.wbuf, err = extern.AppendFrame(k.wbuf[:0], f); err != nil {
		return err
	}
	if _, err = k.c.Write(k.wbuf); err != nil {
		return fmt.Errorf("skyloop: %w", err)
	}
	return nil
}

// read returns the next frame; an ERROR frame becomes an error and END
// becomes ErrEnded.
func (k *conn) read() (*extern.Frame, error) {
	f, err := extern.ReadFrame(k.r, &k.rbuf)
	if err != nil {
		return nil, fmt.Errorf("skyloop: %w", err)
	}
	switch f.Type {
	case extern.TypeError:
		return nil, fmt.Errorf("skyloop refused: %s", f.Reason)
	case extern.TypeEnd:
		k.ended = true
		return nil, ErrEnded
	}
	return f, nil
}

// dial connects to the run named by o (or by SKYLOOP_SOCKET, SKYLOOP_ADDR
// and SKYLOOP_TOKEN), sends hello with the token filled in and returns the
// connection with skyloop's welcome.
func dial(o Options, hello *extern.Frame) (conn, *extern.Frame, error) {
	if o.Socket == "" && o.Addr == "" {
		o.Socket, o.Addr = os.Getenv("SKYLOOP_SOCKET"), os.Getenv("SKYLOOP_ADDR")
	}
	if o.Token == "" {
		o.Token = os.Getenv("SKYLOOP_TOKEN")
	}
	if o.Fingerprint == "" {
		o.Fingerprint = os.Getenv("SKYLOOP_FINGERPRINT")
	}
	var c net.Conn
	var err error
	switch {
	case o.Socket != "":
		c, err = net.Dial("unix", o.Socket)
	case o.Addr != "":
		// Another host's skyloop or relay: TLS pinned to the fingerprint
		// it printed; plain TCP on loopback.
		c, err = extern.Dial(o.Addr, o.Fingerprint, 30*time.Second)
	default:
		return conn{}, nil, errors.New("skyloop: no socket or address given (SKYLOOP_SOCKET / SKYLOOP_ADDR)")
	}
	if err != nil {
		return conn{}, nil, fmt.Errorf("skyloop: connecting: %w", err)
	}
	k := newConn(c)
	hello.Type, hello.Version, hello.Token = extern.TypeHello, extern.Version, o.Token
	if err := k.write(hello); err != nil {
		c.Close()
		return conn{}, nil, err
	}
	w, err := k.read()
	if err != nil {
		c.Close()
		return conn{}, nil, err
	}
	if w.Type != extern.TypeWelcome {
		c.Close()
		return conn{}, nil, fmt.Errorf("skyloop: expected a welcome, got %q", w.Type)
	}
	return k, w, nil
}
