#include "sim/system/workload/kv_traces.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <list>
#include <map>
#include <set>
#include <sstream>

#include "sim/kernel/params/config_error.h"

namespace gpunvme {

std::string kv_trace_path(const RunConfig& config, const std::string& name) {
  const std::string& scenario_file = config.scenario.file;
  const auto slash = scenario_file.find_last_of('/');
  if (!name.empty() && name[0] != '/' && slash != std::string::npos) {
    const std::string beside = scenario_file.substr(0, slash + 1) + name;
    if (std::ifstream(beside).good()) return beside;
  }
  return name;
}

namespace {

// The data lines of a CSV trace with the given header, each with its line
// number and fields.
struct CsvRow {
  std::uint64_t line;
  std::vector<std::string> fields;
};

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

std::vector<CsvRow> read_csv(const std::string& path, const std::string& what,
                             const std::vector<std::string>& header) {
  require_readable_input(path, what);
  std::ifstream in(path);
  if (!in) throw ConfigError(path, "", "", "cannot open " + what);
  std::vector<CsvRow> rows;
  std::string line;
  std::uint64_t number = 0;
  bool header_seen = false;
  const std::string expected = fmt::format("{}", fmt::join(header, ","));
  while (std::getline(in, line)) {
    ++number;
    if (line.find('\0') != std::string::npos) {
      throw ConfigError(path, fmt::format("line {}", number), line.substr(0, 80),
                        "not a text file: the line holds a NUL byte");
    }
    const std::string text = trimmed(line);
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> fields;
    std::stringstream split(text);
    std::string field;
    while (std::getline(split, field, ',')) fields.push_back(trimmed(field));
    if (text.back() == ',') fields.push_back("");
    if (!header_seen) {
      if (fields != header) {
        throw ConfigError(path, fmt::format("line {}", number), text.substr(0, 80),
                          fmt::format("expected the header {}", expected));
      }
      header_seen = true;
      continue;
    }
    if (fields.size() != header.size()) {
      throw ConfigError(path, fmt::format("line {}", number), text.substr(0, 80),
                        fmt::format("expected {} fields: {}", header.size(), expected));
    }
    rows.push_back({number, std::move(fields)});
  }
  if (!header_seen) throw ConfigError(path, "", "", fmt::format("no header line {}", expected));
  if (rows.empty()) throw ConfigError(path, "", "", "no data lines after the header");
  return rows;
}

[[noreturn]] void bad_field(const std::string& path, const CsvRow& row,
                            const std::vector<std::string>& header, std::size_t i,
                            const std::string& allowed) {
  throw ConfigError(path, fmt::format("line {}, {}", row.line, header[i]), row.fields[i],
                    "expected " + allowed);
}

double real_field(const std::string& path, const CsvRow& row,
                  const std::vector<std::string>& header, std::size_t i, double min, double max,
                  bool min_open, const std::string& allowed) {
  const std::string& text = row.fields[i];
  char* end = nullptr;
  errno = 0;
  const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v) ||
      v < min || (min_open && v == min) || v > max) {
    bad_field(path, row, header, i, allowed);
  }
  return v;
}

std::uint64_t integer_field(const std::string& path, const CsvRow& row,
                            const std::vector<std::string>& header, std::size_t i,
                            std::uint64_t min, std::uint64_t max, const std::string& allowed) {
  const std::string& text = row.fields[i];
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    bad_field(path, row, header, i, allowed);
  }
  const std::uint64_t v = std::stoull(text);
  if (v < min || v > max) bad_field(path, row, header, i, allowed);
  return v;
}

}  // namespace

KvSparseTrace read_sparse_trace(const std::string& path, std::uint64_t layers) {
  const std::vector<std::string> header{"step", "layer", "fraction", "miss_rate"};
  const std::vector<CsvRow> rows = read_csv(path, "sparsity trace", header);
  KvSparseTrace trace;
  trace.file = path;
  trace.layers = layers;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<double, double>> cells;
  std::uint64_t steps = 0;
  for (const CsvRow& row : rows) {
    const std::uint64_t step =
        integer_field(path, row, header, 0, 0, 1 << 20, "a decode step, 0 to 1048576");
    const std::uint64_t layer =
        integer_field(path, row, header, 1, 0, layers - 1,
                      fmt::format("a layer of the model, 0 to {}", layers - 1));
    const double fraction = real_field(path, row, header, 2, 0.0, 1.0, true,
                                       "the fraction of tokens fetched, above 0 and at most 1");
    const double miss = real_field(path, row, header, 3, 0.0, 1.0, false,
                                   "the fraction of the selected tokens missed, 0 to 1");
    if (!cells.emplace(std::make_pair(step, layer), std::make_pair(fraction, miss)).second) {
      throw ConfigError(path, fmt::format("line {}", row.line), fmt::format("{},{}", step, layer),
                        "step and layer given twice");
    }
    steps = std::max(steps, step + 1);
  }
  trace.steps = steps;
  trace.fraction.assign(steps * layers, 0.0);
  trace.miss_rate.assign(steps * layers, 0.0);
  for (std::uint64_t s = 0; s < steps; ++s) {
    for (std::uint64_t l = 0; l < layers; ++l) {
      const auto cell = cells.find({s, l});
      if (cell == cells.end()) {
        throw ConfigError(path, fmt::format("step {}, layer {}", s, l), "missing",
                          fmt::format("every layer (0 to {}) of every step 0 to {} needs a line",
                                      layers - 1, steps - 1));
      }
      trace.fraction[s * layers + l] = cell->second.first;
      trace.miss_rate[s * layers + l] = cell->second.second;
    }
  }
  return trace;
}

std::vector<KvSession> read_session_trace(const std::string& path) {
  const std::vector<std::string> header{"session", "arrival_s",      "turns",
                                        "think_s", "context_tokens", "turn_tokens"};
  const std::vector<CsvRow> rows = read_csv(path, "session trace", header);
  std::vector<KvSession> sessions;
  std::set<std::string> ids;
  for (const CsvRow& row : rows) {
    KvSession s;
    s.id = row.fields[0];
    if (s.id.empty()) bad_field(path, row, header, 0, "a session name");
    if (!ids.insert(s.id).second) bad_field(path, row, header, 0, "a name not used before");
    s.arrival_s = real_field(path, row, header, 1, 0.0, 1e9, false, "seconds, 0 to 1e9");
    s.turns = integer_field(path, row, header, 2, 1, 1000000, "turns, 1 to 1000000");
    s.think_s = real_field(path, row, header, 3, 0.0, 1e9, false, "seconds, 0 to 1e9");
    s.context_tokens = integer_field(path, row, header, 4, 0, 1 << 24, "tokens, 0 to 16777216");
    s.turn_tokens = integer_field(path, row, header, 5, 1, 1 << 24, "tokens, 1 to 16777216");
    sessions.push_back(s);
  }
  return sessions;
}

std::vector<KvTurn> replay_sessions(const std::vector<KvSession>& sessions,
                                    std::uint64_t bytes_per_token, std::uint64_t reply_tokens,
                                    double dram_bytes, double nvme_bytes) {
  std::vector<KvTurn> turns;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    const KvSession& s = sessions[i];
    for (std::uint64_t t = 0; t < s.turns; ++t) {
      turns.push_back({i, t, s.arrival_s + static_cast<double>(t) * s.think_s,
                       s.context_tokens + t * (s.turn_tokens + reply_tokens), s.turn_tokens,
                       t == 0 ? KvStoreHit::first : KvStoreHit::miss});
    }
  }
  std::stable_sort(turns.begin(), turns.end(),
                   [](const KvTurn& a, const KvTurn& b) { return a.arrival_s < b.arrival_s; });
  // Saved contexts, most recent first: (session, bytes).
  std::list<std::pair<std::size_t, double>> store;
  for (KvTurn& turn : turns) {
    double newer = 0;
    auto saved = store.begin();
    for (; saved != store.end() && saved->first != turn.session; ++saved) newer += saved->second;
    if (saved != store.end()) {
      const double end = newer + saved->second;
      if (end <= dram_bytes) {
        turn.hit = KvStoreHit::dram;
      } else if (end <= dram_bytes + nvme_bytes) {
        turn.hit = KvStoreHit::nvme;
      }
      store.erase(saved);
    }
    const std::uint64_t tokens = turn.cached_tokens + turn.turn_tokens + reply_tokens;
    store.emplace_front(turn.session,
                        static_cast<double>(tokens) * static_cast<double>(bytes_per_token));
  }
  return turns;
}

}  // namespace gpunvme
