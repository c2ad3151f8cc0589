// A multi-host test bed on one machine: each "host" is a Linux network namespace with its own
// address and port space, joined to the others by a private bridge, while all of them share
// the filesystem (as NFS would) and the machine's hostname: hosts are told apart by address,
// as coupler tells them apart. Tests run real processes on a host, cut and restore its link,
// run MPI across hosts, or give a process a private tmpfs where the shared files are.
//
// What Start() builds, all private to this test process (names and subnet derive from its pid):
//   coupler-tb-PID-SEQ-switch   a namespace holding only the bridge `br0`, so the machine's own
//                               namespace never sees a link or address of the bed
//   coupler-tb-PID-SEQ-NAME     one per host: `lo`, and `eth0` = 10.X.Y.(i+2)/24, whose veth
//                               peer `pI` is a port of br0 in the switch namespace
//   /etc/netns/<netns>/hosts    the machine's /etc/hosts plus every host's name -> address;
//                               `ip netns exec` binds it over /etc/hosts inside the host, so
//                               bed names resolve there and the shared hostname resolves as
//                               it does on the machine (often to a loopback address)
// The destructor (and every failed Start) SIGKILLs whatever still runs in those namespaces and
// deletes them; Start() also removes namespaces a crashed earlier run left (its pid is gone).
//
// Namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN), which CI has. Elsewhere tests skip:
//   if (auto why = TestBed::SkipReason(); !why.empty()) GTEST_SKIP() << why;
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process_harness.h"

namespace coupler::itest {

// The absolute path of a program on $PATH or in the sbin folders root's tools live in; "" when
// there is none. Process::Spawn execs without a PATH search, so wrapped argv need full paths.
inline std::string FindTool(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream in(path);
    for (std::string d; std::getline(in, d, ':');) {
      if (!d.empty()) dirs.push_back(d);
    }
  }
  for (const char* d : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) dirs.push_back(d);
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// `env K=V ... argv`: argv with extra environment. env(1) execs in place, so the pid a
// Process holds is still the program's own.
inline std::vector<std::string> WithEnv(const std::map<std::string, std::string>& env,
                                        std::vector<std::string> argv) {
  if (env.empty()) return argv;
  std::vector<std::string> out{FindTool("env")};
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

// One host of a TestBed. Its name resolves to its address on every host; its hostname is the
// machine's, the same on every host.
class Host {
 public:
  const std::string& name() const { return name_; }
  const std::string& netns() const { return netns_; }       // for `ip netns exec`, `ip -n`
  const std::string& address() const { return address_; }   // eth0, e.g. "10.213.7.2"
  const std::string& bridge_port() const { return port_; }  // its veth end in the switch

 private:
  friend class TestBed;
  std::string name_, netns_, address_, port_;
};

// How CutLink stops a host's packets. Neither resets a connection: an established TCP connection
// lives on for as long as TCP keeps retransmitting (tcp_retries2: about 15 minutes), and what
// was sent during the cut arrives after RestoreLink. It arrives at the next retransmission,
// which backs off exponentially: measured here, 1.2 s after the restore of a 2 s cut, 3.6 s
// after a 10 s one. A test that waits for traffic to resume should allow the cut's length again.
enum class LinkCut {
  // The switch side of the host's veth goes down: the host's eth0 loses carrier (NO-CARRIER),
  // as when its cable is pulled, and its ARP entries go with it. What the host sends then
  // waits for ARP and often leaves sooner after the restore (0.01-0.9 s measured); what it is
  // sent backs off as ever.
  kDown,
  // The switch drops the port's frames (bridge port state "disabled"): both ends keep carrier
  // and ARP entries and see only silence, as behind a failed switch. Both directions back off.
  kSilent,
};
// Test names and messages read "down" / "silent".
inline void PrintTo(LinkCut how, std::ostream* os) {
  *os << (how == LinkCut::kDown ? "down" : "silent");
}

class TestBed {
 public:
  // "" when this machine can build a bed; otherwise why not (for GTEST_SKIP).
  static std::string SkipReason() {
    static const std::string reason = ProbeSkipReason();
    return reason;
  }

  TestBed() = default;
  ~TestBed() { TearDown(); }
  // Hosts are handed out by reference and namespaces are owned: neither copied nor moved.
  TestBed(const TestBed&) = delete;
  TestBed& operator=(const TestBed&) = delete;

  // Makes one host per name (letters and digits, up to 15), in that order; addresses .2, .3, ...
  // False with error() telling which command failed; nothing is left behind then.
  bool Start(const std::vector<std::string>& names) {
    if (started_) return Fail("Start() called twice");
    if (names.empty() || names.size() > 200) return Fail("need 1 to 200 hosts");
    std::set<std::string> seen;
    for (const auto& n : names) {
      const bool ok =
          !n.empty() && n.size() <= 15 &&
          std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isalnum(c) != 0; });
      if (!ok || !seen.insert(n).second) return Fail("bad or repeated host name '" + n + "'");
    }
    if (auto why = SkipReason(); !why.empty()) return Fail(why);
    ip_ = FindTool("ip");
    bridge_ = FindTool("bridge");
    unshare_ = FindTool("unshare");
    sh_ = FindTool("sh");
    started_ = true;
    RemoveStaleNamespaces();

    static std::atomic<unsigned> beds{0};
    seq_ = beds++;
    prefix_ = std::string(kPrefix) + std::to_string(::getpid()) + "-" + std::to_string(seq_);
    if (!PickSubnet()) return FailAndTearDown("no free 10.X.Y.0/24 subnet");

    switch_ = prefix_ + "-switch";
    if (!NetnsAdd(switch_) || !IpN(switch_, {"link", "set", "lo", "up"}) ||
        !IpN(switch_, {"link", "add", "br0", "type", "bridge"}) ||
        !IpN(switch_, {"link", "set", "br0", "up"})) {
      return FailAndTearDown("");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      Host h;
      h.name_ = names[i];
      h.netns_ = prefix_ + "-" + names[i];
      h.address_ = subnet_prefix_ + std::to_string(i + 2);
      h.port_ = "p" + std::to_string(i);
      hosts_.push_back(h);
      // Created with both ends already in their namespaces: no name ever appears in ours.
      if (!NetnsAdd(h.netns_) ||
          !Ip({"link", "add", "eth0", "netns", h.netns_, "type", "veth", "peer", "name", h.port_,
               "netns", switch_}) ||
          !IpN(switch_, {"link", "set", h.port_, "master", "br0", "up"}) ||
          !IpN(h.netns_, {"addr", "add", h.address_ + "/24", "dev", "eth0"}) ||
          !IpN(h.netns_, {"link", "set", "eth0", "up"}) ||
          !IpN(h.netns_, {"link", "set", "lo", "up"})) {
        return FailAndTearDown("");
      }
    }
    if (!WriteHostsFiles() || !WriteLaunchAgent()) return FailAndTearDown("");
    // The bridge has no STP, so a port forwards as soon as both veth ends are up.
    const bool up = WaitUntil(
        [&] {
          for (const Host& h : hosts_) {
            if (IpOut(h.netns_, {"-o", "link", "show", "eth0"}).find("LOWER_UP") ==
                std::string::npos) {
              return false;
            }
          }
          return true;
        },
        30s, 20ms);
    if (!up) return FailAndTearDown("the hosts' eth0 never came up");
    return true;
  }

  const std::string& error() const { return error_; }
  const std::vector<Host>& hosts() const { return hosts_; }
  const Host& host(const std::string& name) const {
    for (const Host& h : hosts_) {
      if (h.name() == name) return h;
    }
    throw std::out_of_range("no host '" + name + "' in the test bed");
  }
  const std::string& subnet() const { return subnet_; }  // "10.X.Y.0/24"
  const std::string& switch_netns() const { return switch_; }
  // Every namespace this bed made: the switch and each host.
  std::vector<std::string> Namespaces() const {
    std::vector<std::string> out;
    if (!switch_.empty()) out.push_back(switch_);
    for (const Host& h : hosts_) out.push_back(h.netns_);
    return out;
  }
  // Scratch folder of the bed (the launch agent, command output); gone with the bed.
  const fs::path& dir() const { return dir_.path(); }

  // argv run on `host`: in its network namespace, with its /etc/hosts. `ip netns exec` execs
  // in place, so Process::Spawn(Wrap(...)) holds the program's own pid and Process::Kill kills
  // the program itself.
  std::vector<std::string> Wrap(const Host& host, std::vector<std::string> argv) const {
    std::vector<std::string> out{ip_, "netns", "exec", host.netns_};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  // As Wrap, and in a mount namespace of its own with an empty private tmpfs over `dir`: a host
  // that does not see the shared filesystem there (what it writes there stays its own). `dir`
  // must exist. The tmpfs goes when the last process in that mount namespace ends.
  std::vector<std::string> WrapPrivateMount(const Host& host, const fs::path& dir,
                                            std::vector<std::string> argv) const {
    // One command per line: ip enters the network namespace, unshare makes the mount one.
    std::vector<std::string> out{ip_, "netns", "exec", host.netns_,
                                 unshare_, "--mount", "--propagation", "private",
                                 sh_, "-c", kMountAndExec, "sh", dir.string()};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  // Runs `fn` on a thread that has entered the host's network namespace, so the sockets it
  // makes belong to that host (and stay there when used from any thread afterwards). False if
  // the namespace could not be entered. Keep gtest assertions out of `fn`: return values.
  bool InHost(const Host& host, const std::function<void()>& fn) const {
    bool entered = false;
    std::thread t([&] {
      const int fd = ::open(("/run/netns/" + host.netns_).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return;
      entered = ::setns(fd, CLONE_NEWNET) == 0;
      ::close(fd);
      if (entered) fn();
    });
    t.join();
    return entered;
  }

  // Stops every packet to and from `host` (see LinkCut) until RestoreLink. True when the
  // command that does it succeeded.
  bool CutLink(const Host& host, LinkCut how = LinkCut::kDown) {
    if (cuts_.count(host.name_) != 0 && !RestoreLink(host)) return false;
    const bool ok =
        how == LinkCut::kDown
            ? IpN(switch_, {"link", "set", host.port_, "down"})
            : Run({bridge_, "-n", switch_, "link", "set", "dev", host.port_, "state", "0"});  // off
    if (ok) cuts_[host.name_] = how;
    return ok;
  }
  bool RestoreLink(const Host& host) {
    auto it = cuts_.find(host.name_);
    const LinkCut how = it == cuts_.end() ? LinkCut::kDown : it->second;
    const bool ok =
        how == LinkCut::kDown
            ? IpN(switch_, {"link", "set", host.port_, "up"})
            : Run({bridge_, "-n", switch_, "link", "set", "dev", host.port_, "state", "3"});  // fwd
    if (ok && it != cuts_.end()) cuts_.erase(it);
    return ok;
  }

  // An Open MPI launch agent (plm_rsh_agent) for this bed: `AGENT HOST COMMAND...` runs the
  // command on that host, by name or address, as `ssh HOST COMMAND...` would. Only for running
  // mpirun across hosts by hand (the bed's own sanity test): coupler's gangs launch their
  // daemons through `coupler gang-agent` and must need none of this.
  const fs::path& LaunchAgent() const { return agent_; }
  // The environment that makes an mpirun started on a host by a test launch through the agent
  // and keep its traffic on the bed's subnet. Never for workers: the product works without it.
  std::map<std::string, std::string> MpiEnv() const {
    return {{"OMPI_MCA_plm_rsh_agent", agent_.string()},
            {"OMPI_MCA_btl_tcp_if_include", subnet_},
            {"OMPI_MCA_oob_tcp_if_include", subnet_}};
  }

  // Pids of the processes in the host's network namespace (`ip netns pids`).
  std::vector<pid_t> Pids(const Host& host) const { return NetnsPids(host.netns_); }

  // The failed commands of this bed, for a failure message.
  std::string Logs() const { return log_; }

 private:
  static constexpr const char* kPrefix = "coupler-tb-";
  // `sh -c SCRIPT sh DIR argv...`: mounts the private tmpfs, then execs argv in place.
  static constexpr const char* kMountAndExec =
      R"(mount -t tmpfs -o mode=0755 coupler-private "$1" && shift && exec "$@")";

  static std::string ProbeSkipReason() {
    if (::geteuid() != 0) return "needs root for network namespaces (CI runs as root)";
    for (const char* tool : {"ip", "bridge"}) {
      if (FindTool(tool).empty()) {
        return std::string("needs `") + tool + "` (apt-get install iproute2)";
      }
    }
    for (const char* tool : {"unshare", "mount"}) {
      if (FindTool(tool).empty()) {
        return std::string("needs `") + tool + "` (apt-get install util-linux)";
      }
    }
    if (FindTool("sh").empty() || FindTool("env").empty()) return "needs sh and env";
    TempDir scratch;
    const std::string ip = FindTool("ip");
    const std::string probe = std::string(kPrefix) + std::to_string(::getpid()) + "-probe";
    const CommandResult add = RunToEnd({ip, "netns", "add", probe}, scratch.path(), 30s);
    if (add.exit_code != 0) {
      return "`ip netns add` fails here (no network namespaces): " + add.err;
    }
    RunToEnd({ip, "netns", "del", probe}, scratch.path(), 30s);
    return "";
  }

  bool Fail(const std::string& why) {
    if (!why.empty()) error_ += why + "\n";
    return false;
  }
  bool FailAndTearDown(const std::string& why) {
    Fail(why);
    error_ += log_;
    TearDown();
    hosts_.clear();
    return false;
  }

  // Runs a command to its end; false (and logged) unless it exited 0.
  bool Run(const std::vector<std::string>& argv, std::string* out = nullptr) {
    const CommandResult r = RunToEnd(argv, dir_.path(), 30s);
    if (out != nullptr) *out = r.out;
    if (r.exit_code == 0) return true;
    std::string line;
    for (const auto& a : argv) line += a + " ";
    log_ += "failed (exit " + std::to_string(r.exit_code) + "): " + line + "\n" + r.err;
    return false;
  }
  bool Ip(std::vector<std::string> args) {
    args.insert(args.begin(), ip_);
    return Run(args);
  }
  bool IpN(const std::string& netns, std::vector<std::string> args) {
    args.insert(args.begin(), {ip_, "-n", netns});
    return Run(args);
  }
  std::string IpOut(const std::string& netns, std::vector<std::string> args) const {
    args.insert(args.begin(), {ip_, "-n", netns});
    return RunToEnd(args, dir_.path(), 30s).out;
  }
  bool NetnsAdd(const std::string& name) {
    if (!Ip({"netns", "add", name})) return false;
    made_.push_back(name);
    return true;
  }

  std::vector<pid_t> NetnsPids(const std::string& netns) const {
    std::vector<pid_t> pids;
    std::stringstream in(RunToEnd({ip_, "netns", "pids", netns}, dir_.path(), 30s).out);
    for (pid_t p; in >> p;) pids.push_back(p);
    return pids;
  }

  // SIGKILLs everything in the namespace until nothing is left (a dying process may have
  // forked), then deletes it and its /etc/netns folder.
  void Destroy(const std::string& netns) {
    WaitUntil(
        [&] {
          const std::vector<pid_t> pids = NetnsPids(netns);
          for (pid_t p : pids) ::kill(p, SIGKILL);
          return pids.empty();
        },
        30s, 20ms);
    RunToEnd({ip_, "netns", "del", netns}, dir_.path(), 30s);
    std::error_code ec;
    fs::remove_all(fs::path("/etc/netns") / netns, ec);
  }

  void TearDown() {
    // Hosts first: their veths die with them, and the switch holds no processes.
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) Destroy(*it);
    made_.clear();
  }

  static std::vector<std::string> ListNetns(const std::string& ip, const fs::path& scratch) {
    std::vector<std::string> names;
    std::stringstream in(RunToEnd({ip, "netns", "list"}, scratch, 30s).out);
    for (std::string line; std::getline(in, line);) {
      const std::string name = line.substr(0, line.find(' '));  // "NAME (id: 3)"
      if (!name.empty()) names.push_back(name);
    }
    return names;
  }

  // The pid in "coupler-tb-PID-..." when that process is gone: the bed of a crashed run.
  static bool Stale(const std::string& name) {
    if (name.rfind(kPrefix, 0) != 0) return false;
    const std::string rest = name.substr(std::string(kPrefix).size());
    const std::string pid = rest.substr(0, rest.find('-'));
    const bool digits = !pid.empty() && std::all_of(pid.begin(), pid.end(), [](unsigned char c) {
      return std::isdigit(c) != 0;
    });
    return digits && !fs::exists("/proc/" + pid);
  }

  void RemoveStaleNamespaces() {
    for (const std::string& ns : ListNetns(ip_, dir_.path())) {
      if (Stale(ns)) Destroy(ns);
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/etc/netns", ec)) {
      if (Stale(e.path().filename().string())) fs::remove_all(e.path(), ec);
    }
  }

  // 10.X.Y.0/24 with X in 100..227, derived from the pid (and the bed's number within this
  // process), skipping any /24 the machine or another bed already uses. Two beds on one
  // subnet would still not meet (each has its own bridge); distinct ones keep logs unambiguous.
  bool PickSubnet() {
    std::set<std::string> used;
    auto collect = [&](const std::string& text) {
      std::stringstream in(text);
      for (std::string tok; in >> tok;) {
        if (tok.rfind("10.", 0) != 0) continue;
        const auto last = tok.rfind('.');
        if (last != std::string::npos) used.insert(tok.substr(0, last + 1));
      }
    };
    collect(RunToEnd({ip_, "-o", "-4", "addr"}, dir_.path(), 30s).out);
    for (const std::string& ns : ListNetns(ip_, dir_.path())) {
      if (ns.rfind(kPrefix, 0) == 0) collect(IpOut(ns, {"-o", "-4", "addr"}));
    }
    const unsigned base = static_cast<unsigned>(::getpid()) * 4u + seq_;
    for (unsigned k = 0; k < 32768; ++k) {
      const unsigned idx = (base + k * 7919u) % 32768u;
      const std::string prefix =
          "10." + std::to_string(100 + idx / 256) + "." + std::to_string(idx % 256) + ".";
      if (used.count(prefix) != 0) continue;
      subnet_prefix_ = prefix;
      subnet_ = prefix + "0/24";
      return true;
    }
    return false;
  }

  bool WriteHostsFiles() {
    // The machine's own entries first: the shared hostname resolves inside a host as outside.
    std::string text = ReadFile("/etc/hosts");
    if (text.empty()) text = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n";
    if (text.back() != '\n') text += '\n';
    text += "# coupler test bed " + prefix_ + "\n";
    for (const Host& h : hosts_) text += h.address_ + " " + h.name_ + "\n";
    for (const Host& h : hosts_) {
      const fs::path d = fs::path("/etc/netns") / h.netns_;
      std::error_code ec;
      fs::create_directories(d, ec);
      WriteFile(d / "hosts", text);
      if (ec || ReadFile(d / "hosts") != text) {
        return Fail("cannot write " + (d / "hosts").string());
      }
    }
    return true;
  }

  bool WriteLaunchAgent() {
    agent_ = dir_ / "launch-agent";
    std::string cases;
    for (const Host& h : hosts_) {
      cases += "  " + h.name_ + "|" + h.address_ + ") ns=" + h.netns_ + " ;;\n";
    }
    WriteFile(agent_,
              "#!" + sh_ + "\n"
              "# Open MPI's plm_rsh_agent for one coupler test bed: AGENT HOST COMMAND... runs\n"
              "# COMMAND (one shell line, as ssh joins it) on HOST, in the bed's namespaces.\n"
              "host=$1; shift\n"
              "case \"$host\" in\n" + cases +
              "  *) echo \"launch-agent: no host '$host' in this test bed\" >&2; exit 255 ;;\n"
              "esac\n"
              "exec " + ip_ + " netns exec \"$ns\" " + sh_ + " -c \"$*\"\n");
    std::error_code ec;
    fs::permissions(agent_, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return Fail("cannot make " + agent_.string() + " executable");
    return true;
  }

  TempDir dir_;
  bool started_ = false;
  unsigned seq_ = 0;
  std::string ip_, bridge_, unshare_, sh_;
  std::string prefix_, switch_, subnet_, subnet_prefix_;
  std::vector<Host> hosts_;
  std::vector<std::string> made_;  // namespaces created, in order
  std::map<std::string, LinkCut> cuts_;
  fs::path agent_;
  std::string error_, log_;
};

// In a test body: skips it, with the reason, where no test bed can be built (not root).
#define COUPLER_SKIP_WITHOUT_TEST_BED()                                      \
  do {                                                                       \
    if (auto why = ::coupler::itest::TestBed::SkipReason(); !why.empty()) {  \
      GTEST_SKIP() << why;                                                   \
    }                                                                        \
  } while (0)

}  // namespace coupler::itest
