package client

import (
	"errors"
	"fmt"
	"net"
	"os"

	"skyloop/extern"
)

// Network is a connected network simulator (a type 1 subscriber): it is
// handed the packets sent and the node positions at every network phase,
// and decides when and where each packet arrives.
type Network struct {
	conn
	Welcome *extern.Frame
}

// ConnectNetwork connects as the run's network simulator.
func ConnectNetwork(o Options) (*Network, error) {
	if o.Socket == "" && o.Addr == "" {
		o.Socket, o.Addr = os.Getenv("SKYLOOP_SOCKET"), os.Getenv("SKYLOOP_ADDR")
	}
	if o.Token == "" {
		o.Token = os.Getenv("SKYLOOP_TOKEN")
	}
	network, addr := "unix", o.Socket
	if addr == "" {
		network, addr = "tcp", o.Addr
	}
	if addr == "" {
		return nil, errors.New("skyloop: no socket or address given (SKYLOOP_SOCKET / SKYLOOP_ADDR)")
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		return nil, fmt.Errorf("skyloop: connecting: %w", err)
	}
	n := &Network{conn: newConn(c)}
	if err := n.write(&extern.Frame{Type: extern.TypeHello, Version: extern.Version, Token: o.Token, Role: 1, Name: o.Name}); err != nil {
		c.Close()
		return nil, err
	}
	w, err := n.read()
	if err != nil {
		c.Close()
		return nil, err
	}
	if w.Type != extern.TypeWelcome {
		c.Close()
		return nil, fmt.Errorf("skyloop: expected a welcome, got %q", w.Type)
	}
	n.Welcome = w
	return n, nil
}

// Next waits for the next network phase: its time, the positions (when
// they changed) and the packets sent since the last phase.
func (n *Network) Next() (*extern.Frame, error) {
	for {
		f, err := n.read()
		if err != nil {
			return nil, err
		}
		if f.Type == extern.TypeNetTick {
			return f, nil
		}
	}
}

// Done answers the phase: what arrived or was dropped by then, and the
// packets the simulator will say nothing more about.
func (n *Network) Done(events []extern.NetEvent, release []uint64) error {
	return n.write(&extern.Frame{Type: extern.TypeNetDone, Events: events, Release: release})
}

// RawWrite writes bytes as they are (for tests of broken peers).
func (n *Network) RawWrite(b []byte) error {
	_, err := n.c.Write(b)
	return err
}

// Close ends the connection.
func (n *Network) Close() error { return n.c.Close() }
