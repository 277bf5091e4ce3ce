// Which scenario fields belong to which kind is one column of the scenario's
// parameter table (sim/system/workload/scenario_params.def). These tests hold the three
// places that show it to that column: `gpunvme describe scenario`, the kind
// check of `gpunvme check`, and the README's scenario and host-cost tables.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "models/host/host_specs.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {
namespace {

struct Outcome {
  int code;
  std::string output;
};

Outcome gpunvme_cli(const std::string& args) {
  const std::string command = std::string(GPUNVME_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

const std::vector<std::string> kKinds = {"microbenchmark", "kv_cache", "graph", "gather"};

std::string shipped_scenario(const std::string& kind) {
  const std::map<std::string, std::string> files = {{"microbenchmark", "randread-4k.json"},
                                                    {"kv_cache", "kv-cache-gpu.json"},
                                                    {"graph", "graph-bfs-gpu.json"},
                                                    {"gather", "gather-gpu.json"}};
  return std::string(GPUNVME_SOURCE_DIR) + "/scenarios/" + files.at(kind);
}

// The doc line `describe scenario` prints under field `name`.
std::string described_line(const std::string& describe, const std::string& name) {
  std::istringstream lines(describe);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("  " + name + " ", 0) == 0) {
      std::getline(lines, line);
      return line;
    }
  }
  return "";
}

TEST(ScenarioKinds, TheTableNamesOnlyKnownKinds) {
  std::size_t kind_specific = 0;
  for (const ParamSpec& p : scenario_spec().params) {
    for (const std::string& kind : p.kinds) {
      EXPECT_NE(std::find(kKinds.begin(), kKinds.end(), kind), kKinds.end()) << p.name;
    }
    if (!p.kinds.empty()) ++kind_specific;
  }
  EXPECT_EQ(scenario_spec().find("kind")->choices, kKinds);
  // Hand count of scenario_params.def: 23 microbenchmark fields (two shared
  // with gather; 7 of them fast mode's run-length control), 47 kv_cache,
  // 12 graph, 5 gather only.
  EXPECT_EQ(kind_specific, 87u);
}

TEST(ScenarioKinds, DescribeShowsEveryKindSpecificFieldsKinds) {
  const Outcome describe = gpunvme_cli("describe scenario");
  ASSERT_EQ(describe.code, 0) << describe.output;
  for (const ParamSpec& p : scenario_spec().params) {
    const std::string line = described_line(describe.output, p.name);
    ASSERT_FALSE(line.empty()) << p.name;
    if (p.kinds.empty()) {
      EXPECT_EQ(line, "      " + p.doc) << p.name;
      continue;
    }
    std::string kinds;
    for (const std::string& k : p.kinds) kinds += (kinds.empty() ? "" : ", ") + k;
    EXPECT_EQ(line.rfind("      (" + kinds, 0), 0u) << p.name << ": " << line;
  }
  // The two fields whose kind describe once left out.
  EXPECT_EQ(described_line(describe.output, "ios"), "      (microbenchmark) total I/Os of the run");
  EXPECT_EQ(described_line(describe.output, "span_gib").rfind("      (microbenchmark) ", 0), 0u);
}

TEST(ScenarioKinds, CheckRefusesAKindSpecificFieldInEveryOtherKind) {
  for (const ParamSpec& p : scenario_spec().params) {
    if (p.kinds.empty()) continue;
    for (const std::string& kind : kKinds) {
      if (std::find(p.kinds.begin(), p.kinds.end(), kind) != p.kinds.end()) continue;
      const std::string value = p.default_value.dump();
      const Outcome check = gpunvme_cli("check --scenario " + shipped_scenario(kind) +
                                        " --set 'scenario." + p.name + "=" + value + "'");
      EXPECT_EQ(check.code, 2) << p.name << " in " << kind;
      EXPECT_NE(check.output.find("$." + p.name), std::string::npos) << check.output;
      EXPECT_NE(check.output.find("applies to kind"), std::string::npos) << check.output;
      EXPECT_NE(check.output.find("this scenario's kind is " + kind), std::string::npos)
          << check.output;
    }
  }
}

std::string readme() {
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The cells of the README table row that starts with `first`.
std::vector<std::string> readme_row(const std::string& text, const std::string& first) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("| " + first + " |", 0) != 0) continue;
    std::vector<std::string> cells;
    std::size_t start = 1;
    for (std::size_t bar = line.find('|', start); bar != std::string::npos;
         bar = line.find('|', start)) {
      cells.push_back(line.substr(start, bar - start));
      start = bar + 1;
    }
    return cells;
  }
  return {};
}

// Names in backticks; `rmat_a/b/c` stands for rmat_a, rmat_b, rmat_c.
std::set<std::string> backticked(const std::string& cell) {
  std::set<std::string> names;
  const std::regex quoted("`([^`]+)`");
  for (std::sregex_iterator it(cell.begin(), cell.end(), quoted), end; it != end; ++it) {
    const std::string name = (*it)[1];
    const auto slash = name.find('/');
    const auto underscore = name.rfind('_', slash);
    if (slash != std::string::npos && underscore != std::string::npos) {
      const std::string stem = name.substr(0, underscore + 1);
      std::istringstream parts(name.substr(underscore + 1));
      std::string part;
      while (std::getline(parts, part, '/')) names.insert(stem + part);
    } else {
      names.insert(name);
    }
  }
  return names;
}

TEST(ReadmeTables, EachKindsRowListsExactlyItsFields) {
  const std::string text = readme();
  for (const std::string& kind : kKinds) {
    const std::vector<std::string> row = readme_row(text, "`" + kind + "`");
    ASSERT_EQ(row.size(), 3u) << kind;
    const std::set<std::string> named = backticked(row[2]);
    for (const ParamSpec& p : scenario_spec().params) {
      const bool of_kind = std::find(p.kinds.begin(), p.kinds.end(), kind) != p.kinds.end();
      if (of_kind) {
        EXPECT_EQ(named.count(p.name), 1u) << p.name << " missing from " << kind;
      }
      // A field named in the row is the kind's own or every kind's.
      if (named.count(p.name) != 0) {
        EXPECT_TRUE(of_kind || p.kinds.empty()) << p.name;
      }
    }
  }
}

TEST(ReadmeTables, HostCostRowsNameCpuParametersInNsWithTheirDefaults) {
  const std::string text = readme();
  const ComponentSpec& cpu = host::cpu_spec();
  std::istringstream lines(text.substr(text.find("| stage | parameter | default | from |")));
  std::string line;
  std::getline(lines, line);
  std::getline(lines, line);  // the separator
  std::size_t rows = 0;
  while (std::getline(lines, line) && line.rfind("| ", 0) == 0) {
    ++rows;
    std::vector<std::string> cells;
    std::size_t start = 1;
    for (std::size_t bar = line.find('|', start); bar != std::string::npos;
         bar = line.find('|', start)) {
      cells.push_back(line.substr(start, bar - start));
      start = bar + 1;
    }
    ASSERT_EQ(cells.size(), 4u) << line;
    // Parameters in the order written, and the defaults in the same order.
    std::vector<std::string> params;
    const std::regex quoted("`([^`]+)`");
    for (std::sregex_iterator it(cells[1].begin(), cells[1].end(), quoted), end; it != end; ++it) {
      params.push_back((*it)[1]);
    }
    std::vector<double> defaults;
    const std::regex number("[0-9]+(\\.[0-9]+)?");
    for (std::sregex_iterator it(cells[2].begin(), cells[2].end(), number), end; it != end; ++it) {
      defaults.push_back(std::stod(it->str()));
    }
    ASSERT_EQ(params.size(), defaults.size()) << line;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const ParamSpec* p = cpu.find(params[i]);
      ASSERT_NE(p, nullptr) << params[i];
      EXPECT_EQ(p->unit, "ns") << params[i];
      EXPECT_EQ(p->default_value.get<double>(), defaults[i]) << params[i];
    }
  }
  EXPECT_EQ(rows, 10u);
}

}  // namespace
}  // namespace gpunvme
