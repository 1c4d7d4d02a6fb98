package agent

import (
	"io"
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// sendHost is a Host that records what is sent.
type sendHost struct{ sent []Message }

func (h *sendHost) Send(src netsim.NodeID, m *Message)                        { h.sent = append(h.sent, *m) }
func (h *sendHost) Event(t sim.Time, node netsim.NodeID, name, detail string) {}
func (h *sendHost) Tick() sim.Duration                                        { return sim.Millisecond }
func (h *sendHost) Nodes() []NodeRef                                          { return []NodeRef{{ID: 0}, {ID: 1}} }
func (h *sendHost) Origin() geom.Geodetic                                     { return geom.Geodetic{} }
func (h *sendHost) File(name string) (io.Writer, error)                       { return nil, nil }
func (h *sendHost) Fail(node netsim.NodeID, err error)                        {}
func (h *sendHost) Network() NetworkMode                                      { return NetworkMode{} }

// TestSendSizeBounded: a message's size is a UDP/IPv4 payload size,
// 0..65507 bytes; anything else is refused with the offending value (a
// size of 2^60 used to overflow the time arithmetic downstream).
func TestSendSizeBounded(t *testing.T) {
	h := &sendHost{}
	ctx, _ := NewContext(NodeRef{ID: 0, Name: "a"}, h, nil, vehicle.Telemetry{}, nil, nil)
	for _, c := range []struct {
		size    int
		payload int
		want    string
	}{
		{size: 65507},
		{size: 0, payload: 65507},
		{size: 65508, want: "size 65508"},
		{size: 1 << 60, want: "size 1152921504606846976"},
		{size: -5, want: "size -5"},
		{size: -5, payload: 3, want: "size -5"},
		{size: 0, payload: 65508, want: "size 65508"},
	} {
		before := len(h.sent)
		err := ctx.Send(Message{Dst: 1, Size: c.size, Payload: make([]byte, c.payload)})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("size %d, payload %d: %v", c.size, c.payload, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "65507")):
			t.Errorf("size %d, payload %d: got %v, want an error naming %q and the 65507-byte limit", c.size, c.payload, err, c.want)
		case c.want != "" && len(h.sent) != before:
			t.Errorf("size %d: the message was sent anyway", c.size)
		}
	}
}
