// Parameter sweeps: a spec names the base topology and scenario and the
// configuration paths to vary; expansion turns it into points, each a set of
// --set assignments with a canonical key (so a rerun can skip points already
// done). Used by `gpunvme sweep` and the Python module alike.
//
// Spec (JSON):
//   {
//     "topology": "configs/topologies/default.json",   // relative to the spec's folder
//     "scenario": "scenarios/randread-4k.json",          //   first, then the working directory
//     "seed": 1,
//     "set": ["scenario.ios=2000"],                      // applied to every point
//     "sweep": {
//       "scenario.path": ["gpu_initiated", "gds", "bounce"],      // a list
//       "scenario.threads": {"start": 256, "stop": 1024, "step": 256},   // stop included
//       "topology.nodes.cpu0.cores": {"start": 1, "stop": 16, "factor": 2},  // geometric
//       "zip": [{"scenario.bs": [4096, 8192], "scenario.queues": [8, 16]}]   // advance together
//     },
//     "metrics": ["summary.iops", "cpu.max_utilization"],  // optional extra result paths
//     "refine": {"metric": "summary.iops", "goal": "max", "keep": 3}   // optional
//   }
// Every key of "sweep" except "zip" is a group of its own; each object of
// "zip" is one group whose lists have equal lengths. Points are the cartesian
// product of the groups, the first group varying slowest. "seed" may be swept
// like any path.
//
// A spec is refused (ConfigError) when its points would be more than
// kMaxSweepPoints, when a range bound does not fit its type (integer ranges
// are 64-bit signed integers, other ranges finite doubles), and when a group
// gives the same value (a zip group: the same combination) twice, which
// would run one point twice under two indices.
//
// "refine" makes the sweep two stages: every point runs in fast mode
// (scenario.fidelity=fast), the points are ranked by the metric (a
// summary.* path or one of the spec's metrics; goal max or min; ties by
// index; a failed point does not rank), and the best `keep` run again in
// exact mode. A refined spec may not set scenario.fidelity itself (in "set"
// or "sweep"): each stage sets it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpunvme::sweep {

struct Axis {
  std::string path;  // scenario.X, topology.X or seed
  std::vector<nlohmann::json> values;
};

struct Group {
  std::vector<Axis> axes;  // advance together
  std::size_t size() const { return axes.empty() ? 0 : axes.front().values.size(); }
};

// The most points a sweep may have. A point costs a process and a simulation
// of milliseconds or more, and leaves a row of about 2 KB: 10 million points
// are days of CPU time and some 20 GB of rows, far past any useful sweep, so
// a larger count is taken for a mistake in a range (a step or stop off by
// orders of magnitude) and refused before anything runs. Resuming keeps one
// key per finished row in memory (about 100 bytes), which this also bounds.
constexpr std::uint64_t kMaxSweepPoints = 10'000'000;

enum class RefineGoal { max, min };

// The two-stage sweep of "refine"; `keep` == 0 means a plain sweep.
struct Refine {
  std::string metric;  // summary.PATH, or one of SweepSpec::metrics
  RefineGoal goal = RefineGoal::max;
  std::size_t keep = 0;
  bool enabled() const { return keep != 0; }
};

// Which stage a row belongs to: a plain sweep's, or a refined sweep's fast
// pass or exact re-run.
enum class Stage { plain, fast, exact };

struct SweepSpec {
  std::string file;
  std::string topology_file;  // "" = the shipped default
  std::string scenario_file;
  std::uint64_t seed = 1;
  std::vector<std::string> base_overrides;
  std::vector<Group> groups;
  std::vector<std::string> metrics;
  Refine refine;
};

struct SweepPoint {
  std::size_t index = 0;
  nlohmann::ordered_json params;       // path -> value, in spec order
  std::string key;                     // params, compact JSON
  std::vector<std::string> overrides;  // base "set", then the point's assignments
  std::uint64_t seed = 1;
  std::string spec_id;  // stage_spec_id(spec, stage): what every point of the stage shares
  Stage stage = Stage::plain;
};

// What the points of a spec share besides their params: the scenario and
// topology files (paths and contents), the base "set" overrides and seed, as
// compact JSON. Two specs that differ here give different results for the
// same params.
nlohmann::ordered_json spec_identity(const SweepSpec& spec);
// A short hash (16 hex digits, FNV-1a 64) of spec_identity: rows carry it,
// and resuming skips only points whose key and spec_id both match.
std::string spec_id(const SweepSpec& spec);
// The spec_id of a stage's rows: spec_id(spec) for a plain sweep; for the
// fast and exact stages of a refined sweep, the hash of spec_identity with
// the stage added, so that resuming tells a point's fast row from its exact
// re-run (and neither from a plain sweep's row). The refine settings
// themselves are left out: a changed metric, goal or keep reuses the rows
// already computed.
std::string stage_spec_id(const SweepSpec& spec, Stage stage);
// "fast", "exact" ("" for plain): the row's refine.stage.
const char* stage_name(Stage stage);
// The point as the stage runs it: for fast and exact, scenario.fidelity set
// after every other assignment, and the stage's spec_id (stage_spec_id,
// passed in so that the spec's files are not read again for every point).
SweepPoint stage_point(SweepPoint point, Stage stage, const std::string& stage_id);
// The key resume matches on: a row's (or point's) key and spec_id.
std::string resume_key(const std::string& key, const std::string& spec_id);

// ConfigError (file, JSON path, value, what is allowed) on a bad spec, and
// no other exception whatever the document holds.
SweepSpec parse_sweep_spec(const nlohmann::ordered_json& doc, const std::string& file);
// The same from JSON text (ConfigError when it is not JSON): what a fuzzer
// calls with arbitrary bytes, followed by point_count.
SweepSpec parse_sweep_spec_text(const std::string& text, const std::string& file);
SweepSpec load_sweep_spec(const std::string& file);

// The number of points: at most kMaxSweepPoints for a parsed spec.
std::size_t point_count(const SweepSpec& spec);

// The points of a spec, each computed from its index (mixed radix over the
// group sizes, the last group fastest), so a sweep of millions of points
// holds none of them up front.
class SweepPoints {
 public:
  // Refers to `spec`, which must outlive it (hence no temporaries).
  explicit SweepPoints(const SweepSpec& spec);
  explicit SweepPoints(SweepSpec&&) = delete;
  std::size_t size() const { return count_; }
  // Point `index` (< size()).
  SweepPoint operator[](std::size_t index) const;

 private:
  const SweepSpec& spec_;
  std::size_t count_;
  std::string spec_id_;  // reads the spec's files once, not once a point
};

// Every point, in order (SweepPoints[0], [1], ...).
std::vector<SweepPoint> expand(const SweepSpec& spec);

// Runs one point in this process. The row holds index, key, spec_id,
// params, seed, files, the base "set" overrides, the topology overrides
// (base and swept topology.* assignments), for a refined sweep's stages
// refine: {"stage": "fast" or "exact"}, the resolved scenario, the result's summary (and the
// spec's metrics), and error: null, or the message when the point failed (a bad value is an error
// of that point, not of the sweep).
nlohmann::ordered_json run_point(const SweepSpec& spec, const SweepPoint& point);

// A row for a point that produced no result (its process died).
nlohmann::ordered_json failed_row(const SweepSpec& spec, const SweepPoint& point,
                                  const std::string& error);

}  // namespace gpunvme::sweep
