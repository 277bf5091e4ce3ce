// A page-mapped flash translation layer: the bookkeeping of where each
// mapping unit ("slot", e.g. 4 KiB) of the logical space lives, which
// physical slots hold valid data, and garbage collection. No timing: the
// flash array books the work this reports (programs, the copies and erases
// of garbage collection) on its dies and channels.
//
// Layout. Each array unit (a plane, or a die when planes work together) has
// its own blocks, free-block list and write frontier (its open block);
// garbage collection in a unit picks a victim among that unit's full blocks,
// moves its valid slots to the same unit's frontier and erases it. The
// caller chooses the unit of each host write (the flash array's program
// order), so host data spreads over the units as programs do.
//
// Scale. A drive of a terabyte at 4 KiB slots has a quarter of a billion of
// them; the model holds at most FtlGeometry::max_slots physical slots. When
// the drive has more, the FTL models a sample of it with the same
// over-provisioning ratio and the same number of units: fewer blocks per
// unit (at least kMinModelBlocksPerUnit) and, if that is not enough, fewer
// slots per block. A logical slot s stands for model slot s mod
// logical_slots(). The write amplification of uniform random writes depends
// on the over-provisioning ratio and not on the drive's size, so the sample
// keeps it; erase work per modelled erase is scaled by
// erase_scale() = modelled / real slots per block, which keeps the erase time
// per slot written. A workload confined to a span smaller than the drive is
// represented at its own size, so its share of the modelled drive is larger
// than of the real one by the sampling factor.
//
// Memory: 4 B per modelled logical slot and per physical slot, allocated on
// the first write, trim or preconditioning (reads of never-written data need
// no map: they go to the striped location).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/kernel/params/enum_names.h"

namespace gpunvme::flash {

GPUNVME_ENUM(GcPolicy, greedy, cost_benefit)

const char* to_string(GcPolicy policy);

// Blocks per unit the model keeps at least (smaller blocks if need be), so
// that the free blocks garbage collection holds back stay a small share of
// the over-provisioning.
constexpr std::uint32_t kMinModelBlocksPerUnit = 256;

struct FtlGeometry {
  std::uint32_t units = 1;
  std::uint32_t slots_per_page = 4;     // mapping units per flash page
  std::uint32_t pages_per_block = 256;  // real block
  std::uint64_t logical_slots = 0;      // the drive's logical capacity in slots
  double over_provisioning = 0.07;      // spare physical / logical
  std::uint64_t max_slots = 8u << 20;   // physical slots the model holds at most
  std::uint32_t gc_foreground_free_blocks = 2;
  std::uint32_t gc_background_free_blocks = 4;
  GcPolicy gc_policy = GcPolicy::greedy;
  std::uint32_t min_blocks_per_unit = kMinModelBlocksPerUnit;
};

// The layout derived from an FtlGeometry.
struct FtlLayout {
  std::uint32_t units = 0;
  std::uint32_t blocks_per_unit = 0;
  std::uint32_t slots_per_block = 0;       // modelled
  std::uint32_t real_slots_per_block = 0;  // pages_per_block x slots_per_page
  std::uint64_t logical_slots = 0;         // modelled
  bool sampled = false;                    // fewer slots than the drive
};

// Throws std::invalid_argument when the geometry leaves no room to collect
// garbage (fewer spare blocks per unit than the foreground threshold plus the
// frontier) or is empty.
FtlLayout ftl_layout(const FtlGeometry& g);

// Garbage collection of one victim block.
struct GcJob {
  std::uint32_t unit;
  std::uint32_t moved_slots;  // valid slots copied to the unit's frontier
  bool foreground;            // the host write that triggered it waits for it
};

struct FtlStats {
  std::uint64_t host_slots_written = 0;  // slots the host wrote (partial slots count one)
  std::uint64_t gc_slots_moved = 0;      // valid slots garbage collection copied
  std::uint64_t erases = 0;              // modelled blocks erased
  std::uint64_t gc_victims = 0;
  std::uint64_t foreground_gc = 0;  // victims collected while a host write waited
  std::uint64_t background_gc = 0;
  std::uint64_t trimmed_slots = 0;  // mapped slots a trim invalidated
  // Victims whose every slot was valid, moved to another unit (see collect).
  std::uint64_t gc_cross_unit_victims = 0;
  // (host + moved) / host: programmed slots per host slot.
  double write_amplification() const {
    return host_slots_written == 0 ? 0.0
                                   : static_cast<double>(host_slots_written + gc_slots_moved) /
                                         static_cast<double>(host_slots_written);
  }
};

class Ftl {
 public:
  static constexpr std::uint32_t kUnmapped = 0xFFFFFFFFu;

  explicit Ftl(const FtlGeometry& geometry);

  const FtlLayout& layout() const { return layout_; }
  // Modelled erase work per real block erase (see the file comment).
  double erase_scale() const {
    return static_cast<double>(layout_.slots_per_block) / layout_.real_slots_per_block;
  }
  bool allocated() const { return !map_.empty(); }

  // The model slot a logical slot stands for.
  std::uint64_t model_slot(std::uint64_t logical_slot) const {
    return logical_slot % layout_.logical_slots;
  }
  // Physical slot of a logical slot, or kUnmapped (never written, or trimmed).
  std::uint32_t lookup(std::uint64_t logical_slot) const;

  // Places a host write of one slot in `unit`'s frontier and invalidates its
  // old copy. Garbage collection it triggers in that unit is appended to
  // `jobs`: foreground while the unit has fewer free blocks than the
  // foreground threshold, background (one victim) while it has fewer than the
  // background threshold and `unit_idle` says the unit has no work queued.
  void write(std::uint64_t logical_slot, std::uint32_t unit, bool unit_idle,
             std::vector<GcJob>& jobs);
  // Invalidates the slot's mapping (Dataset Management deallocate).
  void trim(std::uint64_t logical_slot);

  // Sequential fill of the whole logical space, round robin over the units;
  // then, if `random_overwrite`, uniform random overwrites (seeded, so runs
  // are reproducible) in rounds of a quarter of the logical space, at least
  // one physical capacity of them, until the write amplification of a round
  // differs from the previous round's by under 1 % (at most 32 rounds). Counts the work in
  // preconditioning() and starts stats() from zero.
  void precondition(bool random_overwrite);
  const FtlStats& preconditioning() const { return precondition_stats_; }
  // Write amplification of the last round of random overwrites (0 without).
  double preconditioned_write_amplification() const { return precondition_wa_; }

  const FtlStats& stats() const { return stats_; }

  // Inspection for tests.
  std::uint32_t valid_slots(std::uint32_t unit, std::uint32_t block) const;
  std::uint32_t erase_count(std::uint32_t unit, std::uint32_t block) const;
  std::uint32_t free_blocks(std::uint32_t unit) const;
  std::uint32_t open_block(std::uint32_t unit) const { return units_[unit].open; }
  // Unit, block and slot in block of a physical slot.
  std::uint32_t unit_of(std::uint32_t physical) const {
    return physical / (layout_.blocks_per_unit * layout_.slots_per_block);
  }
  std::uint32_t block_of(std::uint32_t physical) const {
    return (physical / layout_.slots_per_block) % layout_.blocks_per_unit;
  }
  std::uint32_t offset_of(std::uint32_t physical) const {
    return physical % layout_.slots_per_block;
  }

 private:
  struct Block {
    std::uint32_t valid = 0;
    std::uint32_t erases = 0;
    std::uint64_t written_at = 0;  // unit's write sequence when last appended to
    bool full = false;
  };
  struct Unit {
    std::vector<std::uint32_t> free;  // block indices, used as a stack
    std::uint32_t open = 0;
    std::uint32_t fill = 0;  // slots written in the open block
    std::uint64_t sequence = 0;
  };

  void allocate();
  std::uint32_t append(std::uint32_t unit, std::uint32_t model_slot);
  void invalidate(std::uint32_t physical);
  std::uint32_t choose_victim(std::uint32_t unit) const;
  std::uint32_t collect(std::uint32_t unit);
  Block& block(std::uint32_t unit, std::uint32_t b) {
    return blocks_[static_cast<std::size_t>(unit) * layout_.blocks_per_unit + b];
  }
  const Block& block(std::uint32_t unit, std::uint32_t b) const {
    return blocks_[static_cast<std::size_t>(unit) * layout_.blocks_per_unit + b];
  }

  FtlGeometry geometry_;
  FtlLayout layout_;
  std::vector<std::uint32_t> map_;      // model logical slot -> physical slot
  std::vector<std::uint32_t> reverse_;  // physical slot -> model logical slot
  std::vector<Block> blocks_;
  std::vector<Unit> units_;
  FtlStats stats_;
  FtlStats precondition_stats_;
  double precondition_wa_ = 0.0;
};

}  // namespace gpunvme::flash
