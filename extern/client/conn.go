package client

import (
	"bufio"
	"fmt"
	"net"

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
