// gpunvme run --output-format json|normal|terse and --out -: what reaches
// standard output (read on its own, as a pipe to another tool reads it).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/run_cli.h"

namespace {

struct Streams {
  int code;
  std::string out;  // standard output alone
  std::string err;  // standard error alone
};

// Runs gpunvme in `dir` with standard error to a file of its own.
Streams run_split(const std::string& args, const std::string& dir) {
  const std::string err_file = dir + "/stderr.txt";
  const std::string command =
      "cd '" + dir + "' && " + std::string(GPUNVME_CLI) + " " + args + " 2>'" + err_file + "'";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  const int status = pclose(pipe);
  std::stringstream err;
  err << std::ifstream(err_file).rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, err.str()};
}

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpunvme_output_format_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

const std::string kSmallRun = "run --set scenario.ios=300 --set scenario.threads=64";

TEST(OutputFormat, JsonGoesToStandardOutputAlone) {
  const std::string dir = fresh_dir("json");
  const Streams s = run_split(kSmallRun + " --output-format json", dir);
  ASSERT_EQ(s.code, 0) << s.err;
  const nlohmann::json result = nlohmann::json::parse(s.out);  // nothing else on stdout
  EXPECT_EQ(result["schema"], "gpunvme.result/1");
  EXPECT_EQ(result["summary"]["ios"].get<int>(), 300);
  EXPECT_TRUE(result["fio"].contains("clat_ns"));
  std::filesystem::remove_all(dir);
}

TEST(OutputFormat, OutDashMeansStandardOutputNotAFile) {
  const std::string dir = fresh_dir("dash");
  const Streams s = run_split(kSmallRun + " --out -", dir);
  ASSERT_EQ(s.code, 0) << s.err;
  const nlohmann::json result = nlohmann::json::parse(s.out);
  EXPECT_EQ(result["summary"]["ios"].get<int>(), 300);
  EXPECT_FALSE(std::filesystem::exists(dir + "/-"));
  // The summary still shows, on standard error.
  EXPECT_NE(s.err.find("KIOPS"), std::string::npos) << s.err;
  std::filesystem::remove_all(dir);
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, sep)) fields.push_back(field);
  return fields;
}

TEST(OutputFormat, TerseIsOneLineOfTheReadmesFields) {
  const std::string dir = fresh_dir("terse");
  const Streams terse = run_split(kSmallRun + " --output-format terse", dir);
  ASSERT_EQ(terse.code, 0) << terse.err;
  ASSERT_EQ(terse.out.back(), '\n');
  EXPECT_EQ(terse.out.find('\n'), terse.out.size() - 1) << terse.out;  // one line
  const std::vector<std::string> f = split(terse.out.substr(0, terse.out.size() - 1), ';');
  // 14 run fields, min/max/mean/stdev of slat, clat and lat, then fio's 17
  // default clat percentiles.
  ASSERT_EQ(f.size(), 14u + 12u + 17u) << terse.out;
  EXPECT_EQ(f[0], "gpunvme");
  EXPECT_EQ(f[1], "1");
  EXPECT_EQ(f[2], "randread-4k");
  EXPECT_EQ(f[4], "1");  // seed
  EXPECT_EQ(f[5], "gpu_initiated");
  EXPECT_EQ(f[7], "300");  // submitted
  EXPECT_EQ(f[8], "300");  // succeeded
  EXPECT_EQ(f[9], "0");    // failed
  EXPECT_EQ(f[26].rfind("1.000000%=", 0), 0u) << f[26];
  EXPECT_EQ(f[32].rfind("50.000000%=", 0), 0u) << f[32];
  EXPECT_EQ(f[42].rfind("99.990000%=", 0), 0u) << f[42];
  // The same figures as the JSON of the same run (same seed).
  const nlohmann::json result =
      nlohmann::json::parse(run_split(kSmallRun + " --output-format json", dir).out);
  EXPECT_DOUBLE_EQ(std::stod(f[10]), result["summary"]["iops"].get<double>());
  EXPECT_DOUBLE_EQ(std::stod(f[24]), result["fio"]["lat_ns"]["mean"].get<double>());
  EXPECT_DOUBLE_EQ(std::stod(f[25]), result["fio"]["lat_ns"]["stdev"].get<double>());
  EXPECT_DOUBLE_EQ(std::stod(split(f[32], '=')[1]),
                   result["fio"]["clat_ns"]["percentile"]["50.000000"].get<double>());
  std::filesystem::remove_all(dir);
}

TEST(OutputFormat, NormalListsStagesInTheOrderAnIoPassesThem) {
  const std::string dir = fresh_dir("normal");
  const Streams s = run_split(kSmallRun, dir);
  ASSERT_EQ(s.code, 0) << s.err;
  std::size_t last = 0;
  for (const char* stage : {"cid_allocation", "sqe_construction", "sq_tail_sync", "doorbell",
                            "completion_wait", "completion_polling", "cq_head_sync", "delivery",
                            "ssd_fetch_wait", "ssd_service", "end_to_end", "slat", "clat"}) {
    const std::size_t at = s.out.find("  " + std::string(stage) + " ");
    ASSERT_NE(at, std::string::npos) << stage << "\n" << s.out;
    EXPECT_GT(at, last) << stage << "\n" << s.out;
    last = at;
  }
  std::filesystem::remove_all(dir);
}

TEST(OutputFormat, UnknownFormatIsBadInput) {
  const gpunvme::cli_test::Outcome o = gpunvme::cli_test::gpunvme("run --output-format xml");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("xml"), std::string::npos) << o.output;
}

// fio quietly raises iodepth_batch_complete_max to the minimum; here it is
// an input error naming both.
TEST(OutputFormat, BatchCompleteMaxBelowMinIsBadInput) {
  const gpunvme::cli_test::Outcome o = gpunvme::cli_test::gpunvme(
      "check --set scenario.iodepth=8 --set scenario.iodepth_batch_complete_min=4 --set "
      "scenario.iodepth_batch_complete_max=2");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("$.iodepth_batch_complete_max = 2: at least "
                          "iodepth_batch_complete_min (4)"),
            std::string::npos)
      << o.output;
}

}  // namespace
