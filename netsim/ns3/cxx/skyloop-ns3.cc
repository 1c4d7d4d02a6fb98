// skyloop-ns3: ns-3 as a skyloop network backend, driven in lockstep over
// stdin/stdout. The protocol is documented in docs/ns3.md. Built by skyloop
// against the system ns-3 (Debian libns3-dev 3.37); see netsim/ns3.
//
// The same program is "ns-3 alone": feed it a script with every POS and TX
// line followed by a single RUN and it runs the scenario in one go.

#include "ns3/aodv-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/olsr-module.h"
#include "ns3/propagation-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <deque>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace ns3;

// IdTag carries skyloop's packet id through the ns-3 stack.
class IdTag : public Tag
{
  public:
    uint64_t id = 0;
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("skyloop::IdTag").SetParent<Tag>().AddConstructor<IdTag>();
        return tid;
    }
    TypeId GetInstanceTypeId() const override { return GetTypeId(); }
    uint32_t GetSerializedSize() const override { return 8; }
    void Serialize(TagBuffer i) const override { i.WriteU64(id); }
    void Deserialize(TagBuffer i) override { id = i.ReadU64(); }
    void Print(std::ostream& os) const override { os << "id=" << id; }
};

static const uint16_t kPort = 9000;
static NodeContainer g_nodes;
static std::vector<Ptr<Socket>> g_sockets;
static std::map<uint32_t, uint32_t> g_addrToNode; // IPv4 address -> node
static std::vector<Ipv4Address> g_addr;
static Ipv4Address g_bcast;
static FILE* g_out = stdout;
static bool g_counters = false; // count packets for routing.csv

// Why is why a receiver did not get a packet, named as skyloop's drop
// reasons (netsim/trace.go).
enum Why : uint8_t
{
    W_NONE = 0,
    W_SENSITIVITY, // nothing decodable reached the receiver's PHY
    W_COLLISION,
    W_ERROR_MODEL,
    W_BUSY,
    W_RETRY,    // a MAC gave up after its retries
    W_QUEUE,    // a queue was full or held the packet too long
    W_NO_ROUTE, // no route (or no address resolution) to the next hop
    W_TTL,
};

static const char* const kWhy[] = {"",      "below_sensitivity", "collision", "error_model", "busy",
                                   "retry_limit", "queue",        "no_route",  "ttl"};

// Fate is what skyloop still waits to hear about one of its packets: every
// intended receiver gets exactly one outcome, an RX line when the packet
// reaches its socket or a DROP line once no copy of it is left anywhere in
// the network. A copy is alive from the moment an IP layer hands it to the
// Wi-Fi interface (Ipv4L3Protocol Tx) until that node is done with it: its
// MAC got the ACK (AckedMpdu), gave up or dropped it (DroppedMpdu), a queue
// or ARP dropped it, or, for a group-addressed frame, it has been on the air
// and reached every node (PhyTxEnd plus the propagation delay). A node that
// receives a copy and forwards it makes a new copy before the sender's one
// ends (the forwarding happens when the frame is received, the ACK comes
// after), so the count never drops to zero while the packet can still
// arrive. Before its first transmission the packet is the source's own
// ("pre"): waiting for a route in AODV's queue, say, until the IP layer
// sends or drops it.
struct Fate
{
    uint32_t src = 0;
    int64_t dst = -1;          // -1: broadcast
    uint32_t pre = 1;          // the source's copy, not sent on the Wi-Fi interface yet
    uint32_t copies = 0;       // copies between an IP transmission and their node's last word on them
    uint32_t open = 0;         // intended receivers without an outcome
    bool aired = false;        // a copy went on the air
    Why death = W_NONE;        // how the last lost copy was lost
    std::vector<uint8_t> done; // per receiver slot: has its outcome
    std::vector<uint8_t> why;  // per receiver slot: the last PHY failure there
    std::vector<std::pair<double, double>> sig; // per receiver slot: last PHY reception (signal, SNR)
    // MPDUs whose MAC-queue lifetime ran out, with their node, until their
    // copy ends (see OnMacDrop).
    std::vector<std::pair<uint32_t, Ptr<const WifiMpdu>>> expired;
};

static std::unordered_map<uint64_t, Fate> g_fate; // skyloop id -> fate
// Per node: the skyloop packet it last put on the air and when that frame
// exchange is over at the latest.
static std::vector<std::pair<uint64_t, int64_t>> g_airing;
// Packets declared lost recently, with the time they may be forgotten: a
// reception of one of them would mean the copy count was wrong.
static std::unordered_set<uint64_t> g_lost;
static std::deque<std::pair<int64_t, uint64_t>> g_lostOrder;
static const int64_t kLostMemoryNs = 120000000000LL;

// Counters are one node's IP-layer packet counts for routing.csv: data are
// skyloop's packets (they carry an IdTag), control the routing protocol's
// (UDP port 654, AODV, or 698, OLSR). Bytes are at the IP layer (IPv4 and
// UDP headers included); only the Wi-Fi interface counts, not the loopback
// (AODV parks a packet waiting for a route there).
struct Counters
{
    uint64_t dataTx = 0, dataTxBytes = 0; // data handed to the MAC: originated and forwarded
    uint64_t forwarded = 0;               // of which forwarded for another node
    uint64_t dataRx = 0, dataRxBytes = 0; // data delivered here as the final destination
    uint64_t ctlTx = 0, ctlTxBytes = 0;   // routing control packets handed to the MAC
    uint64_t ctlRx = 0;                   // routing control packets received from the MAC
};

static std::vector<Counters> g_count;
static uint16_t g_ctlPort = 0; // the routing protocol's UDP port; 0: none

// ControlPacket tells whether p, starting with its IPv4 header, is a
// routing control packet (UDP to the routing protocol's port).
static bool
ControlPacket(Ptr<const Packet> p)
{
    if (g_ctlPort == 0)
    {
        return false;
    }
    Ipv4Header ip;
    if (p->PeekHeader(ip) == 0 || ip.GetProtocol() != UdpL4Protocol::PROT_NUMBER || ip.GetFragmentOffset() != 0)
    {
        return false;
    }
    Ptr<Packet> c = p->Copy();
    c->RemoveHeader(ip);
    UdpHeader udp;
    return c->PeekHeader(udp) != 0 && udp.GetDestinationPort() == g_ctlPort;
}

static void
Fail(const std::string& msg)
{
    std::cerr << "skyloop-ns3: " << msg << std::endl;
    std::exit(2);
}

// Slot returns the receiver slot of node for f (-1: not an intended
// receiver): the destination of a unicast packet (slot 0), any node but the
// source of a broadcast (slot = node).
static int
Slot(const Fate& f, uint32_t node)
{
    if (f.dst >= 0)
    {
        return (int64_t)node == f.dst ? 0 : -1;
    }
    return node == f.src ? -1 : (int)node;
}

// Find returns the fate of the skyloop packet p carries (nullptr: not one
// of skyloop's, or settled already) and its id.
static Fate*
Find(Ptr<const Packet> p, uint64_t* id)
{
    IdTag tag;
    if (!p->PeekPacketTag(tag))
    {
        return nullptr;
    }
    auto it = g_fate.find(tag.id);
    if (it == g_fate.end())
    {
        return nullptr;
    }
    *id = tag.id;
    return &it->second;
}

// Settle declares the packet lost at every receiver still without an
// outcome once no copy of it is left, and forgets it. f is invalid after a
// call that settles.
static void
Settle(uint64_t id, Fate& f)
{
    if (f.pre > 0 || f.copies > 0)
    {
        return;
    }
    int64_t now = Simulator::Now().GetNanoSeconds();
    for (size_t s = 0; s < f.done.size(); s++)
    {
        if (f.done[s])
        {
            continue;
        }
        Why w;
        if (f.dst >= 0)
        {
            // A unicast packet is lost where its last copy was: a MAC
            // that gave up, a queue, a missing route, the TTL. A copy that
            // vanished without a word (a routing protocol discarding a
            // packet it sent itself, back to it) counts as no route.
            w = f.death != W_NONE ? f.death : W_NO_ROUTE;
        }
        else if (!f.aired)
        {
            w = f.death != W_NONE ? f.death : W_QUEUE; // it never went on the air
        }
        else
        {
            w = f.why[s] != W_NONE ? (Why)f.why[s] : W_SENSITIVITY;
        }
        uint32_t node = f.dst >= 0 ? (uint32_t)f.dst : (uint32_t)s;
        std::fprintf(g_out, "DROP %" PRId64 " %" PRIu64 " %u %s\n", now, id, node, kWhy[w]);
    }
    g_fate.erase(id);
    g_lost.insert(id);
    g_lostOrder.emplace_back(now + kLostMemoryNs, id);
    while (!g_lostOrder.empty() && g_lostOrder.front().first < now)
    {
        g_lost.erase(g_lostOrder.front().second);
        g_lostOrder.pop_front();
    }
}

// Lose ends one copy of the packet p carries, for the given reason (W_NONE:
// the copy did its job, e.g. its MAC got the ACK).
static void
Lose(Ptr<const Packet> p, Why w)
{
    uint64_t id;
    Fate* f = Find(p, &id);
    if (f == nullptr)
    {
        return;
    }
    if (f->copies == 0)
    {
        Fail("accounting error: packet " + std::to_string(id) + " lost a copy it did not have");
    }
    f->copies--;
    if (w != W_NONE)
    {
        f->death = w;
    }
    Settle(id, *f);
}

static void
OnIpTx(uint32_t node, Ptr<const Packet> p, Ptr<Ipv4>, uint32_t iface)
{
    if (iface == 0)
    {
        return; // loopback
    }
    IdTag tag;
    bool ours = p->PeekPacketTag(tag);
    if (ours)
    {
        auto it = g_fate.find(tag.id);
        if (it != g_fate.end())
        {
            Fate& f = it->second;
            if (node == f.src && f.pre > 0)
            {
                f.pre--;
            }
            f.copies++;
        }
    }
    if (!g_counters)
    {
        return;
    }
    Counters& c = g_count[node];
    if (ours)
    {
        c.dataTx++;
        c.dataTxBytes += p->GetSize();
    }
    else if (ControlPacket(p))
    {
        c.ctlTx++;
        c.ctlTxBytes += p->GetSize();
    }
}

// OnIpDrop: an IP layer dropped a packet before sending it: at the source,
// the source's own copy (no route, AODV's route request given up or its
// queue full); elsewhere a copy that had just arrived (no route onwards,
// TTL), which was not counted.
static void
OnIpDrop(uint32_t node, const Ipv4Header&, Ptr<const Packet> p, Ipv4L3Protocol::DropReason r, Ptr<Ipv4>, uint32_t)
{
    uint64_t id;
    Fate* f = Find(p, &id);
    if (f == nullptr)
    {
        return;
    }
    switch (r)
    {
    case Ipv4L3Protocol::DROP_TTL_EXPIRED:
        f->death = W_TTL;
        break;
    case Ipv4L3Protocol::DROP_NO_ROUTE:
    case Ipv4L3Protocol::DROP_ROUTE_ERROR:
    case Ipv4L3Protocol::DROP_INTERFACE_DOWN:
        f->death = W_NO_ROUTE;
        break;
    case Ipv4L3Protocol::DROP_BAD_CHECKSUM:
    case Ipv4L3Protocol::DROP_FRAGMENT_TIMEOUT:
        f->death = W_ERROR_MODEL;
        break;
    default:
        return; // a duplicate
    }
    if (node == f->src && f->pre > 0)
    {
        f->pre--;
        Settle(id, *f);
    }
}

// ArpWhy tells why ARP dropped a packet at node: address resolution failed
// (a dead entry) or the queue of packets waiting for it was full. The trace
// does not say which neighbour; with only dead or only waiting entries in
// the cache it is clear, and a cache with both counts as a full queue.
static Why
ArpWhy(uint32_t node)
{
    Ptr<Ipv4L3Protocol> l3 = g_nodes.Get(node)->GetObject<Ipv4L3Protocol>();
    Ptr<ArpCache> cache = l3->GetInterface(1)->GetArpCache();
    bool waiting = false;
    for (const Ipv4Address& a : g_addr)
    {
        ArpCache::Entry* e = cache->Lookup(a);
        waiting = waiting || (e != nullptr && e->IsWaitReply());
    }
    return waiting ? W_QUEUE : W_NO_ROUTE;
}

static void
OnArpDrop(uint32_t node, Ptr<const Packet> p)
{
    uint64_t id;
    if (Find(p, &id) != nullptr)
    {
        Lose(p, ArpWhy(node));
    }
}

static void
OnArpGiveUp(Ptr<const Packet> p)
{
    Lose(p, W_NO_ROUTE); // ARP's retries for the next hop ran out
}

static void
OnQueueDiscDrop(Ptr<const QueueDiscItem> item)
{
    Lose(item->GetPacket(), W_QUEUE);
}

// kExchangeNs bounds one frame exchange (the longest MPDU at 1 Mbit/s,
// then the ACK timeout).
static const int64_t kExchangeNs = 25000000;

// MacDone ends the copy in mpdu at node's MAC: acknowledged (W_NONE),
// given up or dropped.
static void
MacDone(uint32_t node, Ptr<const WifiMpdu> mpdu, Why w)
{
    uint64_t id;
    Fate* f = Find(mpdu->GetPacket(), &id);
    if (f == nullptr)
    {
        return;
    }
    for (auto it = f->expired.begin(); it != f->expired.end(); ++it)
    {
        if (it->first == node && it->second == mpdu)
        {
            f->expired.erase(it); // the exchange it was in ended: that ends it
            break;
        }
    }
    Lose(mpdu->GetPacket(), w);
}

// ExpiredDone ends an expired MPDU's copy once any exchange it was in is
// over, unless that exchange ended it already.
static void
ExpiredDone(uint64_t id, uint32_t node, const WifiMpdu* mpdu)
{
    auto it = g_fate.find(id);
    if (it == g_fate.end())
    {
        return;
    }
    Fate& f = it->second;
    for (auto e = f.expired.begin(); e != f.expired.end(); ++e)
    {
        if (e->first == node && PeekPointer(e->second) == mpdu)
        {
            f.expired.erase(e);
            if (f.copies == 0)
            {
                Fail("accounting error: packet " + std::to_string(id) + " lost a copy it did not have");
            }
            f.copies--;
            f.death = W_QUEUE;
            Settle(id, f);
            return;
        }
    }
}

// OnMacDrop: a MAC gave up on a copy (retry limit) or dropped it (queue
// full, or its 500 ms lifetime in the MAC queue ran out). A copy whose
// lifetime runs out while it is on the air may still arrive: in ns-3 3.37 a
// non-QoS MAC finishes the exchange (an ACK then fires AckedMpdu, a last
// failure DroppedMpdu again; a failure with retries left nothing, the copy
// is simply not sent again). Such a copy ends when that exchange does, or
// one exchange later; any other expired copy at once.
static void
OnMacDrop(uint32_t node, WifiMacDropReason r, Ptr<const WifiMpdu> mpdu)
{
    if (r == WIFI_MAC_DROP_EXPIRED_LIFETIME)
    {
        uint64_t id;
        Fate* f = Find(mpdu->GetPacket(), &id);
        if (f != nullptr && g_airing[node].first == id && Simulator::Now().GetNanoSeconds() < g_airing[node].second)
        {
            f->expired.emplace_back(node, mpdu);
            Simulator::Schedule(NanoSeconds(kExchangeNs), &ExpiredDone, id, node, PeekPointer(mpdu));
            return;
        }
    }
    MacDone(node, mpdu, r == WIFI_MAC_DROP_REACHED_RETRY_LIMIT ? W_RETRY : W_QUEUE);
}

static void
OnMacAcked(uint32_t node, Ptr<const WifiMpdu> mpdu)
{
    MacDone(node, mpdu, W_NONE);
}

static void
OnMacTxDrop(Ptr<const Packet> p)
{
    Lose(p, W_QUEUE);
}

static void
OnPhyTxBegin(uint32_t node, Ptr<const Packet> p, double)
{
    uint64_t id;
    if (Fate* f = Find(p, &id))
    {
        f->aired = true;
        g_airing[node] = {id, Simulator::Now().GetNanoSeconds() + kExchangeNs};
    }
}

// EndBroadcastCopy ends a group-addressed copy once it has reached every
// node.
static void
EndBroadcastCopy(uint64_t id)
{
    auto it = g_fate.find(id);
    if (it == g_fate.end())
    {
        return;
    }
    Fate& f = it->second;
    if (f.copies == 0)
    {
        Fail("accounting error: packet " + std::to_string(id) + " lost a broadcast copy it did not have");
    }
    f.copies--;
    Settle(id, f);
}

// OnPhyTxEnd: a group-addressed frame (no ACK, no retry) is done once it
// has arrived everywhere: its end plus the propagation delay to the
// farthest node (plus 1 us for nodes moving meanwhile). Every reception of
// it, and any forwarding that follows, happens by then.
static void
OnPhyTxEnd(uint32_t node, Ptr<const Packet> p)
{
    uint64_t id;
    if (Find(p, &id) == nullptr)
    {
        return;
    }
    WifiMacHeader h;
    if (p->PeekHeader(h) == 0 || !h.IsData() || !h.GetAddr1().IsGroup())
    {
        return;
    }
    Vector at = g_nodes.Get(node)->GetObject<MobilityModel>()->GetPosition();
    double far = 0;
    for (uint32_t i = 0; i < g_nodes.GetN(); i++)
    {
        far = std::max(far, CalculateDistance(at, g_nodes.Get(i)->GetObject<MobilityModel>()->GetPosition()));
    }
    Simulator::Schedule(NanoSeconds((int64_t)std::ceil(far / 299792458.0 * 1e9) + 1000), &EndBroadcastCopy, id);
}

static void
OnIpRx(uint32_t node, Ptr<const Packet> p, Ptr<Ipv4>, uint32_t iface)
{
    IdTag tag;
    if (iface != 0 && !p->PeekPacketTag(tag) && ControlPacket(p))
    {
        g_count[node].ctlRx++;
    }
}

static void
OnIpForward(uint32_t node, const Ipv4Header& h, Ptr<const Packet> p, uint32_t)
{
    IdTag tag;
    // AODV sends a packet that waited for a route through IpForward at its
    // source too: only a packet from another node is forwarded.
    if (h.GetSource() != g_addr[node] && p->PeekPacketTag(tag))
    {
        g_count[node].forwarded++;
    }
}

static void
OnIpDeliver(uint32_t node, const Ipv4Header& h, Ptr<const Packet> p, uint32_t)
{
    IdTag tag;
    if (p->PeekPacketTag(tag))
    {
        g_count[node].dataRx++;
        g_count[node].dataRxBytes += p->GetSize() + h.GetSerializedSize();
    }
}

// PopulateArp fills every node's ARP cache with every other node's address
// as permanent entries, so that no ARP exchange happens over the channel.
// (NeighborCacheHelper's entries are STATIC_AUTOGENERATED, which AODV's
// neighbour table does not accept when it maps a MAC-layer transmission
// failure back to a neighbour: AODV would lose its link-break detection.)
static void
PopulateArp(const NetDeviceContainer& devs, const Ipv4InterfaceContainer& ifs)
{
    for (uint32_t i = 0; i < devs.GetN(); i++)
    {
        Ptr<Ipv4L3Protocol> l3 = g_nodes.Get(i)->GetObject<Ipv4L3Protocol>();
        Ptr<ArpCache> cache = l3->GetInterface(l3->GetInterfaceForDevice(devs.Get(i)))->GetArpCache();
        for (uint32_t j = 0; j < devs.GetN(); j++)
        {
            if (j == i)
            {
                continue;
            }
            ArpCache::Entry* e = cache->Lookup(ifs.GetAddress(j));
            if (e == nullptr)
            {
                e = cache->Add(ifs.GetAddress(j));
            }
            e->SetMacAddress(devs.Get(j)->GetAddress());
            e->MarkPermanent();
        }
    }
}

// Debugging aid, off unless SKYLOOP_NS3_DEBUG names a file: every OLSR
// message sent and received, every data packet sent and forwarded, the
// OLSR packets' PHY transmissions, and (SKYLOOP_NS3_DEBUG_TABLE_MS) every
// node's OLSR routing table at that time.
static FILE* g_dbg = nullptr;

// DbgNode names the node of an address (-1: none), without adding it to
// g_addrToNode.
static int
DbgNode(Ipv4Address a)
{
    auto it = g_addrToNode.find(a.Get());
    return it == g_addrToNode.end() ? -1 : (int)it->second;
}

static void
DbgOlsrMsgs(const char* what, uint32_t node, const olsr::PacketHeader& h, const olsr::MessageList& ms)
{
    for (const auto& m : ms)
    {
        std::fprintf(g_dbg, "%s,%" PRId64 ",%u,%d,%d,%u,%u,%u,%u", what, Simulator::Now().GetNanoSeconds(), node,
                     (int)m.GetMessageType(), DbgNode(m.GetOriginatorAddress()),
                     (unsigned)m.GetMessageSequenceNumber(), (unsigned)m.GetTimeToLive(), (unsigned)m.GetHopCount(),
                     (unsigned)h.GetPacketSequenceNumber());
        if (m.GetMessageType() == olsr::MessageHeader::HELLO_MESSAGE)
        {
            for (const auto& lm : m.GetHello().linkMessages)
            {
                for (const auto& a : lm.neighborInterfaceAddresses)
                {
                    std::fprintf(g_dbg, ",%d:%u", DbgNode(a), (unsigned)lm.linkCode);
                }
            }
        }
        else if (m.GetMessageType() == olsr::MessageHeader::TC_MESSAGE)
        {
            std::fprintf(g_dbg, ",ansn=%u", (unsigned)m.GetTc().ansn);
            for (const auto& a : m.GetTc().neighborAddresses)
            {
                std::fprintf(g_dbg, ",%d", DbgNode(a));
            }
        }
        std::fputc('\n', g_dbg);
    }
}

static void
DbgOlsrRx(uint32_t node, const olsr::PacketHeader& h, const olsr::MessageList& ms)
{
    DbgOlsrMsgs("OR", node, h, ms);
}

static void
DbgOlsrTx(uint32_t node, const olsr::PacketHeader& h, const olsr::MessageList& ms)
{
    DbgOlsrMsgs("OT", node, h, ms);
}

static void
DbgForward(uint32_t node, const Ipv4Header& h, Ptr<const Packet> p, uint32_t)
{
    IdTag tag;
    if (p->PeekPacketTag(tag))
    {
        std::fprintf(g_dbg, "F,%" PRId64 ",%u,%" PRIu64 ",%d,%d\n", Simulator::Now().GetNanoSeconds(), node, tag.id,
                     DbgNode(h.GetSource()), DbgNode(h.GetDestination()));
    }
}

static void
DbgPhyTx(uint32_t node, Ptr<const Packet> p, double)
{
    Ptr<Packet> q = p->Copy();
    WifiMacHeader mh;
    if (q->RemoveHeader(mh) == 0 || !mh.IsData())
    {
        return;
    }
    LlcSnapHeader llc;
    Ipv4Header ih;
    UdpHeader uh;
    q->RemoveHeader(llc);
    if (llc.GetType() != 0x0800)
    {
        return;
    }
    q->RemoveHeader(ih);
    if (ih.GetProtocol() != 17)
    {
        return;
    }
    q->RemoveHeader(uh);
    if (uh.GetDestinationPort() != 698)
    {
        return;
    }
    olsr::PacketHeader ph;
    q->RemoveHeader(ph);
    std::fprintf(g_dbg, "PT,%" PRId64 ",%u,%u,%u\n", Simulator::Now().GetNanoSeconds(), node,
                 (unsigned)ph.GetPacketSequenceNumber(), p->GetSize());
}

static void
DbgTables()
{
    for (uint32_t i = 0; i < g_nodes.GetN(); i++)
    {
        Ptr<Ipv4> ip = g_nodes.Get(i)->GetObject<Ipv4>();
        Ptr<Ipv4ListRouting> list = DynamicCast<Ipv4ListRouting>(ip->GetRoutingProtocol());
        if (!list)
        {
            return;
        }
        for (uint32_t k = 0; k < list->GetNRoutingProtocols(); k++)
        {
            int16_t prio;
            Ptr<olsr::RoutingProtocol> o = DynamicCast<olsr::RoutingProtocol>(list->GetRoutingProtocol(k, prio));
            if (!o)
            {
                continue;
            }
            for (const auto& e : o->GetRoutingTableEntries())
            {
                std::fprintf(g_dbg, "R,%" PRId64 ",%u,%d,%d,%u\n", Simulator::Now().GetNanoSeconds(), i,
                             DbgNode(e.destAddr), DbgNode(e.nextAddr), e.distance);
            }
        }
    }
    std::fflush(g_dbg);
}

static void
DoSend(uint32_t src, int64_t dst, uint64_t id, uint32_t bytes, uint16_t port)
{
    if (g_fate.count(id) || g_lost.count(id))
    {
        Fail("packet id " + std::to_string(id) + " sent twice");
    }
    Fate& f = g_fate[id];
    f.src = src;
    f.dst = dst;
    size_t slots = dst < 0 ? g_nodes.GetN() : 1;
    f.done.assign(slots, 0);
    f.why.assign(slots, W_NONE);
    f.sig.assign(slots, {NAN, NAN});
    f.open = dst < 0 ? g_nodes.GetN() - 1 : 1;
    if (dst < 0)
    {
        f.done[src] = 1; // not a receiver
    }
    if (g_dbg)
    {
        std::fprintf(g_dbg, "S,%" PRId64 ",%" PRIu64 ",%u,%" PRId64 "\n", Simulator::Now().GetNanoSeconds(), id, src, dst);
    }
    Ptr<Packet> p = Create<Packet>(bytes);
    IdTag tag;
    tag.id = id;
    p->AddPacketTag(tag);
    Ipv4Address to = dst < 0 ? g_bcast : g_addr.at(dst);
    int sent = g_sockets[src]->SendTo(p, 0, InetSocketAddress(to, kPort));
    (void)port;
    auto it = g_fate.find(id);
    if (sent < 0 && it != g_fate.end())
    {
        // The socket refused it: no route from the source (OLSR without a
        // route to the destination yet).
        it->second.death = W_NO_ROUTE;
        it->second.pre = 0;
        Settle(id, it->second);
    }
    else if (it != g_fate.end() && it->second.open == 0)
    {
        g_fate.erase(it); // a broadcast with no other node to reach
    }
}

static void
OnRecv(uint32_t node, Ptr<Socket> s)
{
    Address from;
    Ptr<Packet> p;
    while ((p = s->RecvFrom(from)))
    {
        IdTag tag;
        if (!p->PeekPacketTag(tag))
        {
            continue;
        }
        auto it = g_fate.find(tag.id);
        if (it == g_fate.end())
        {
            if (g_lost.count(tag.id))
            {
                Fail("accounting error: packet " + std::to_string(tag.id) + " reached node " + std::to_string(node) +
                     " after it was declared lost");
            }
            continue; // a copy of a packet every receiver has already
        }
        Fate& f = it->second;
        int slot = Slot(f, node);
        if (slot < 0 || f.done[slot])
        {
            continue; // not meant for this node, or a copy it has already
        }
        uint32_t src = g_addrToNode[InetSocketAddress::ConvertFrom(from).GetIpv4().Get()];
        std::fprintf(g_out, "RX %" PRId64 " %" PRIu64 " %u %u %.3f %.3f\n", Simulator::Now().GetNanoSeconds(), tag.id, node,
                     src, f.sig[slot].first, f.sig[slot].second);
        f.done[slot] = 1;
        if (--f.open == 0)
        {
            g_fate.erase(it);
        }
    }
}

static void
OnSniffRx(uint32_t node, Ptr<const Packet> p, uint16_t, WifiTxVector, MpduInfo, SignalNoiseDbm sn, uint16_t)
{
    uint64_t id;
    if (Fate* f = Find(p, &id))
    {
        int slot = Slot(*f, node);
        if (slot >= 0)
        {
            f->sig[slot] = {sn.signal, sn.signal - sn.noise};
        }
    }
}

// PhyFailed records why a broadcast copy failed at node's PHY: a receiver
// that never gets the packet is lost for the first such reason, the
// source's own transmission's as a rule (AODV re-broadcasts, and the
// copies of a flood mostly fail on each other).
static void
PhyFailed(uint32_t node, Ptr<const Packet> p, Why w)
{
    uint64_t id;
    Fate* f = Find(p, &id);
    if (f == nullptr || f->dst >= 0)
    {
        return;
    }
    int slot = Slot(*f, node);
    if (slot >= 0 && f->why[slot] == W_NONE)
    {
        f->why[slot] = w;
    }
}

static void
OnPhyDrop(uint32_t node, Ptr<const Packet> p, WifiPhyRxfailureReason r)
{
    Why why = W_COLLISION;
    switch (r)
    {
    case PREAMBLE_DETECT_FAILURE:
        why = W_SENSITIVITY;
        break;
    case TXING:
    case RXING:
    case BUSY_DECODING_PREAMBLE:
    case RECEPTION_ABORTED_BY_TX:
        why = W_BUSY;
        break;
    case L_SIG_FAILURE:
        why = W_ERROR_MODEL;
        break;
    default:
        break;
    }
    PhyFailed(node, p, why);
}

static void
OnRxError(uint32_t node, Ptr<const Packet> p, double)
{
    PhyFailed(node, p, W_ERROR_MODEL);
}

// kProfiles are the Wi-Fi profiles the program knows: the ns-3 release
// whose Wi-Fi defaults it follows (skyloop's netsim/wifi profiles). The
// first is the default, ns-3 3.37's own.
static const char* const kProfiles[] = {"ns-3.37", "ns-3.26"};

// ApplyProfile26 sets the attributes of ns-3 3.37 that express ns-3.26's
// Wi-Fi defaults (docs/ns3.md, "Profiles"), before the devices are
// installed. What 3.37 cannot express (the 4 us preamble detection window,
// the ACK timeout, channel access, the PHY header abort, error rates over
// coded bits) stays 3.37's.
static void
ApplyProfile26(YansWifiPhyHelper& phy, const std::string& standard)
{
    // 3.26 synchronised to a frame whose power was at least
    // EnergyDetectionThreshold (-96 dBm, not scaled to the width) and
    // kept every weaker one as interference and energy. 3.37's channel
    // drops a frame below RxSensitivity before the PHY sees it, so that is
    // lowered to 20 dB below the noise floor (skyloop's cutoff_db: weaker
    // signals change nothing), and the -96 dBm decision is a threshold
    // preamble detection model whose SNR condition never fails.
    const double noiseDbm = 10 * std::log10(1.3803e-23 * 290 * 20e6) + 30 + 7; // InterferenceHelper's, 20 MHz, NF 7 dB
    phy.Set("RxSensitivity", DoubleValue(noiseDbm - 20));
    phy.SetPreambleDetectionModel("ns3::ThresholdPreambleDetectionModel", "MinimumRssi", DoubleValue(-96.0), "Threshold",
                                  DoubleValue(-1000.0));
    // CcaMode1Threshold: the total energy of the frames not received keeps
    // the medium busy down to -99 dBm, whatever its origin.
    phy.Set("CcaSensitivity", DoubleValue(-99.0));
    phy.Set("CcaEdThreshold", DoubleValue(-99.0));
    phy.Set("TxGain", DoubleValue(1.0));
    phy.Set("RxGain", DoubleValue(1.0));
    // YansWifiPhyHelper's error rate model.
    phy.SetErrorRateModel("ns3::NistErrorRateModel");
    if (standard == "80211b")
    {
        // 3.26 took the thermal noise of a DSSS reception over its 22 MHz,
        // 3.37 over 20 MHz: the same noise is 10 log10(22/20) dB more
        // noise figure.
        phy.Set("RxNoiseFigure", DoubleValue(7 + 10 * std::log10(22.0 / 20)));
    }
    // WifiMacQueue::MaxPacketNumber.
    Config::SetDefault("ns3::WifiMacQueue::MaxSize", QueueSizeValue(QueueSize("400p")));
}

static void
SetPos(uint32_t id, double x, double y, double z)
{
    g_nodes.Get(id)->GetObject<MobilityModel>()->SetPosition(Vector(x, y, z));
}

int
main(int argc, char* argv[])
{
    std::ios::sync_with_stdio(false);
    std::string line;
    if (!std::getline(std::cin, line) || line.rfind("SKYLOOP-NS3 1", 0) != 0)
    {
        Fail("bad handshake: want 'SKYLOOP-NS3 1'");
    }
    uint32_t seed = 1, run = 1, n = 0;
    std::string standard = "80211a", mode = "OfdmRate6Mbps", preamble = "on", loss = "logdistance", routing = "none", pcap = "-",
                arp = "static", profile = kProfiles[0];
    bool counters = false;
    double txPower = 16.0206, lossA = 3.0, lossB = 1.0, lossC = 46.6777;
    std::vector<Vector> pos;
    while (std::getline(std::cin, line))
    {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        if (cmd == "START")
        {
            break;
        }
        else if (cmd == "SEED")
        {
            in >> seed >> run;
        }
        else if (cmd == "NODES")
        {
            in >> n;
            pos.assign(n, Vector(0, 0, 0));
        }
        else if (cmd == "WIFI")
        {
            in >> standard >> mode >> preamble >> txPower;
        }
        else if (cmd == "LOSS")
        {
            in >> loss >> lossA >> lossB >> lossC;
        }
        else if (cmd == "ROUTING")
        {
            in >> routing;
        }
        else if (cmd == "PCAP")
        {
            in >> pcap;
        }
        else if (cmd == "PROFILE")
        {
            in >> profile;
            if (!in.fail() && std::find(std::begin(kProfiles), std::end(kProfiles), profile) == std::end(kProfiles))
            {
                std::string known;
                for (const char* k : kProfiles)
                {
                    known += (known.empty() ? "" : ", ") + std::string(k);
                }
                Fail("unknown Wi-Fi profile \"" + profile + "\": want one of " + known + ": " + line);
            }
        }
        else if (cmd == "ARP")
        {
            in >> arp;
            if (!in.fail() && arp != "static" && arp != "dynamic")
            {
                Fail("ARP must be static or dynamic: " + line);
            }
        }
        else if (cmd == "COUNTERS")
        {
            std::string on;
            in >> on;
            if (!in.fail() && on != "on" && on != "off")
            {
                Fail("COUNTERS must be on or off: " + line);
            }
            counters = on == "on";
        }
        else if (cmd == "POS")
        {
            uint32_t id;
            double x, y, z;
            in >> id >> x >> y >> z;
            if (id >= n)
            {
                Fail("POS for node " + std::to_string(id) + " of " + std::to_string(n));
            }
            pos[id] = Vector(x, y, z);
        }
        else if (!cmd.empty())
        {
            Fail("unknown setup command: " + line);
        }
        if (in.fail())
        {
            Fail("malformed line: " + line);
        }
    }
    if (n < 1)
    {
        Fail("no NODES line before START");
    }
    if (preamble != "on" && preamble != "off")
    {
        Fail("preamble detection must be on or off, got \"" + preamble + "\"");
    }
    if (profile == "ns-3.26" && preamble == "on")
    {
        Fail("preamble detection on is not available with profile ns-3.26 (that release had no preamble detection)");
    }
    RngSeedManager::SetSeed(seed);
    RngSeedManager::SetRun(run);

    g_nodes.Create(n);
    MobilityHelper mob;
    Ptr<ListPositionAllocator> alloc = CreateObject<ListPositionAllocator>();
    for (auto& v : pos)
    {
        alloc->Add(v);
    }
    mob.SetPositionAllocator(alloc);
    mob.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mob.Install(g_nodes);

    WifiHelper wifi;
    if (standard == "80211b")
    {
        wifi.SetStandard(WIFI_STANDARD_80211b);
    }
    else if (standard == "80211a")
    {
        wifi.SetStandard(WIFI_STANDARD_80211a);
    }
    else if (standard == "80211g")
    {
        wifi.SetStandard(WIFI_STANDARD_80211g);
    }
    else
    {
        Fail("unknown standard " + standard);
    }
    // Broadcasts use NonUnicastMode (ns-3 otherwise sends them at the
    // lowest basic rate whatever DataMode says).
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager", "DataMode", StringValue(mode), "ControlMode",
                                 StringValue(mode), "NonUnicastMode", StringValue(mode));
    YansWifiChannelHelper ch;
    ch.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    if (loss == "logdistance")
    {
        ch.AddPropagationLoss("ns3::LogDistancePropagationLossModel", "Exponent", DoubleValue(lossA),
                              "ReferenceDistance", DoubleValue(lossB), "ReferenceLoss", DoubleValue(lossC));
    }
    else if (loss == "friis")
    {
        ch.AddPropagationLoss("ns3::FriisPropagationLossModel", "Frequency", DoubleValue(lossA));
    }
    else if (loss == "range")
    {
        ch.AddPropagationLoss("ns3::RangePropagationLossModel", "MaxRange", DoubleValue(lossA));
    }
    else if (loss == "fixed")
    {
        ch.AddPropagationLoss("ns3::FixedRssLossModel", "Rss", DoubleValue(lossA));
    }
    else
    {
        Fail("unknown loss model " + loss);
    }
    YansWifiPhyHelper phy;
    phy.SetChannel(ch.Create());
    phy.Set("TxPowerStart", DoubleValue(txPower));
    phy.Set("TxPowerEnd", DoubleValue(txPower));
    if (preamble == "off")
    {
        phy.DisablePreambleDetectionModel();
    }
    if (profile == "ns-3.26")
    {
        ApplyProfile26(phy, standard);
    }
    phy.SetPcapDataLinkType(WifiPhyHelper::DLT_IEEE802_11_RADIO);
    WifiMacHelper mac;
    mac.SetType("ns3::AdhocWifiMac");
    NetDeviceContainer devs = wifi.Install(phy, mac, g_nodes);

    InternetStackHelper stack;
    Ipv4StaticRoutingHelper staticRouting;
    if (routing == "aodv")
    {
        AodvHelper aodv;
        stack.SetRoutingHelper(aodv);
        g_ctlPort = 654;
    }
    else if (routing == "olsr")
    {
        // OLSR has no route to the subnet-directed broadcast address
        // (AODV puts one in its table): the UDP socket, which asks the
        // routing protocol for every destination but the limited broadcast,
        // refuses every broadcast. A static routing protocol below OLSR,
        // as in ns-3's OLSR examples, holds that route and nothing else
        // (see below).
        OlsrHelper olsr;
        Ipv4ListRoutingHelper list;
        list.Add(staticRouting, 0);
        list.Add(olsr, 10);
        stack.SetRoutingHelper(list);
        g_ctlPort = 698;
    }
    else if (routing != "none")
    {
        Fail("unknown routing " + routing);
    }
    stack.Install(g_nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.0.0", "255.255.0.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    g_bcast = Ipv4Address("10.1.255.255");
    g_count.resize(n);
    g_airing.assign(n, {UINT64_MAX, 0});
    g_counters = counters;
    if (arp == "static")
    {
        PopulateArp(devs, ifs);
    }
    for (uint32_t i = 0; i < n; i++)
    {
        g_addr.push_back(ifs.GetAddress(i));
        g_addrToNode[ifs.GetAddress(i).Get()] = i;
    }
    for (uint32_t i = 0; i < n; i++)
    {
        Ptr<Ipv4L3Protocol> l3 = g_nodes.Get(i)->GetObject<Ipv4L3Protocol>();
        uint32_t wifiIf = l3->GetInterfaceForDevice(devs.Get(i));
        if (routing == "olsr")
        {
            // The static routing protocol beside OLSR keeps only a route to
            // the broadcast address: without the route to the subnet it adds
            // when the interface comes up, a unicast packet OLSR has no route
            // for is dropped (no route) as with OLSR alone, not sent as if
            // its destination were a neighbour.
            Ptr<Ipv4StaticRouting> sr = staticRouting.GetStaticRouting(l3);
            for (uint32_t r = sr->GetNRoutes(); r-- > 0;)
            {
                if (sr->GetRoute(r).GetInterface() == wifiIf)
                {
                    sr->RemoveRoute(r);
                }
            }
            sr->AddHostRouteTo(g_bcast, wifiIf);
        }
        Ptr<Socket> s = Socket::CreateSocket(g_nodes.Get(i), UdpSocketFactory::GetTypeId());
        s->SetAllowBroadcast(true);
        s->Bind(InetSocketAddress(Ipv4Address::GetAny(), kPort));
        s->SetRecvCallback(MakeBoundCallback(&OnRecv, i));
        g_sockets.push_back(s);
        Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(devs.Get(i));
        Ptr<WifiPhy> wp = dev->GetPhy();
        wp->TraceConnectWithoutContext("MonitorSnifferRx", MakeBoundCallback(&OnSniffRx, i));
        wp->TraceConnectWithoutContext("PhyRxDrop", MakeBoundCallback(&OnPhyDrop, i));
        wp->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&OnPhyTxBegin, i));
        wp->TraceConnectWithoutContext("PhyTxEnd", MakeBoundCallback(&OnPhyTxEnd, i));
        wp->GetState()->TraceConnectWithoutContext("RxError", MakeBoundCallback(&OnRxError, i));
        Ptr<WifiMac> wm = dev->GetMac();
        wm->TraceConnectWithoutContext("DroppedMpdu", MakeBoundCallback(&OnMacDrop, i));
        wm->TraceConnectWithoutContext("AckedMpdu", MakeBoundCallback(&OnMacAcked, i));
        wm->TraceConnectWithoutContext("MacTxDrop", MakeCallback(&OnMacTxDrop));
        l3->TraceConnectWithoutContext("Tx", MakeBoundCallback(&OnIpTx, i));
        l3->TraceConnectWithoutContext("Drop", MakeBoundCallback(&OnIpDrop, i));
        g_nodes.Get(i)->GetObject<ArpL3Protocol>()->TraceConnectWithoutContext("Drop", MakeBoundCallback(&OnArpDrop, i));
        l3->GetInterface(wifiIf)->GetArpCache()->TraceConnectWithoutContext("Drop", MakeCallback(&OnArpGiveUp));
        Ptr<QueueDisc> qd = g_nodes.Get(i)->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(devs.Get(i));
        if (qd)
        {
            qd->TraceConnectWithoutContext("Drop", MakeCallback(&OnQueueDiscDrop));
        }
        if (counters)
        {
            l3->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnIpRx, i));
            l3->TraceConnectWithoutContext("UnicastForward", MakeBoundCallback(&OnIpForward, i));
            l3->TraceConnectWithoutContext("LocalDeliver", MakeBoundCallback(&OnIpDeliver, i));
        }
    }
    if (pcap != "-")
    {
        phy.EnablePcap(pcap + "/ns3", devs);
    }
    if (const char* dp = std::getenv("SKYLOOP_NS3_DEBUG"))
    {
        g_dbg = std::fopen(dp, "w");
    }
    if (g_dbg)
    {
        for (uint32_t i = 0; i < n; i++)
        {
            Ptr<Ipv4L3Protocol> l3 = g_nodes.Get(i)->GetObject<Ipv4L3Protocol>();
            l3->TraceConnectWithoutContext("UnicastForward", MakeBoundCallback(&DbgForward, i));
            DynamicCast<WifiNetDevice>(devs.Get(i))->GetPhy()->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&DbgPhyTx, i));
            Ptr<Ipv4ListRouting> list = DynamicCast<Ipv4ListRouting>(l3->GetRoutingProtocol());
            for (uint32_t k = 0; list && k < list->GetNRoutingProtocols(); k++)
            {
                int16_t prio;
                Ptr<olsr::RoutingProtocol> o = DynamicCast<olsr::RoutingProtocol>(list->GetRoutingProtocol(k, prio));
                if (o)
                {
                    o->TraceConnectWithoutContext("Rx", MakeBoundCallback(&DbgOlsrRx, i));
                    o->TraceConnectWithoutContext("Tx", MakeBoundCallback(&DbgOlsrTx, i));
                }
            }
        }
        if (const char* tm = std::getenv("SKYLOOP_NS3_DEBUG_TABLE_MS"))
        {
            Simulator::Schedule(MilliSeconds(std::atoll(tm)), &DbgTables);
        }
    }
    std::fprintf(g_out, "READY %u\n", n);
    std::fflush(g_out);

    static char buf[1 << 20];
    setvbuf(g_out, buf, _IOFBF, sizeof buf);
    // The run loop parses with sscanf rather than streams: it sees one line
    // per transmission, position change and synchronisation.
    while (std::getline(std::cin, line))
    {
        const char* l = line.c_str();
        int64_t now = Simulator::Now().GetNanoSeconds();
        if (line.rfind("TX ", 0) == 0)
        {
            long long t, dst;
            unsigned long long id;
            unsigned src, port, bytes;
            if (std::sscanf(l + 3, "%lld %llu %u %lld %u %u", &t, &id, &src, &dst, &port, &bytes) != 6 || src >= n ||
                dst >= (long long)n || dst < -1)
            {
                Fail("malformed TX: " + line);
            }
            Simulator::Schedule(NanoSeconds(std::max<int64_t>(0, t - now)), &DoSend, src, (int64_t)dst, (uint64_t)id,
                                bytes, (uint16_t)port);
        }
        else if (line.rfind("POS ", 0) == 0)
        {
            long long t;
            unsigned id;
            double x, y, z;
            if (std::sscanf(l + 4, "%lld %u %lf %lf %lf", &t, &id, &x, &y, &z) != 5 || id >= n)
            {
                Fail("malformed POS: " + line);
            }
            Simulator::Schedule(NanoSeconds(std::max<int64_t>(0, t - now)), &SetPos, id, x, y, z);
        }
        else if (line.rfind("RUN ", 0) == 0)
        {
            long long t;
            if (std::sscanf(l + 4, "%lld", &t) != 1)
            {
                Fail("malformed RUN: " + line);
            }
            if (t > now)
            {
                Simulator::Stop(NanoSeconds(t - now));
                Simulator::Run();
            }
            if (g_dbg)
            {
                std::fflush(g_dbg);
            }
            std::fprintf(g_out, "DONE %lld\n", t);
            std::fflush(g_out);
        }
        else if (line == "COUNTERS")
        {
            // The counters so far, one line per node, then END.
            for (uint32_t i = 0; i < n; i++)
            {
                const Counters& c = g_count[i];
                std::fprintf(g_out,
                             "COUNT %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                             " %" PRIu64 "\n",
                             i, c.dataTx, c.dataTxBytes, c.forwarded, c.dataRx, c.dataRxBytes, c.ctlTx, c.ctlTxBytes, c.ctlRx);
            }
            std::fprintf(g_out, "END %u\n", n);
            std::fflush(g_out);
        }
        else if (line == "QUIT")
        {
            break;
        }
        else if (!line.empty())
        {
            Fail("unknown command: " + line);
        }
    }
    Simulator::Destroy();
    return 0;
}
