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
#include "ns3/wifi-module.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
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
static std::map<uint64_t, uint64_t> g_uidToId;      // ns-3 packet uid -> skyloop id
static std::vector<std::map<uint64_t, std::pair<double, double>>> g_lastRx; // per node: uid -> (signal, snr)
static Ipv4Address g_bcast;
static FILE* g_out = stdout;

static void
Fail(const std::string& msg)
{
    std::cerr << "skyloop-ns3: " << msg << std::endl;
    std::exit(2);
}

static void
DoSend(uint32_t src, int64_t dst, uint64_t id, uint32_t bytes, uint16_t port)
{
    Ptr<Packet> p = Create<Packet>(bytes);
    IdTag tag;
    tag.id = id;
    p->AddPacketTag(tag);
    g_uidToId[p->GetUid()] = id;
    Ipv4Address to = dst < 0 ? g_bcast : g_addr.at(dst);
    g_sockets[src]->SendTo(p, 0, InetSocketAddress(to, kPort));
    (void)port;
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
        uint32_t src = g_addrToNode[InetSocketAddress::ConvertFrom(from).GetIpv4().Get()];
        double sig = NAN, snr = NAN;
        auto it = g_lastRx[node].find(p->GetUid());
        if (it != g_lastRx[node].end())
        {
            sig = it->second.first;
            snr = it->second.second;
            g_lastRx[node].erase(it);
        }
        std::fprintf(g_out, "RX %" PRId64 " %" PRIu64 " %u %u %.3f %.3f\n", Simulator::Now().GetNanoSeconds(), tag.id, node,
                     src, sig, snr);
    }
}

static void
OnSniffRx(uint32_t node, Ptr<const Packet> p, uint16_t, WifiTxVector, MpduInfo, SignalNoiseDbm sn, uint16_t)
{
    if (g_uidToId.count(p->GetUid()))
    {
        g_lastRx[node][p->GetUid()] = {sn.signal, sn.signal - sn.noise};
    }
}

static void
Drop(uint32_t node, uint64_t uid, const char* reason)
{
    auto it = g_uidToId.find(uid);
    if (it == g_uidToId.end())
    {
        return; // not one of ours (routing traffic, ACKs)
    }
    std::fprintf(g_out, "DROP %" PRId64 " %" PRIu64 " %u %s\n", Simulator::Now().GetNanoSeconds(), it->second, node, reason);
}

static void
OnPhyDrop(uint32_t node, Ptr<const Packet> p, WifiPhyRxfailureReason r)
{
    const char* why = "collision";
    switch (r)
    {
    case PREAMBLE_DETECT_FAILURE:
        why = "below_sensitivity";
        break;
    case TXING:
    case RXING:
    case BUSY_DECODING_PREAMBLE:
    case RECEPTION_ABORTED_BY_TX:
        why = "busy";
        break;
    case L_SIG_FAILURE:
        why = "error_model";
        break;
    default:
        break;
    }
    Drop(node, p->GetUid(), why);
}

static void
OnRxError(uint32_t node, Ptr<const Packet> p, double)
{
    Drop(node, p->GetUid(), "error_model");
}

static void
OnMacDrop(uint32_t node, WifiMacDropReason r, Ptr<const WifiMpdu> mpdu)
{
    Drop(node, mpdu->GetPacket()->GetUid(), r == WIFI_MAC_DROP_REACHED_RETRY_LIMIT ? "retry_limit" : "queue");
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
    std::string standard = "80211a", mode = "OfdmRate6Mbps", preamble = "on", loss = "logdistance", routing = "none", pcap = "-";
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
    phy.SetPcapDataLinkType(WifiPhyHelper::DLT_IEEE802_11_RADIO);
    WifiMacHelper mac;
    mac.SetType("ns3::AdhocWifiMac");
    NetDeviceContainer devs = wifi.Install(phy, mac, g_nodes);

    InternetStackHelper stack;
    if (routing == "aodv")
    {
        AodvHelper aodv;
        stack.SetRoutingHelper(aodv);
    }
    else if (routing == "olsr")
    {
        OlsrHelper olsr;
        stack.SetRoutingHelper(olsr);
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
    g_lastRx.resize(n);
    for (uint32_t i = 0; i < n; i++)
    {
        g_addr.push_back(ifs.GetAddress(i));
        g_addrToNode[ifs.GetAddress(i).Get()] = i;
        Ptr<Socket> s = Socket::CreateSocket(g_nodes.Get(i), UdpSocketFactory::GetTypeId());
        s->SetAllowBroadcast(true);
        s->Bind(InetSocketAddress(Ipv4Address::GetAny(), kPort));
        s->SetRecvCallback(MakeBoundCallback(&OnRecv, i));
        g_sockets.push_back(s);
        Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(devs.Get(i));
        Ptr<WifiPhy> wp = dev->GetPhy();
        wp->TraceConnectWithoutContext("MonitorSnifferRx", MakeBoundCallback(&OnSniffRx, i));
        wp->TraceConnectWithoutContext("PhyRxDrop", MakeBoundCallback(&OnPhyDrop, i));
        wp->GetState()->TraceConnectWithoutContext("RxError", MakeBoundCallback(&OnRxError, i));
        dev->GetMac()->TraceConnectWithoutContext("DroppedMpdu", MakeBoundCallback(&OnMacDrop, i));
    }
    if (pcap != "-")
    {
        phy.EnablePcap(pcap + "/ns3", devs);
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
            std::fprintf(g_out, "DONE %lld\n", t);
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
