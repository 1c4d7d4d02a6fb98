// Package dds is Eclipse Cyclone DDS, the DDS implementation ROS 2 uses
// through rmw_cyclonedds, as skyloop's ROS 2 bridge reaches it: an edge. It
// loads libddsc at run time with purego, so that skyloop builds without cgo
// and without Cyclone DDS, and only runs that ask for ROS 2 need it
// (Debian 12: apt-get install libddsc0debian).
//
// Only what a bridge needs is bound: a participant in a domain, topics
// from topic descriptors (made by Cyclone's idlc; package ros2 holds the
// ones of the ROS 2 messages it speaks), writers and readers with the QoS
// ROS 2 uses, samples written from and taken into memory laid out as the C
// structures idlc defines, and the serialized CDR bytes of received
// samples (for checking what goes over the wire).
package dds

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// InstallHint is what to do when Cyclone DDS is missing.
const InstallHint = "apt-get install -y libddsc0debian (Debian 12's Cyclone DDS 0.10.2; cyclonedds-dev and cyclonedds-tools bring the headers and idlc)"

// libNames are the file names tried, in order: Debian's, then upstream's.
var libNames = []string{"libddsc.so.0debian", "libddsc.so.0", "libddsc.so"}

// lib is the loaded library's functions (dds_entity_t is int32,
// dds_return_t int32, dds_domainid_t uint32).
type lib struct {
	path              string
	createParticipant func(domain uint32, qos, listener uintptr) int32
	createTopic       func(pp int32, desc unsafe.Pointer, name string, qos, listener uintptr) int32
	createWriter      func(pp, topic int32, qos, listener uintptr) int32
	createReader      func(pp, topic int32, qos, listener uintptr) int32
	// The calls made at every step go through purego.SyscallN with
	// arguments kept in the entity (a function registered with
	// RegisterFunc allocates a few dozen bytes a call).
	writeSym, takeSym, returnLoanSym uintptr
	takecdr                          func(rd int32, buf *unsafe.Pointer, maxs uint32, si *SampleInfo, mask uint32) int32
	serdataSize                      func(sd unsafe.Pointer) uint32
	serdataToSer                     func(sd unsafe.Pointer, off, sz uintptr, buf unsafe.Pointer)
	serdataUnref                     func(sd unsafe.Pointer)
	deleteEntity                     func(e int32) int32
	createQos                        func() uintptr
	deleteQos                        func(q uintptr)
	qsetReliability                  func(q uintptr, kind int32, maxBlocking int64)
	qsetHistory                      func(q uintptr, kind int32, depth int32)
	qsetDurability                   func(q uintptr, kind int32)
	pubMatched                       func(wr int32, st *matchedStatus) int32
	subMatched                       func(rd int32, st *matchedStatus) int32
	strretcode                       func(ret int32) string
}

// matchedStatus is dds_publication_matched_status_t (and the subscription
// one, laid out alike).
type matchedStatus struct {
	TotalCount         uint32
	TotalCountChange   int32
	CurrentCount       uint32
	CurrentCountChange int32
	LastHandle         uint64
}

// SampleInfo is dds_sample_info_t: what the reader knows of a sample.
type SampleInfo struct {
	SampleState              uint32
	ViewState                uint32
	InstanceState            uint32
	ValidData                bool
	SourceTimestamp          int64
	InstanceHandle           uint64
	PublicationHandle        uint64
	DisposedGenerationCount  uint32
	NoWritersGenerationCount uint32
	SampleRank               uint32
	GenerationRank           uint32
	AbsoluteGenerationRank   uint32
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error
)

// Load loads Cyclone DDS once; later calls return the same result.
func Load() error {
	loadOnce.Do(func() { loaded, loadErr = open() })
	return loadErr
}

func open() (*lib, error) {
	var h uintptr
	var errs []error
	l := &lib{}
	for _, name := range libNames {
		var err error
		if h, err = purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil {
			l.path = name
			break
		}
		errs = append(errs, err)
	}
	if h == 0 {
		return nil, fmt.Errorf("Cyclone DDS (libddsc) not found: %w; %s", errors.Join(errs...), InstallHint)
	}
	for _, f := range []struct {
		fn   any
		name string
	}{
		{&l.createParticipant, "dds_create_participant"}, {&l.createTopic, "dds_create_topic"},
		{&l.createWriter, "dds_create_writer"}, {&l.createReader, "dds_create_reader"},
		{&l.takecdr, "dds_takecdr"}, {&l.serdataSize, "ddsi_serdata_size"},
		{&l.serdataToSer, "ddsi_serdata_to_ser"}, {&l.serdataUnref, "ddsi_serdata_unref"},
		{&l.deleteEntity, "dds_delete"}, {&l.createQos, "dds_create_qos"}, {&l.deleteQos, "dds_delete_qos"},
		{&l.qsetReliability, "dds_qset_reliability"}, {&l.qsetHistory, "dds_qset_history"},
		{&l.qsetDurability, "dds_qset_durability"},
		{&l.pubMatched, "dds_get_publication_matched_status"}, {&l.subMatched, "dds_get_subscription_matched_status"},
		{&l.strretcode, "dds_strretcode"},
	} {
		sym, err := purego.Dlsym(h, f.name)
		if err != nil {
			return nil, fmt.Errorf("Cyclone DDS (%s) lacks %s: %w; %s", l.path, f.name, err, InstallHint)
		}
		purego.RegisterFunc(f.fn, sym)
	}
	for _, f := range []struct {
		sym  *uintptr
		name string
	}{{&l.writeSym, "dds_write"}, {&l.takeSym, "dds_take"}, {&l.returnLoanSym, "dds_return_loan"}} {
		sym, err := purego.Dlsym(h, f.name)
		if err != nil {
			return nil, fmt.Errorf("Cyclone DDS (%s) lacks %s: %w; %s", l.path, f.name, err, InstallHint)
		}
		*f.sym = sym
	}
	return l, nil
}

// check turns a Cyclone return code into an error naming what failed.
func check(what string, ret int32) error {
	if ret >= 0 {
		return nil
	}
	return fmt.Errorf("%s: %s (%d)", what, loaded.strretcode(ret), ret)
}

// checkOn is check for what on topic, building the message only on
// failure (the calls at every step allocate nothing).
func checkOn(what, topic string, ret int32) error {
	if ret >= 0 {
		return nil
	}
	return check(what+" "+topic, ret)
}
