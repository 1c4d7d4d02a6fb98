package client

import (
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
	k, w, err := dial(o, &extern.Frame{Role: 1, Name: o.Name})
	if err != nil {
		return nil, err
	}
	n := &Network{conn: k}
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
