#include "coordinator/zap_handler.h"

#include <zmq_addon.hpp>

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

#include "runtime/logging.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// How new a file must be to be read again even when its stamp did not change (see Check).
constexpr int64_t kRecentNs = 1'000'000'000;
// Distinct source addresses counted in one interval's summary; more are "N+".
constexpr size_t kMaxAddresses = 1024;
constexpr size_t kSampleKeys = 3;

int64_t StampNs(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

int64_t WallNs() {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return StampNs(t);
}

// The ZAP reply's metadata frame (ZMTP's encoding: a 1-byte name length, the name, a 4-byte
// big-endian value length, the value) with one property.
std::string Metadata(const std::string& name, const std::string& value) {
  std::string out;
  out.push_back(static_cast<char>(name.size()));
  out += name;
  const uint32_t n = static_cast<uint32_t>(value.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xff));
  out += value;
  return out;
}

std::string Z85(const zmq::message_t& raw_key) {
  if (raw_key.size() != 32) return {};
  char out[41];
  if (zmq_z85_encode(out, static_cast<const uint8_t*>(raw_key.data()), 32) == nullptr) return {};
  return out;
}

}  // namespace

AllowLists::AllowLists(net::ServerKeys keys) : keys_(std::move(keys)) {
  watch_[kWorkers].dir = keys_.workers_dir();
  watch_[kClients].dir = keys_.clients_dir();
  watch_[kAdmins].dir = keys_.admins_dir();
  for (int l = 0; l < kListCount; ++l) Check(l, true);
  last_refresh_ = std::chrono::steady_clock::now();
}

int AllowLists::ListOf(const std::string& domain) {
  if (domain == kWorkersDomain) return kWorkers;
  if (domain == kClientsDomain) return kClients;
  return -1;
}

void AllowLists::Check(int l, bool full) {
  Watch& w = watch_[l];
  struct stat st {};
  const int64_t dir_mtime = ::stat(w.dir.c_str(), &st) == 0 ? StampNs(st.st_mtim) : -2;
  std::map<std::string, Stamp> stamps;
  bool changed = dir_mtime != w.dir_mtime_ns;
  if (!changed && !full) return;
  // Stamps taken before the read: a file rewritten while it is read differs at the next check.
  std::error_code ec;
  const int64_t now_ns = WallNs();
  bool recent = false;
  for (const auto& entry : fs::directory_iterator(w.dir, ec)) {
    if (entry.path().extension() != ".pub") continue;
    struct stat fst {};
    if (::stat(entry.path().c_str(), &fst) != 0) continue;
    Stamp s{static_cast<uint64_t>(fst.st_ino), static_cast<uint64_t>(fst.st_size),
            StampNs(fst.st_mtim), StampNs(fst.st_ctim)};
    // File times tick coarsely (a few ms): a rewrite of the same size within one tick of the
    // last read keeps every stamp, so a file that new is read again until it is older.
    recent = recent || now_ns - std::max(s.mtime_ns, s.ctime_ns) < kRecentNs;
    stamps.emplace(entry.path().filename().string(), s);
  }
  changed = changed || recent || stamps != w.stamps;
  if (!changed) return;
  w.dir_mtime_ns = dir_mtime;
  w.stamps = std::move(stamps);

  std::vector<std::string> problems;
  Result<std::map<std::string, std::string>> keys = net::ReadAllowList(w.dir, &problems);
  if (!keys.ok()) {
    // A list that cannot be read admits nobody new rather than whoever it half-lists.
    problems.push_back(std::string(keys.status().message()));
    keys = std::map<std::string, std::string>();
  }
  auto log = Logger("coordinator");
  std::set<std::string> now_problems(problems.begin(), problems.end());
  for (const std::string& p : now_problems) {
    if (w.problems.count(p) == 0) log->warn("allow-list: refused an entry: {}", p);
  }
  w.problems = std::move(now_problems);
  std::lock_guard<std::mutex> lock(mu_);
  if (*keys != keys_by_list_[l]) {
    keys_by_list_[l] = std::move(*keys);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
}

std::optional<std::string> AllowLists::Find(const std::string& domain,
                                            const std::string& public_z85) {
  const int l = ListOf(domain);
  if (l < 0) return std::nullopt;
  // Every folder, not only the domain's: a cancel right after `cp alice.pub admins/` opens
  // a client handshake, and must find alice an admin.
  for (int i = 0; i < kListCount; ++i) Check(i, false);
  return Lookup(domain, public_z85);
}

void AllowLists::Refresh() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_refresh_ < kRefreshEvery) return;
  last_refresh_ = now;
  for (int l = 0; l < kListCount; ++l) Check(l, true);
}

std::optional<std::string> AllowLists::Lookup(const std::string& domain,
                                              const std::string& public_z85) const {
  const int l = ListOf(domain);
  if (l < 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_by_list_[l].find(public_z85);
  if (it == keys_by_list_[l].end()) return std::nullopt;
  return it->second;
}

bool AllowLists::HasName(const std::string& domain, const std::string& name) const {
  const int l = ListOf(domain);
  if (l < 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, listed] : keys_by_list_[l]) {
    if (listed == name) return true;
  }
  return false;
}

bool AllowLists::IsAdmin(const std::string& public_z85) const {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_by_list_[kAdmins].count(public_z85) > 0;
}

SessionCheck::Verdict SessionCheck::Check(const std::string& domain, const std::string& name,
                                          const std::string& public_z85) {
  if (public_z85.empty()) return {false, false};  // no key on the message: never admitted here
  const uint64_t generation = lists_->generation();
  if (generation != generation_) {
    // The lists changed: every verdict is asked again (and each refusal reported again).
    workers_.clear();
    clients_.clear();
    generation_ = generation;
  }
  auto& known = domain == kWorkersDomain ? workers_ : clients_;
  auto it = known.find(public_z85);
  if (it == known.end()) {
    it = known.emplace(public_z85, Known{lists_->Lookup(domain, public_z85), false}).first;
  }
  if (it->second.name && *it->second.name == name) return {true, false};
  const bool first = !it->second.refusal_reported;
  it->second.refusal_reported = true;
  return {false, first};
}

ZapHandler::ZapHandler(std::shared_ptr<AllowLists> lists, zmq::socket_t socket,
                       zmq::socket_t wake, zmq::socket_t waker)
    : lists_(std::move(lists)),
      socket_(std::move(socket)),
      wake_(std::move(wake)),
      waker_(std::move(waker)) {}

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& ctx,
                                                      std::shared_ptr<AllowLists> lists) {
  zmq::socket_t socket;
  zmq::socket_t wake;
  zmq::socket_t waker;
  try {
    socket = zmq::socket_t(ctx, zmq::socket_type::rep);
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(kZapEndpoint);
    // One handler per context (kZapEndpoint is fixed), so one wake endpoint per context too.
    const std::string wake_endpoint =
        "inproc://coupler.zap.wake." + std::to_string(reinterpret_cast<uintptr_t>(ctx.handle()));
    wake = zmq::socket_t(ctx, zmq::socket_type::pull);
    wake.set(zmq::sockopt::linger, 0);
    wake.bind(wake_endpoint);
    waker = zmq::socket_t(ctx, zmq::socket_type::push);
    waker.set(zmq::sockopt::linger, 0);
    waker.connect(wake_endpoint);
  } catch (const zmq::error_t& e) {
    return Internal(std::string("cannot start the ZAP handler on ") + kZapEndpoint + ": " +
                    e.what());
  }
  std::unique_ptr<ZapHandler> h(new ZapHandler(std::move(lists), std::move(socket),
                                               std::move(wake), std::move(waker)));
  h->thread_ = std::thread([p = h.get()] { p->Loop(); });
  return h;
}

ZapHandler::~ZapHandler() {
  stop_ = true;
  try {
    (void)waker_.send(zmq::const_buffer("", 0), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // The loop still sees stop_ at its next poll timeout.
  }
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::Loop() {
  while (!stop_.load()) {
    zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                               {wake_.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(100));
    } catch (const zmq::error_t&) {
      continue;  // EINTR
    }
    // Here, off the event loop: the loop only reads the lists' generation.
    lists_->Refresh();
    ReportRefusals(false);
    if ((items[0].revents & ZMQ_POLLIN) == 0) continue;
    std::vector<zmq::message_t> request;
    try {
      if (!zmq::recv_multipart(socket_, std::back_inserter(request), zmq::recv_flags::dontwait)) {
        continue;
      }
    } catch (const zmq::error_t&) {
      continue;
    }
    Answer(request);
  }
  ReportRefusals(true);
}

void ZapHandler::Answer(std::vector<zmq::message_t>& request) {
  // RFC 27: version, request id, domain, address, routing id, mechanism, credentials...
  std::string status = "500";
  std::string text = "malformed ZAP request";
  std::string user;
  std::string metadata;
  std::string request_id;
  if (request.size() >= 6 && request[0].to_string() == "1.0") {
    request_id = request[1].to_string();
    const std::string domain = request[2].to_string();
    const std::string address = request[3].to_string();
    const std::string mechanism = request[5].to_string();
    const std::string key = mechanism == "CURVE" && request.size() >= 7 ? Z85(request[6]) : "";
    std::optional<std::string> name = key.empty() ? std::nullopt : lists_->Find(domain, key);
    if (name) {
      status = "200";
      text = "OK";
      user = *name;
      metadata = Metadata(kKeyProperty, key);
    } else {
      status = "400";
      text = key.empty() ? "CURVE required" : "key not authorized for " + domain;
      NoteRefused(domain, address, key.empty() ? "(none, mechanism " + mechanism + ")" : key);
    }
  }
  try {
    socket_.send(zmq::buffer(std::string("1.0")), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(status), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(user), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(metadata), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    Logger("coordinator")->error("ZAP reply: {}", e.what());
  }
}

void ZapHandler::NoteRefused(const std::string& domain, const std::string& address,
                             const std::string& who) {
  ++refused_;
  Refusals& r = refusals_;
  if (r.logged_addresses.empty() && r.unlogged == 0) r.since = std::chrono::steady_clock::now();
  const std::string from = address.empty() ? "a local peer" : address;
  const std::string prefix = who.size() == 40 ? who.substr(0, 8) + "..." : who;
  if (r.logged_addresses.size() < kRefusalLinesPerInterval &&
      r.logged_addresses.insert(from).second) {
    Logger("coordinator")
        ->warn("refused a {} handshake from {}: key {} is not in authorized/{}/ (further "
               "refusals are summed up every {} s)",
               domain, from, prefix, domain, kRefusalInterval.count());
    return;
  }
  ++r.unlogged;
  if (r.addresses.size() < kMaxAddresses) {
    r.addresses.insert(from);
  } else if (r.addresses.count(from) == 0) {
    r.more_addresses = true;
  }
  if (r.sample.size() < kSampleKeys) r.sample.push_back(prefix);
}

void ZapHandler::ReportRefusals(bool force) {
  Refusals& r = refusals_;
  if (r.logged_addresses.empty() && r.unlogged == 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - r.since < kRefusalInterval) return;
  if (r.unlogged > 0) {
    std::string sample;
    for (const std::string& k : r.sample) sample += (sample.empty() ? "" : ", ") + k;
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(now - r.since).count();
    Logger("coordinator")
        ->warn("{} more handshakes refused in the last {} s (beyond those logged above), from "
               "{}{} source address(es); keys {}; `coupler status` counts them all",
               r.unlogged, std::max<int64_t>(secs, 1), r.addresses.size(),
               r.more_addresses ? "+" : "", sample);
  }
  r = Refusals{};
}

}  // namespace coupler::coordinator
