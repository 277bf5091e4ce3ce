// A table of bad inputs to the command line: every one must exit with 2 (bad
// input) and name where the mistake is: the file and JSON path, the --set
// assignment and the field in it, or the option.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/run_cli.h"

namespace {

using gpunvme::cli_test::gpunvme;
using gpunvme::cli_test::Outcome;

const std::string kSource = GPUNVME_SOURCE_DIR;
const std::string kTopology = kSource + "/configs/topologies/default.json";

std::string dir() {
  static const std::string d = [] {
    const auto path = std::filesystem::temp_directory_path() / "gpunvme_bad_inputs";
    std::filesystem::create_directories(path);
    return path.string();
  }();
  return d;
}

std::string file(const std::string& name, const std::string& text) {
  const std::string path = dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

struct BadInput {
  std::string args;      // after the subcommand
  std::string location;  // what the message must name: "FILE: PATH" or the option
};

// `--set` cases on the shipped defaults: a value the assignment set that
// validation refuses is blamed on the assignment, not on the scenario or
// topology file whose value it replaced; the message names it and the field.
BadInput scenario_set(const std::string& assignment, const std::string& path) {
  return {"--set '" + assignment + "'", "error: --set " + assignment + ": " + path};
}
BadInput topology_set(const std::string& assignment, const std::string& path) {
  return {"--set '" + assignment + "'", "error: --set " + assignment + ": " + path};
}
// Refused while applying the assignment: the message names it and the field.
BadInput refused_set(const std::string& assignment, const std::string& path) {
  return {"--set '" + assignment + "'", "error: --set " + assignment + ": " + path};
}
BadInput scenario_file(const std::string& name, const std::string& text, const std::string& path) {
  const std::string f = file(name, text);
  return {"--scenario " + f, "error: " + f + ": " + path};
}

std::vector<BadInput> bad_inputs() {
  std::vector<BadInput> cases = {
      // Scenario fields: ranges, types, choices, references.
      scenario_set("scenario.iodepth=0", "$.iodepth = 0: out of range"),
      scenario_set("scenario.iodepth=5000", "$.iodepth = 5000"),
      scenario_set("scenario.iodepth=1.5", "$.iodepth = 1.5"),
      scenario_set("scenario.iodepth=x", "$.iodepth = \"x\""),
      scenario_set("scenario.threads=0", "$.threads = 0"),
      scenario_set("scenario.threads=true", "$.threads = true"),
      scenario_set("scenario.threads=4194304", "$.threads = 4194304"),
      scenario_set("scenario.bs=100", "$.bs = 100"),
      scenario_set("scenario.bs=1000", "$.bs = 1000"),
      scenario_set("scenario.bs=4194304", "$.bs = 4194304"),
      scenario_set("scenario.ios=0", "$.ios = 0"),
      scenario_set("scenario.ios=-1", "$.ios = -1"),
      scenario_set("scenario.ios=1e11", "$.ios = 100000000000.0"),
      scenario_set("scenario.queues=0", "$.queues = 0"),
      scenario_set("scenario.queues=70000", "$.queues = 70000"),
      scenario_set("scenario.queues=200", "$.queues = 200"),
      scenario_set("scenario.queue_entries=1", "$.queue_entries = 1"),
      scenario_set("scenario.queue_entries=100000", "$.queue_entries = 100000"),
      scenario_set("scenario.rw=randomread", "$.rw = \"randomread\""),
      scenario_set("scenario.rw=5", "$.rw = 5"),
      scenario_set("scenario.rwmixread=101", "$.rwmixread = 101"),
      scenario_set("scenario.rwmixread=-1", "$.rwmixread = -1"),
      scenario_set("scenario.distribution=gaussian", "$.distribution = \"gaussian\""),
      scenario_set("scenario.zipf_theta=0", "$.zipf_theta = 0"),
      scenario_set("scenario.zipf_theta=11", "$.zipf_theta = 11"),
      scenario_set("scenario.span_gib=-1", "$.span_gib = -1"),
      scenario_set("scenario.span_gib=1e7", "$.span_gib = 10000000.0"),
      scenario_set("scenario.span_gib=100000", "$.span_gib = 100000: beyond the capacity"),
      scenario_set("scenario.runtime_us=-5", "$.runtime_us = -5"),
      scenario_set("scenario.time_based=yes", "$.time_based = \"yes\""),
      scenario_set("scenario.time_based=true", "$.time_based = true: needs runtime_us"),
      scenario_set("scenario.io_size=1000", "$.io_size = 1000"),
      scenario_set("scenario.gpu=gpu9", "$.gpu = \"gpu9\""),
      scenario_set("scenario.gpu=5", "$.gpu = 5"),
      scenario_set("scenario.ssds=ssd0", "$.ssds = \"ssd0\""),
      scenario_set("scenario.ssds=[]", "$.ssds = []"),
      scenario_set("scenario.ssds=[\"ssd9\"]", "$.ssds[0] = \"ssd9\""),
      scenario_set("scenario.ssds=[\"ssd0\",\"ssd0\"]", "$.ssds[1] = \"ssd0\": duplicate"),
      scenario_set("scenario.ssds=[\"cpu0\"]", "$.ssds[0] = \"cpu0\""),
      scenario_set("scenario.ssds=[1]", "$.ssds = [1]"),
      scenario_set("scenario.kind=graphs", "$.kind = \"graphs\""),
      scenario_set("scenario.path=direct", "$.path = \"direct\""),
      scenario_set("scenario.strategy=fast", "$.strategy = \"fast\""),
      scenario_set("scenario.queue_mapping=x", "$.queue_mapping = \"x\""),
      scenario_set("scenario.cid_scheme=x", "$.cid_scheme = \"x\""),
      scenario_set("scenario.submission=x", "$.submission = \"x\""),
      scenario_set("scenario.completion=x", "$.completion = \"x\""),
      scenario_set("scenario.cid_space=70000", "$.cid_space = 70000"),
      scenario_set("scenario.agent_warps=0", "$.agent_warps = 0"),
      scenario_set("scenario.batch_size=0", "$.batch_size = 0"),
      scenario_set("scenario.cq_doorbell_batch=0", "$.cq_doorbell_batch = 0"),
      scenario_set("scenario.poll_backoff_ns=-1", "$.poll_backoff_ns = -1"),
      scenario_set("scenario.threads_per_block=16", "$.threads_per_block = 16"),
      scenario_set("scenario.threads_per_block=2048", "$.threads_per_block = 2048"),
      scenario_set("scenario.iodpeth=4", "$.iodpeth = 4: unknown field"),
      scenario_set("scenario.layers=4", "$.layers = 4: applies to kind kv_cache"),
      scenario_set("scenario.scale=10", "$.scale = 10: applies to kind graph"),
      scenario_set("scenario.rows=10", "$.rows = 10: applies to kind gather"),
      scenario_set("scenario.name=[1,2]", "$.name = [1,2]"),
      scenario_set("scenario.doc=5", "$.doc = 5"),
      scenario_set("scenario.queue_memory=disk", "$.queue_memory = \"disk\""),
      scenario_set("scenario.sq_placement=cmb", "$.sq_placement = \"cmb\""),
      scenario_set("scenario.shadow_doorbells=1", "$.shadow_doorbells = 1"),
      scenario_set("scenario.ssd_mapping=x", "$.ssd_mapping = \"x\""),
      scenario_set("scenario.batch_timeout_ns=-1", "$.batch_timeout_ns = -1"),
      scenario_set("scenario.request_origin=x", "$.request_origin = \"x\""),
      scenario_set("scenario.error_policy=maybe", "$.error_policy = \"maybe\""),
      scenario_set("scenario.error_max_retries=-1", "$.error_max_retries = -1"),
      {"--set scenario.path=gds --set scenario.error_policy=retry",
       "error: --set scenario.error_policy=retry: $.error_policy = \"retry\": only "
       "gpu_initiated"},
      {"--set scenario.strategy=io_agents --set scenario.error_policy=fail",
       "error: --set scenario.error_policy=fail: $.error_policy = \"fail\": the error "
       "mailbox needs threads"},
      {"--set scenario.iodepth=4 --set scenario.error_policy=retry",
       "error: --set scenario.iodepth=4: $.iodepth = 4: error_policy retry holds"},
      {"--set scenario.path=gds --set scenario.cpu=cpu9",
       "error: --set scenario.cpu=cpu9: $.cpu = \"cpu9\""},
      scenario_file("bfs-root.json", R"({"kind": "graph", "scale": 16, "bfs_source": 70000})",
                    "$.bfs_source = 70000: the graph has vertices 0..65535"),
      scenario_file("kind-mismatch.json", R"({"kind": "graph", "rw": "read"})",
                    "$.rw = \"read\": applies to kind microbenchmark only"),
      refused_set("scenario.span_gib=1e400", "span_gib: a number is beyond the range"),
      {"--set 'scenario.iodepth=" + std::string(300, '[') + std::string(300, ']') + "'",
       "error: --set scenario.iodepth=" + std::string(60, '[') +
           "...: iodepth: arrays and objects nest deeper than 256 levels"},
      // Topology fields.
      topology_set("topology.nodes.ssd0.channels=0", "$.nodes[5].channels = 0"),
      topology_set("topology.nodes.ssd0.mqes=1", "$.nodes[5].mqes = 1"),
      topology_set("topology.nodes.ssd0.lba_bytes=1000", "$.nodes[5].lba_bytes = 1000"),
      topology_set("topology.nodes.ssd0.capacity_gib=0", "$.nodes[5].capacity_gib = 0"),
      topology_set("topology.nodes.ssd0.fault_schedule=[\"oops\"]",
                   "$.nodes[5].fault_schedule[0] = \"oops\""),
      topology_set("topology.nodes.ssd0.fault_schedule=[\"media@cmd=1\",\"media@cmd=1\"]",
                   "$.nodes[5].fault_schedule[1] = \"media@cmd=1\": duplicate"),
      topology_set("topology.nodes.ssd0.fault_schedule=[\"media@us=-1\"]",
                   "$.nodes[5].fault_schedule[0]"),
      topology_set("topology.nodes.ssd0.processor_time_scale=[1]",
                   "$.nodes[5].processor_time_scale = [1]"),
      topology_set("topology.nodes.ssd0.processor_time_scale=[1,0,1,1]",
                   "$.nodes[5].processor_time_scale[1] = 0"),
      topology_set("topology.nodes.ssd0.controller_cores=0", "$.nodes[5].controller_cores = 0"),
      topology_set("topology.nodes.ssd0.chanels=8", "$.nodes[5].chanels = 8: unknown field"),
      topology_set("topology.nodes.ssd0.dstrd=99", "$.nodes[5].dstrd = 99"),
      topology_set("topology.nodes.ssd0.profile=nope", "$.nodes[5].profile = \"nope\""),
      topology_set("topology.nodes.ssd0.id=sw0", "$.nodes[5].id = \"sw0\": duplicate node id"),
      topology_set("topology.nodes.ssd0.id=\"\"", "$.nodes[5].id = \"\""),
      {"--set topology.nodes.ssd0.page_bytes=65536 --set topology.nodes.ssd0.planes_per_die=16 "
       "--set topology.nodes.ssd0.independent_plane_reads=false "
       "--set topology.nodes.ssd0.write_buffer_mib=0.0625",
       "error: " + kTopology + ": $.nodes[5] = \"ssd0\": flash: write buffer smaller"},
      topology_set("topology.nodes.gpu0.sms=0", "$.nodes[4].sms = 0"),
      topology_set("topology.nodes.gpu0.block_sm_order=[0,1]", "$.nodes[4].block_sm_order = [0,1]"),
      topology_set("topology.nodes.gpu0.sm_l2_partition=[0]", "$.nodes[4].sm_l2_partition = [0]"),
      topology_set("topology.nodes.gpu0.memory_gib=0.5", "$.nodes[4].memory_gib = 0.5"),
      topology_set("topology.nodes.gpu0.kind=gpux", "$.nodes[4].kind = \"gpux\""),
      topology_set("topology.nodes.sw0.latency_ns=-5", "$.nodes[3].latency_ns = -5"),
      topology_set("topology.nodes.dram0.capacity_gib=0", "$.nodes[1].capacity_gib = 0"),
      topology_set("topology.nodes.rc0.socket=dram0", "$.nodes[2].socket = \"dram0\""),
      topology_set("topology.nodes=[]", "$.nodes = []"),
      topology_set("topology.nodes.0=5", "$.nodes[0] = 5"),
      topology_set("topology.links=5", "$.links = 5"),
      topology_set("topology.links.0.gen=9", "$.links[0].gen = 9"),
      topology_set("topology.links.0.gen=five", "$.links[0].gen = \"five\""),
      topology_set("topology.links.0.width=3", "$.links[0].width = 3"),
      topology_set("topology.links.0.width=1e300", "$.links[0].width = 1e+300"),
      topology_set("topology.links.0.to=nowhere", "$.links[0].to = \"nowhere\""),
      topology_set("topology.links.0.to=rc0", "$.links[0].to = \"rc0\""),
      // Refused as a whole link, around the field the assignment set: the
      // message names the file (another override may have set the rest).
      {"--set topology.links.2.from=gpu0",
       "error: " + kTopology +
           ": $.links[2] = \"gpu0\" - \"ssd0\": gpu0 is a PCIe endpoint (gpu) and already "
           "has its one link, $.links[1]"},
      topology_set("topology.links.0.type=ethernet", "$.links[0].type = \"ethernet\""),
      topology_set("topology.name=5", "$.name = 5"),
      topology_set("topology.nodes.ssd0.cmb_mib=-1", "$.nodes[5].cmb_mib = -1"),
      // Assignments and options.
      {"--seed -5", "error: --seed: seed = -5: expected a non-negative integer"},
      {"--seed abc", "error: --seed: seed = abc: expected a non-negative integer"},
      {"--seed 18446744073709551616", "error: --seed: seed = 18446744073709551616"},
      {"--set seed=-1", "error: --set seed=-1: seed = -1: expected a non-negative integer"},
      {"--set noequals", "error: --set noequals: $ = noequals: path must start with"},
      {"--set scenario.noequals",
       "error: --set scenario.noequals: $ = noequals: expected "
       "PATH=VALUE"},
      {"--set foo.bar=1", "error: --set foo.bar=1: $ = foo.bar=1: path must start with"},
      {"--set topology.nodes.nosuch.x=1",
       "error: --set topology.nodes.nosuch.x=1: $.nodes[nosuch] = 1: no element"},
      {"--set topology.links.99999999999999999999.gen=4",
       "error: --set topology.links.99999999999999999999.gen=4: $.links[99999999999999999999]"},
      {"--set scenario..bs=1", "error: --set scenario..bs=1: .bs = 1: empty path segment"},
      {"--set topology.name.x=1", "error: --set topology.name.x=1: $.name = 1: cannot descend"},
      {"--set \"$(printf 'scenario.name=\\377')\"",
       "error: --set scenario.name=\\xFF: $: the "
       "assignment is not valid UTF-8"},
      {"--max-memory-gib 0", "--max-memory-gib: Value 0 not in range"},
      {"--max-memory-gib 0.001", "error: " + kTopology + ": $.nodes: the run needs an estimated"},
      {"--topology /nonexistent.json", "error: /nonexistent.json: $: cannot open file"},
      {"--topology " + dir(), "error: " + dir() + ": $: is a directory"},
      {"--scenario " + dir(), "error: " + dir() + ": $: is a directory"},
      {"--scenario /dev/zero", "error: /dev/zero: $: is a device or socket, not a JSON file"},
      // Files that are not JSON configurations.
      scenario_file("binary.json", std::string("{\"rw\x00\x01", 6), "$: not a JSON text file"),
      scenario_file("deep.json", std::string(70000, '[') + std::string(70000, ']'),
                    "$: arrays and objects nest deeper than 256 levels (line 1, column 257)"),
      scenario_file("huge-number.json", "{\"span_gib\": 1e400}", "$: a number is beyond"),
      scenario_file("empty.json", "", "$: not valid JSON"),
      scenario_file("array.json", "[]", "$ = []: expected an object"),
      scenario_file("latin1.json", "{\"name\": \"caf\xe9\"}",
                    "$: not a JSON text file: not "
                    "valid UTF-8 (byte 0xE9"),
      scenario_file("trailing.json", "{} x", "$: not valid JSON"),
      scenario_file("truncated.json", "{\"rw\": ", "$: not valid JSON"),
      scenario_file("dup-ssds.json", R"({"ssds": ["ssd0", "ssd0"]})", "$.ssds[1] = \"ssd0\""),
      scenario_file("nan.json", R"({"span_gib": NaN})", "$: not valid JSON"),
      scenario_file("graph-dir.json", "{\"kind\": \"graph\", \"graph\": \"" + dir() + "\"}",
                    "$.graph"),
  };
  // Graph files the graph loader refuses.
  const std::string huge_mtx = file("huge.mtx",
                                    "%%MatrixMarket matrix coordinate pattern general\n"
                                    "2147483648 2147483648 1\n1 2\n");
  cases.push_back(
      {"--max-memory-gib 1 --scenario " +
           file("huge-mtx.json", "{\"kind\": \"graph\", \"graph\": \"" + huge_mtx + "\"}"),
       "error: " + huge_mtx +
           ": line 2 = 2147483648 2147483648 1: the graph it declares (2147483648 vertices, 1 "
           "entries) needs more than the memory cap of 1024 MiB"});
  const std::string negative = file("negative.txt", "0 1\n-1 2\n");
  cases.push_back({"--scenario " + file("negative.json",
                                        "{\"kind\": \"graph\", \"graph\": \"" + negative + "\"}"),
                   "error: " + negative + ": line 2 = -1 2: vertex ids must be non-negative"});
  const std::string binary_graph = file("binary.txt", std::string("0 1\n\x00\x01", 6));
  cases.push_back({"--scenario " + file("binary-graph.json", "{\"kind\": \"graph\", \"graph\": \"" +
                                                                 binary_graph + "\"}"),
                   "error: " + binary_graph + ": line 2 = \\x00\\x01: not a text file"});
  // A profile beside the topology that is not a profile of the right kind.
  std::filesystem::create_directories(dir() + "/ssd");
  file("ssd/odd.json", R"({"kind": 5, "params": {}})");
  const std::string topology =
      file("odd-profile.json",
           R"({"nodes": [{"id": "rc0", "kind": "root_complex"}, {"id": "gpu0", "kind": "gpu"},
                    {"id": "ssd0", "kind": "nvme_ssd", "profile": "odd"}],
          "links": [{"from": "rc0", "to": "gpu0"}, {"from": "rc0", "to": "ssd0"}]})");
  cases.push_back(
      {"--topology " + topology, "error: " + dir() +
                                     "/ssd/odd.json: $.kind = 5: profile 'odd' is not a "
                                     "nvme_ssd profile"});
  return cases;
}

TEST(BadInputs, EachExitsWithTwoNamingWhereTheMistakeIs) {
  const std::vector<BadInput> cases = bad_inputs();
  for (const BadInput& c : cases) {
    for (const char* command : {"check", "run"}) {
      const Outcome o = gpunvme(std::string(command) + " " + c.args);
      EXPECT_EQ(o.code, 2) << command << " " << c.args << "\n" << o.output;
      EXPECT_NE(o.output.find(c.location), std::string::npos)
          << command << " " << c.args << "\nexpected: " << c.location << "\nbut got: " << o.output;
      EXPECT_EQ(o.output.find("simulation error"), std::string::npos) << o.output;
    }
  }
  EXPECT_GE(cases.size(), 100u);
}

}  // namespace
