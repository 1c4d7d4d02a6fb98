package wifi

import (
	"fmt"
	"strings"

	"skyloop/sim"
)

// A profile is the Wi-Fi model of one ns-3 release: the defaults of the
// parameters that release changed, and the PHY and MAC behaviour that is
// not a parameter. Profiles are named after the release (profile: ns-3.26
// in a scenario); the default is ns-3.37, the release the ns-3 backend
// runs. docs/wifi.md lists what each one changes.
type profile struct {
	name string

	// Defaults of the parameters that differ between releases: a
	// parameter left at its ns-3.37 default takes the profile's value.
	rxSensitivity  float64    // 3.37 RxSensitivity; 3.26 EnergyDetectionThreshold
	ccaSensitivity float64    // 3.37 CcaSensitivity; 3.26 CcaMode1Threshold
	preamble       bool       // a preamble detection model is installed
	errorModel     ErrorModel // the YansWifiPhyHelper's error rate model
	txGain, rxGain float64    // dB
	queue          int        // WifiMacQueue size, packets

	// filterBelowSensitivity: YansWifiChannel drops a signal below the
	// sensitivity before the PHY sees it (3.37), so it is neither
	// interference nor energy; in 3.26 every signal is both and the
	// threshold only decides whether the PHY synchronises.
	filterBelowSensitivity bool
	// scaleDsssSensitivity: the 20 MHz sensitivity is scaled to the 22 MHz
	// of a DSSS transmission (3.37: -100.59 dBm).
	scaleDsssSensitivity bool
	// dsssNoise22: the thermal noise of 802.11b receptions is taken over
	// the 22 MHz channel width (3.26) instead of 20 MHz (3.37).
	dsssNoise22 bool
	// detect is the preamble detection window: a receiver decides which
	// frame it synchronises to, and its carrier sense reports the medium
	// busy, this long after a frame's first energy (3.37: 4 µs; 3.26
	// synchronises at once).
	detect sim.Duration
	// headerAbort: a frame whose PHY header fails is abandoned at the end
	// of the header (3.37's PhyEntity: no EIFS, the receiver can
	// synchronise to a later frame, the medium stays busy only while the
	// energy is above the CCA threshold); in 3.26 the receiver stays in
	// RX until the frame ends and the failure counts as an erroneous
	// reception (EIFS).
	headerAbort bool
	// codedBits: the error model is applied to the coded bits of a chunk
	// (3.26's InterferenceHelper: duration × WifiMode::GetPhyRate) instead
	// of the data bits (3.37: duration × GetDataRate).
	codedBits bool
	// ackTimeout26: 3.26's fixed AckTimeout (SIFS + the ACK at the lowest
	// rate + slot + twice a 1 km propagation delay, counted from the end
	// of the data frame) instead of 3.37's SIFS + slot + the ACK's PHY
	// preamble and header, extended to the end of any frame whose PSDU
	// reception starts before it.
	ackTimeout26 bool
	// immediateAccess: 3.26's DcfManager grants a station with no backoff
	// the medium at once when it has been idle for DIFS (EIFS), and makes
	// it draw backoffs until one is nonzero when the medium is busy or has
	// been idle for less; 3.37 (NeedBackoffUponAccess) transmits DIFS
	// after a packet reaches an idle station and draws one backoff, which
	// may be zero, when the medium is busy.
	immediateAccess bool
}

// profiles lists the known profiles; the first is the default.
var profiles = []profile{
	{
		name: "ns-3.37", rxSensitivity: -101, ccaSensitivity: -82, preamble: true, errorModel: ErrorModelTableBased, queue: 500,
		filterBelowSensitivity: true, scaleDsssSensitivity: true, detect: 4 * sim.Microsecond, headerAbort: true,
	},
	{
		name: "ns-3.26", rxSensitivity: -96, ccaSensitivity: -99, preamble: false, errorModel: ErrorModelNist, txGain: 1, rxGain: 1, queue: 400,
		dsssNoise22: true, codedBits: true, ackTimeout26: true, immediateAccess: true,
	},
}

// DefaultProfile is the profile of DefaultParams: ns-3 3.37, the release
// the ns-3 backend runs.
const DefaultProfile = "ns-3.37"

// Profiles returns the names of the known profiles, the default first.
func Profiles() []string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.name
	}
	return names
}

func profileByName(name string) (*profile, bool) {
	for i := range profiles {
		if profiles[i].name == name {
			return &profiles[i], true
		}
	}
	return nil, false
}

// applyProfile gives the parameters that p's profile governs and that are
// still at their ns-3.37 defaults the profile's values. It is idempotent:
// a value that differs from the ns-3.37 default is kept, and a profile's
// own values differ from ns-3.37's.
func (p *Params) applyProfile() error {
	pr, ok := profileByName(p.Profile)
	if !ok {
		return fmt.Errorf("unknown profile %q: want one of %s", p.Profile, strings.Join(Profiles(), ", "))
	}
	base := &profiles[0]
	if pr == base {
		return nil
	}
	setF := func(v *float64, def, to float64) {
		if *v == def {
			*v = to
		}
	}
	setF(&p.RxSensitivity, base.rxSensitivity, pr.rxSensitivity)
	setF(&p.CcaSensitivity, base.ccaSensitivity, pr.ccaSensitivity)
	setF(&p.TxGain, base.txGain, pr.txGain)
	setF(&p.RxGain, base.rxGain, pr.rxGain)
	if p.Preamble == base.preamble {
		p.Preamble = pr.preamble
	}
	if p.ErrorModel == base.errorModel {
		p.ErrorModel = pr.errorModel
	}
	if p.QueueSize == base.queue {
		p.QueueSize = pr.queue
	}
	return nil
}
