// Fuzzes admission as a client drives it: any bytes as a submitted spec → AdmitJob with a real
// reuse catalogue and real folders, under one data root. Nothing may crash or trip a
// sanitizer, and whatever the spec says, admission makes and links nothing outside the data
// root and never touches the coordinator's own folder (a state directory beside it, with a
// token file whose bytes must never appear in a diagnostic).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "coordinator/data_roots.h"
#include "coordinator/job_intake.h"
#include "coordinator/reuse_index.h"

namespace {

namespace fs = std::filesystem;
using namespace coupler;  // NOLINT: a fuzz entry point, not a header

constexpr const char* kToken = "f00dfacecafe5ecret7oken";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_admission: %s: %s\n", what, detail.c_str());
  std::abort();
}

struct World {
  fs::path top;
  fs::path data;   // the one data root: specs, inputs, workdirs
  fs::path state;  // the coordinator's own
  std::unique_ptr<coordinator::ReuseIndex> reuse;
  coordinator::DataRoots roots;
  size_t state_entries = 0;
  uint64_t admitted = 0;
};

size_t CountEntries(const fs::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
    // The catalogue's own files (its -wal and -shm come and go) are the only writes allowed.
    if (!it->path().filename().string().starts_with("reuse.db")) ++n;
  }
  return n;
}

World& TheWorld() {
  static World* w = [] {
    auto* world = new World;
    char tmpl[] = "/tmp/coupler-fuzz-admission-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) Fail("mkdtemp", "");
    world->top = tmpl;
    world->data = world->top / "data";
    world->state = world->top / "state";
    fs::create_directories(world->data / "in");
    fs::create_directories(world->state / "keys/authorized/admins");
    std::ofstream(world->state / "http-token") << kToken << "\n";
    std::ofstream(world->data / "in.csv") << "a,b\n1,2\n";
    std::ofstream(world->data / "in/part-00000.npy") << "x";
    auto reuse = coordinator::ReuseIndex::Open((world->state / "reuse.db").string());
    if (!reuse.ok()) Fail("reuse catalogue", reuse.status().ToString());
    world->reuse = std::move(*reuse);
    world->roots = coordinator::DataRoots::Make({world->data.string()}, {world->state.string()});
    world->state_entries = CountEntries(world->state);
    return world;
  }();
  return *w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = TheWorld();
  wire::SubmitJob submit;
  submit.spec_text.assign(reinterpret_cast<const char*>(data), size);
  submit.spec_path = (w.data / "spec.yaml").string();
  submit.cwd = w.data.string();
  submit.reuse = size % 2 == 1;
  const std::string id = "j-" + std::to_string(++w.admitted);
  coordinator::IntakeContext context{&w.roots, w.reuse.get()};
  Result<coordinator::AdmittedJob> admitted = coordinator::AdmitJob(submit, id, 0, "fuzz", context);
  if (!admitted.ok()) {
    // The client's own spec may be quoted back; the token file's bytes never.
    if (admitted.status().message().find(kToken) != std::string::npos &&
        submit.spec_text.find(kToken) == std::string::npos) {
      Fail("a diagnostic carries the token", admitted.status().message());
    }
  } else {
    const std::string workdir = admitted->job->graph().workdir;
    if (!w.roots.Check("workdir", workdir).ok()) Fail("a run directory outside the data root", workdir);
    // Recorded as a node that succeeded, so later inputs exercise reuse and linking too.
    const auto& job = *admitted->job;
    for (uint32_t p = 0; p < job.plan().nodes.size(); ++p) {
      (void)w.reuse->Record(job.graph().workdir_root, job.facts().node_key(p), workdir, id,
                            job.plan().nodes[p].id);
    }
  }
  if (CountEntries(w.state) != w.state_entries) Fail("the state folder changed", w.state.string());
  // Keep the disk small: runs pile up otherwise.
  if (w.admitted % 256 == 0) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(w.data, ec)) {
      const std::string name = e.path().filename().string();
      if (name != "in" && name != "in.csv") fs::remove_all(e.path(), ec);
    }
  }
  return 0;
}
