package dds

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Descriptor describes a topic type as Cyclone's idlc does in a
// dds_topic_descriptor_t: the type's name (ROS 2's
// "pkg::msg::dds_::Name_"), the size and alignment of its C structure, and
// the marshalling program (ops) that says where each field lies and how it
// is serialized. The samples a Writer writes and a Reader takes are memory
// laid out as that structure.
type Descriptor struct {
	TypeName    string
	Size, Align uint32
	Flagset     uint32
	// NOps is the number of instructions in Ops (m_nops), not of words.
	NOps        uint32
	Ops         []uint32
	c           *cDescriptor // made once, kept for the process's life
	name, empty []byte
	madeOnce    bool
}

// cDescriptor is dds_topic_descriptor_t of Cyclone DDS 0.10 (LP64).
type cDescriptor struct {
	size, align, flagset, nkeys uint32
	typename                    *byte
	keys                        unsafe.Pointer
	nops                        uint32
	ops                         *uint32
	meta                        *byte
	typeInfo, typeMap           cTypeMeta
	restrictDataRepresentation  uint32
}

// cTypeMeta is struct dds_type_meta_ser.
type cTypeMeta struct {
	data *byte
	sz   uint32
}

// descriptors keeps every C descriptor made, and what it points to,
// reachable: Cyclone keeps pointers to them for the topics' lives.
var descriptors []*Descriptor

func (d *Descriptor) cdesc() *cDescriptor {
	if !d.madeOnce {
		d.name = append([]byte(d.TypeName), 0)
		d.empty = []byte{0}
		d.c = &cDescriptor{size: d.Size, align: d.Align, flagset: d.Flagset, typename: &d.name[0],
			nops: d.NOps, ops: &d.Ops[0], meta: &d.empty[0]}
		d.madeOnce = true
		descriptors = append(descriptors, d)
	}
	return d.c
}

// Participant is a DDS domain participant.
type Participant struct {
	e int32
}

// NewParticipant joins DDS domain (ROS 2's ROS_DOMAIN_ID). Cyclone reads
// its configuration from CYCLONEDDS_URI, as ROS 2 does.
func NewParticipant(domain uint32) (*Participant, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if domain > 232 {
		return nil, fmt.Errorf("DDS domain %d: must be 0-232 (ROS_DOMAIN_ID)", domain)
	}
	e := loaded.createParticipant(domain, 0, 0)
	if err := check(fmt.Sprintf("creating a DDS participant in domain %d", domain), e); err != nil {
		return nil, err
	}
	return &Participant{e: e}, nil
}

// Close deletes the participant and everything made from it.
func (p *Participant) Close() error {
	if p == nil || p.e == 0 {
		return nil
	}
	err := check("deleting the DDS participant", loaded.deleteEntity(p.e))
	p.e = 0
	return err
}

// Topic is a DDS topic.
type Topic struct {
	e    int32
	name string
	desc *Descriptor
}

// Name returns the DDS topic name ("rt/uav-0/pose").
func (t Topic) Name() string { return t.name }

// Topic finds or makes the topic name of type d.
func (p *Participant) Topic(name string, d *Descriptor) (Topic, error) {
	if len(d.Ops) == 0 {
		return Topic{}, errors.New("internal error: a topic descriptor without ops")
	}
	e := loaded.createTopic(p.e, unsafe.Pointer(d.cdesc()), name, 0, 0)
	if err := check(fmt.Sprintf("creating DDS topic %s (%s)", name, d.TypeName), e); err != nil {
		return Topic{}, err
	}
	return Topic{e: e, name: name, desc: d}, nil
}

// QoS is the part of a writer's or reader's quality of service ROS 2
// profiles set.
type QoS struct {
	// Reliable is RELIABLE (ROS 2's default) rather than BEST_EFFORT.
	Reliable bool
	// Depth is KEEP_LAST's depth (ROS 2's default 10).
	Depth int32
	// TransientLocal is TRANSIENT_LOCAL durability rather than VOLATILE.
	TransientLocal bool
}

// DefaultQoS is rclpy's default profile: RELIABLE, VOLATILE, KEEP_LAST 10.
var DefaultQoS = QoS{Reliable: true, Depth: 10}

// Cyclone's enum values (dds_public_qosdefs.h).
const (
	reliabilityBestEffort = 0
	reliabilityReliable   = 1
	historyKeepLast       = 0
	durabilityVolatile    = 0
	durabilityTransient   = 1
)

func (q QoS) make() uintptr {
	c := loaded.createQos()
	kind := int32(reliabilityBestEffort)
	if q.Reliable {
		kind = reliabilityReliable
	}
	loaded.qsetReliability(c, kind, 100_000_000) // 100 ms, Cyclone's default
	depth := q.Depth
	if depth < 1 {
		depth = 1
	}
	loaded.qsetHistory(c, historyKeepLast, depth)
	dur := int32(durabilityVolatile)
	if q.TransientLocal {
		dur = durabilityTransient
	}
	loaded.qsetDurability(c, dur)
	return c
}

// Writer writes samples of one topic.
type Writer struct {
	e    int32
	t    Topic
	args [2]uintptr
}

// Writer makes a writer of t with QoS q.
func (p *Participant) Writer(t Topic, q QoS) (*Writer, error) {
	c := q.make()
	defer loaded.deleteQos(c)
	e := loaded.createWriter(p.e, t.e, c, 0)
	if err := check("creating a DDS writer on "+t.name, e); err != nil {
		return nil, err
	}
	return &Writer{e: e, t: t}, nil
}

// Write writes the sample at s, memory laid out as the topic type's C
// structure. s and the memory its strings and sequences point to must be
// in the Go heap (not on a goroutine's stack, which moves) and reachable
// while Write runs; Cyclone serializes the sample before Write returns and
// keeps no pointer to it. Write allocates nothing.
func (w *Writer) Write(s unsafe.Pointer) error {
	w.args[0], w.args[1] = uintptr(w.e), uintptr(s)
	r1, _, _ := purego.SyscallN(loaded.writeSym, w.args[:]...)
	runtime.KeepAlive(s)
	return checkOn("writing", w.t.name, int32(r1))
}

// Matched returns how many readers the writer is matched with now.
func (w *Writer) Matched() (int, error) {
	var st matchedStatus
	if err := check("publication matched status of "+w.t.name, loaded.pubMatched(w.e, &st)); err != nil {
		return 0, err
	}
	return int(st.CurrentCount), nil
}

// Reader takes samples of one topic.
type Reader struct {
	e     int32
	t     Topic
	bufs  []unsafe.Pointer
	infos []SampleInfo
	n     int32 // samples loaned by the last Take
	args  [5]uintptr
}

// maxTake bounds the samples one Take loans.
const maxTake = 64

// Reader makes a reader of t with QoS q.
func (p *Participant) Reader(t Topic, q QoS) (*Reader, error) {
	c := q.make()
	defer loaded.deleteQos(c)
	e := loaded.createReader(p.e, t.e, c, 0)
	if err := check("creating a DDS reader on "+t.name, e); err != nil {
		return nil, err
	}
	return &Reader{e: e, t: t, bufs: make([]unsafe.Pointer, maxTake), infos: make([]SampleInfo, maxTake)}, nil
}

// Take loans the samples received since the last Take, up to 64, oldest
// first, and returns how many; Sample reads them, and Return gives them
// back (before the next Take). Take allocates nothing.
func (r *Reader) Take() (int, error) {
	if r.n > 0 {
		if err := r.Return(); err != nil {
			return 0, err
		}
	}
	for i := range r.bufs {
		r.bufs[i] = nil
	}
	r.args = [5]uintptr{uintptr(r.e), uintptr(unsafe.Pointer(&r.bufs[0])), uintptr(unsafe.Pointer(&r.infos[0])), uintptr(len(r.bufs)), uintptr(len(r.bufs))}
	r1, _, _ := purego.SyscallN(loaded.takeSym, r.args[:]...)
	n := int32(r1)
	if err := checkOn("taking from", r.t.name, n); err != nil {
		return 0, err
	}
	r.n = n
	return int(n), nil
}

// Sample returns loaned sample i, laid out as the topic type's C
// structure, and whether it holds data (a sample may only say that its
// writer went away). The memory is Cyclone's until Return: copy what you
// keep.
func (r *Reader) Sample(i int) (unsafe.Pointer, bool) {
	return r.bufs[i], r.infos[i].ValidData
}

// Return gives the samples of the last Take back to Cyclone.
func (r *Reader) Return() error {
	if r.n <= 0 {
		return nil
	}
	r.args[0], r.args[1], r.args[2] = uintptr(r.e), uintptr(unsafe.Pointer(&r.bufs[0])), uintptr(r.n)
	r1, _, _ := purego.SyscallN(loaded.returnLoanSym, r.args[:3]...)
	r.n = 0
	return checkOn("returning the loan of", r.t.name, int32(r1))
}

// TakeCDR takes the samples received since the last call as their
// serialized bytes (the 4-byte encapsulation header, then the CDR
// payload) and calls fn with each valid one.
func (r *Reader) TakeCDR(fn func(cdr []byte)) (int, error) {
	total := 0
	for {
		for i := range r.bufs {
			r.bufs[i] = nil
		}
		n := loaded.takecdr(r.e, &r.bufs[0], uint32(len(r.bufs)), &r.infos[0], 0)
		if err := check("taking serialized samples from "+r.t.name, n); err != nil {
			return total, err
		}
		for i := 0; i < int(n); i++ {
			sd := r.bufs[i]
			if r.infos[i].ValidData {
				b := make([]byte, loaded.serdataSize(sd))
				if len(b) > 0 {
					loaded.serdataToSer(sd, 0, uintptr(len(b)), unsafe.Pointer(&b[0]))
				}
				fn(b)
				total++
			}
			loaded.serdataUnref(sd)
		}
		if int(n) < len(r.bufs) {
			return total, nil
		}
	}
}

// Matched returns how many writers the reader is matched with now.
func (r *Reader) Matched() (int, error) {
	var st matchedStatus
	if err := check("subscription matched status of "+r.t.name, loaded.subMatched(r.e, &st)); err != nil {
		return 0, err
	}
	return int(st.CurrentCount), nil
}
