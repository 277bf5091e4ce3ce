#include "sim/sweep/sweep_runner.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
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

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
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
    if (line.empty()) continue;
    try {
      nlohmann::ordered_json row = nlohmann::ordered_json::parse(line);
      if (row.is_object() && row.contains("key")) rows.push_back(std::move(row));
    } catch (const nlohmann::json::parse_error&) {
      // A line cut short by an interrupted sweep: that point runs again.
    }
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
  const std::vector<SweepPoint> points = expand(spec);
  report.total = points.size();
  const std::string jsonl = options.out_prefix + ".jsonl";
  const std::string csv = options.out_prefix + ".csv";

  // Resume: keep the complete rows, drop a cut-off line, skip their points.
  std::vector<nlohmann::ordered_json> rows = read_rows(jsonl);
  {
    std::ofstream rewrite(jsonl, std::ios::trunc);
    if (!rewrite) throw std::runtime_error("cannot write " + jsonl);
    for (const auto& row : rows) rewrite << row.dump() << "\n";
  }
  std::set<std::string> done;
  // A row counts only for the same spec: a changed scenario, topology or
  // base "set" gives other results for the same params (rows written before
  // spec_id existed match nothing and run again).
  for (const auto& row : rows) {
    const auto id = row.find("spec_id");
    done.insert(resume_key(row["key"].get<std::string>(),
                           id != row.end() && id->is_string() ? id->get<std::string>() : ""));
  }
  std::vector<std::size_t> todo;
  for (const SweepPoint& p : points) {
    if (done.count(resume_key(p.key, p.spec_id)) != 0) {
      ++report.skipped;
    } else {
      todo.push_back(p.index);
    }
  }
  if (options.limit != 0 && todo.size() > options.limit) todo.resize(options.limit);

  unsigned jobs = options.jobs != 0 ? options.jobs : std::thread::hardware_concurrency();
  jobs = std::max(1u, jobs);
  log << fmt::format("sweep {}: {} points, {} already done, running {} on {} processes\n",
                     spec.file, report.total, report.skipped, todo.size(), jobs);
  log.flush();

  g_stop = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  std::ofstream out(jsonl, std::ios::app);
  std::vector<Child> children;
  std::size_t next = 0;
  const auto started = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& line) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const std::size_t finished = report.ran;
    const double eta = finished == 0 ? 0.0 : elapsed / finished * (todo.size() - finished);
    if (options.terminal) {
      constexpr int kWidth = 30;
      const int filled = todo.empty() ? kWidth : static_cast<int>(kWidth * finished / todo.size());
      log << fmt::format("\r[{}{}] {}/{} {}failed  elapsed {}  ETA {}   ", std::string(filled, '#'),
                         std::string(kWidth - filled, '.'), finished, todo.size(),
                         report.failed ? fmt::format("{} ", report.failed) : "0 ",
                         duration_text(elapsed), finished ? duration_text(eta) : "?");
    } else {
      log << fmt::format("[{}/{}] {} (elapsed {}, ETA {})\n", finished, todo.size(), line,
                         duration_text(elapsed), finished ? duration_text(eta) : "?");
    }
    log.flush();
  };
  auto record = [&](const nlohmann::ordered_json& row) {
    out << row.dump() << "\n";
    out.flush();
    rows.push_back(row);
    ++report.ran;
    const bool failed = !row["error"].is_null();
    if (failed) ++report.failed;
    progress(fmt::format("{} {}{}", failed ? "FAILED" : "ok", row["key"].get<std::string>(),
                         failed ? ": " + row["error"].get<std::string>() : ""));
  };

  while ((next < todo.size() || !children.empty()) && !g_stop) {
    while (next < todo.size() && children.size() < jobs && !g_stop) {
      const SweepPoint& point = points[todo[next++]];
      int fds[2];
      if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
      std::fflush(nullptr);
      log.flush();
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        ::close(fds[0]);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        for (const Child& c : children) ::close(c.fd);
        const std::string row = run_point(spec, point).dump();
        write_all(fds[1], row);
        ::close(fds[1]);
        _exit(0);
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
      const SweepPoint& point = points[c.point];
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
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (options.terminal) log << "\n";

  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.value("index", 0) < b.value("index", 0); });
  std::ofstream table(csv, std::ios::trunc);
  if (!table) throw std::runtime_error("cannot write " + csv);
  table << rows_csv(rows);
  log << fmt::format("{}: {} run, {} failed, {} skipped{}; wrote {} and {}\n", spec.file,
                     report.ran, report.failed, report.skipped,
                     report.interrupted ? ", interrupted" : "", jsonl, csv);
  return report;
}

}  // namespace gpunvme::sweep
