package wifi

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/sim"
)

// Params configure the native 802.11 network. Defaults follow ns-3 3.37
// (docs/wifi.md lists them), so that a scenario behaves alike on the
// `wifi` and `ns3` backends; Profile selects those of an older ns-3
// release instead (see Validate).
type Params struct {
	Profile  string  `yaml:"profile" json:"profile"`   // ns-3 release whose Wi-Fi defaults and behaviour to follow: ns-3.37 (default) or ns-3.26
	Standard string  `yaml:"standard" json:"standard"` // 80211a or 80211b
	Mode     string  `yaml:"mode" json:"mode"`         // data, control and broadcast mode; empty: the standard's lowest rate
	TxPower  float64 `yaml:"tx_power" json:"tx_power"` // dBm
	TxGain   float64 `yaml:"tx_gain" json:"tx_gain"`   // dB, added to the transmitted power
	RxGain   float64 `yaml:"rx_gain" json:"rx_gain"`   // dB, added to the received power

	Loss        PathLoss `yaml:"loss" json:"loss"`                             // logdistance, friis, tworay or range
	Exponent    float64  `yaml:"exponent" json:"exponent"`                     // logdistance
	RefDistance float64  `yaml:"reference_distance" json:"reference_distance"` // logdistance, m
	RefLoss     float64  `yaml:"reference_loss" json:"reference_loss"`         // logdistance, dB
	Frequency   float64  `yaml:"frequency" json:"frequency"`                   // friis and tworay, Hz
	MaxRange    float64  `yaml:"max_range" json:"max_range"`                   // range, m
	AntennaZ    float64  `yaml:"antenna_height" json:"antenna_height"`         // tworay: added to node altitudes, m
	Fading      Fading   `yaml:"fading" json:"fading"`                         // none, rayleigh or nakagami
	NakagamiM   int      `yaml:"nakagami_m" json:"nakagami_m"`                 // nakagami shape (integer)

	NoiseFigure     float64    `yaml:"noise_figure" json:"noise_figure"`             // dB
	RxSensitivity   float64    `yaml:"rx_sensitivity" json:"rx_sensitivity"`         // dBm: weaker frames are never received
	CcaSensitivity  float64    `yaml:"cca_sensitivity" json:"cca_sensitivity"`       // dBm: total energy of the frames a receiver is not receiving that keeps the medium busy
	CcaEdThreshold  float64    `yaml:"cca_ed_threshold" json:"cca_ed_threshold"`     // dBm: the same for non-802.11 energy; the lower of the two applies
	Preamble        bool       `yaml:"preamble_detection" json:"preamble_detection"` // ns-3's threshold preamble detection model
	PreambleMinRssi float64    `yaml:"preamble_min_rssi" json:"preamble_min_rssi"`   // dBm
	PreambleSnr     float64    `yaml:"preamble_snr" json:"preamble_snr"`             // dB
	CutoffDb        float64    `yaml:"cutoff_db" json:"cutoff_db"`                   // signals this far below the noise floor are ignored (spatial index)
	ErrorModel      ErrorModel `yaml:"error_model" json:"error_model"`               // OFDM error rate model: TableBased, Nist or Yans

	QueueSize  int          `yaml:"queue" json:"queue"`             // MAC queue, packets
	QueueDelay sim.Duration `yaml:"queue_delay" json:"queue_delay"` // packets older than this are dropped at the head of the queue
	RetryLimit int          `yaml:"retry_limit" json:"retry_limit"` // transmission attempts of a unicast frame
	EIFS       bool         `yaml:"eifs" json:"eifs"`               // wait EIFS instead of DIFS after an erroneous reception

	Pcap bool `yaml:"pcap" json:"pcap"` // capture.pcap (Ethernet/IPv4/UDP) in the run directory
}

// DefaultParams returns ns-3 3.37's defaults: ad hoc 802.11a at 6 Mbit/s,
// 16.0206 dBm, no antenna gains, log-distance loss (exponent 3, 46.6777 dB
// at 1 m), noise figure 7 dB, sensitivity -101 dBm, CCA sensitivity
// -82 dBm, CCA energy detection -62 dBm, threshold preamble detection
// (-82 dBm, 4 dB), the table-based error model, a 500-packet MAC queue
// with a 500 ms lifetime, 7 attempts per unicast frame, EIFS.
func DefaultParams() Params {
	return Params{
		Profile: DefaultProfile, Standard: "80211a", TxPower: 16.0206,
		Loss: LogDistance, Exponent: 3, RefDistance: 1, RefLoss: 46.6777, Frequency: 5.15e9, MaxRange: 250, Fading: NoFading, NakagamiM: 1,
		NoiseFigure: 7, RxSensitivity: -101, CcaSensitivity: -82, CcaEdThreshold: -62, Preamble: true, PreambleMinRssi: -82, PreambleSnr: 4, CutoffDb: 20,
		ErrorModel: ErrorModelTableBased, QueueSize: 500, QueueDelay: 500 * sim.Millisecond, RetryLimit: 7, EIFS: true,
	}
}

// Validate returns field -> message for every bad field. It first applies
// the profile: every parameter the profile governs (rx_sensitivity,
// cca_sensitivity, preamble_detection, error_model, tx_gain, rx_gain,
// queue) that is still at its ns-3.37 default takes the profile's value,
// so a scenario naming profile: ns-3.26 gets that release's defaults and
// can still set those parameters to other values.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Profile == "" {
		p.Profile = DefaultProfile
	}
	if err := p.applyProfile(); err != nil {
		bad["profile"] = err.Error()
	}
	if p.Standard != "80211a" && p.Standard != "80211b" {
		bad["standard"] = fmt.Sprintf("must be 80211a or 80211b, got %q", p.Standard)
	} else if p.Mode != "" {
		m, ok := ModeByName(p.Mode)
		if !ok || m.Standard != p.Standard {
			var names []string
			for _, m := range Modes {
				if m.Standard == p.Standard {
					names = append(names, m.Name)
				}
			}
			bad["mode"] = fmt.Sprintf("%q is not a %s mode: want one of %v", p.Mode, p.Standard, names)
		}
	}
	switch p.Loss {
	case LogDistance:
		if !(p.Exponent > 0 && p.RefDistance > 0) {
			bad["exponent"] = "exponent and reference_distance must be > 0"
		}
	case Friis, TwoRay:
		if !(p.Frequency > 0) {
			bad["frequency"] = fmt.Sprintf("must be > 0 Hz, got %v", p.Frequency)
		}
	case RangeLoss:
		if !(p.MaxRange > 0) {
			bad["max_range"] = fmt.Sprintf("must be > 0 m, got %v", p.MaxRange)
		}
	default:
		bad["loss"] = fmt.Sprintf("must be logdistance, friis, tworay or range, got %v", p.Loss)
	}
	switch p.Fading {
	case NoFading, Rayleigh:
	case Nakagami:
		if p.NakagamiM < 1 || p.NakagamiM > 20 {
			bad["nakagami_m"] = fmt.Sprintf("must be 1..20, got %d", p.NakagamiM)
		}
	default:
		bad["fading"] = fmt.Sprintf("must be none, rayleigh or nakagami, got %v", p.Fading)
	}
	if int(p.ErrorModel) >= len(ermNames) {
		bad["error_model"] = fmt.Sprintf("must be TableBased, Nist or Yans, got %v", p.ErrorModel)
	}
	for name, v := range map[string]float64{"tx_power": p.TxPower, "tx_gain": p.TxGain, "rx_gain": p.RxGain, "noise_figure": p.NoiseFigure,
		"rx_sensitivity": p.RxSensitivity, "cca_sensitivity": p.CcaSensitivity, "cca_ed_threshold": p.CcaEdThreshold, "preamble_min_rssi": p.PreambleMinRssi, "preamble_snr": p.PreambleSnr, "cutoff_db": p.CutoffDb} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad[name] = "must be a finite number"
		}
	}
	if p.CutoffDb < 0 {
		bad["cutoff_db"] = fmt.Sprintf("must be >= 0 dB, got %v", p.CutoffDb)
	}
	if p.QueueSize < 1 || p.RetryLimit < 1 || p.QueueDelay <= 0 {
		bad["queue"] = "queue and retry_limit must be >= 1 and queue_delay positive"
	}
	return bad
}
