// The multi-host test bed itself, and the real coupler across its hosts:
//  - hosts have their own address and share the machine's hostname, resolve each other by name
//    and reach each other over the bridge, and a destroyed bed (or a crashed run's) leaves
//    nothing behind;
//  - a process can be given a private view of a shared folder;
//  - a cut link stops a host's packets, and a TCP connection made before the cut resumes after
//    it (what link-fault tests build on);
//  - coordinator on one host, workers on two others with operator-made keys, a job across them;
//    a worker whose link is cut past --dead-after-ms is declared dead and comes back alive,
//    registering once;
//  - an MPI program under mpirun inside a host, and across two hosts through the launch agent.
// Every test skips without root (network namespaces need it; CI runs as root).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <set>

#include "tests/hosts/gang_helpers.h"
#include "tests/hosts/hosts_cluster.h"
#include "tests/hosts/test_bed.h"

namespace coupler::itest {
namespace {

// An owned socket.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

sockaddr_in Address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// A TCP listener on ip:port, in whatever network namespace the calling thread is in.
Fd Listen(const std::string& ip, int port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const sockaddr_in a = Address(ip, port);
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(fd.get(), 4) != 0) {
    return Fd();
  }
  return fd;
}

// A connected TCP socket to ip:port (a send timeout bounds the connect), or an invalid Fd.
Fd Connect(const std::string& ip, int port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  timeval tv{10, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const sockaddr_in a = Address(ip, port);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) return Fd();
  return fd;
}

Fd Accept(const Fd& listener, std::chrono::milliseconds timeout) {
  pollfd p{listener.get(), POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return Fd();
  return Fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
}

// One byte within `timeout`, or nullopt (also when the peer closed or reset).
std::optional<char> ReadByte(const Fd& fd, std::chrono::milliseconds timeout) {
  pollfd p{fd.get(), POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
  char c = 0;
  if (::recv(fd.get(), &c, 1, 0) != 1) return std::nullopt;
  return c;
}

bool SendByte(const Fd& fd, char c) { return ::send(fd.get(), &c, 1, MSG_NOSIGNAL) == 1; }

std::string PeerAddress(const Fd& fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (getpeername(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
  return buf;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::set<std::string> NetnsNames() {
  TempDir scratch;
  std::set<std::string> names;
  std::stringstream in(RunToEnd({FindTool("ip"), "netns", "list"}, scratch.path()).out);
  for (std::string line; std::getline(in, line);) names.insert(line.substr(0, line.find(' ')));
  return names;
}

// Gone, or a zombie nobody has reaped yet: either way it runs no more.
bool Dead(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

std::string Comm(pid_t pid) { return Trim(ReadFile("/proc/" + std::to_string(pid) + "/comm")); }

TEST(TestBedTest, HostsHaveTheirOwnAddressShareTheHostnameAndReachEachOther) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB"})) << bed.error();
  const Host& a = bed.host("hostA");
  const Host& b = bed.host("hostB");
  EXPECT_NE(a.address(), b.address());
  EXPECT_NE(a.netns(), b.netns());

  for (const Host* h : {&a, &b}) {
    const CommandResult addr =
        RunToEnd(bed.Wrap(*h, {FindTool("ip"), "-o", "-4", "addr", "show", "eth0"}), bed.dir());
    EXPECT_EQ(addr.exit_code, 0) << addr.err;
    EXPECT_NE(addr.out.find("inet " + h->address() + "/24"), std::string::npos) << addr.out;
    // One hostname for all: only the address tells hosts apart, as on a cluster whose
    // machines coupler must not tell apart by name.
    const CommandResult name =
        RunToEnd(bed.Wrap(*h, {FindTool("cat"), "/proc/sys/kernel/hostname"}), bed.dir());
    EXPECT_EQ(Trim(name.out), MachineHostname()) << name.err;
  }
  // Names resolve on each host (its /etc/hosts), as a hostfile of host names needs.
  const CommandResult resolved =
      RunToEnd(bed.Wrap(a, {FindTool("getent"), "hosts", "hostB"}), bed.dir());
  EXPECT_EQ(resolved.exit_code, 0) << resolved.err;
  EXPECT_NE(resolved.out.find(b.address()), std::string::npos) << resolved.out;

  // A connection from A to a listener on B arrives from A's address: it crossed the bridge.
  Fd listener, client;
  ASSERT_TRUE(bed.InHost(b, [&] { listener = Listen(b.address(), 9000); }));
  ASSERT_TRUE(listener.ok());
  ASSERT_TRUE(bed.InHost(a, [&] { client = Connect(b.address(), 9000); }));
  ASSERT_TRUE(client.ok()) << "hostA cannot connect to " << b.address() << ":9000";
  Fd server = Accept(listener, 10s);
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(PeerAddress(server), a.address());
  ASSERT_TRUE(SendByte(client, 'x'));
  EXPECT_EQ(ReadByte(server, 10s), 'x');
  ASSERT_TRUE(SendByte(server, 'y'));
  EXPECT_EQ(ReadByte(client, 10s), 'y');
}

TEST(TestBedTest, DestroyedBedLeavesNoNamespaceAndNoProcess) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TempDir scratch;
  const fs::path shared = scratch / "shared";
  fs::create_directories(shared);
  // Declared before the bed: they outlive it, so only the bed's teardown can have killed them.
  Process plain, hidden, parent;
  std::vector<std::string> names;
  pid_t orphan = -1;
  {
    std::optional<TestBed> bed;
    bed.emplace();
    ASSERT_TRUE(bed->Start({"hostA", "hostB"})) << bed->error();
    const Host& a = bed->host("hostA");
    const Host& b = bed->host("hostB");
    Process::Options o;
    o.output = scratch.path();
    o.name = "plain";
    plain = Process::Spawn(bed->Wrap(a, {FindTool("sleep"), "600"}), o);
    o.name = "hidden";
    hidden = Process::Spawn(bed->WrapPrivateMount(b, shared, {FindTool("sleep"), "600"}), o);
    // A grandchild that outlives its parent is still in the namespace, and still killed.
    o.name = "parent";
    const fs::path pid_file = scratch / "orphan.pid";
    parent = Process::Spawn(
        bed->Wrap(a, {FindTool("sh"), "-c", "sleep 600 & echo $! > " + pid_file.string() +
                                                 ".tmp && mv " + pid_file.string() + ".tmp " +
                                                 pid_file.string() + " && exit 0"}),
        o);
    ASSERT_TRUE(WaitUntil([&] { return !Trim(ReadFile(pid_file)).empty(); }, 30s))
        << parent.err();
    orphan = std::stoi(ReadFile(pid_file));
    EXPECT_EQ(parent.WaitExit(30s), 0) << parent.err();

    // Every wrapper execs in place: the pid Process holds is the program's, in the host.
    ASSERT_TRUE(WaitUntil(
        [&] {
          const auto pa = bed->Pids(a), pb = bed->Pids(b);
          auto in = [](const std::vector<pid_t>& v, pid_t p) {
            return std::find(v.begin(), v.end(), p) != v.end();
          };
          return Comm(plain.pid()) == "sleep" && Comm(hidden.pid()) == "sleep" &&
                 in(pa, plain.pid()) && in(pa, orphan) && in(pb, hidden.pid());
        },
        30s))
        << "comm " << Comm(plain.pid()) << " / " << Comm(hidden.pid()) << "\n" << hidden.err();
    names = bed->Namespaces();
    ASSERT_EQ(names.size(), 3u);
    for (const auto& ns : names) ASSERT_EQ(NetnsNames().count(ns), 1u) << ns;
    bed.reset();
  }
  const std::set<std::string> left = NetnsNames();
  for (const auto& ns : names) {
    EXPECT_EQ(left.count(ns), 0u) << ns << " is still there";
    EXPECT_FALSE(fs::exists(fs::path("/etc/netns") / ns)) << ns;
  }
  EXPECT_EQ(plain.WaitExit(10s), 128 + SIGKILL);
  EXPECT_EQ(hidden.WaitExit(10s), 128 + SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return Dead(orphan); }, 10s)) << "orphan " << orphan << " lives";
}

TEST(TestBedTest, StartRemovesTheBedOfACrashedRun) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  // A pid that is gone: a child that has exited and been reaped.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  waitpid(gone, nullptr, 0);
  ASSERT_FALSE(fs::exists("/proc/" + std::to_string(gone)));

  TempDir scratch;
  const std::string ip = FindTool("ip");
  const std::string stale = "coupler-tb-" + std::to_string(gone) + "-0-hostA";
  ASSERT_EQ(RunToEnd({ip, "netns", "add", stale}, scratch.path()).exit_code, 0);
  fs::create_directories(fs::path("/etc/netns") / stale);
  Process::Options o;
  o.output = scratch.path();
  o.name = "stale";
  Process left_over = Process::Spawn({ip, "netns", "exec", stale, FindTool("sleep"), "600"}, o);
  ASSERT_TRUE(WaitUntil([&] { return Comm(left_over.pid()) == "sleep"; }, 30s));

  TestBed bed;
  const bool started = bed.Start({"hostA"});
  // Removed whether or not the new bed started, so this test never leaks it either.
  const bool removed = NetnsNames().count(stale) == 0;
  if (!removed) RunToEnd({ip, "netns", "del", stale}, scratch.path());
  ASSERT_TRUE(started) << bed.error();
  EXPECT_TRUE(removed) << stale << " survived Start()";
  EXPECT_FALSE(fs::exists(fs::path("/etc/netns") / stale));
  EXPECT_EQ(left_over.WaitExit(10s), 128 + SIGKILL);
}

TEST(TestBedTest, PrivateMountHidesTheSharedDirectory) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB"})) << bed.error();
  const Host& b = bed.host("hostB");
  TempDir scratch;
  const fs::path shared = scratch / "shared";
  fs::create_directories(shared);
  WriteFile(shared / "seen-by-all.txt", "shared\n");

  const std::string script = "ls -A " + shared.string() + "; echo mine > " + shared.string() +
                             "/own.txt && cat " + shared.string() +
                             "/own.txt && ip -o -4 addr show eth0";
  const CommandResult r =
      RunToEnd(bed.WrapPrivateMount(b, shared, {FindTool("sh"), "-c", script}), scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // Nothing of the shared folder, its own file, and still hostB's address.
  EXPECT_EQ(r.out.find("seen-by-all.txt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mine\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inet " + b.address() + "/"), std::string::npos) << r.out;
  // Its write went to its own tmpfs, and the shared folder is as it was.
  EXPECT_FALSE(fs::exists(shared / "own.txt"));
  EXPECT_EQ(ReadFile(shared / "seen-by-all.txt"), "shared\n");
  // A plain Wrap on the same host sees the shared folder.
  const CommandResult plain =
      RunToEnd(bed.Wrap(b, {FindTool("ls"), "-A", shared.string()}), scratch.path());
  EXPECT_EQ(Trim(plain.out), "seen-by-all.txt") << plain.err;
}

class LinkCutTest : public ::testing::TestWithParam<LinkCut> {};

// Later link-fault tests rely on this: a cut stops a host's packets both ways, and a TCP
// connection made before a cut far shorter than TCP's retransmission timeout carries on after
// the restore, with what was sent during the cut delivered.
TEST_P(LinkCutTest, ConnectionMadeBeforeACutResumesAfterRestore) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC"})) << bed.error();
  const Host& a = bed.host("hostA");
  const Host& b = bed.host("hostB");
  const Host& c = bed.host("hostC");
  Fd listener, client, bystander_client;
  ASSERT_TRUE(bed.InHost(a, [&] { listener = Listen(a.address(), 9000); }));
  ASSERT_TRUE(listener.ok());
  ASSERT_TRUE(bed.InHost(b, [&] { client = Connect(a.address(), 9000); }));
  ASSERT_TRUE(client.ok());
  Fd server = Accept(listener, 10s);
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE(bed.InHost(c, [&] { bystander_client = Connect(a.address(), 9000); }));
  ASSERT_TRUE(bystander_client.ok());
  Fd bystander = Accept(listener, 10s);
  ASSERT_TRUE(bystander.ok());
  ASSERT_TRUE(SendByte(client, '1'));
  ASSERT_EQ(ReadByte(server, 10s), '1');

  ASSERT_TRUE(bed.CutLink(b, GetParam())) << bed.Logs();
  // Both directions go quiet; another host's traffic does not.
  ASSERT_TRUE(SendByte(client, 'b'));
  ASSERT_TRUE(SendByte(server, 'a'));
  ASSERT_TRUE(SendByte(bystander_client, 'c'));
  EXPECT_EQ(ReadByte(bystander, 10s), 'c') << "hostC lost its link too";
  EXPECT_EQ(ReadByte(server, 2s), std::nullopt) << "a byte crossed the cut link";
  EXPECT_EQ(ReadByte(client, 100ms), std::nullopt) << "a byte crossed the cut link";

  ASSERT_TRUE(bed.RestoreLink(b)) << bed.Logs();
  const auto restored = Clock::now();
  EXPECT_EQ(ReadByte(server, 60s), 'b') << "the cut host's byte never arrived";
  const auto from_cut_host = Clock::now() - restored;
  EXPECT_EQ(ReadByte(client, 60s), 'a') << "the byte to the cut host never arrived";
  const auto to_cut_host = Clock::now() - restored;
  // And the connection goes on as before.
  ASSERT_TRUE(SendByte(client, '2'));
  EXPECT_EQ(ReadByte(server, 10s), '2');
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  std::cout << "after restore: the cut host's data arrived in "
            << duration_cast<milliseconds>(from_cut_host).count() << " ms, data to it in "
            << duration_cast<milliseconds>(to_cut_host).count() << " ms\n";
}

INSTANTIATE_TEST_SUITE_P(Modes, LinkCutTest, ::testing::Values(LinkCut::kDown, LinkCut::kSilent),
                         [](const ::testing::TestParamInfo<LinkCut>& p) {
                           return p.param == LinkCut::kDown ? "Down" : "Silent";
                         });

// A job of `shards` exec tasks, each writing the address of the host it ran on (its eth0, as
// `ip -o -4 addr show eth0` prints it) to MARKS/SHARD.host.
fs::path WriteWhereJob(const fs::path& dir, const std::string& name, int shards,
                          const fs::path& marks) {
  WriteSyntheticCsv(dir / (name + ".csv"), 60, 3);
  fs::create_directories(marks);
  const fs::path spec = dir / (name + ".yaml");
  WriteFile(spec, "name: " + name + "\nworkdir: " + name + "-work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [" + name + ".csv], params: {shards: " +
                  std::to_string(shards) + "}}\n"
                  "  - id: copy\n    op: exec\n    inputs: [import]\n"
                  "    params:\n      command: \"ip -o -4 addr show eth0 > " + marks.string() +
                  "/{shard}.host && sleep 0.3 && cp {input} {output}\"\n      timeout: 60\n");
  return spec;
}

// Which hosts (names) the tasks of a WriteWhereJob ran on, and how many tasks wrote a mark.
std::pair<std::set<std::string>, size_t> HostsThatRan(const TestBed& bed, const fs::path& marks) {
  std::set<std::string> hosts;
  size_t n = 0;
  for (const auto& name : ListDir(marks)) {
    const std::string address = InetAddress(ReadFile(marks / name));
    const std::string host = HostNameOf(bed, address);
    hosts.insert(host.empty() ? "?" + address : host);
    ++n;
  }
  return {hosts, n};
}

TEST(HostsClusterTest, WorkersOnTwoHostsRunAJobOfACoordinatorOnAThird) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC"})) << bed.error();
  HostsCluster cluster(bed);
  ASSERT_TRUE(cluster.StartCoordinator(bed.host("hostA"))) << cluster.Logs();
  // One slot and one task held ahead each, so both workers take part in a six-task job.
  cluster.StartWorker(bed.host("hostB"), "wB", 1, {"--prefetch", "1"});
  cluster.StartWorker(bed.host("hostC"), "wC", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  auto workers = cluster.Workers();
  ASSERT_EQ(workers.size(), 2u) << cluster.Logs();
  EXPECT_EQ(workers["wB"].state, "alive");
  EXPECT_EQ(workers["wB"].slots, 1u);
  EXPECT_EQ(workers["wC"].state, "alive");
  // Same hostname on both; each advertises its own address (its connection's local one).
  EXPECT_EQ(workers["wB"].host, workers["wC"].host);
  auto addresses = WorkerAddresses(cluster);
  EXPECT_EQ(addresses["wB"], bed.host("hostB").address());
  EXPECT_EQ(addresses["wC"], bed.host("hostC").address());

  const fs::path marks = cluster.dir() / "marks";
  std::string why;
  const std::string job =
      cluster.Submit(WriteWhereJob(cluster.dir(), "across", 6, marks), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto st = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(st) << cluster.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();
  EXPECT_EQ(st->node("copy").done, 6u);
  EXPECT_EQ(st->node("copy").attempts, 6u);
  for (int shard = 0; shard < 6; ++shard) {
    EXPECT_EQ(ReadFile(cluster.dir() / "across-work" / "copy" / CommandPartName(shard)),
              ReadFile(cluster.dir() / "across-work" / "import" / PartName(shard)))
        << "shard " << shard;
  }
  const auto [hosts, marked] = HostsThatRan(bed, marks);
  EXPECT_EQ(marked, 6u);
  EXPECT_EQ(hosts, (std::set<std::string>{"hostB", "hostC"}));
}

// How long a cut lasts past the coordinator's --dead-after-ms (3 s). Either way the worker
// keeps its socket (ZeroMQ reconnects by itself), is declared dead, comes back once the link
// does, registers exactly once for the outage (the coordinator answers every message it queued
// meanwhile with NotFound; one registration answers them all) and takes new work. Restored as
// soon as it is seen dead, the worker may not have noticed anything; held until the worker has
// heard nothing for its own timeout (5 s), it says so once ("still trying") and "the
// coordinator is back" after the restore.
struct CutLength {
  const char* name;
  bool until_worker_notices;
};
void PrintTo(const CutLength& c, std::ostream* os) { *os << c.name; }

class WorkerLinkCutTest : public ::testing::TestWithParam<CutLength> {};

TEST_P(WorkerLinkCutTest, WorkerCutOffPastDeadAfterIsDeclaredDeadAndRejoinsWhenRestored) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC"})) << bed.error();
  HostsCluster::Options options;
  options.heartbeat_ms = 300;
  options.dead_after_ms = 3000;
  HostsCluster cluster(bed, options);
  const Host& b = bed.host("hostB");
  ASSERT_TRUE(cluster.StartCoordinator(bed.host("hostA"))) << cluster.Logs();
  cluster.StartWorker(b, "wB", 1, {"--prefetch", "1"});
  cluster.StartWorker(bed.host("hostC"), "wC", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  constexpr const char* kSilence = "no word from the coordinator for";

  ASSERT_TRUE(bed.CutLink(b)) << bed.Logs();
  const auto cut = Clock::now();
  const WorkerView during = cluster.WaitWorkerState("wB", "lost", 60s);
  const auto declared_dead = Clock::now() - cut;
  const bool dead = during.state == "lost";
  const WorkerView other = cluster.Workers()["wC"];
  bool noticed = false;
  if (dead && GetParam().until_worker_notices) {
    noticed = WaitUntil(
        [&] { return cluster.worker("wB").err().find(kSilence) != std::string::npos; }, 60s,
        50ms);
  }
  // Restored on every path, so a failed assertion below still shows what the worker did next.
  ASSERT_TRUE(bed.RestoreLink(b)) << bed.Logs();
  const auto restored = Clock::now();
  ASSERT_TRUE(dead) << "wB is " << during.state << " 60 s into the cut\n" << cluster.Logs();
  EXPECT_EQ(other.state, "alive") << "hostC's worker suffered from hostB's cut";
  if (GetParam().until_worker_notices) {
    ASSERT_TRUE(noticed) << "wB never said it heard nothing from the coordinator\n"
                         << cluster.Logs();
  }
  EXPECT_TRUE(cluster.worker("wB").running()) << cluster.Logs();

  const WorkerView after = cluster.WaitWorkerState("wB", "alive", 90s);
  const auto back = Clock::now() - restored;
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  std::cout << "wB declared dead " << duration_cast<milliseconds>(declared_dead).count()
            << " ms into a " << duration_cast<milliseconds>(restored - cut).count()
            << " ms cut; " << after.state << " " << duration_cast<milliseconds>(back).count()
            << " ms after the restore\n";
  ASSERT_EQ(after.state, "alive") << "wB did not come back after its link did\n"
                                  << cluster.Logs();

  // And it takes work again.
  const fs::path marks = cluster.dir() / "marks";
  std::string why;
  const std::string job = cluster.Submit(WriteWhereJob(cluster.dir(), "again", 6, marks), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto st = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(st) << cluster.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();
  EXPECT_EQ(HostsThatRan(bed, marks).first.count("hostB"), 1u) << "the rejoined worker ran nothing";

  // Counted last, seconds after the rejoin, so late re-registrations (one per message queued
  // during the cut) would be seen: one outage, one registration.
  const std::string worker_log = cluster.worker("wB").err();
  const std::string coordinator_log = cluster.coordinator().err();
  EXPECT_EQ(Occurrences(worker_log, "registering again"), 1u) << worker_log;
  EXPECT_EQ(Occurrences(coordinator_log, "worker wB joined"), 2u) << coordinator_log;
  EXPECT_EQ(Occurrences(coordinator_log, "worker wC joined"), 1u) << coordinator_log;
  if (GetParam().until_worker_notices) {
    EXPECT_EQ(Occurrences(worker_log, kSilence), 1u) << worker_log;
    EXPECT_NE(worker_log.find("the coordinator is back"), std::string::npos) << worker_log;
  }
}

INSTANTIATE_TEST_SUITE_P(Cuts, WorkerLinkCutTest,
                         ::testing::Values(CutLength{"RestoredWhenDeclaredDead", false},
                                           CutLength{"RestoredAfterTheWorkerNoticedTheSilence",
                                                     true}),
                         [](const ::testing::TestParamInfo<CutLength>& p) {
                           return std::string(p.param.name);
                         });

std::vector<std::string> Mpirun(std::vector<std::string> args) {
  std::vector<std::string> argv{COUPLER_MPIEXEC, "--allow-run-as-root", "--oversubscribe",
                                "--timeout", "90"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

TEST(HostsMpiTest, RanksOnOneHostSeeItsAddressAndTalk) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB"})) << bed.error();
  const Host& b = bed.host("hostB");
  TempDir out;
  const CommandResult r = RunToEnd(
      bed.Wrap(b, Mpirun({"-np", "2", COUPLER_RANK_ADDRESS_BINARY, out.path().string()})),
      out.path(), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto ranks = RankFiles(out.path());
  ASSERT_EQ(ranks.size(), 2u) << r.err << r.out;
  for (const auto& [rank, v] : ranks) {
    EXPECT_EQ(v.at("address"), b.address()) << "rank " << rank;
    EXPECT_EQ(v.at("host"), MachineHostname()) << "rank " << rank;
    EXPECT_EQ(v.at("size"), "2");
    EXPECT_EQ(v.at("sum"), "2") << "rank " << rank << ": the Allreduce did not add up";
  }
}

TEST(HostsMpiTest, MpirunSpansTwoHostsThroughTheLaunchAgent) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC"})) << bed.error();
  const Host& b = bed.host("hostB");
  const Host& c = bed.host("hostC");
  TempDir out;
  const fs::path hostfile = out / "hostfile";
  // Addresses, as coupler writes its hostfiles: both hosts have the same hostname.
  WriteFile(hostfile, b.address() + " slots=1\n" + c.address() + " slots=1\n");
  const fs::path ranks_dir = out / "ranks";
  fs::create_directories(ranks_dir);
  const CommandResult r = RunToEnd(
      bed.Wrap(b, WithEnv(bed.MpiEnv(), Mpirun({"-np", "2", "--hostfile", hostfile.string(),
                                                COUPLER_RANK_ADDRESS_BINARY,
                                                ranks_dir.string()}))),
      out.path(), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto ranks = RankFiles(ranks_dir);
  ASSERT_EQ(ranks.size(), 2u) << r.err << r.out;
  EXPECT_EQ(ranks.at(0).at("address"), b.address());
  EXPECT_EQ(ranks.at(1).at("address"), c.address());
  for (const auto& [rank, v] : ranks) {
    EXPECT_EQ(v.at("sum"), "2") << "rank " << rank << ": the Allreduce did not add up";
  }
}

}  // namespace
}  // namespace coupler::itest
