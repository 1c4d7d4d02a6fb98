// Package pcap writes packets as a pcap capture that Wireshark and tshark
// read: each packet as an Ethernet/IPv4/UDP frame (node i is 10.1.0.i+1
// with MAC 02:00:00:00:hi:lo; broadcasts go to 10.1.255.255), timestamped
// with simulated time from the Unix epoch.
package pcap

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"skyloop/netsim"
	"skyloop/sim"
)

// Writer writes packets to a capture. Write errors are kept and returned by
// Err; the underlying writer is not closed here.
type Writer struct {
	w   *pcapgo.Writer
	buf gopacket.SerializeBuffer
	pad []byte
	err error
}

// NewWriter writes the capture's header to w and returns a Writer.
func NewWriter(w io.Writer) (*Writer, error) {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		return nil, fmt.Errorf("writing a pcap header: %w", err)
	}
	return &Writer{w: pw, buf: gopacket.NewSerializeBuffer()}, nil
}

// NodeIP returns node n's IPv4 address in captures.
func NodeIP(n netsim.NodeID) net.IP {
	if n == netsim.Broadcast {
		return net.IPv4(10, 1, 255, 255).To4()
	}
	v := int(n) + 1
	return net.IPv4(10, 1, byte(v>>8), byte(v)).To4()
}

// NodeMAC returns node n's MAC address in captures.
func NodeMAC(n netsim.NodeID) net.HardwareAddr {
	if n == netsim.Broadcast {
		return net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	return net.HardwareAddr{0x02, 0, 0, 0, byte(n >> 8), byte(n)}
}

// Write appends packet p, captured at time t.
func (w *Writer) Write(t sim.Time, p *netsim.Packet) {
	if w.err != nil {
		return
	}
	eth := &layers.Ethernet{SrcMAC: NodeMAC(p.Src), DstMAC: NodeMAC(p.Dst), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: NodeIP(p.Src), DstIP: NodeIP(p.Dst), Id: uint16(p.ID)}
	port := layers.UDPPort(9000)
	if p.Port != 0 {
		port = layers.UDPPort(p.Port)
	}
	udp := &layers.UDP{SrcPort: port, DstPort: port}
	udp.SetNetworkLayerForChecksum(ip)
	if cap(w.pad) < p.Size {
		w.pad = make([]byte, p.Size)
	}
	payload := w.pad[:p.Size]
	clear(payload)
	copy(payload, p.Payload)
	w.buf.Clear()
	if err := gopacket.SerializeLayers(w.buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		w.err = fmt.Errorf("encoding packet %d for the capture: %w", p.ID, err)
		return
	}
	b := w.buf.Bytes()
	if err := w.w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(t)).UTC(), CaptureLength: len(b), Length: len(b)}, b); err != nil {
		w.err = fmt.Errorf("writing the capture: %w", err)
	}
}

// Err returns the first error writing the capture.
func (w *Writer) Err() error { return w.err }
