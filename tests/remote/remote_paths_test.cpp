// The remote paths' seams against hand-worked cases: which path puts data in
// host memory, how many copies it makes, the core time each side spends, and
// how their latencies differ once the NVMe-oF exchange is the same.
#include "models/nvmf/remote_paths.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/remote/test_nic.h"

namespace gpunvme {
namespace {

using nvmf::RemotePath;

// Host software stages of the cpu node's defaults (models/host/cpu_params.def).
host::CpuIoCosts host_costs() {
  host::CpuIoCosts c;
  c.submit = ns_to_ps(550.0);
  c.complete_poll = ns_to_ps(40.0);
  c.notify = ns_to_ps(80.0);
  c.copy_launch = ns_to_ps(2200.0);
  c.copy_sync = ns_to_ps(330.0);
  return c;
}

nic::RdmaNicParams large_translation_cache_nic() { return test::hand_worked_nic(4096); }

// A fresh fabric per read, so that every path sees the same idle queues.
struct Fabric {
  nic::RdmaNic initiator{large_translation_cache_nic()};
  nic::RdmaNic target_nic{large_translation_cache_nic()};
  network::NetworkLink link{[] {
    network::NetworkLinkParams p;
    p.protocol = network::NetworkProtocol::roce_v2;
    p.gbps = 200.0;
    p.mtu_bytes = 4096;
    p.latency_ns = ns_to_ps(10.0);
    return p;
  }()};
  nvmf::TargetCores target{4, ns_to_ps(731.0)};
  nvmf::TargetCores initiator_cores{4, 0};
  nvmf::RemoteFabric fabric{
      initiator,        target_nic,      link,  target, initiator_cores, host_costs(),
      ns_to_ps(1462.0), ns_to_ps(115.0), 460.0, nullptr};
};

nvmf::RemotePathRead read_once(RemotePath path) {
  auto f = std::make_unique<Fabric>();
  return nvmf::remote_path_read(path, f->fabric, 0, 4096, 1, 0, ns_to_ps(10000.0));
}

TEST(RemotePaths, SeamsOfEachPath) {
  const auto staged = read_once(RemotePath::remote_staged);
  const auto direct = read_once(RemotePath::nvmf_gpudirect);
  const auto dpu = read_once(RemotePath::dpu);
  // Data in host memory: the NIC's write and the copy's read, staged only.
  EXPECT_EQ(staged.host_memory_data_bytes, 8192u);
  EXPECT_EQ(direct.host_memory_data_bytes, 0u);
  EXPECT_EQ(dpu.host_memory_data_bytes, 0u);
  EXPECT_EQ(staged.copies, 1u);
  EXPECT_EQ(direct.copies + dpu.copies, 0u);
  // Host core time: 550 + 40 + 2200 + 330; 550 + 40 + 80; none on the DPU path.
  EXPECT_EQ(staged.host_core_ps, 3120000u);
  EXPECT_EQ(direct.host_core_ps, 670000u);
  EXPECT_EQ(dpu.host_core_ps, 0u);
  EXPECT_EQ(dpu.dpu_core_ps, 1462000u);
  EXPECT_EQ(staged.dpu_core_ps + direct.dpu_core_ps, 0u);
  // The target's core time is one I/O's on every path.
  for (const auto* r : {&staged, &direct, &dpu}) EXPECT_EQ(r->target_core_ps, 731000u);
}

TEST(RemotePaths, LatencyDifferencesAreTheSeams) {
  const auto staged = read_once(RemotePath::remote_staged);
  const auto direct = read_once(RemotePath::nvmf_gpudirect);
  const auto dpu = read_once(RemotePath::dpu);
  // Staged and direct run the same exchange after the same 550 ns submit.
  const Picoseconds exchange = direct.exchange.completed - direct.exchange.posted;
  EXPECT_EQ(staged.exchange.completed - staged.exchange.posted, exchange);
  // Direct: 550 ns submit, the exchange, 40 + 80 ns to reap and flag.
  EXPECT_EQ(direct.delivered, 550000u + exchange + 120000u);
  // Staged: 40 + 2200 ns to reap and launch, 4096 B at 460 Gb/s (71.235
  // ns), 330 ns to learn that the copy is done.
  EXPECT_EQ(staged.delivered, 550000u + exchange + 2240000u + 71235u + 330000u);
  // DPU: 1462 ns on an Arm core, the exchange, one crossing of its switch.
  EXPECT_EQ(dpu.exchange.completed - dpu.exchange.posted, exchange);
  EXPECT_EQ(dpu.delivered, 1462000u + exchange + 115000u);
}

TEST(RemotePaths, HostCoresBoundTheStagedPathFirst) {
  // One initiator core, reads posted together: each staged read holds the
  // core for 3.12 us, each direct one for 0.67 us, so 100 staged reads take
  // the core at least 312 us and direct ones 67 us.
  auto staged = std::make_unique<Fabric>();
  auto direct = std::make_unique<Fabric>();
  nvmf::TargetCores one_core_a(1, 0);
  nvmf::TargetCores one_core_b(1, 0);
  nvmf::RemoteFabric a{staged->initiator,
                       staged->target_nic,
                       staged->link,
                       staged->target,
                       one_core_a,
                       host_costs(),
                       0,
                       0,
                       460.0,
                       nullptr};
  nvmf::RemoteFabric b{direct->initiator,
                       direct->target_nic,
                       direct->link,
                       direct->target,
                       one_core_b,
                       host_costs(),
                       0,
                       0,
                       460.0,
                       nullptr};
  Picoseconds last_a = 0;
  Picoseconds last_b = 0;
  for (int i = 0; i < 100; ++i) {
    const auto addr = static_cast<std::uint64_t>(i) * 4096;
    last_a = std::max(
        last_a,
        nvmf::remote_path_read(RemotePath::remote_staged, a, 0, 4096, 1, addr, 0).delivered);
    last_b = std::max(
        last_b,
        nvmf::remote_path_read(RemotePath::nvmf_gpudirect, b, 0, 4096, 1, addr, 0).delivered);
  }
  EXPECT_EQ(one_core_a.busy_ps(), 100u * 3120000u);
  EXPECT_EQ(one_core_b.busy_ps(), 100u * 670000u);
  EXPECT_GE(last_a, 100u * 3120000u);
  EXPECT_LT(last_b, last_a);
}

}  // namespace
}  // namespace gpunvme
