// libFuzzer harnesses for the simulator's inputs, one executable per kind of
// input (GPUNVME_FUZZ_TARGET picks which this file builds):
//
//   config  a topology or scenario JSON document (a document with "nodes" or
//           "links" is a topology, others a scenario; the other half is the
//           shipped default) -> load_raw_config -> resolve_config
//   set     one --set assignment per line (at most 16) applied to the shipped
//           default configuration -> resolve_config
//   sweep   a sweep spec -> load_sweep_spec -> point_count, and expand when the
//           spec has at most 4096 points (its size must equal point_count)
//   graph   a graph file (Matrix Market when it starts with %%MatrixMarket,
//           else an edge list) -> read_graph_file, whose CSR must be well formed
//   budget  a budget file -> load_budget -> budget_config
//
// The contract: every input gives a result or throws gpunvme::ConfigError.
// Any other exception aborts (and libFuzzer records the input), as do
// crashes, leaks and undefined behaviour (ASan + UBSan).
//
// With GPUNVME_FUZZ_KNOWN_DIR set, exceptions of the input defects already
// known (classes below) are written there as <class>-<size>-<hash> and the
// run goes on, so that one known defect does not take every execution;
// everything else still aborts. scripts/fuzz.sh sets it.
//
// Files go to a fresh folder under $TMPDIR laid out like the source tree
// (configs/ and the shipped scenarios linked, the input written where a
// sweep spec or budget would be), so relative paths in the input resolve as
// they would for a shipped file.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <typeinfo>

#include "sim/frontend/budgets/budgets.h"
#include "sim/frontend/sweep/sweep_spec.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/config/resource_limits.h"
#include "sim/system/run/run.h"
#include "sim/system/workload/csr_graph.h"

namespace fs = std::filesystem;

namespace {

using namespace gpunvme;

// The per-process folder: <TMPDIR>/gpunvme-fuzz-<pid>/ with configs -> the
// shipped configs, scenarios/ holding links to the shipped scenarios and the
// real folders budgets/ and sweeps/ where inputs are written.
class Workspace {
 public:
  Workspace() {
    const char* tmp = std::getenv("TMPDIR");
    root_ = fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
            ("gpunvme-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "scenarios" / "budgets");
    fs::create_directories(root_ / "scenarios" / "sweeps");
    const fs::path source(source_dir());
    fs::create_directory_symlink(source / "configs", root_ / "configs");
    for (const fs::directory_entry& e : fs::directory_iterator(source / "scenarios")) {
      const std::string name = e.path().filename().string();
      if (name == "budgets" || name == "sweeps") continue;
      if (e.is_directory()) {
        fs::create_directory_symlink(e.path(), root_ / "scenarios" / name);
      } else {
        fs::create_symlink(e.path(), root_ / "scenarios" / name);
      }
    }
  }
  ~Workspace() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  // Writes the input to `relative` under the workspace and returns its path.
  std::string write(const std::string& relative, const std::uint8_t* data, std::size_t size) const {
    const fs::path file = root_ / relative;
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return file.string();
  }

 private:
  fs::path root_;
};

const Workspace& workspace() {
  static const Workspace w;
  return w;
}

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

[[maybe_unused]] void fuzz_config(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json peek = nlohmann::json::parse(data, data + size, nullptr, false);
  const bool topology =
      peek.is_object() ? (peek.contains("nodes") || peek.contains("links")) : size % 2 == 1;
  const std::string file =
      workspace().write(topology ? "topology.json" : "scenario.json", data, size);
  RawConfig raw = topology ? load_raw_config(file, default_scenario_file())
                           : load_raw_config(default_topology_file(), file);
  resolve_config(raw);
}

[[maybe_unused]] void fuzz_set(const std::uint8_t* data, std::size_t size) {
  static const RawConfig shipped =
      load_raw_config(default_topology_file(), default_scenario_file());
  RawConfig raw = shipped;
  const std::string text = text_of(data, size);
  std::size_t start = 0;
  for (int line = 0; line < 16 && start <= text.size(); ++line) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    apply_set(raw, text.substr(start, end - start));
    start = end + 1;
  }
  resolve_config(raw);
}

[[maybe_unused]] void fuzz_sweep(const std::uint8_t* data, std::size_t size) {
  const std::string file = workspace().write("scenarios/sweeps/input.json", data, size);
  const sweep::SweepSpec spec = sweep::load_sweep_spec(file);
  const std::size_t points = sweep::point_count(spec);
  if (points <= 4096) {
    const std::size_t expanded = sweep::expand(spec).size();
    if (expanded != points) {
      finding("expand gave " + std::to_string(expanded) + " points, point_count " +
              std::to_string(points));
    }
  }
}

[[maybe_unused]] void fuzz_graph(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  const bool matrix_market = text.rfind("%%MatrixMarket", 0) == 0;
  const std::string file = workspace().write(matrix_market ? "graph.mtx" : "graph.el", data, size);
  const CsrGraph g = read_graph_file(file, size % 2 == 1);
  // A graph the loader accepts is well formed: offsets from 0 to the edge
  // count, never decreasing, every neighbour a vertex, rows sorted.
  if (g.offsets.size() != g.vertices + 1 || g.offsets.front() != 0 ||
      g.offsets.back() != g.neighbors.size()) {
    finding("CSR offsets do not span the neighbours");
  }
  for (std::uint64_t v = 0; v < g.vertices; ++v) {
    if (g.offsets[v] > g.offsets[v + 1]) finding("CSR offsets decrease");
    for (std::uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      if (g.neighbors[e] >= g.vertices) finding("CSR neighbour outside the vertices");
      if (e > g.offsets[v] && g.neighbors[e - 1] >= g.neighbors[e]) {
        finding("CSR row not sorted or with a duplicate edge");
      }
    }
  }
}

[[maybe_unused]] void fuzz_budget(const std::uint8_t* data, std::size_t size) {
  const std::string file = workspace().write("scenarios/budgets/input.json", data, size);
  const budgets::Budget budget = budgets::load_budget(file);
  budgets::budget_config(budget);
}

// The class of a known input defect an exception shows, or "" for any other.
std::string known_defect(const std::exception& e) {
  if (const auto* type = dynamic_cast<const nlohmann::json::type_error*>(&e)) {
    if (type->id == 316) return "invalid-utf8";  // dump() of a string read unchecked
  }
  if (const auto* range = dynamic_cast<const nlohmann::json::out_of_range*>(&e)) {
    if (range->id == 406) return "number-overflow";  // 1e400 and the like
  }
  const std::string what = e.what();
  if (dynamic_cast<const std::logic_error*>(&e) != nullptr && what.rfind("sto", 0) == 0) {
    return "std-" + what;  // std::stoul and friends on a huge or bad index
  }
  return "";
}

// Records a known defect's input (the first 5 of each class a process
// sees) when asked to.
bool tolerate_known(const std::exception& e, const std::uint8_t* data, std::size_t size) {
  const char* dir = std::getenv("GPUNVME_FUZZ_KNOWN_DIR");
  const std::string known = known_defect(e);
  if (dir == nullptr || *dir == '\0' || known.empty()) return false;
  static std::map<std::string, int> seen;
  if (++seen[known] > 5) return true;
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 0x100000001b3ull;
  const fs::path file =
      fs::path(dir) / (known + "-" + std::to_string(size) + "-" + std::to_string(hash % 1000));
  std::error_code ignored;
  if (!fs::exists(file, ignored)) {
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  return true;
}

}  // namespace

// Inputs are held to a memory cap well below libFuzzer's -rss_limit_mb (2 GB
// in scripts/fuzz.sh): a graph file or configuration that needs more must be
// refused with a ConfigError, as the default cap (half the machine) refuses
// it in a run, rather than allocate until the fuzzer reports an OOM.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  set_max_memory_bytes(std::uint64_t{256} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
#if GPUNVME_FUZZ_TARGET == 1
    fuzz_config(data, size);
#elif GPUNVME_FUZZ_TARGET == 2
    fuzz_set(data, size);
#elif GPUNVME_FUZZ_TARGET == 3
    fuzz_sweep(data, size);
#elif GPUNVME_FUZZ_TARGET == 4
    fuzz_graph(data, size);
#elif GPUNVME_FUZZ_TARGET == 5
    fuzz_budget(data, size);
#else
#error "GPUNVME_FUZZ_TARGET must be 1 (config) to 5 (budget)"
#endif
  } catch (const ConfigError&) {
    // Refused with the file, field, value and what is allowed: as it should be.
  } catch (const std::exception& e) {
    if (tolerate_known(e, data, size)) return 0;
    finding(std::string("exception other than ConfigError: ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    finding("a non-standard exception");
  }
  return 0;
}
