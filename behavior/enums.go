package behavior

import "fmt"

// SendPolicy says when a beacon sends its vehicle's state.
type SendPolicy uint8

// The send policies.
const (
	// Periodic sends every period, node i starting at i*stagger.
	Periodic SendPolicy = iota
	// EventTriggered sends when the vehicle moved or turned more than a
	// threshold since its last update, or after a heartbeat interval.
	EventTriggered
)

var sendPolicyNames = [...]string{"periodic", "event"}

// String returns the policy's name as scenarios write it.
func (p SendPolicy) String() string {
	if int(p) < len(sendPolicyNames) {
		return sendPolicyNames[p]
	}
	return fmt.Sprintf("policy%d", p)
}

// MarshalText writes the name.
func (p SendPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a name: periodic or event.
func (p *SendPolicy) UnmarshalText(b []byte) error {
	for i, n := range sendPolicyNames {
		if string(b) == n {
			*p = SendPolicy(i)
			return nil
		}
	}
	return fmt.Errorf("must be periodic or event, got %q", b)
}

// StateFormat is the wire format of a state update.
type StateFormat uint8

// The state update formats.
const (
	// Format3D is the 72-byte update with altitude and vertical speed.
	Format3D StateFormat = iota
	// Planar is the netbots study's 56-byte planar update (x, y, heading, speed,
	// turn rate).
	Planar
)

var stateFormatNames = [...]string{"3d", "planar"}

// String returns the format's name as scenarios write it.
func (f StateFormat) String() string {
	if int(f) < len(stateFormatNames) {
		return stateFormatNames[f]
	}
	return fmt.Sprintf("format%d", f)
}

// MarshalText writes the name.
func (f StateFormat) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText reads a name: planar or 3d.
func (f *StateFormat) UnmarshalText(b []byte) error {
	for i, n := range stateFormatNames {
		if string(b) == n {
			*f = StateFormat(i)
			return nil
		}
	}
	return fmt.Errorf("must be planar or 3d, got %q", b)
}
