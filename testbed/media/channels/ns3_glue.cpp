// The per-frame path of the wifi channel (testbed/media/channels/ns3_process.py), compiled by
// cppyy into the ns-3 process: it joins each member's FdNetDevice (an AF_PACKET socket on the
// machine's end of the member's veth) to the member's 802.11 device, counts what happens to
// frames, and reads the control pipe (positions, partitions, stop) from inside the simulation,
// because the Python interpreter does not run while ns-3 does.
//
// AdhocWifiMac cannot SendFrom, so no BridgeNetDevice: the member's interface carries the wifi
// device's MAC address, and frames pass between the two devices' promiscuous receive callbacks.

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tbwifi
{
using namespace ns3;

struct Member
{
    Ptr<FdNetDevice> fd;
    Ptr<WifiNetDevice> wifi;
    Ptr<MobilityModel> mobility;
    std::unordered_set<uint32_t> blocked; // IPv4 sources this member must not receive (partition)
    std::unordered_map<uint64_t, int64_t> waiting; // packet uid -> when the member's kernel handed it (ns)
    std::vector<float> queue_ms;                   // from the kernel's hand-off to the first transmission
    uint64_t from_host = 0;        // frames the member's interface sent
    uint64_t to_host = 0;          // frames handed to the member's interface
    uint64_t partitioned = 0;      // frames received but not handed over (partition)
    uint64_t phy_tx = 0;           // PPDUs this member put on the air (data, retries, ACKs)
    uint64_t rx_ok = 0;            // PPDUs it decoded
    uint64_t rx_error = 0;         // PPDUs it lost after their preamble (interference, noise)
    std::map<std::string, uint64_t> rx_drop; // PPDUs it did not receive, by ns-3's reason
    uint64_t mac_tx_drop = 0;      // frames the MAC refused before queueing them
    std::map<std::string, uint64_t> mac_drop; // MPDUs the MAC dropped, by reason
    uint64_t retries = 0;          // data transmissions that went unacknowledged
    uint64_t final_failed = 0;     // unicast frames given up after the retry limit
};

// -- time dilation: simulated time runs k times slower than the wall clock ---------------------
//
// ns-3's RealtimeSimulatorImpl paces simulated time one to one with the wall clock. This one
// paces it at 1/k, in best-effort mode as ns-3's does: an event at simulated time t runs when
// the wall clock reaches origin + k·t (or at once when the simulator is behind), and an event a
// foreign thread schedules (an FdNetDevice reader handing over a frame) lands at the simulated
// time the wall clock stands for then. It is the same design as ns-3's (one mutex, the scheduler
// as the event list), with a condition variable in place of the synchronizer.

class DilatedRealtimeSimulatorImpl : public SimulatorImpl
{
  public:
    explicit DilatedRealtimeSimulatorImpl(double k)
        : m_k(k)
    {
        ObjectFactory factory;
        factory.SetTypeId("ns3::MapScheduler");
        m_events = factory.Create<Scheduler>();
        m_origin = std::chrono::steady_clock::now();
    }

    void Destroy() override
    {
        while (!m_destroyEvents.empty())
        {
            Ptr<EventImpl> ev = m_destroyEvents.front().PeekEventImpl();
            m_destroyEvents.pop_front();
            if (!ev->IsCancelled())
            {
                ev->Invoke();
            }
        }
    }

    bool IsFinished() const override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_events->IsEmpty() || m_stop;
    }

    void Stop() override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
        m_wake.notify_all();
    }

    EventId Stop(const Time& delay) override
    {
        return Simulator::Schedule(delay, &Simulator::Stop);
    }

    EventId Schedule(const Time& delay, EventImpl* event) override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return Insert(m_currentTs + delay.GetTimeStep(), m_currentContext, event);
    }

    void ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event) override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        uint64_t base = m_currentTs;
        if (m_running && std::this_thread::get_id() != m_main)
        {
            base = std::max(base, VirtualNowLocked());
        }
        Insert(base + delay.GetTimeStep(), context, event);
    }

    EventId ScheduleNow(EventImpl* event) override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return Insert(m_currentTs, m_currentContext, event);
    }

    EventId ScheduleDestroy(EventImpl* event) override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        EventId id(Ptr<EventImpl>(event, false), m_currentTs, 0xffffffff, EventId::DESTROY);
        m_destroyEvents.push_back(id);
        m_uid++;
        return id;
    }

    void Remove(const EventId& id) override
    {
        if (id.GetUid() == EventId::DESTROY)
        {
            for (auto i = m_destroyEvents.begin(); i != m_destroyEvents.end(); ++i)
            {
                if (*i == id)
                {
                    m_destroyEvents.erase(i);
                    break;
                }
            }
            return;
        }
        if (IsExpired(id))
        {
            return;
        }
        std::lock_guard<std::mutex> lock(m_mutex);
        Scheduler::Event event;
        event.impl = id.PeekEventImpl();
        event.key.m_ts = id.GetTs();
        event.key.m_context = id.GetContext();
        event.key.m_uid = id.GetUid();
        m_events->Remove(event);
        m_unscheduledEvents--;
        event.impl->Cancel();
        event.impl->Unref();
    }

    void Cancel(const EventId& id) override
    {
        if (!IsExpired(id))
        {
            id.PeekEventImpl()->Cancel();
        }
    }

    bool IsExpired(const EventId& id) const override
    {
        if (id.GetUid() == EventId::DESTROY)
        {
            if (id.PeekEventImpl() == nullptr || id.PeekEventImpl()->IsCancelled())
            {
                return true;
            }
            for (const auto& ev : m_destroyEvents)
            {
                if (ev == id)
                {
                    return false;
                }
            }
            return true;
        }
        return id.PeekEventImpl() == nullptr || id.GetTs() < m_currentTs ||
               (id.GetTs() == m_currentTs && id.GetUid() <= m_currentUid) ||
               id.PeekEventImpl()->IsCancelled();
    }

    void Run() override
    {
        m_main = std::this_thread::get_id();
        std::unique_lock<std::mutex> lock(m_mutex);
        m_stop = false;
        m_running = true;
        // simulated time m_currentTs stands for the wall clock now
        m_origin = std::chrono::steady_clock::now() -
                   std::chrono::nanoseconds(static_cast<int64_t>(m_currentTs * m_k));
        while (!m_stop)
        {
            if (m_events->IsEmpty())
            {
                m_wake.wait_for(lock, std::chrono::seconds(1));
                continue;
            }
            uint64_t next = m_events->PeekNext().key.m_ts;
            auto due = m_origin + std::chrono::nanoseconds(static_cast<int64_t>(next * m_k));
            if (std::chrono::steady_clock::now() < due)
            {
                m_wake.wait_until(lock, due); // woken early by an earlier event or a stop
                continue;
            }
            Scheduler::Event ev = m_events->RemoveNext();
            m_unscheduledEvents--;
            m_eventCount++;
            m_currentTs = ev.key.m_ts;
            m_currentContext = ev.key.m_context;
            m_currentUid = ev.key.m_uid;
            lock.unlock();
            ev.impl->Invoke();
            ev.impl->Unref();
            lock.lock();
        }
        m_running = false;
    }

    Time Now() const override
    {
        return TimeStep(m_currentTs);
    }

    Time GetDelayLeft(const EventId& id) const override
    {
        return IsExpired(id) ? TimeStep(0) : TimeStep(id.GetTs() - m_currentTs);
    }

    Time GetMaximumSimulationTime() const override
    {
        return TimeStep(0x7fffffffffffffffLL);
    }

    void SetScheduler(ObjectFactory schedulerFactory) override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        Ptr<Scheduler> scheduler = schedulerFactory.Create<Scheduler>();
        while (!m_events->IsEmpty())
        {
            scheduler->Insert(m_events->RemoveNext());
        }
        m_events = scheduler;
    }

    uint32_t GetSystemId() const override
    {
        return 0;
    }

    uint32_t GetContext() const override
    {
        return m_currentContext;
    }

    uint64_t GetEventCount() const override
    {
        return m_eventCount;
    }

    /// the simulated time the wall clock stands for now (ns)
    uint64_t VirtualNow() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return VirtualNowLocked();
    }

  protected:
    void DoDispose() override
    {
        while (!m_events->IsEmpty())
        {
            Scheduler::Event next = m_events->RemoveNext();
            next.impl->Unref();
        }
        m_events = nullptr;
        SimulatorImpl::DoDispose();
    }

  private:
    uint64_t VirtualNowLocked() const
    {
        auto wall = std::chrono::steady_clock::now() - m_origin;
        return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count() / m_k);
    }

    EventId Insert(uint64_t ts, uint32_t context, EventImpl* event)
    {
        Scheduler::Event ev;
        ev.impl = event;
        ev.key.m_ts = ts;
        ev.key.m_context = context;
        ev.key.m_uid = m_uid++;
        m_unscheduledEvents++;
        m_events->Insert(ev);
        m_wake.notify_all();
        return EventId(event, ts, context, ev.key.m_uid);
    }

    double m_k;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::chrono::steady_clock::time_point m_origin;
    std::thread::id m_main;
    Ptr<Scheduler> m_events;
    std::list<EventId> m_destroyEvents;
    bool m_stop = false;
    bool m_running = false;
    uint32_t m_uid = EventId::VALID;
    uint32_t m_currentUid = 0;
    uint64_t m_currentTs = 0;
    uint32_t m_currentContext = Simulator::NO_CONTEXT;
    uint64_t m_eventCount = 0;
    int m_unscheduledEvents = 0;
};

void
UseDilation(double k)
{
    Simulator::SetImplementation(Create<DilatedRealtimeSimulatorImpl>(k));
}

std::vector<Member> members;
std::vector<float> lag_ms;       // the simulator's lag behind the wall clock, every control tick
int control_fd = -1;
std::string control_buffer;
Time control_period = MilliSeconds(10);
bool stopping = false;

/// the simulated time the wall clock stands for now (ns): where the simulator should be
inline int64_t
WallNs()
{
    Ptr<SimulatorImpl> impl = Simulator::GetImplementation();
    if (Ptr<RealtimeSimulatorImpl> realtime = DynamicCast<RealtimeSimulatorImpl>(impl))
    {
        return realtime->RealtimeNow().GetNanoSeconds();
    }
    if (Ptr<DilatedRealtimeSimulatorImpl> dilated = DynamicCast<DilatedRealtimeSimulatorImpl>(impl))
    {
        return static_cast<int64_t>(dilated->VirtualNow());
    }
    return Simulator::Now().GetNanoSeconds();
}

inline Member&
Of(Ptr<NetDevice> dev)
{
    return members[dev->GetNode()->GetId()];
}

bool
FromHost(Ptr<NetDevice> dev,
         Ptr<const Packet> packet,
         uint16_t protocol,
         const Address& source,
         const Address& destination,
         NetDevice::PacketType type)
{
    Member& m = Of(dev);
    m.from_host++;
    Ptr<Packet> copy = packet->Copy();
    m.waiting[copy->GetUid()] = Simulator::Now().GetNanoSeconds();
    m.wifi->Send(copy, destination, protocol);
    return true;
}

inline bool
Blocked(const Member& m, Ptr<const Packet> packet, uint16_t protocol)
{
    if (m.blocked.empty())
    {
        return false;
    }
    uint8_t head[20];
    uint32_t offset;
    if (protocol == 0x0800)
    {
        offset = 12; // IPv4 source address
    }
    else if (protocol == 0x0806)
    {
        offset = 14; // ARP sender protocol address
    }
    else
    {
        return false;
    }
    if (packet->CopyData(head, offset + 4) < offset + 4)
    {
        return false;
    }
    uint32_t source;
    memcpy(&source, head + offset, 4);
    return m.blocked.count(source) > 0;
}

bool
FromAir(Ptr<NetDevice> dev,
        Ptr<const Packet> packet,
        uint16_t protocol,
        const Address& source,
        const Address& destination,
        NetDevice::PacketType type)
{
    if (type == NetDevice::PACKET_OTHERHOST)
    {
        return true; // a unicast frame for another member: its radio heard it, its kernel does not
    }
    Member& m = Of(dev);
    if (Blocked(m, packet, protocol))
    {
        m.partitioned++;
        return true;
    }
    m.to_host++;
    m.fd->SendFrom(packet->Copy(), source, destination, protocol);
    return true;
}

bool
Swallow(Ptr<NetDevice>, Ptr<const Packet>, uint16_t, const Address&)
{
    return true;
}

void
PhyTxBegin(uint32_t index, Ptr<const Packet> packet, double watts)
{
    Member& m = members[index];
    m.phy_tx++;
    auto found = m.waiting.find(packet->GetUid());
    if (found != m.waiting.end())
    {
        m.queue_ms.push_back((Simulator::Now().GetNanoSeconds() - found->second) / 1e6);
        m.waiting.erase(found);
    }
}

void
RxOk(uint32_t index, Ptr<const Packet>, double, WifiMode, WifiPreamble)
{
    members[index].rx_ok++;
}

void
RxError(uint32_t index, Ptr<const Packet>, double)
{
    members[index].rx_error++;
}

void
RxDrop(uint32_t index, Ptr<const Packet>, WifiPhyRxfailureReason reason)
{
    std::ostringstream name;
    name << reason;
    members[index].rx_drop[name.str()]++;
}

void
MacTxDrop(uint32_t index, Ptr<const Packet> packet)
{
    members[index].mac_tx_drop++;
    members[index].waiting.erase(packet->GetUid());
}

void
MacDropped(uint32_t index, WifiMacDropReason reason, Ptr<const WifiMpdu> mpdu)
{
    const char* names[] = {"failed_enqueue", "expired_lifetime", "reached_retry_limit", "qos_old_packet"};
    unsigned r = static_cast<unsigned>(reason);
    members[index].mac_drop[r < 4 ? names[r] : "other"]++;
    members[index].waiting.erase(mpdu->GetPacket()->GetUid());
}

void
DataFailed(uint32_t index, Mac48Address)
{
    members[index].retries++;
}

void
FinalDataFailed(uint32_t index, Mac48Address)
{
    members[index].final_failed++;
}

void
Join(uint32_t index, Ptr<FdNetDevice> fd, Ptr<WifiNetDevice> wifi)
{
    if (members.size() <= index)
    {
        members.resize(index + 1);
    }
    Member& m = members[index];
    m.fd = fd;
    m.wifi = wifi;
    m.mobility = wifi->GetNode()->GetObject<MobilityModel>();
    fd->SetReceiveCallback(MakeCallback(&Swallow));
    fd->SetPromiscReceiveCallback(MakeCallback(&FromHost));
    wifi->SetReceiveCallback(MakeCallback(&Swallow));
    wifi->SetPromiscReceiveCallback(MakeCallback(&FromAir));
    Ptr<WifiPhy> phy = wifi->GetPhy();
    phy->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&PhyTxBegin, index));
    phy->TraceConnectWithoutContext("PhyRxDrop", MakeBoundCallback(&RxDrop, index));
    phy->GetState()->TraceConnectWithoutContext("RxOk", MakeBoundCallback(&RxOk, index));
    phy->GetState()->TraceConnectWithoutContext("RxError", MakeBoundCallback(&RxError, index));
    Ptr<WifiMac> mac = wifi->GetMac();
    mac->TraceConnectWithoutContext("MacTxDrop", MakeBoundCallback(&MacTxDrop, index));
    mac->TraceConnectWithoutContext("DroppedMpdu", MakeBoundCallback(&MacDropped, index));
    Ptr<WifiRemoteStationManager> manager = wifi->GetRemoteStationManager();
    manager->TraceConnectWithoutContext("MacTxDataFailed", MakeBoundCallback(&DataFailed, index));
    manager->TraceConnectWithoutContext("MacTxFinalDataFailed", MakeBoundCallback(&FinalDataFailed, index));
}

// -- the control pipe: one command per line -----------------------------------------------------
//   P <member> <x> <y> <z>      the member is there from now on
//   B <member> [<ipv4> ...]     the member receives nothing from these sources (none: heal)
//   Q                           stop (end of file too)

void
Command(const std::string& line)
{
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    if (verb == "P")
    {
        uint32_t index;
        double x, y, z;
        if (in >> index >> x >> y >> z && index < members.size())
        {
            members[index].mobility->SetPosition(Vector(x, y, z));
        }
    }
    else if (verb == "B")
    {
        uint32_t index;
        if (in >> index && index < members.size())
        {
            members[index].blocked.clear();
            std::string address;
            while (in >> address)
            {
                struct in_addr parsed;
                if (inet_pton(AF_INET, address.c_str(), &parsed) == 1)
                {
                    members[index].blocked.insert(parsed.s_addr);
                }
            }
        }
    }
    else if (verb == "Q")
    {
        stopping = true;
    }
}

void
Control()
{
    lag_ms.push_back((WallNs() - Simulator::Now().GetNanoSeconds()) / 1e6);
    char buffer[65536];
    while (!stopping)
    {
        ssize_t n = read(control_fd, buffer, sizeof(buffer));
        if (n > 0)
        {
            control_buffer.append(buffer, n);
            continue;
        }
        if (n == 0)
        {
            stopping = true; // the testbed went away
        }
        break; // EAGAIN: nothing more for now
    }
    size_t start = 0;
    size_t end;
    while ((end = control_buffer.find('\n', start)) != std::string::npos)
    {
        Command(control_buffer.substr(start, end - start));
        start = end + 1;
    }
    control_buffer.erase(0, start);
    if (stopping)
    {
        Simulator::Stop();
        return;
    }
    // forget hand-offs that never reached the air (dropped without a trace this glue hears)
    int64_t now = Simulator::Now().GetNanoSeconds();
    for (Member& m : members)
    {
        if (m.waiting.size() > 10000)
        {
            for (auto it = m.waiting.begin(); it != m.waiting.end();)
            {
                it = now - it->second > 60000000000LL ? m.waiting.erase(it) : std::next(it);
            }
        }
    }
    Simulator::Schedule(control_period, &Control);
}

void
StartControl(int fd, double period_ms)
{
    control_fd = fd;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    control_period = MicroSeconds(static_cast<int64_t>(period_ms * 1000));
    Simulator::Schedule(Seconds(0), &Control);
}

// -- what the run records ------------------------------------------------------------------------

double
Percentile(std::vector<float> values, double q)
{
    if (values.empty())
    {
        return -1;
    }
    size_t k = std::min(values.size() - 1, static_cast<size_t>(q * (values.size() - 1) + 0.5));
    std::nth_element(values.begin(), values.begin() + k, values.end());
    return values[k];
}

std::string
Json(const std::map<std::string, uint64_t>& counts)
{
    std::ostringstream out;
    out << "{";
    bool first = true;
    for (const auto& [key, value] : counts)
    {
        out << (first ? "" : ", ") << "\"" << key << "\": " << value;
        first = false;
    }
    out << "}";
    return out.str();
}

std::string
MemberJson(uint32_t index)
{
    const Member& m = members[index];
    std::ostringstream out;
    out << "{\"frames_from_host\": " << m.from_host << ", \"frames_to_host\": " << m.to_host
        << ", \"partition_dropped\": " << m.partitioned << ", \"phy_tx\": " << m.phy_tx
        << ", \"phy_rx_ok\": " << m.rx_ok << ", \"phy_rx_error\": " << m.rx_error
        << ", \"phy_rx_drop\": " << Json(m.rx_drop) << ", \"mac_tx_drop\": " << m.mac_tx_drop
        << ", \"mac_drop\": " << Json(m.mac_drop) << ", \"mac_retries\": " << m.retries
        << ", \"mac_final_failed\": " << m.final_failed
        << ", \"queue_delay_ms_p50\": " << Percentile(m.queue_ms, 0.5)
        << ", \"queue_delay_ms_p99\": " << Percentile(m.queue_ms, 0.99)
        << ", \"queue_delay_ms_max\": " << Percentile(m.queue_ms, 1.0)
        << ", \"queue_delay_samples\": " << m.queue_ms.size() << "}";
    return out.str();
}

std::string
LagJson()
{
    std::ostringstream out;
    out << "{\"samples\": " << lag_ms.size() << ", \"p50\": " << Percentile(lag_ms, 0.5)
        << ", \"p99\": " << Percentile(lag_ms, 0.99) << ", \"max\": " << Percentile(lag_ms, 1.0) << "}";
    return out.str();
}

} // namespace tbwifi
