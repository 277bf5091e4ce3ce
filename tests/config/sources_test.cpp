// Every parameter source resolves inside the repository: it cites an entry of
// configs/SOURCES.md by key ("[nvme-base-2.0]") or names a file of the
// repository, and every entry of the document is cited by some source.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "models/nvmf/nvmf.h"
#include "sim/kernel/params/param_spec.h"
#include "sim/system/config/input_file.h"
#include "sim/system/run/catalog.h"
#include "sim/system/run/tenants.h"

namespace gpunvme {
namespace {

namespace fs = std::filesystem;

const fs::path kRepository = GPUNVME_SOURCE_DIR;
const char* const kDocument = "configs/SOURCES.md";
const char* const kEntryHeader = "| key | reference | what the simulator takes from it |";

bool has_suffix(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Cells of a Markdown table row, split at '|' not escaped as "\|" and trimmed.
std::vector<std::string> table_cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < row.size(); ++i) {  // row[0] is the opening '|'
    if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (row[i] == '|') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  for (std::string& c : cells) {
    const auto first = c.find_first_not_of(' ');
    const auto last = c.find_last_not_of(' ');
    c = first == std::string::npos ? "" : c.substr(first, last - first + 1);
  }
  return cells;
}

const std::regex& key_pattern() {
  static const std::regex pattern("[a-z][a-z0-9.-]*");
  return pattern;
}

struct SourcesDocument {
  std::set<std::string> keys;
  std::vector<std::string> problems;  // malformed or repeated entries
};

// Entries are the rows of the tables headed by kEntryHeader:
// | `key` | reference | what the simulator takes from it |
SourcesDocument parse_sources_document(const std::string& text) {
  SourcesDocument document;
  std::istringstream lines(text);
  std::string line;
  bool in_entries = false;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    const std::string where = "line " + std::to_string(line_number) + ": ";
    if (line == kEntryHeader) {
      in_entries = true;
      continue;
    }
    if (line.empty() || line[0] != '|') {
      in_entries = false;
      continue;
    }
    if (!in_entries || line.rfind("| ---", 0) == 0) continue;
    const std::vector<std::string> cells = table_cells(line);
    if (cells.size() != 3) {
      document.problems.push_back(where + "an entry has 3 cells (key, reference, use), this has " +
                                  std::to_string(cells.size()));
      continue;
    }
    const std::string& quoted = cells[0];
    const std::string key = quoted.size() > 2 ? quoted.substr(1, quoted.size() - 2) : "";
    if (quoted.size() < 3 || quoted.front() != '`' || quoted.back() != '`' ||
        !std::regex_match(key, key_pattern())) {
      document.problems.push_back(where + "key " + quoted +
                                  " is not `lowercase-letters-digits.-` in backquotes");
      continue;
    }
    if (cells[1].empty() || cells[2].empty()) {
      document.problems.push_back(where + "entry " + key + " has an empty reference or use");
      continue;
    }
    if (!document.keys.insert(key).second) {
      document.problems.push_back(where + "key " + key + " is listed twice");
    }
  }
  return document;
}

// What one source text must satisfy; returns its problems (none when it is
// good) and adds the keys it cites to `cited`.
std::vector<std::string> source_problems(const std::string& source,
                                         const std::set<std::string>& keys,
                                         std::set<std::string>& cited) {
  std::vector<std::string> problems;
  int citations = 0;
  static const std::regex bracketed(R"(\[([^\]\s]+)\])");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), bracketed);
       it != std::sregex_iterator(); ++it) {
    const std::string key = (*it)[1];
    if (keys.count(key) == 0) {
      problems.push_back("cites [" + key + "], which is not a key of " + std::string(kDocument));
    } else {
      cited.insert(key);
      ++citations;
    }
  }
  static const std::regex path(
      R"((?:^|[\s(,;:'"])((?:configs|sim|models|tests|scenarios|python|scripts|notebooks)/[A-Za-z0-9_./-]+|README\.md))");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), path);
       it != std::sregex_iterator(); ++it) {
    std::string file = (*it)[1];
    while (!file.empty() && (file.back() == '.' || file.back() == '/')) file.pop_back();
    // A measurement file stored compressed is cited by its uncompressed name.
    if (input_file_exists((kRepository / file).string())) {
      ++citations;
    } else {
      problems.push_back("names " + file + ", which is not a file of the repository");
    }
  }
  // A seed document named in words must be cited by its key as well.
  static const std::regex seed(R"(seed (00[0-9]))");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), seed);
       it != std::sregex_iterator(); ++it) {
    const std::string key = "seed-" + std::string((*it)[1]);
    if (source.find("[" + key + "]") == std::string::npos) {
      problems.push_back("names " + std::string((*it)[0]) + " without its key [" + key + "]");
    }
  }
  for (const char* outside : {"CALIBRATION.md", "ARCHITECTURE.md", "/work/", "shared/design"}) {
    if (source.find(outside) != std::string::npos) {
      problems.push_back(std::string("points outside the repository (") + outside + ")");
    }
  }
  const bool estimate = source.rfind("estimate", 0) == 0;
  const bool unused = source.rfind("not used", 0) == 0;
  if (citations == 0 && !estimate && !unused) {
    problems.push_back("cites no entry of " + std::string(kDocument) +
                       " and no file of the repository (only estimates and unused "
                       "parameters may cite nothing)");
  }
  return problems;
}

std::vector<std::string> spec_problems(const ComponentSpec& spec, const std::set<std::string>& keys,
                                       std::set<std::string>& cited) {
  std::vector<std::string> problems;
  for (const ParamSpec& p : spec.params) {
    for (const std::string& problem : source_problems(p.source, keys, cited)) {
      problems.push_back(spec.kind + "." + p.name + ": " + problem + "\n    source: " + p.source);
    }
  }
  return problems;
}

std::vector<const ComponentSpec*> declared_components() {
  const Catalog& c = catalog();
  std::vector<const ComponentSpec*> all;
  for (const ComponentSpec& s : c.node_kinds) all.push_back(&s);
  for (const ComponentSpec* s : {&c.link, &c.topology, &c.scenario}) all.push_back(s);
  // The network and remote-storage models are declared apart from the
  // topology's node kinds.
  static const std::vector<ComponentSpec> remote_kinds = nvmf::remote_storage_specs();
  for (const ComponentSpec& s : remote_kinds) all.push_back(&s);
  for (const ComponentSpec* s : {&tenants_spec(), &tenant_spec()}) all.push_back(s);
  return all;
}

// Every "source" string of a shipped JSON file under configs/ (profiles and
// measurement files), with its JSON path.
void collect_file_sources(const nlohmann::json& value, const std::string& path,
                          std::vector<std::pair<std::string, std::string>>& out) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it.key() == "source" && it.value().is_string()) {
        out.emplace_back(path + ".source", it.value().get<std::string>());
      } else {
        collect_file_sources(it.value(), path + "." + it.key(), out);
      }
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      collect_file_sources(value[i], path + "[" + std::to_string(i) + "]", out);
    }
  }
}

std::vector<std::string> shipped_file_problems(const std::set<std::string>& keys,
                                               std::set<std::string>& cited) {
  std::vector<std::string> problems;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kRepository / "configs")) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && (has_suffix(name, ".json") || has_suffix(name, ".json.gz"))) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::vector<std::pair<std::string, std::string>> sources;
    collect_file_sources(nlohmann::json::parse(read_input_file(file.string(), "JSON file")), "$",
                         sources);
    const std::string name = fs::relative(file, kRepository).string();
    for (const auto& [where, source] : sources) {
      for (const std::string& problem : source_problems(source, keys, cited)) {
        problems.push_back(name + ": " + where + ": " + problem + "\n    source: " + source);
      }
    }
  }
  return problems;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

SourcesDocument shipped_document() {
  return parse_sources_document(read_text(kRepository / kDocument));
}

TEST(Sources, DocumentEntriesAreWellFormed) {
  const SourcesDocument document = shipped_document();
  EXPECT_TRUE(document.problems.empty()) << joined(document.problems);
  EXPECT_GT(document.keys.size(), 40u);
}

TEST(Sources, EveryDeclaredParameterCitesTheDocumentOrARepositoryFile) {
  const SourcesDocument document = shipped_document();
  std::set<std::string> cited;
  std::vector<std::string> problems;
  std::size_t parameters = 0;
  for (const ComponentSpec* spec : declared_components()) {
    parameters += spec->params.size();
    for (const std::string& p : spec_problems(*spec, document.keys, cited)) problems.push_back(p);
  }
  EXPECT_GT(parameters, 200u);
  EXPECT_TRUE(problems.empty()) << problems.size() << " sources:\n" << joined(problems);
}

TEST(Sources, EveryShippedFileSourceCitesTheDocumentOrARepositoryFile) {
  const SourcesDocument document = shipped_document();
  std::set<std::string> cited;
  const std::vector<std::string> problems = shipped_file_problems(document.keys, cited);
  EXPECT_TRUE(problems.empty()) << problems.size() << " sources:\n" << joined(problems);
  EXPECT_FALSE(cited.empty());
}

TEST(Sources, EveryDocumentEntryIsCited) {
  const SourcesDocument document = shipped_document();
  std::set<std::string> cited;
  for (const ComponentSpec* spec : declared_components())
    spec_problems(*spec, document.keys, cited);
  shipped_file_problems(document.keys, cited);
  std::vector<std::string> uncited;
  for (const std::string& key : document.keys) {
    if (cited.count(key) == 0) uncited.push_back(key);
  }
  EXPECT_TRUE(uncited.empty()) << "entries of " << kDocument << " that no source cites:\n"
                               << joined(uncited);
}

TEST(Sources, EveryMeasurementFileIsDescribed) {
  const std::string text = read_text(kRepository / kDocument);
  for (const auto& entry : fs::directory_iterator(kRepository / "configs" / "measurements")) {
    std::string name = entry.path().filename().string();
    // A file stored compressed is described by the name everything cites it by.
    if (has_suffix(name, ".json.gz")) name.resize(name.size() - std::string(".gz").size());
    EXPECT_NE(text.find(name), std::string::npos) << name << " is not described in " << kDocument;
  }
}

// The checks themselves, on hand-made inputs whose problems are known.
ParamSpec param_with_source(const std::string& name, const std::string& source) {
  ParamSpec p;
  p.name = name;
  p.source = source;
  return p;
}

TEST(SourcesCheck, ReportsEachBadSourceOfAComponent) {
  ComponentSpec spec;
  spec.kind = "probe";
  spec.params = {
      param_with_source("good_key", "NVMe base spec 2.0 CAP.DSTRD [spec-a]"),
      param_with_source("good_file", "measured (configs/SOURCES.md)"),
      param_with_source("good_estimate", "estimate: half of the other figure"),
      param_with_source("good_unused", "not used: no erase on this media"),
      param_with_source("outside", "CALIBRATION.md: real drives grant 8-135"),
      param_with_source("unknown_key", "a datasheet [spec-b]"),
      param_with_source("missing_file", "measured (configs/measurements/nowhere.json)"),
      param_with_source("nothing", "a vendor datasheet"),
      param_with_source("seed_in_words", "estimate: seed 003, P2P truth table"),
      param_with_source("good_seed", "seed 001: batch submission [seed-001]"),
  };
  const std::set<std::string> keys = {"spec-a", "spec-c", "seed-001"};
  std::set<std::string> cited;
  const std::vector<std::string> problems = spec_problems(spec, keys, cited);
  // outside: outside the repository and no citation (2); unknown_key: the
  // unknown key and no citation (2); missing_file: the missing file and no
  // citation (2); nothing: no citation (1); seed_in_words: the seed named without
  // its key (1; an estimate needs no citation).
  ASSERT_EQ(problems.size(), 8u) << joined(problems);
  const std::string text = joined(problems);
  EXPECT_NE(text.find("probe.outside: points outside the repository (CALIBRATION.md)"),
            std::string::npos);
  EXPECT_NE(text.find("probe.unknown_key: cites [spec-b], which is not a key"), std::string::npos);
  EXPECT_NE(text.find("probe.missing_file: names configs/measurements/nowhere.json, which is not"),
            std::string::npos);
  EXPECT_NE(text.find("probe.nothing: cites no entry"), std::string::npos);
  EXPECT_NE(text.find("probe.seed_in_words: names seed 003 without its key [seed-003]"),
            std::string::npos);
  EXPECT_EQ(text.find("probe.good_"), std::string::npos);
  EXPECT_EQ(cited, (std::set<std::string>{"spec-a", "seed-001"}));  // spec-c is left uncited
}

TEST(SourcesCheck, ReportsMalformedAndRepeatedEntries) {
  const std::string header = std::string(kEntryHeader) + "\n| --- | --- | --- |\n";
  const SourcesDocument document =
      parse_sources_document("# Title\n\n" + header +
                             "| `good-1` | A. Author, \"Title\", Venue 2020 | a figure |\n"
                             "| `good-2` | a \\| piped reference | a figure |\n"
                             "| `Bad Key` | reference | use |\n"
                             "| `two-cells` | reference |\n"
                             "| `no-use` | reference |  |\n"
                             "| `good-1` | the same key again | use |\n"
                             "\n"
                             "| figure | value | origin |\n"
                             "| --- | --- | --- |\n"
                             "| not an entry | 1 | anywhere |\n");
  EXPECT_EQ(document.keys, (std::set<std::string>{"good-1", "good-2"}));
  ASSERT_EQ(document.problems.size(), 4u) << joined(document.problems);
  EXPECT_NE(document.problems[0].find("line 7: key `Bad Key` is not"), std::string::npos);
  EXPECT_NE(document.problems[1].find("line 8: an entry has 3 cells"), std::string::npos);
  EXPECT_NE(document.problems[2].find("line 9: entry no-use has an empty"), std::string::npos);
  EXPECT_NE(document.problems[3].find("line 10: key good-1 is listed twice"), std::string::npos);
}

}  // namespace
}  // namespace gpunvme
