#include "sim/frontend/sweep/sweep_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "sim/frontend/sweep/refine.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"

namespace gpunvme::sweep {

namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) { g_stop = 1; }

struct Child {
  pid_t pid;
  int fd;
  std::size_t point;
  std::string data;
};

// False when the write failed (the reader is gone, the disk is full).
bool write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(fmt::format("cannot {} {}: {}", what, path, std::strerror(errno)));
}

void sync_fd(int fd, const std::string& path) {
  while (::fsync(fd) != 0) {
    if (errno != EINTR) fail("sync", path);
  }
}

// Makes a file's creation or renaming durable: the directory entry is data
// of the folder, which fsync of the file does not write.
void sync_folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const std::string folder =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("open folder", folder);
  sync_fd(fd, folder);
  ::close(fd);
}

// A file replaced as a whole, so that a kill at any moment leaves either
// the old file or the whole new one: written to PATH.tmp beside it, synced,
// renamed over it, and the folder synced. Dropped uncommitted, the
// temporary file is removed and PATH is untouched.
class ReplacementFile {
 public:
  explicit ReplacementFile(std::string path) : path_(std::move(path)), temp_(path_ + ".tmp") {
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("write", temp_);
  }
  ReplacementFile(const ReplacementFile&) = delete;
  ReplacementFile& operator=(const ReplacementFile&) = delete;
  ~ReplacementFile() {
    if (fd_ >= 0) {
      ::close(fd_);
      std::remove(temp_.c_str());
    }
  }

  // Buffered: the text goes out in pieces of about a megabyte.
  void write(const std::string& text) {
    buffer_ += text;
    if (buffer_.size() >= (1u << 20)) flush();
  }

  void commit() {
    flush();
    sync_fd(fd_, temp_);
    ::close(fd_);
    fd_ = -1;
    if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("rename " + temp_ + " to", path_);
    sync_folder_of(path_);
  }

 private:
  void flush() {
    if (!write_all(fd_, buffer_)) fail("write", temp_);
    buffer_.clear();
  }

  std::string path_;
  std::string temp_;
  int fd_ = -1;
  std::string buffer_;
};

// The row a JSON line holds, or null when it holds none (cut short, not a
// row).
nlohmann::ordered_json row_of_line(const std::string& line) {
  if (line.empty()) return nullptr;
  try {
    nlohmann::ordered_json row = nlohmann::ordered_json::parse(line);
    if (row.is_object() && row.contains("key") && row["key"].is_string()) return row;
  } catch (const nlohmann::json::exception&) {
    // A line cut short by an interrupted sweep: that point runs again.
  }
  return nullptr;
}

// The resume keys of the rows in PREFIX.jsonl, before a sweep appends to
// it. A line that holds no row (the last one, cut short by a kill) is
// removed from the file, so that the next row does not join it; the file is
// replaced as a whole (ReplacementFile), never truncated and rewritten in
// place, which would lose every finished row not yet rewritten to a kill.
// Reads the file line by line: rows are not held in memory.
std::set<std::string> finished_keys(const std::string& jsonl) {
  std::set<std::string> keys;
  std::vector<std::size_t> dropped;  // numbers of the lines that hold no row
  bool unterminated = false;         // a whole row lacks its newline
  {
    std::ifstream in(jsonl, std::ios::binary);
    std::string line;
    for (std::size_t number = 0; std::getline(in, line); ++number) {
      const nlohmann::ordered_json row = row_of_line(line);
      if (row.is_null()) {
        dropped.push_back(number);
        continue;
      }
      if (in.eof()) unterminated = true;
      // A row counts only for the same spec: a changed scenario, topology
      // or base "set" gives other results for the same params (rows written
      // before spec_id existed match nothing and run again).
      const auto id = row.find("spec_id");
      keys.insert(resume_key(row["key"].get<std::string>(),
                             id != row.end() && id->is_string() ? id->get<std::string>() : ""));
    }
  }
  if (dropped.empty() && !unterminated) {
    // Left by a sweep killed while replacing the file (which is whole).
    std::remove((jsonl + ".tmp").c_str());
    return keys;
  }
  // The rows as they are, each on a line of its own; the lines that hold
  // none left out (not parsed again).
  ReplacementFile cleaned(jsonl);
  std::ifstream in(jsonl, std::ios::binary);
  std::string line;
  auto next_dropped = dropped.begin();
  for (std::size_t number = 0; std::getline(in, line); ++number) {
    if (next_dropped != dropped.end() && *next_dropped == number) {
      ++next_dropped;
    } else {
      cleaned.write(line + "\n");
    }
  }
  cleaned.commit();
  return keys;
}

std::string csv_cell(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "";
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

void flatten(const nlohmann::ordered_json& v, const std::string& prefix,
             std::vector<std::pair<std::string, nlohmann::ordered_json>>& out) {
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) flatten(value, prefix + "." + key, out);
    return;
  }
  out.emplace_back(prefix, v);
}

std::string duration_text(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  if (seconds < 3600)
    return fmt::format("{}m{:02}s", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
  return fmt::format("{}h{:02}m", static_cast<int>(seconds) / 3600,
                     (static_cast<int>(seconds) / 60) % 60);
}

}  // namespace

std::vector<nlohmann::ordered_json> read_rows(const std::string& jsonl) {
  std::vector<nlohmann::ordered_json> rows;
  std::ifstream in(jsonl);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::ordered_json row = row_of_line(line);
    if (!row.is_null()) rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

// The CSV's columns, gathered from every row before any line is written (a
// row may lack columns that others have): index, key, error; a refined
// sweep's refine.* cells; the swept parameters (in the order the sweep names
// them); seed and files; the build
// (gpunvme.version, gpunvme.commit); the resolved scenario; then results.
class CsvColumns {
 public:
  void add(const nlohmann::ordered_json& row) {
    for (const auto& [k, v] : refine_of(row)) add_to(refine_, k);
    if (row.contains("params")) {
      for (const auto& [k, v] : row["params"].items()) add_to(params_, k);
    }
    for (const auto& [k, v] : build_of(row)) add_to(build_, k);
    if (row.contains("config") && row["config"].is_object()) {
      for (const auto& [k, v] : row["config"].items()) add_to(config_, "scenario." + k);
    }
    for (const auto& [k, v] : results_of(row)) add_to(results_, k);
  }

  std::string header() {
    settle();
    std::string text;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      text += (c ? "," : "") + csv_cell(columns_[c]);
    }
    return text + "\n";
  }

  std::string line(const nlohmann::ordered_json& row) {
    settle();
    // A cell's first value wins: a swept scenario field over its resolved
    // value.
    std::vector<std::pair<std::string, nlohmann::ordered_json>> cells;
    for (const char* c : {"index", "key", "error"}) {
      cells.emplace_back(c, row.value(c, nlohmann::ordered_json()));
    }
    for (auto& cell : refine_of(row)) cells.push_back(std::move(cell));
    if (row.contains("params")) {
      for (const auto& [k, v] : row["params"].items()) cells.emplace_back(k, v);
    }
    for (const char* c : {"seed", "topology", "scenario_file"}) {
      cells.emplace_back(c, row.value(c, nlohmann::ordered_json()));
    }
    for (auto& cell : build_of(row)) cells.push_back(std::move(cell));
    if (row.contains("config") && row["config"].is_object()) {
      for (const auto& [k, v] : row["config"].items()) cells.emplace_back("scenario." + k, v);
    }
    for (auto& cell : results_of(row)) cells.push_back(std::move(cell));
    std::map<std::string, const nlohmann::ordered_json*> by_column;
    for (const auto& [k, v] : cells) by_column.emplace(k, &v);
    std::string text;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const auto it = by_column.find(columns_[c]);
      text += (c ? "," : "") + (it == by_column.end() ? std::string() : csv_cell(*it->second));
    }
    return text + "\n";
  }

 private:
  struct Ordered {
    std::vector<std::string> names;
    std::set<std::string> known;
  };

  static void add_to(Ordered& list, const std::string& name) {
    if (list.known.insert(name).second) list.names.push_back(name);
  }

  // A refined sweep's stage and ranks (refine.stage, refine.fast_rank, ...);
  // none for a plain sweep's rows.
  static std::vector<std::pair<std::string, nlohmann::ordered_json>> refine_of(
      const nlohmann::ordered_json& row) {
    std::vector<std::pair<std::string, nlohmann::ordered_json>> refine;
    if (row.contains("refine") && row["refine"].is_object())
      flatten(row["refine"], "refine", refine);
    return refine;
  }

  static std::vector<std::pair<std::string, nlohmann::ordered_json>> build_of(
      const nlohmann::ordered_json& row) {
    std::vector<std::pair<std::string, nlohmann::ordered_json>> build;
    if (row.contains("gpunvme") && row["gpunvme"].is_object()) {
      flatten(row["gpunvme"], "gpunvme", build);
    }
    return build;
  }

  static std::vector<std::pair<std::string, nlohmann::ordered_json>> results_of(
      const nlohmann::ordered_json& row) {
    std::vector<std::pair<std::string, nlohmann::ordered_json>> results;
    // The summary's fields by their own names (`iops`, `latency_ns.p99`) and
    // the metrics by their result paths, as Python's gpunvme.sweep names them.
    if (row.contains("summary") && row["summary"].is_object()) {
      for (const auto& [k, v] : row["summary"].items()) flatten(v, k, results);
    }
    if (row.contains("metrics") && row["metrics"].is_object()) {
      for (const auto& [k, v] : row["metrics"].items()) results.emplace_back(k, v);
    }
    return results;
  }

  void settle() {
    if (!columns_.empty()) return;
    Ordered all;
    for (const char* c : {"index", "key", "error"}) add_to(all, c);
    for (const auto& c : refine_.names) add_to(all, c);
    for (const auto& c : params_.names) add_to(all, c);
    for (const char* c : {"seed", "topology", "scenario_file"}) add_to(all, c);
    for (const auto& c : build_.names) add_to(all, c);
    for (const auto& c : config_.names) add_to(all, c);
    for (const auto& c : results_.names) add_to(all, c);
    columns_ = std::move(all.names);
  }

  Ordered refine_, params_, build_, config_, results_;
  std::vector<std::string> columns_;  // set by the first header() or line()
};

// A row's index for ordering the CSV (rows without one first).
std::uint64_t row_index(const nlohmann::ordered_json& row) {
  const auto index = row.find("index");
  if (index == row.end() || !index->is_number_integer()) return 0;
  return index->is_number_unsigned()
             ? index->get<std::uint64_t>()
             : static_cast<std::uint64_t>(std::max<std::int64_t>(0, index->get<std::int64_t>()));
}

// PREFIX.csv from PREFIX.jsonl, rows by index, in two passes over the rows
// file (columns, then lines): one index and file offset a row in memory,
// not the rows. Replaced as a whole, like the rows file.
void write_csv(const std::string& jsonl, const std::string& csv,
               const std::function<void(nlohmann::ordered_json&)>& amend) {
  struct Entry {
    std::uint64_t index;
    std::uint64_t offset;
    std::size_t length;
  };
  std::vector<Entry> entries;
  CsvColumns columns;
  std::ifstream in(jsonl, std::ios::binary);
  std::string line;
  std::uint64_t offset = 0;
  while (std::getline(in, line)) {
    nlohmann::ordered_json row = row_of_line(line);
    if (!row.is_null()) {
      amend(row);
      columns.add(row);
      entries.push_back(Entry{row_index(row), offset, line.size()});
    }
    offset += line.size() + 1;
  }
  // Stable: rows of one index (a spec changed between runs) keep file order.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.index < b.index; });
  ReplacementFile table(csv);
  table.write(columns.header());
  in.clear();
  for (const Entry& e : entries) {
    line.resize(e.length);
    in.seekg(static_cast<std::streamoff>(e.offset));
    if (!in.read(line.data(), static_cast<std::streamsize>(e.length))) {
      throw std::runtime_error("cannot read " + jsonl + " again to write " + csv);
    }
    nlohmann::ordered_json row = row_of_line(line);
    amend(row);
    table.write(columns.line(row));
  }
  table.commit();
}

}  // namespace

std::string rows_csv(const std::vector<nlohmann::ordered_json>& rows) {
  CsvColumns columns;
  for (const auto& row : rows) columns.add(row);
  std::string text = columns.header();
  for (const auto& row : rows) text += columns.line(row);
  return text;
}

namespace {

// A row's refine.* cells for the CSV: its stage, and where the sweep's
// current ranking puts its point (computed at the end, so that the CSV
// agrees with PREFIX.refine.json even when rows came from earlier runs).
struct RankCells {
  std::optional<std::size_t> fast_rank;  // nothing: the fast row failed or had no value
  bool finalist = false;
  std::optional<std::size_t> exact_rank;  // among the finalists' exact re-runs
};

// One stage's points: the sweep's points as the stage runs them, or (the
// exact re-runs) a list of them.
struct StagePlan {
  Stage stage = Stage::plain;
  std::size_t count = 0;
  std::function<SweepPoint(std::size_t)> point;  // the stage's i-th point
};

// Runs the stages of one sweep, appending rows to one PREFIX.jsonl.
class SweepRun {
 public:
  SweepRun(const SweepSpec& spec, const RunnerOptions& options, std::ostream& log,
           RunnerReport& report, int out, std::string jsonl, std::set<std::string> done)
      : spec_(spec),
        options_(options),
        log_(log),
        report_(report),
        out_(out),
        jsonl_(std::move(jsonl)),
        done_(std::move(done)) {}

  // Runs the plan's points that have no row yet, as many as the point limit
  // leaves. `check` sees each new row and returns a problem (stopping the
  // sweep) or nothing. True when the stage has a row for every point.
  bool run_stage(
      const StagePlan& plan,
      const std::function<std::optional<ConfigError>(const nlohmann::ordered_json&)>& check) {
    std::vector<bool> skip(plan.count, false);
    std::size_t skipped = 0;
    if (!done_.empty()) {
      for (std::size_t i = 0; i < plan.count; ++i) {
        const SweepPoint point = plan.point(i);
        if (done_.count(resume_key(point.key, point.spec_id)) != 0) {
          skip[i] = true;
          ++skipped;
        }
      }
    }
    report_.total += plan.count;
    report_.skipped += skipped;
    std::size_t todo = plan.count - skipped;
    const std::size_t budget_left = options_.limit == 0 ? todo : options_.limit - new_points_;
    todo = std::min(todo, budget_left);
    new_points_ += todo;
    std::size_t cursor = 0;   // the next index to consider
    std::size_t started = 0;  // points started, at most todo
    auto next_point = [&]() {
      while (skip[cursor]) ++cursor;
      ++started;
      return cursor++;
    };
    const unsigned jobs =
        std::max(1u, options_.jobs != 0 ? options_.jobs : std::thread::hardware_concurrency());
    const std::string stage = plan.stage == Stage::plain
                                  ? std::string()
                                  : fmt::format(" ({} stage)", stage_name(plan.stage));
    log_ << fmt::format("sweep {}{}: {} points, {} already done, running {} on {} processes\n",
                        spec_.file, stage, plan.count, skipped, todo, jobs);
    log_.flush();

    std::size_t finished = 0;
    std::size_t failed = 0;
    const auto start_time = std::chrono::steady_clock::now();
    auto progress = [&](const std::string& line) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
      const double eta =
          finished == 0 ? 0.0 : elapsed / static_cast<double>(finished) * (todo - finished);
      if (options_.terminal) {
        constexpr int kWidth = 30;
        const int filled = todo == 0 ? kWidth : static_cast<int>(kWidth * finished / todo);
        log_ << fmt::format("\r[{}{}] {}/{} {}failed  elapsed {}  ETA {}   ",
                            std::string(filled, '#'), std::string(kWidth - filled, '.'), finished,
                            todo, failed ? fmt::format("{} ", failed) : "0 ",
                            duration_text(elapsed), finished ? duration_text(eta) : "?");
      } else {
        log_ << fmt::format("[{}/{}] {} (elapsed {}, ETA {})\n", finished, todo, line,
                            duration_text(elapsed), finished ? duration_text(eta) : "?");
      }
      log_.flush();
    };
    auto record = [&](const nlohmann::ordered_json& row) {
      if (!write_all(out_, row.dump() + "\n")) fail("write", jsonl_);
      sync_fd(out_, jsonl_);
      ++finished;
      ++report_.ran;
      const bool point_failed = !row["error"].is_null();
      if (point_failed) {
        ++failed;
        ++report_.failed;
      }
      progress(
          fmt::format("{}{} {}{}", point_failed ? "FAILED" : "ok",
                      plan.stage == Stage::plain ? "" : std::string(" ") + stage_name(plan.stage),
                      row["key"].get<std::string>(),
                      point_failed ? ": " + row["error"].get<std::string>() : ""));
      if (!problem_ && check) problem_ = check(row);
    };

    std::vector<Child> children;
    auto stopping = [&]() { return g_stop || problem_.has_value(); };
    while ((started < todo || !children.empty()) && !stopping()) {
      while (started < todo && children.size() < jobs && !stopping()) {
        const std::size_t position = next_point();
        const SweepPoint point = plan.point(position);
        int fds[2];
        if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
        std::fflush(nullptr);
        log_.flush();
        const pid_t sweep_pid = ::getpid();
        const pid_t pid = fork();
        if (pid < 0) throw std::runtime_error("fork failed");
        if (pid == 0) {
          // A point process dies with the sweep, even one killed by SIGKILL
          // (no handler runs to stop it), rather than run on unobserved. If the
          // sweep died before prctl took effect, the parent is already another:
          // end the same way the death signal would have ended it.
          ::prctl(PR_SET_PDEATHSIG, SIGKILL);
          if (::getppid() != sweep_pid) ::raise(SIGKILL);
          ::close(fds[0]);
          ::close(out_);
          signal(SIGINT, SIG_DFL);
          signal(SIGTERM, SIG_DFL);
          for (const Child& c : children) ::close(c.fd);
          const std::string row = run_point(spec_, point).dump();
          const bool sent = write_all(fds[1], row);
          ::close(fds[1]);
          _exit(sent ? 0 : 1);
        }
        ::close(fds[1]);
        children.push_back(Child{pid, fds[0], position, {}});
      }
      std::vector<pollfd> waiting;
      for (const Child& c : children) waiting.push_back(pollfd{c.fd, POLLIN, 0});
      if (::poll(waiting.data(), waiting.size(), 200) < 0 && errno != EINTR) break;
      for (std::size_t i = 0; i < waiting.size(); ++i) {
        if ((waiting[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        Child& c = children[i];
        char buffer[65536];
        const ssize_t n = ::read(c.fd, buffer, sizeof buffer);
        if (n > 0) {
          c.data.append(buffer, static_cast<std::size_t>(n));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        // End of the child's output: collect it.
        ::close(c.fd);
        c.fd = -1;
        int status = 0;
        while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (stopping()) continue;  // not recorded: runs again next time
        const SweepPoint point = plan.point(c.point);
        nlohmann::ordered_json row;
        try {
          row = nlohmann::ordered_json::parse(c.data);
        } catch (const nlohmann::json::parse_error&) {
          const std::string why =
              WIFSIGNALED(status)
                  ? fmt::format("point process killed by signal {}", WTERMSIG(status))
                  : fmt::format("point process exited with code {} and no result",
                                WEXITSTATUS(status));
          row = failed_row(spec_, point, why);
        }
        record(row);
      }
      children.erase(
          std::remove_if(children.begin(), children.end(), [](const Child& c) { return c.fd < 0; }),
          children.end());
    }
    if (stopping()) {
      if (g_stop) report_.interrupted = true;
      for (Child& c : children) {
        ::kill(c.pid, SIGTERM);
        if (c.fd >= 0) ::close(c.fd);
        int status = 0;
        while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
        }
      }
      children.clear();
    }
    if (options_.terminal) log_ << "\n";
    return !stopping() && skipped + finished == plan.count;
  }

  const std::optional<ConfigError>& problem() const { return problem_; }

 private:
  const SweepSpec& spec_;
  const RunnerOptions& options_;
  std::ostream& log_;
  RunnerReport& report_;
  int out_;
  std::string jsonl_;
  std::set<std::string> done_;
  std::size_t new_points_ = 0;  // started by every stage so far, for the point limit
  std::optional<ConfigError> problem_;
};

// The rows of one stage (by spec_id) in PREFIX.jsonl, by point key: the
// metric's value, or nothing for a failed point.
std::map<std::string, std::optional<double>> stage_values(const std::string& jsonl,
                                                          const std::string& id,
                                                          const SweepSpec& spec) {
  std::map<std::string, std::optional<double>> values;
  std::ifstream in(jsonl, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::ordered_json row = row_of_line(line);
    if (row.is_null() || row.value("spec_id", std::string()) != id) continue;
    if (const std::optional<ConfigError> problem = metric_problem(spec, row)) throw *problem;
    values[row["key"].get<std::string>()] = metric_value(row, spec.refine.metric);
  }
  return values;
}

}  // namespace

RunnerReport run_sweep(const SweepSpec& spec, const RunnerOptions& options, std::ostream& log) {
  RunnerReport report;
  const SweepPoints points(spec);
  const std::string jsonl = options.out_prefix + ".jsonl";
  const std::string csv = options.out_prefix + ".csv";
  const std::string refine_file = options.out_prefix + ".refine.json";

  // Resume: the resume keys of complete rows; a cut-off line is dropped.
  std::set<std::string> done = finished_keys(jsonl);

  g_stop = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  // Rows are appended with one write each and synced before the point is
  // reported done, so a row that was reported survives a kill or a crash.
  const bool created = !std::ifstream(jsonl).good();
  const int out = ::open(jsonl.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (out < 0) fail("write", jsonl);
  if (created) sync_folder_of(jsonl);
  SweepRun sweep(spec, options, log, report, out, jsonl, std::move(done));

  // The CSV's refine.* cells by resume key, and the comparison, once the
  // ranking is known.
  std::map<std::string, RankCells> rank_cells;
  std::optional<nlohmann::ordered_json> comparison;
  std::optional<ConfigError> problem;  // of the spec, found while it ran
  try {
    if (!spec.refine.enabled()) {
      sweep.run_stage({Stage::plain, points.size(), [&](std::size_t i) { return points[i]; }},
                      nullptr);
    } else {
      const std::string fast_id = stage_spec_id(spec, Stage::fast);
      const std::string exact_id = stage_spec_id(spec, Stage::exact);
      const bool fast_complete = sweep.run_stage(
          {Stage::fast, points.size(),
           [&](std::size_t i) { return stage_point(points[i], Stage::fast, fast_id); }},
          [&](const nlohmann::ordered_json& row) { return metric_problem(spec, row); });
      if (fast_complete) {
        // Rank every point by its fast row (from this run or an earlier one).
        const std::map<std::string, std::optional<double>> fast =
            stage_values(jsonl, fast_id, spec);
        std::vector<RankedPoint> ranked;
        for (std::size_t i = 0; i < points.size(); ++i) {
          const auto value = fast.find(points[i].key);
          if (value != fast.end() && value->second) ranked.push_back({i, *value->second});
        }
        ranked = rank_points(std::move(ranked), spec.refine.goal);
        const std::size_t kept = std::min(spec.refine.keep, ranked.size());
        for (std::size_t r = 0; r < ranked.size(); ++r) {
          const std::string key = points[ranked[r].index].key;
          rank_cells[resume_key(key, fast_id)] = {r + 1, r < kept, std::nullopt};
          if (r < kept) rank_cells[resume_key(key, exact_id)] = {r + 1, true, std::nullopt};
        }
        // The best `keep` again, in exact mode, best first.
        const bool exact_complete =
            sweep.run_stage({Stage::exact, kept,
                             [&](std::size_t i) {
                               return stage_point(points[ranked[i].index], Stage::exact, exact_id);
                             }},
                            nullptr);
        if (exact_complete) {
          const std::map<std::string, std::optional<double>> exact =
              stage_values(jsonl, exact_id, spec);
          std::vector<Finalist> finalists;
          for (std::size_t r = 0; r < kept; ++r) {
            const SweepPoint point = points[ranked[r].index];
            const auto value = exact.find(point.key);
            finalists.push_back({point.index, point.key, r + 1, ranked[r].value,
                                 value == exact.end() ? std::nullopt : value->second});
          }
          std::optional<Finalist> first_pruned;
          if (kept < ranked.size()) {
            const SweepPoint point = points[ranked[kept].index];
            first_pruned = Finalist{point.index, point.key, kept + 1, ranked[kept].value, {}};
          }
          comparison =
              compare_finalists(spec.refine, points.size(), ranked.size(), finalists, first_pruned);
          for (const auto& row : (*comparison)["finalists"]) {
            if (!row["exact_rank"].is_number()) continue;
            const std::size_t exact_rank = row["exact_rank"].get<std::size_t>();
            const std::string key = row["key"].get<std::string>();
            rank_cells[resume_key(key, fast_id)].exact_rank = exact_rank;
            rank_cells[resume_key(key, exact_id)].exact_rank = exact_rank;
          }
        }
      }
    }
  } catch (const ConfigError& e) {
    problem = e;  // a row of an earlier run without the metric
  }
  if (!problem) problem = sweep.problem();
  ::close(out);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);

  write_csv(jsonl, csv, [&](nlohmann::ordered_json& row) {
    if (!row.contains("refine") || !row["refine"].is_object()) return;
    const auto cells = rank_cells.find(
        resume_key(row["key"].get<std::string>(), row.value("spec_id", std::string())));
    if (cells == rank_cells.end()) return;
    const RankCells& c = cells->second;
    row["refine"]["fast_rank"] =
        c.fast_rank ? nlohmann::ordered_json(*c.fast_rank) : nlohmann::ordered_json();
    row["refine"]["finalist"] = c.finalist;
    row["refine"]["exact_rank"] =
        c.exact_rank ? nlohmann::ordered_json(*c.exact_rank) : nlohmann::ordered_json();
  });
  if (problem) throw *problem;
  std::string written = jsonl + " and " + csv;
  if (comparison) {
    ReplacementFile file(refine_file);
    file.write(comparison->dump(2) + "\n");
    file.commit();
    log << comparison_line(*comparison) << "\n";
    written = jsonl + ", " + csv + " and " + refine_file;
  } else if (spec.refine.enabled() && !report.interrupted) {
    log << "refine: not compared yet: a stage has points left (rerun to complete it)\n";
  }
  log << fmt::format("{}: {} run, {} failed, {} skipped{}; wrote {}\n", spec.file, report.ran,
                     report.failed, report.skipped, report.interrupted ? ", interrupted" : "",
                     written);
  return report;
}

}  // namespace gpunvme::sweep
