package agent

import (
	"testing"

	"skyloop/geom"
)

// TestDecodedStateOncePerPacket: messages sharing a StateMemo (the
// receivers of one packet) get one decoding, the same update; another
// payload, another prefix of it, or a reset memo decodes afresh; a
// message without a memo decodes on its own; a bad payload gives the
// error to every receiver.
func TestDecodedStateOncePerPacket(t *testing.T) {
	a := State{ID: 3, Seq: 9, TGen: 12345, Pos: geom.V(1, 2, 3), Vel: geom.V(4, 5, 6), Yaw: 0.5}
	b := a
	b.ID, b.Pos = 4, geom.V(7, 8, 9)
	pa, pb := a.Append3D(nil), b.Append3D(nil)
	var memo StateMemo
	m1, m2 := Message{Payload: pa}, Message{Payload: pa}
	m1.ShareDecoded(&memo)
	m2.ShareDecoded(&memo)
	s1, err1 := m1.DecodedState(m1.Payload)
	s2, err2 := m2.DecodedState(m2.Payload)
	if err1 != nil || err2 != nil || s1 != s2 || s1.ID != 3 || s1.Pos != a.Pos {
		t.Fatalf("shared: %+v %v, %+v %v", s1, err1, s2, err2)
	}
	// The memo's own decoding is what DecodeStateInto gives.
	var want State
	if err := DecodeStateInto(pa, &want); err != nil || *s1 != want {
		t.Fatalf("decoded %+v, want %+v", *s1, want)
	}
	m3 := Message{Payload: pb}
	m3.ShareDecoded(&memo)
	if s, err := m3.DecodedState(m3.Payload); err != nil || s.ID != 4 {
		t.Fatalf("another payload through the same memo: %+v %v", s, err)
	}
	if s, err := m3.DecodedState(m3.Payload[:PlanarStateSize]); err == nil && s.Pos.Z != 0 {
		t.Fatalf("a 56-byte prefix of a 3D update gave the whole's decoding: %+v", s)
	}
	memo.Reset()
	if s, err := m1.DecodedState(m1.Payload); err != nil || s.ID != 3 {
		t.Fatalf("after Reset: %+v %v", s, err)
	}
	lone := Message{Payload: pb}
	if s, err := lone.DecodedState(lone.Payload); err != nil || s.ID != 4 {
		t.Fatalf("no memo: %+v %v", s, err)
	}
	bad := Message{Payload: pa[:10]}
	bad.ShareDecoded(&memo)
	bad2 := bad
	if _, err := bad.DecodedState(bad.Payload); err == nil {
		t.Fatal("10 bytes decoded")
	}
	if _, err := bad2.DecodedState(bad2.Payload); err == nil {
		t.Fatal("the second receiver of a bad update got no error")
	}
}
