// The NVMe-oF target's placement and the scenario's choice of target: the
// configurations they refuse, each a ConfigError naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/run_cli.h"

namespace gpunvme::nvmf_target_config_test {
namespace {

TEST(NvmfTargetConfig, BadTargetsAndPlacementsAreConfigErrors) {
  const std::string topology =
      std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-hosts-rdma.json";
  const std::string scenario = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/remote/gpudirect.json";
  const std::string check = "check --topology " + topology + " --scenario " + scenario + " ";
  struct Case {
    std::string sets;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"--set scenario.nvmf_target=nic1",
            "$.nvmf_target = \"nic1\": not an nvmf_target node of the SSDs' host "
            "\"storage_host\""},
           {"--set scenario.nvmf_target=target1_dpu --set topology.nodes.dpu1.kind=rdma_nic",
            "$.nodes[17].placement = \"dpu\": the SSDs' host \"storage_host\" has no dpu node to "
            "run the target"},
           {"--set topology.nodes.target1.placement=fpga", "placement"},
           {"--set scenario.nvmf_target=target1_offload"
            " --set topology.nodes.sw1.acs_request_redirect=true"
            " --set topology.nodes.rc1.peer_to_peer=block",
            "$.nodes[18].placement = \"nic_offload\": ssd0 and nic1 cannot reach each other peer "
            "to peer"},
       }) {
    SCOPED_TRACE(c.sets);
    const cli_test::Outcome o = cli_test::gpunvme(check + c.sets);
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_NE(o.output.find(c.message), std::string::npos) << o.output;
  }
  // Each target of the topology passes.
  for (const char* target : {"target1", "target1_dpu", "target1_offload"}) {
    const cli_test::Outcome o = cli_test::gpunvme(check + "--set scenario.nvmf_target=" + target);
    EXPECT_EQ(o.code, 0) << o.output;
  }
}

}  // namespace
}  // namespace gpunvme::nvmf_target_config_test
