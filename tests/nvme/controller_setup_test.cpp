// Controller registers and bring-up through the host driver: CAP fields, the
// CC.EN -> CSTS.RDY sequence, Identify, Set Features Number of Queues, and
// the statuses a real controller returns for admin commands it refuses.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

Status create_cq(Bench& bench, std::uint16_t qid, std::uint32_t entries, std::uint64_t base,
                 bool contiguous = true, bool irq = false, std::uint16_t vector = 0) {
  return bench.admin(0, make_create_io_cq(0, qid, entries, base, contiguous, irq, vector)).status();
}

Status create_sq(Bench& bench, std::uint16_t qid, std::uint32_t entries, std::uint64_t base,
                 std::uint16_t cqid) {
  return bench.admin(0, make_create_io_sq(0, qid, entries, base, cqid, QueuePriority::Medium))
      .status();
}

TEST(ControllerSetup, BringUpReadsCapabilitiesAndIdentify) {
  Bench bench({"samsung-pm1743", {{"cmb_mib", 16}, {"dstrd", 2}, {"wrr_supported", true}}});
  host::BringUpOptions options;
  options.io_queues = 200;  // more than the 128 the profile grants
  bench.bring_up(0, options, {});
  const host::ControllerInfo& info = bench.driver().info();
  // CAP as the NVMe base spec 1.4 (3.1.1) lays it out, from the profile.
  EXPECT_EQ(info.cap.max_queue_entries(), 16384u);
  EXPECT_TRUE(info.cap.cqr);
  EXPECT_EQ(info.cap.ams, kCapAmsWeightedRoundRobinUrgent);
  EXPECT_EQ(info.cap.dstrd, 2);
  EXPECT_EQ(info.cap.mpsmin, 0);
  EXPECT_TRUE(info.cap.cmbs);
  EXPECT_EQ(info.cap.css & kCapCssNvm, kCapCssNvm);
  // TO covers the ready delay in 500 ms units: 20 us rounds up to one unit.
  EXPECT_EQ(info.cap.to, 1);
  EXPECT_EQ(info.version, make_version(1, 4));
  // Identify: MDTS 9 of 4 KiB pages; one namespace of 512 B LBAs.
  EXPECT_EQ(info.max_transfer_bytes, 4096ull << 9);
  EXPECT_EQ(info.lba_bytes, 512u);
  const double capacity_gib = 3576.28;  // configs/ssd/samsung-pm1743.json
  EXPECT_NEAR(static_cast<double>(info.capacity_lbas) * 512.0,
              capacity_gib * static_cast<double>(1ull << 30), 4096.0);
  EXPECT_FALSE(info.sgl_supported);
  EXPECT_FALSE(info.shadow_doorbells);
  // Set Features Number of Queues grants min(requested, max_io_queues).
  EXPECT_EQ(info.io_sqs_granted, 128u);
  EXPECT_EQ(info.io_cqs_granted, 128u);
  // CMBSZ: queues, lists and data allowed; 16 units of 1 MiB.
  std::uint64_t cmbsz = 0;
  bench.driver().read_register(reg::kCmbsz, 4, [&](std::uint64_t v) { cmbsz = v; });
  bench.run();
  const Cmbsz decoded = Cmbsz::decode(static_cast<std::uint32_t>(cmbsz));
  EXPECT_TRUE(decoded.sqs && decoded.cqs && decoded.lists && decoded.rds && decoded.wds);
  EXPECT_EQ(decoded.size_bytes(), 16ull << 20);
  ASSERT_NE(bench.ssd().cmb(), nullptr);
  EXPECT_EQ(bench.ssd().cmb()->size, 16ull << 20);
  // Doorbells sit 4 << DSTRD = 16 bytes apart.
  EXPECT_EQ(bench.ssd().doorbell_address(true, 3) - bench.ssd().registers().base,
            0x1000u + 2u * 3u * 16u);
  EXPECT_EQ(bench.ssd().doorbell_address(false, 3) - bench.ssd().registers().base,
            0x1000u + (2u * 3u + 1u) * 16u);
}

TEST(ControllerSetup, GrantsWhatIsAskedWithinTheLimit) {
  Bench bench;
  host::BringUpOptions options;
  options.io_queues = 3;
  bench.bring_up(0, options, {});
  EXPECT_EQ(bench.driver().info().io_sqs_granted, 3u);
  // Get Features reports the grant (zero-based, NCQA 31:16, NSQA 15:0).
  const CompletionEntry got = bench.admin(0, make_get_features(0, FeatureId::NumberOfQueues));
  EXPECT_TRUE(got.ok());
  EXPECT_EQ(got.dw0, (2u << 16) | 2u);
  // Queue 4 is beyond the grant.
  const std::uint64_t base = bench.driver().allocate(host::QueuePlacement::host, 4096);
  EXPECT_EQ(create_cq(bench, 4, 64, base), Status::InvalidQueueIdentifier);
  EXPECT_EQ(create_cq(bench, 3, 64, base), Status::Success);
}

// CSTS.RDY follows CC.EN after ready_delay_us: everything before the enable
// is identical, so a longer delay moves the ready time by the difference.
TEST(ControllerSetup, ReadyFollowsEnableAfterTheDelay) {
  Picoseconds ready[2];
  Picoseconds done[2];
  const double delays_us[2] = {50.0, 500.0};
  for (int i = 0; i < 2; ++i) {
    Bench bench({"samsung-pm1743", {{"ready_delay_us", delays_us[i]}}});
    bool up = false;
    bench.driver().bring_up({}, [&] { up = true; });
    bench.run();
    ASSERT_TRUE(up);
    ready[i] = bench.ssd().ready_at();
    done[i] = Simulation::now();
    EXPECT_TRUE(bench.ssd().ready());
  }
  EXPECT_EQ(ready[1] - ready[0], us_to_ps(450.0));
  // The driver polls CSTS every microsecond, so it sees RDY within one poll
  // interval and one MMIO read of the later ready time.
  const auto shift = static_cast<std::int64_t>(done[1] - done[0]);
  EXPECT_GE(shift, static_cast<std::int64_t>(us_to_ps(450.0)) - 1'000'000 - 2'000'000);
  EXPECT_LE(shift, static_cast<std::int64_t>(us_to_ps(450.0)) + 1'000'000 + 2'000'000);
}

TEST(ControllerSetup, UnsupportedArbitrationSetsFatalStatus) {
  Bench bench;  // the profile does not offer weighted round robin
  host::BringUpOptions options;
  options.weighted_round_robin = true;
  // The driver checks CAP.AMS first and refuses.
  EXPECT_ANY_THROW(bench.bring_up(0, options, {}));
}

TEST(ControllerSetup, AdminCommandErrorsCarryTheSpecStatus) {
  Bench bench({"samsung-pm1743", {{"mqes", 1024}}});
  host::BringUpOptions options;
  options.io_queues = 4;
  bench.bring_up(0, options, {});
  host::NvmeDriver& driver = bench.driver();
  const std::uint64_t cq = driver.allocate(host::QueuePlacement::host, 1024 * 16);
  const std::uint64_t sq = driver.allocate(host::QueuePlacement::host, 1024 * 64);

  // Create I/O CQ (1.4, 5.3).
  EXPECT_EQ(create_cq(bench, 0, 64, cq), Status::InvalidQueueIdentifier);
  EXPECT_EQ(create_cq(bench, 5, 64, cq), Status::InvalidQueueIdentifier);
  EXPECT_EQ(create_cq(bench, 1, 1025, cq), Status::InvalidQueueSize);  // above MQES + 1
  EXPECT_EQ(create_cq(bench, 1, 1, cq), Status::InvalidQueueSize);     // QSIZE 0
  EXPECT_EQ(create_cq(bench, 1, 64, cq, /*contiguous=*/false), Status::InvalidFieldInCommand);
  EXPECT_EQ(create_cq(bench, 1, 64, cq + 64), Status::PrpOffsetInvalid);
  EXPECT_EQ(create_cq(bench, 1, 64, cq, true, true, 4000), Status::InvalidInterruptVector);
  EXPECT_EQ(create_cq(bench, 1, 64, 0x10), Status::PrpOffsetInvalid);
  EXPECT_EQ(create_cq(bench, 1, 64, 1ull << 60), Status::InvalidFieldInCommand);  // unmapped
  EXPECT_EQ(create_cq(bench, 1, 1024, cq), Status::Success);
  EXPECT_EQ(create_cq(bench, 1, 64, cq), Status::InvalidQueueIdentifier);  // exists
  // Status type and code as the CQE carries them: SCT 1h, SC 01h.
  const CompletionEntry dup = bench.admin(0, make_create_io_cq(0, 1, 64, cq, true, false, 0));
  EXPECT_EQ(dup.sct(), StatusCodeType::CommandSpecific);
  EXPECT_EQ(dup.sc(), 0x01);

  // Create I/O SQ (1.4, 5.4).
  EXPECT_EQ(create_sq(bench, 1, 64, sq, 2), Status::CompletionQueueInvalid);
  EXPECT_EQ(create_sq(bench, 1, 64, sq, 0), Status::CompletionQueueInvalid);
  EXPECT_EQ(create_sq(bench, 9, 64, sq, 1), Status::InvalidQueueIdentifier);
  EXPECT_EQ(create_sq(bench, 1, 2048, sq, 1), Status::InvalidQueueSize);
  EXPECT_EQ(create_sq(bench, 1, 1024, sq, 1), Status::Success);

  // Number of Queues only before any I/O queue exists (5.21.1.7).
  EXPECT_EQ(bench.admin(0, make_set_features_num_queues(0, 7, 7)).status(),
            Status::CommandSequenceError);

  // Delete (5.5, 5.6): a CQ with an SQ bound to it stays.
  EXPECT_EQ(bench.admin(0, make_delete_io_cq(0, 1)).status(), Status::InvalidQueueDeletion);
  EXPECT_EQ(bench.admin(0, make_delete_io_sq(0, 3)).status(), Status::InvalidQueueIdentifier);
  EXPECT_EQ(bench.admin(0, make_delete_io_sq(0, 0)).status(), Status::InvalidQueueIdentifier);
  EXPECT_EQ(bench.admin(0, make_delete_io_sq(0, 1)).status(), Status::Success);
  EXPECT_EQ(bench.admin(0, make_delete_io_cq(0, 1)).status(), Status::Success);
  EXPECT_EQ(bench.admin(0, make_delete_io_cq(0, 1)).status(), Status::InvalidQueueIdentifier);

  // Features.
  EXPECT_EQ(bench.admin(0, make_set_features_num_queues(0, 0xFFFF, 3)).status(),
            Status::InvalidFieldInCommand);
  EXPECT_EQ(bench.admin(0, make_set_features(0, FeatureId::Arbitration, 0, /*save=*/true)).status(),
            Status::FeatureIdentifierNotSaveable);
  EXPECT_EQ(bench.admin(0, make_set_features(0, FeatureId::PowerManagement, 0)).status(),
            Status::InvalidFieldInCommand);
  // Other commands.
  SubmissionEntry vendor{};
  vendor.set_opcode(0xC1);
  EXPECT_EQ(bench.admin(0, vendor).status(), Status::InvalidCommandOpcode);
  EXPECT_EQ(bench.admin(0, make_doorbell_buffer_config(0, cq, sq)).status(),
            Status::InvalidCommandOpcode);  // shadow doorbells not offered
  const std::uint64_t page = driver.allocate(host::QueuePlacement::host, 4096);
  EXPECT_EQ(bench.admin(0, make_identify(0, static_cast<IdentifyCns>(0x10), 0, page)).status(),
            Status::InvalidFieldInCommand);
  EXPECT_EQ(bench.admin(0, make_identify(0, IdentifyCns::Namespace, 2, page)).status(),
            Status::InvalidNamespaceOrFormat);
  EXPECT_EQ(bench.admin(0, make_identify(0, IdentifyCns::Controller, 0, page + 2)).status(),
            Status::PrpOffsetInvalid);
  SubmissionEntry sgl_admin = make_identify(0, IdentifyCns::Controller, 0, page);
  sgl_admin.set_sgl1(make_sgl_data_block(page, 4096));
  EXPECT_EQ(bench.admin(0, sgl_admin).status(), Status::InvalidFieldInCommand);
  // Abort is accepted and reports that nothing was aborted (DW0 bit 0).
  const CompletionEntry abort = bench.admin(0, make_abort(0, 1, 7));
  EXPECT_TRUE(abort.ok());
  EXPECT_EQ(abort.dw0 & 1u, 1u);
  bench.ssd().check_drained();
}

// An Asynchronous Event Request waits for an event; the model raises none,
// so it stays outstanding without counting as a lost command.
TEST(ControllerSetup, AsynchronousEventRequestIsHeld) {
  Bench bench;
  bench.bring_up(0, {}, {});
  SubmissionEntry aer{};
  aer.set_opcode(static_cast<std::uint8_t>(AdminOpcode::AsynchronousEventRequest));
  bool completed = false;
  bench.driver().admin(aer, [&](const CompletionEntry&) { completed = true; });
  bench.run();
  EXPECT_FALSE(completed);
  EXPECT_NO_THROW(bench.ssd().check_drained());
}

}  // namespace
}  // namespace gpunvme::nvme::testing
