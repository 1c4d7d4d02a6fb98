package wifi

import (
	"errors"
	"io"

	"skyloop/netsim"
	"skyloop/sim"
)

// Capture is where the backend writes the data frames it sends, as they
// start on the air (pcap: true; ACKs are not written): an encoder of one
// capture file, such as netsim/pcap's Writer. Write errors are kept and
// returned by Err, which the backend reports when it is closed.
type Capture interface {
	Write(t sim.Time, p *netsim.Packet)
	Err() error
}

// errNoCapture is what pcap: true gives in a program whose wifi was
// registered without a capture encoder (Spec rather than SpecWith).
var errNoCapture = errors.New("wifi: pcap: true, but this program's wifi backend has no capture encoder (skyloop/components registers wifi.SpecWith(pcap.NewWriter))")

// Spec is the native Wi-Fi model as scenarios name it (backend: wifi),
// without captures: a run with pcap: true and a run directory fails to
// start. SpecWith gives one that writes them.
var Spec = spec(nil)

// SpecWith returns the native Wi-Fi model whose capture.pcap (pcap: true)
// is written by the encoder newCapture starts on the file (writing its
// header): netsim/pcap.NewWriter, an edge, which skyloop/components gives,
// so that wifi itself stays in the core.
func SpecWith[C Capture](newCapture func(w io.Writer) (C, error)) netsim.BackendSpec {
	return spec(func(w io.Writer) (Capture, error) {
		c, err := newCapture(w)
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}

func spec(newCapture func(w io.Writer) (Capture, error)) netsim.BackendSpec {
	return netsim.BackendSpec{
		Name:    "wifi",
		OwnMode: true, // the transmission rate
		Params:  func() netsim.Params { p := DefaultParams(); return &p },
		New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
			b, err := New(*p.(*Params), seed, tr)
			if err != nil {
				return nil, err
			}
			b.newCapture = newCapture
			return b, nil
		},
	}

}
