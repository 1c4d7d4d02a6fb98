package wifi

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"skyloop/netsim"
	"skyloop/sim"
)

// pcapWriter writes every data frame put on the air as an Ethernet/IPv4/UDP
// packet (node i is 10.1.0.i+1, MAC 02:00:00:00:hi:lo; broadcasts go to
// 10.1.255.255), timestamped with simulated time from the Unix epoch, so
// Wireshark and tshark read it.
type pcapWriter struct {
	f   *os.File
	bw  *bufio.Writer
	w   *pcapgo.Writer
	buf gopacket.SerializeBuffer
	pad []byte
}

func newPcap(dir string) (*pcapWriter, error) {
	f, err := os.Create(filepath.Join(dir, "capture.pcap"))
	if err != nil {
		return nil, fmt.Errorf("creating capture.pcap: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	w := pcapgo.NewWriter(bw)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		f.Close()
		return nil, err
	}
	return &pcapWriter{f: f, bw: bw, w: w, buf: gopacket.NewSerializeBuffer()}, nil
}

func nodeIP(n netsim.NodeID) net.IP {
	if n == netsim.Broadcast {
		return net.IPv4(10, 1, 255, 255).To4()
	}
	v := int(n) + 1
	return net.IPv4(10, 1, byte(v>>8), byte(v)).To4()
}

func nodeMAC(n netsim.NodeID) net.HardwareAddr {
	if n == netsim.Broadcast {
		return net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	return net.HardwareAddr{0x02, 0, 0, 0, byte(n >> 8), byte(n)}
}

func (w *pcapWriter) write(t sim.Time, p *netsim.Packet) {
	eth := &layers.Ethernet{SrcMAC: nodeMAC(p.Src), DstMAC: nodeMAC(p.Dst), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: nodeIP(p.Src), DstIP: nodeIP(p.Dst), Id: uint16(p.ID)}
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
		return
	}
	b := w.buf.Bytes()
	w.w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(t)).UTC(), CaptureLength: len(b), Length: len(b)}, b)
}

func (w *pcapWriter) close() error {
	if err := w.bw.Flush(); err != nil {
		w.f.Close()
		return fmt.Errorf("writing capture.pcap: %w", err)
	}
	return w.f.Close()
}
