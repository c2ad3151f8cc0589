#include "kernels/cpu/onednn_gemm.h"

#if COUPLER_WITH_ONEDNN

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

namespace coupler::kernels {
namespace {

using dnnl::memory;

std::optional<memory::data_type> DataType(ElementType storage) {
  switch (storage) {
    case ElementType::kFloat32: return memory::data_type::f32;
    case ElementType::kBFloat16: return memory::data_type::bf16;
    default: return std::nullopt;  // fp16 (no CPU matmul in oneDNN 2.6), integers
  }
}

const dnnl::engine& Engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN runs on OpenMP (Debian's build): a thread that calls it gets one OpenMP thread, as the
// OpenBLAS path has one. omp_set_num_threads is looked up in the libgomp that libdnnl brought,
// so nothing here is compiled with -fopenmp.
void OneOpenMpThread() {
  thread_local bool done = false;
  if (done) return;
  done = true;
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(1);
}

// COUPLER_CPU_GEMM=openblas: every CPU GEMM on OpenBLAS (and int8 products on the plain loop),
// to compare or to rule oneDNN out.
bool OneDnnRuledOut() {
  static const bool off = [] {
    const char* choice = std::getenv("COUPLER_CPU_GEMM");
    return choice != nullptr && std::string_view(choice) == "openblas";
  }();
  return off;
}

// One GEMM shape, and the primitive built for it (or none, when oneDNN has no kernel for it).
struct Key {
  size_t m, n, k;
  bool trans_a, trans_b;
  ElementType a, b, c;
  float alpha, beta;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& key) const {
    size_t h = key.m * 0x9E3779B97F4A7C15ull ^ key.n * 0xBF58476D1CE4E5B9ull ^ key.k * 0x94D049BB133111EBull;
    h ^= (static_cast<size_t>(key.trans_a) << 1) | static_cast<size_t>(key.trans_b);
    h ^= static_cast<size_t>(key.a) << 8 ^ static_cast<size_t>(key.b) << 16 ^ static_cast<size_t>(key.c) << 24;
    return h;
  }
};
struct Entry {
  std::optional<dnnl::matmul> primitive;  // nullopt: oneDNN has no kernel for this shape
  memory src, weights, dst;
};

// The descriptor of op(x), `rows` x `cols`, over a row-major stored matrix of `stored_cols`:
// a transpose is the same memory read with swapped strides.
memory::desc OperandDesc(size_t rows, size_t cols, bool trans, size_t stored_cols,
                         memory::data_type type) {
  const memory::dims dims = {static_cast<memory::dim>(rows), static_cast<memory::dim>(cols)};
  const auto ld = static_cast<memory::dim>(stored_cols);
  return memory::desc(dims, type, trans ? memory::dims{1, ld} : memory::dims{ld, 1});
}

Entry Build(const Key& key, memory::data_type ta, memory::data_type tb, memory::data_type tc,
            size_t a_cols, size_t b_cols) {
  Entry entry;
  const memory::desc src = OperandDesc(key.m, key.k, key.trans_a, a_cols, ta);
  const memory::desc weights = OperandDesc(key.k, key.n, key.trans_b, b_cols, tb);
  const memory::desc dst = OperandDesc(key.m, key.n, false, key.n, tc);
  dnnl::primitive_attr attr;
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.beta != 0.0f) {
    dnnl::post_ops post;
    post.append_sum(key.beta);
    attr.set_post_ops(post);
  }
  try {
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, dst), attr, Engine());
    entry.primitive.emplace(pd);
    entry.src = memory(src, Engine(), DNNL_MEMORY_NONE);
    entry.weights = memory(weights, Engine(), DNNL_MEMORY_NONE);
    entry.dst = memory(dst, Engine(), DNNL_MEMORY_NONE);
  } catch (const dnnl::error&) {
    entry.primitive.reset();  // unimplemented here (bf16 without AVX-512): the OpenBLAS path
  }
  return entry;
}

}  // namespace

bool OneDnnGemm(bool trans_a, bool trans_b, float alpha, ConstMatrix a, ConstMatrix b, float beta,
                MutMatrix c, size_t m, size_t n, size_t k) {
  if (OneDnnRuledOut()) return false;
  const auto ta = DataType(a.storage), tb = DataType(b.storage), tc = DataType(c.storage);
  if (!ta || !tb || !tc || a.storage != b.storage) return false;
  if (a.storage == ElementType::kFloat32 && c.storage != ElementType::kFloat32) return false;
  OneOpenMpThread();
  // Per thread: a rank or a test thread trains a few shapes over and over (a layer's forward
  // and backward at a micro-batch or two), and oneDNN's objects are not shared across threads
  // here. Bounded anyway, should something sweep shapes.
  thread_local std::unordered_map<Key, Entry, KeyHash> cache;
  const Key key{m, n, k, trans_a, trans_b, a.storage, b.storage, c.storage, alpha, beta};
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= 256) cache.clear();
    it = cache.emplace(key, Build(key, *ta, *tb, *tc, a.cols, b.cols)).first;
  }
  Entry& entry = it->second;
  if (!entry.primitive) return false;
  entry.src.set_data_handle(const_cast<void*>(a.data));
  entry.weights.set_data_handle(const_cast<void*>(b.data));
  entry.dst.set_data_handle(c.data);
  thread_local dnnl::stream stream(Engine());
  entry.primitive->execute(stream, {{DNNL_ARG_SRC, entry.src},
                                    {DNNL_ARG_WEIGHTS, entry.weights},
                                    {DNNL_ARG_DST, entry.dst}});
  stream.wait();
  return true;
}

namespace {

// One int8 product's batch shape, and its primitive with the weights packed for it. The scales
// are fixed in the primitive: oneDNN 2.6 has no brgemm (AMX/VNNI) int8 kernel for scales
// given at run time.
struct Int8Key {
  size_t m;
  bool a_signed;
  bool operator==(const Int8Key&) const = default;
};
struct Int8KeyHash {
  size_t operator()(const Int8Key& key) const {
    return key.m * 0x9E3779B97F4A7C15ull ^ static_cast<size_t>(key.a_signed);
  }
};
struct Int8Entry {
  std::optional<dnnl::matmul> primitive;  // nullopt: no int8 matmul for this shape here
  memory::desc src, dst, scratchpad;
  memory weights;  // owned, in the primitive's layout
};

}  // namespace

struct Int8Weights::Packed {
  std::mutex mu;
  std::unordered_map<Int8Key, std::shared_ptr<Int8Entry>, Int8KeyHash> entries;
};

std::shared_ptr<Int8Weights::Packed> NewInt8Packed() {
  return std::make_shared<Int8Weights::Packed>();
}

namespace {

std::shared_ptr<Int8Entry> BuildInt8(const Int8Key& key, const Int8Weights& w) {
  auto entry = std::make_shared<Int8Entry>();
  const auto m = static_cast<memory::dim>(key.m), n = static_cast<memory::dim>(w.rows()),
             k = static_cast<memory::dim>(w.cols());
  const memory::desc src({m, k}, key.a_signed ? memory::data_type::s8 : memory::data_type::u8,
                         memory::dims{k, 1});
  // w is n x k row-major: as the k x n weights oneDNN multiplies by, a transposed read.
  const memory::desc plain({k, n}, memory::data_type::s8, memory::dims{1, k});
  const memory::desc any({k, n}, memory::data_type::s8, memory::format_tag::any);
  const memory::desc dst({m, n}, memory::data_type::f32, memory::dims{n, 1});
  dnnl::primitive_attr attr;
  attr.set_output_scales(/*mask: per column of dst*/ 1 << 1,
                         std::vector<float>(w.scale().begin(), w.scale().end()));
  // Threads share this primitive (the weights' packed forms are shared): each call brings its
  // own scratchpad, as a library-managed one is shared by every execution of the primitive
  // unless oneDNN was built for concurrent execution (measured: wrong sums from 4 threads).
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  try {
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any, dst), attr, Engine());
    entry->primitive.emplace(pd);
    entry->src = src;
    entry->dst = dst;
    entry->scratchpad = pd.scratchpad_desc();
    // The weights in the primitive's layout (with the sums an s8 source's kernels subtract).
    entry->weights = memory(pd.weights_desc(), Engine());
    memory user(plain, Engine(), const_cast<int8_t*>(w.q().data()));
    dnnl::stream stream(Engine());
    dnnl::reorder(user, entry->weights).execute(stream, user, entry->weights);
    stream.wait();
  } catch (const dnnl::error&) {
    entry->primitive.reset();  // no int8 matmul here: the loop
  }
  return entry;
}

}  // namespace

bool OneDnnInt8Gemm(Int8Activations a, const Int8Weights& w, float* c) {
  if (OneDnnRuledOut()) return false;
  OneOpenMpThread();
  Int8Weights::Packed& packed = w.packed();
  const Int8Key key{a.rows, a.is_signed};
  std::shared_ptr<Int8Entry> entry;
  {
    std::lock_guard<std::mutex> lock(packed.mu);
    auto it = packed.entries.find(key);
    if (it == packed.entries.end()) {
      if (packed.entries.size() >= 64) packed.entries.clear();  // bounded, should shapes sweep
      it = packed.entries.emplace(key, BuildInt8(key, w)).first;
    }
    entry = it->second;
  }
  if (!entry->primitive) return false;
  // Memory objects carry their data handle, so each thread has its own for a packed shape
  // (threads sharing these weights never see each other's buffers), made once and pointed at
  // the call's buffers, as OneDnnGemm's are: made per call they were a fifth of a 40-row
  // batch's time (allocations, perf). The entry is held so its address stays its own.
  struct Call {
    std::shared_ptr<Int8Entry> entry;
    memory src, dst, scratchpad;
    std::unordered_map<int, memory> args;
  };
  thread_local std::unordered_map<const Int8Entry*, Call> calls;
  auto call = calls.find(entry.get());
  if (call == calls.end()) {
    if (calls.size() >= 256) calls.clear();  // bounded, should shapes sweep
    Call made{entry, memory(entry->src, Engine(), DNNL_MEMORY_NONE),
              memory(entry->dst, Engine(), DNNL_MEMORY_NONE),
              memory(entry->scratchpad, Engine(), DNNL_MEMORY_NONE), {}};
    made.args = {{DNNL_ARG_SRC, made.src},
                 {DNNL_ARG_WEIGHTS, entry->weights},
                 {DNNL_ARG_DST, made.dst},
                 {DNNL_ARG_SCRATCHPAD, made.scratchpad}};
    call = calls.emplace(entry.get(), std::move(made)).first;
  }
  thread_local std::vector<uint8_t> scratch_bytes;
  if (scratch_bytes.size() < entry->scratchpad.get_size()) {
    scratch_bytes.resize(entry->scratchpad.get_size());
  }
  // The handles in `args` are the same objects (dnnl::memory is a shared handle).
  call->second.src.set_data_handle(const_cast<void*>(a.data));
  call->second.dst.set_data_handle(c);
  call->second.scratchpad.set_data_handle(scratch_bytes.data());
  thread_local dnnl::stream stream(Engine());
  entry->primitive->execute(stream, call->second.args);
  stream.wait();
  return true;
}

std::string_view OneDnnIsa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::sse41: return "sse41";
    default: return "other";
  }
}

bool OneDnnBuilt() { return true; }

bool OneDnnRunsBf16() {
  static const bool runs = [] {
    const uint16_t one = 0x3F80;  // 1.0 in bf16
    float out = 0;
    return OneDnnGemm(false, false, 1.0f, {&one, ElementType::kBFloat16, 1, 1},
                      {&one, ElementType::kBFloat16, 1, 1}, 0.0f, {&out, ElementType::kFloat32, 1, 1},
                      1, 1, 1) &&
           out == 1.0f;
  }();
  return runs;
}

}  // namespace coupler::kernels

#else  // built without libdnnl-dev: every CPU GEMM runs on OpenBLAS

namespace coupler::kernels {

bool OneDnnGemm(bool, bool, float, ConstMatrix, ConstMatrix, float, MutMatrix, size_t, size_t,
                size_t) {
  return false;
}
struct Int8Weights::Packed {};
std::shared_ptr<Int8Weights::Packed> NewInt8Packed() {
  return std::make_shared<Int8Weights::Packed>();
}
bool OneDnnInt8Gemm(Int8Activations, const Int8Weights&, float*) { return false; }
std::string_view OneDnnIsa() { return "none (built without oneDNN)"; }
bool OneDnnRunsBf16() { return false; }
bool OneDnnBuilt() { return false; }

}  // namespace coupler::kernels

#endif
