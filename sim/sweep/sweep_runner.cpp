#include "sim/sweep/sweep_runner.h"

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
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

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

// Replaces `path` by `text` so that a kill at any moment leaves either the
// old file or the whole new one: written to PATH.tmp beside it, synced,
// renamed over it, and the folder synced.
void replace_file(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("write", temp);
  if (!write_all(fd, text)) {
    const int error = errno;
    ::close(fd);
    errno = error;
    fail("write", temp);
  }
  sync_fd(fd, temp);
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("rename " + temp + " to", path);
  sync_folder_of(path);
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The row a JSON line holds, or null when it holds none (cut short, not a
// row).
nlohmann::ordered_json row_of_line(const std::string& line) {
  if (line.empty()) return nullptr;
  try {
    nlohmann::ordered_json row = nlohmann::ordered_json::parse(line);
    if (row.is_object() && row.contains("key") && row["key"].is_string()) return row;
  } catch (const nlohmann::json::parse_error&) {
    // A line cut short by an interrupted sweep: that point runs again.
  }
  return nullptr;
}

// The rows of PREFIX.jsonl, before a sweep appends to it. A line that holds
// no row (the last one, cut short by a kill) is removed from the file, so
// that the next row does not join it; the file is replaced as a whole
// (replace_file), never truncated and rewritten in place, which would lose
// every finished row to a kill during the rewrite.
std::vector<nlohmann::ordered_json> rows_for_resume(const std::string& jsonl) {
  const std::string text = file_text(jsonl);
  std::vector<nlohmann::ordered_json> rows;
  std::string kept;
  kept.reserve(text.size());
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    nlohmann::ordered_json row = row_of_line(line);
    if (!row.is_null()) {
      rows.push_back(std::move(row));
      kept += line;
      kept += '\n';
    }
    start = end + 1;
  }
  if (kept != text) {
    replace_file(jsonl, kept);
  } else {
    // Left by a sweep killed while replacing the file (which is whole).
    std::remove((jsonl + ".tmp").c_str());
  }
  return rows;
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

std::string rows_csv(const std::vector<nlohmann::ordered_json>& rows) {
  std::vector<std::string> columns{"index", "key", "error"};
  std::set<std::string> known(columns.begin(), columns.end());
  std::vector<std::vector<std::pair<std::string, nlohmann::ordered_json>>> cells(rows.size());
  auto add_column = [&](const std::string& c) {
    if (known.insert(c).second) columns.push_back(c);
  };
  // Parameters first (in the order the sweep names them), then files and
  // the resolved scenario, then results.
  for (const auto& row : rows) {
    if (row.contains("params")) {
      for (const auto& [k, v] : row["params"].items()) add_column(k);
    }
  }
  for (const char* c : {"seed", "topology", "scenario_file"}) add_column(c);
  std::vector<std::string> config_columns, result_columns;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    auto& out = cells[i];
    out.emplace_back("index", row.value("index", nlohmann::ordered_json()));
    out.emplace_back("key", row.value("key", nlohmann::ordered_json()));
    out.emplace_back("error", row.value("error", nlohmann::ordered_json()));
    if (row.contains("params")) {
      for (const auto& [k, v] : row["params"].items()) out.emplace_back(k, v);
    }
    for (const char* c : {"seed", "topology", "scenario_file"}) {
      out.emplace_back(c, row.value(c, nlohmann::ordered_json()));
    }
    std::vector<std::pair<std::string, nlohmann::ordered_json>> extra;
    if (row.contains("config") && row["config"].is_object()) {
      for (const auto& [k, v] : row["config"].items()) {
        extra.emplace_back("scenario." + k, v);
        if (std::find(config_columns.begin(), config_columns.end(), "scenario." + k) ==
            config_columns.end()) {
          config_columns.push_back("scenario." + k);
        }
      }
    }
    std::vector<std::pair<std::string, nlohmann::ordered_json>> results;
    if (row.contains("summary") && row["summary"].is_object())
      flatten(row["summary"], "summary", results);
    if (row.contains("metrics") && row["metrics"].is_object()) {
      for (const auto& [k, v] : row["metrics"].items()) results.emplace_back("metric." + k, v);
    }
    for (const auto& [k, v] : results) {
      if (std::find(result_columns.begin(), result_columns.end(), k) == result_columns.end()) {
        result_columns.push_back(k);
      }
    }
    out.insert(out.end(), extra.begin(), extra.end());
    out.insert(out.end(), results.begin(), results.end());
  }
  for (const auto& c : config_columns) add_column(c);
  for (const auto& c : result_columns) add_column(c);
  std::string text;
  for (std::size_t c = 0; c < columns.size(); ++c) text += (c ? "," : "") + csv_cell(columns[c]);
  text += "\n";
  for (const auto& row : cells) {
    std::map<std::string, const nlohmann::ordered_json*> by_column;
    for (const auto& [k, v] : row) by_column.emplace(k, &v);
    for (std::size_t c = 0; c < columns.size(); ++c) {
      auto it = by_column.find(columns[c]);
      text += (c ? "," : "") + (it == by_column.end() ? std::string() : csv_cell(*it->second));
    }
    text += "\n";
  }
  return text;
}

RunnerReport run_sweep(const SweepSpec& spec, const RunnerOptions& options, std::ostream& log) {
  RunnerReport report;
  const SweepPoints points(spec);
  report.total = points.size();
  const std::string jsonl = options.out_prefix + ".jsonl";
  const std::string csv = options.out_prefix + ".csv";

  // Resume: keep the complete rows, drop a cut-off line, skip their points.
  std::vector<nlohmann::ordered_json> rows = rows_for_resume(jsonl);
  std::set<std::string> done;
  // A row counts only for the same spec: a changed scenario, topology or
  // base "set" gives other results for the same params (rows written before
  // spec_id existed match nothing and run again).
  for (const auto& row : rows) {
    const auto id = row.find("spec_id");
    done.insert(resume_key(row["key"].get<std::string>(),
                           id != row.end() && id->is_string() ? id->get<std::string>() : ""));
  }
  // One bit a point, not the points themselves.
  std::vector<bool> skip(points.size(), false);
  if (!done.empty()) {
    for (std::size_t index = 0; index < points.size(); ++index) {
      const SweepPoint point = points[index];
      if (done.count(resume_key(point.key, point.spec_id)) != 0) {
        skip[index] = true;
        ++report.skipped;
      }
    }
  }
  std::size_t todo = report.total - report.skipped;
  if (options.limit != 0 && todo > options.limit) todo = options.limit;
  std::size_t cursor = 0;  // the next index to consider
  std::size_t started = 0;
  auto next_point = [&]() -> std::optional<std::size_t> {
    if (started == todo) return std::nullopt;
    while (skip[cursor]) ++cursor;
    ++started;
    return cursor++;
  };

  unsigned jobs = options.jobs != 0 ? options.jobs : std::thread::hardware_concurrency();
  jobs = std::max(1u, jobs);
  log << fmt::format("sweep {}: {} points, {} already done, running {} on {} processes\n",
                     spec.file, report.total, report.skipped, todo, jobs);
  log.flush();

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
  std::vector<Child> children;
  const auto start_time = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& line) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    const std::size_t finished = report.ran;
    const double eta =
        finished == 0 ? 0.0 : elapsed / static_cast<double>(finished) * (todo - finished);
    if (options.terminal) {
      constexpr int kWidth = 30;
      const int filled = todo == 0 ? kWidth : static_cast<int>(kWidth * finished / todo);
      log << fmt::format("\r[{}{}] {}/{} {}failed  elapsed {}  ETA {}   ", std::string(filled, '#'),
                         std::string(kWidth - filled, '.'), finished, todo,
                         report.failed ? fmt::format("{} ", report.failed) : "0 ",
                         duration_text(elapsed), finished ? duration_text(eta) : "?");
    } else {
      log << fmt::format("[{}/{}] {} (elapsed {}, ETA {})\n", finished, todo, line,
                         duration_text(elapsed), finished ? duration_text(eta) : "?");
    }
    log.flush();
  };
  auto record = [&](const nlohmann::ordered_json& row) {
    if (!write_all(out, row.dump() + "\n")) fail("write", jsonl);
    sync_fd(out, jsonl);
    rows.push_back(row);
    ++report.ran;
    const bool failed = !row["error"].is_null();
    if (failed) ++report.failed;
    progress(fmt::format("{} {}{}", failed ? "FAILED" : "ok", row["key"].get<std::string>(),
                         failed ? ": " + row["error"].get<std::string>() : ""));
  };

  while ((started < todo || !children.empty()) && !g_stop) {
    while (started < todo && children.size() < jobs && !g_stop) {
      const SweepPoint point = points[*next_point()];
      int fds[2];
      if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
      std::fflush(nullptr);
      log.flush();
      const pid_t sweep_pid = ::getpid();
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        // A point process dies with the sweep, even one killed by SIGKILL
        // (no handler runs to stop it), rather than run on unobserved. If the
        // sweep died before prctl took effect, the parent is already another.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != sweep_pid) _exit(1);
        ::close(fds[0]);
        ::close(out);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        for (const Child& c : children) ::close(c.fd);
        const std::string row = run_point(spec, point).dump();
        const bool sent = write_all(fds[1], row);
        ::close(fds[1]);
        _exit(sent ? 0 : 1);
      }
      ::close(fds[1]);
      children.push_back(Child{pid, fds[0], point.index, {}});
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
      if (g_stop) continue;  // interrupted: not recorded, runs again next time
      const SweepPoint point = points[c.point];
      nlohmann::ordered_json row;
      try {
        row = nlohmann::ordered_json::parse(c.data);
      } catch (const nlohmann::json::parse_error&) {
        const std::string why =
            WIFSIGNALED(status) ? fmt::format("point process killed by signal {}", WTERMSIG(status))
                                : fmt::format(
                                      "point process exited with code {} and no "
                                      "result",
                                      WEXITSTATUS(status));
        row = failed_row(spec, point, why);
      }
      record(row);
    }
    children.erase(
        std::remove_if(children.begin(), children.end(), [](const Child& c) { return c.fd < 0; }),
        children.end());
  }
  if (g_stop) {
    report.interrupted = true;
    for (Child& c : children) {
      ::kill(c.pid, SIGTERM);
      if (c.fd >= 0) ::close(c.fd);
      int status = 0;
      while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    children.clear();
  }
  ::close(out);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (options.terminal) log << "\n";

  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.value("index", 0) < b.value("index", 0); });
  replace_file(csv, rows_csv(rows));
  log << fmt::format("{}: {} run, {} failed, {} skipped{}; wrote {} and {}\n", spec.file,
                     report.ran, report.failed, report.skipped,
                     report.interrupted ? ", interrupted" : "", jsonl, csv);
  return report;
}

}  // namespace gpunvme::sweep
