// A small machine for NVMe controller tests: a CPU socket with host memory
// and a root complex, one or more SSDs on their own links (a device profile
// plus parameter overrides), optionally a GPU, a host driver per SSD, and a
// test host that submits commands from the CPU and consumes completions.
//
// SystemC creates modules only before the first run: build every Bench and
// TestHost first, then bring up, run, submit, run.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "models/host/nvme_driver.h"
#include "models/nvme/controller.h"
#include "sim/core/protocol/nvme.h"
#include "sim/kernel/simulation.h"
#include "sim/system/config/run_config.h"
#include "sim/system/machine/machine.h"
#include "sim/system/run/catalog.h"

namespace gpunvme::nvme::testing {

struct BenchOptions {
  std::string profile = "samsung-pm1743";
  nlohmann::json params = nlohmann::json::object();  // overrides on every SSD
  int gen = 5;
  int width = 4;
  int ssds = 1;
  bool gpu = false;
};

inline nlohmann::json bench_topology(const BenchOptions& o) {
  nlohmann::json nodes =
      nlohmann::json::array({{{"id", "cpu0"}, {"kind", "cpu"}},
                             {{"id", "dram0"}, {"kind", "host_memory"}, {"socket", "cpu0"}},
                             {{"id", "rc0"}, {"kind", "root_complex"}, {"socket", "cpu0"}}});
  nlohmann::json links = nlohmann::json::array();
  for (int k = 0; k < o.ssds; ++k) {
    nlohmann::json ssd = {
        {"id", "ssd" + std::to_string(k)}, {"kind", "nvme_ssd"}, {"profile", o.profile}};
    for (const auto& [key, value] : o.params.items()) ssd[key] = value;
    nodes.push_back(ssd);
    links.push_back(
        {{"from", "rc0"}, {"to", "ssd" + std::to_string(k)}, {"gen", o.gen}, {"width", o.width}});
  }
  if (o.gpu) {
    nodes.push_back({{"id", "gpu0"}, {"kind", "gpu"}});
    links.push_back({{"from", "rc0"}, {"to", "gpu0"}, {"gen", 5}, {"width", 16}});
  }
  return {{"name", "nvme-bench"}, {"nodes", nodes}, {"links", links}};
}

class Bench {
 public:
  explicit Bench(const BenchOptions& options = {})
      : topology_(resolve_topology(catalog(), bench_topology(options), "nvme-bench.json")),
        machine_(topology_) {
    cpu_ = machine_.node_index("cpu0");
    dram_ = machine_.node_index("dram0");
    gpu::Gpu* gpu = options.gpu ? &machine_.gpu("gpu0") : nullptr;
    for (int k = 0; k < options.ssds; ++k) {
      drivers_.push_back(std::make_unique<host::NvmeDriver>(("driver" + std::to_string(k)).c_str(),
                                                            ssd(k), machine_.fabric(),
                                                            machine_.memory(), cpu_, dram_, gpu));
    }
  }

  void run(Picoseconds limit = 0) { simulation_.run(limit); }
  Machine& machine() { return machine_; }
  MemorySpace& memory() { return machine_.memory(); }
  nvme::Controller& ssd(int k = 0) { return machine_.ssd("ssd" + std::to_string(k)); }
  host::NvmeDriver& driver(int k = 0) { return *drivers_[k]; }
  std::size_t cpu_node() const { return cpu_; }
  const TopologyConfig& topology() const { return topology_; }

  // Brings SSD k up and creates `specs`; runs the simulation until done.
  std::vector<host::IoQueue> bring_up(int k, const host::BringUpOptions& options,
                                      std::vector<host::IoQueueSpec> specs) {
    std::vector<host::IoQueue> created;
    driver(k).bring_up(options, nullptr);
    if (!specs.empty()) {
      driver(k).create_io_queues(std::move(specs),
                                 [&](std::vector<host::IoQueue> q) { created = std::move(q); });
    }
    run();
    return created;
  }
  host::IoQueue bring_up_one(std::uint32_t entries, std::uint16_t io_queues = 1,
                             host::QueuePlacement placement = host::QueuePlacement::host) {
    host::BringUpOptions options;
    options.io_queues = io_queues;
    host::IoQueueSpec spec;
    spec.entries = entries;
    spec.placement = placement;
    auto created = bring_up(0, options, {spec});
    EXPECT_EQ(created.size(), 1u);
    EXPECT_EQ(created.at(0).status, Status::Success) << status_name(created.at(0).status);
    return created.at(0);
  }

  // Runs one admin command to completion.
  CompletionEntry admin(int k, const SubmissionEntry& sqe) {
    CompletionEntry result{};
    bool done = false;
    driver(k).admin(sqe, [&](const CompletionEntry& c) {
      result = c;
      done = true;
    });
    run();
    EXPECT_TRUE(done);
    return result;
  }

 private:
  Simulation simulation_;  // first: every run gets a fresh SystemC context
  TopologyConfig topology_;
  Machine machine_;
  std::size_t cpu_ = 0;
  std::size_t dram_ = 0;
  std::vector<std::unique_ptr<host::NvmeDriver>> drivers_;
};

// Submits commands to one I/O queue pair from the CPU and consumes its
// completions as they land (the CQ is watched: the host sees an entry the
// moment it is written).
class TestHost : public Component {
 public:
  using Done = std::function<void(const CompletionEntry&, Picoseconds latency)>;

  TestHost(const char* name, Bench& bench)
      : Component(name, ParamValues{}), bench_(bench), memory_(bench.memory()) {}

  void attach(const host::IoQueue& q, int ssd = 0) {
    q_ = q;
    ssd_ = ssd;
    const Region* region = memory_.find(q.sq_base, 64);
    sq_over_pcie_ = region != nullptr && region->kind == RegionKind::ControllerMemoryBuffer;
    sq_ring_ = make_sq_ring(q.entries);
    cq_ = make_cq_consumer(q.entries);
  }
  // Rings the CQ head doorbell only once this many entries are consumed
  // (or the queue runs dry), as hosts that batch head updates do.
  void set_cq_doorbell_batch(std::uint32_t entries) { cq_batch_ = std::max(1u, entries); }
  // Shadow doorbells: the host writes each new tail/head to the shadow
  // buffer and rings the MMIO doorbell only when EventIdx asks for it.
  void use_shadow_doorbells(bool on) { shadow_ = on; }

  // Places `sqe` at the SQ tail (CID = slot unless `keep_cid`) and, with
  // `ring`, rings the tail doorbell. Returns the slot.
  std::uint32_t submit(SubmissionEntry sqe, Done done, bool ring = true, bool keep_cid = false) {
    std::uint32_t slot = 0;
    EXPECT_TRUE(sq_ring_.push(&slot)) << "test host overran its SQ";
    if (!keep_cid) sqe.set_cid(static_cast<std::uint16_t>(slot));
    EXPECT_TRUE(keep_cid || pending_.count(sqe.cid()) == 0)
        << "test host reused CID " << sqe.cid() << " while outstanding";
    const std::uint64_t addr = q_.sq_base + std::uint64_t{slot} * kSqEntrySize;
    if (sq_over_pcie_) {
      bench_.machine().fabric().write(bench_.cpu_node(), addr, kSqEntrySize, &sqe, nullptr);
    } else {
      memory_.write(addr, &sqe, sizeof sqe);
    }
    pending_[sqe.cid()].push_back({std::move(done), now()});
    ++submitted_;
    arm();
    if (ring) ring_sq();
    return slot;
  }

  void ring_sq() {
    const std::uint32_t tail = sq_ring_.tail;
    if (tail == published_tail_) return;
    const std::uint32_t old = published_tail_;
    published_tail_ = tail;
    if (shadow_) {
      auto& drv = bench_.driver(ssd_);
      memory_.store<std::uint32_t>(drv.shadow_doorbell(DoorbellKind::SqTail, q_.qid), tail);
      const auto event = memory_.load<std::uint32_t>(drv.event_idx(DoorbellKind::SqTail, q_.qid));
      if (!need_event(static_cast<std::uint16_t>(event), static_cast<std::uint16_t>(tail),
                      static_cast<std::uint16_t>(old))) {
        return;
      }
    }
    ++mmio_doorbells_;
    bench_.machine().fabric().write(bench_.cpu_node(), q_.sq_doorbell, 4, &tail, nullptr);
  }

  std::uint32_t free_slots() const { return sq_ring_.free_slots(); }
  // The next slot is free in the SQ and its CID (= slot) is not outstanding:
  // the SQ head can pass an entry before its completion has been seen.
  bool can_submit() const {
    return sq_ring_.free_slots() > 0 &&
           pending_.count(static_cast<std::uint16_t>(sq_ring_.tail)) == 0;
  }
  std::uint64_t submitted() const { return submitted_; }
  std::uint64_t completed() const { return completed_; }
  std::uint64_t mmio_doorbells() const { return mmio_doorbells_; }
  std::uint64_t cq_doorbells() const { return cq_doorbells_; }
  std::uint32_t outstanding() const { return static_cast<std::uint32_t>(submitted_ - completed_); }
  const host::IoQueue& queue() const { return q_; }

 private:
  struct Pending {
    Done done;
    Picoseconds submitted_at;
  };

  void arm() {
    if (watch_ != 0 || outstanding() == 0) return;
    // Entries land in order: the host polls the entry at its head.
    watch_ =
        memory_.watch(q_.cq_base + std::uint64_t{cq_.head} * kCqEntrySize, kCqEntrySize, [this] {
          watch_ = 0;
          drain();
        });
  }

  void drain() {
    bool consumed = false;
    for (;;) {
      const std::uint64_t addr = q_.cq_base + std::uint64_t{cq_.head} * kCqEntrySize;
      const auto cqe = memory_.load<CompletionEntry>(addr);
      if (!cq_.is_new(cqe)) break;
      consumed = true;
      cq_.advance();
      EXPECT_EQ(cqe.sqid, q_.qid);
      EXPECT_TRUE(sq_ring_.set_head(cqe.sqhd)) << "SQHD " << cqe.sqhd << " passes the tail";
      auto it = pending_.find(cqe.cid);
      if (it == pending_.end() || it->second.empty()) {
        ADD_FAILURE() << "completion for CID " << cqe.cid << " that is not outstanding";
        continue;
      }
      Pending p = std::move(it->second.front());
      it->second.erase(it->second.begin());
      if (it->second.empty()) pending_.erase(it);
      ++completed_;
      if (p.done) p.done(cqe, now() - p.submitted_at);
    }
    if (consumed &&
        (ring_occupied(published_head_, cq_.head, q_.entries) >= cq_batch_ || outstanding() == 0)) {
      const std::uint32_t head = cq_.head;
      const std::uint32_t old = published_head_;
      published_head_ = head;
      if (shadow_) {
        auto& drv = bench_.driver(ssd_);
        memory_.store<std::uint32_t>(drv.shadow_doorbell(DoorbellKind::CqHead, q_.qid), head);
        const auto event = memory_.load<std::uint32_t>(drv.event_idx(DoorbellKind::CqHead, q_.qid));
        if (need_event(static_cast<std::uint16_t>(event), static_cast<std::uint16_t>(head),
                       static_cast<std::uint16_t>(old))) {
          ++cq_doorbells_;
          bench_.machine().fabric().write(bench_.cpu_node(), q_.cq_doorbell, 4, &head, nullptr);
        }
      } else {
        ++cq_doorbells_;
        bench_.machine().fabric().write(bench_.cpu_node(), q_.cq_doorbell, 4, &head, nullptr);
      }
    }
    arm();
  }

  Bench& bench_;
  MemorySpace& memory_;
  host::IoQueue q_{};
  int ssd_ = 0;
  bool sq_over_pcie_ = false;
  bool shadow_ = false;
  SqRing sq_ring_{2, 0, 0};
  CqConsumer cq_{2, 0, 1};
  std::uint32_t published_tail_ = 0;
  std::uint32_t published_head_ = 0;
  std::uint32_t cq_batch_ = 1;
  std::map<std::uint16_t, std::vector<Pending>> pending_;
  MemorySpace::WatchId watch_ = 0;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  std::uint64_t mmio_doorbells_ = 0;
  std::uint64_t cq_doorbells_ = 0;
};

// A closed loop of `total` commands at queue depth `depth`: each completion
// submits the next. Throughput is taken between the completions at 10 % and
// 90 % of the run, away from ramp-up and drain.
struct LoopResult {
  double iops = 0;
  double mean_latency_ns = 0;
  std::uint64_t completed = 0;
  std::uint64_t errors = 0;
};

inline LoopResult closed_loop(Bench& bench, TestHost& host, std::uint32_t depth,
                              std::uint64_t total,
                              const std::function<SubmissionEntry(std::uint64_t)>& make) {
  LoopResult result;
  std::vector<Picoseconds> done_at;
  std::vector<Picoseconds> latencies;
  done_at.reserve(total);
  latencies.reserve(total);
  std::uint64_t issued = 0;
  std::function<void()> issue;
  issue = [&] {
    const std::uint64_t i = issued++;
    host.submit(make(i), [&](const CompletionEntry& cqe, Picoseconds latency) {
      done_at.push_back(Simulation::now());
      latencies.push_back(latency);
      if (!cqe.ok()) ++result.errors;
      if (issued < total) issue();
    });
  };
  for (std::uint32_t d = 0; d < depth && issued < total; ++d) issue();
  bench.run();
  result.completed = done_at.size();
  if (result.completed >= 10) {
    const std::size_t a = result.completed / 10;
    const std::size_t b = result.completed * 9 / 10;
    result.iops = static_cast<double>(b - a) * 1e12 / static_cast<double>(done_at[b] - done_at[a]);
    double sum = 0;
    for (std::size_t i = a; i < b; ++i) sum += ps_to_ns(latencies[i]);
    result.mean_latency_ns = sum / static_cast<double>(b - a);
  }
  return result;
}

}  // namespace gpunvme::nvme::testing
