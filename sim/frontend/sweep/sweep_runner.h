// Runs a sweep's points in parallel processes (fork of this process; each
// child runs one point and sends its row back through a pipe), appending
// each row to PREFIX.jsonl as it arrives and writing PREFIX.csv at the end.
//
// - Resume: points whose key is already in PREFIX.jsonl are skipped (a
//   truncated last line from an interrupted sweep is dropped).
// - Crash safety: a row is appended in one write and synced before its
//   point counts as done; the rows file (when a cut line is dropped) and the
//   CSV are replaced as a whole (PATH.tmp, synced, renamed over PATH), so a
//   kill at any moment loses no finished row. Point processes die with the
//   sweep, even one killed by SIGKILL.
// - Memory: points are computed from their index, and the CSV is written
//   from PREFIX.jsonl in two passes; what grows with the sweep is one resume
//   key a finished row and one bit a point.
// - A point that fails (bad value, simulation error, its process killed) is
//   recorded with its error and the sweep goes on.
// - SIGINT or SIGTERM: running points are stopped and not recorded, the CSV
//   is written from what is done, and the sweep returns interrupted.
// - Progress: a bar with ETA when the log is a terminal, plain lines
//   otherwise.
// - Refine (a spec's "refine"): two stages appending to the same rows file,
//   every point in fast mode, then the best `keep` by the metric again in
//   exact mode, best first. Each stage's rows carry refine.stage and a
//   spec_id of their own (stage_spec_id), so resuming skips the finished rows
//   of either stage; the exact stage starts once every point has a fast row
//   (a point limit or an interruption leaves it for the rerun). The ranking
//   is computed from the rows file, so a resumed sweep ranks the fast rows of
//   earlier runs too. The CSV gets refine.stage, refine.fast_rank,
//   refine.finalist and refine.exact_rank; PREFIX.refine.json the comparison
//   of the finalists (compare_finalists), and the log a line of it. A fast row
//   that succeeded without a number at the metric's path stops the sweep
//   with a ConfigError naming $.refine.metric.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "sim/frontend/sweep/sweep_spec.h"

namespace gpunvme::sweep {

struct RunnerOptions {
  unsigned jobs = 0;       // parallel processes; 0 = the machine's cores
  std::size_t limit = 0;   // run at most this many new points (0 = all)
  std::string out_prefix;  // PREFIX.jsonl and PREFIX.csv
  bool terminal = false;   // draw a progress bar
};

// Counts over every stage run (a refined sweep: its fast points, then the
// finalists' exact re-runs).
struct RunnerReport {
  std::size_t total = 0;    // points in the stages run
  std::size_t skipped = 0;  // already in the output
  std::size_t ran = 0;      // run now (failures included)
  std::size_t failed = 0;
  bool interrupted = false;
};

RunnerReport run_sweep(const SweepSpec& spec, const RunnerOptions& options, std::ostream& log);

// Rows of a JSON-lines file (unparsable lines dropped).
std::vector<nlohmann::ordered_json> read_rows(const std::string& jsonl);
// The CSV of rows: index, key, error, a refined sweep's refine.* cells, the swept parameters, seed,
// files, the resolved scenario's fields (`scenario.FIELD`), then the summary's fields flattened
// (nested keys joined with '.': `iops`, `latency_ns.p99`) and the metrics by their result paths.
std::string rows_csv(const std::vector<nlohmann::ordered_json>& rows);

}  // namespace gpunvme::sweep
