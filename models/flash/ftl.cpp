#include "models/flash/ftl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace gpunvme::flash {

namespace {

// splitmix64: a small, fully specified generator, so preconditioning gives
// the same state on every platform and library.
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kPreconditionSeed = 0x5EEDF1A5ull;
constexpr int kMaxPreconditionRounds = 32;

}  // namespace

const char* to_string(GcPolicy policy) { return enum_name(policy).c_str(); }

FtlLayout ftl_layout(const FtlGeometry& g) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("ftl: " + what); };
  if (g.units == 0 || g.slots_per_page == 0 || g.pages_per_block == 0 ||
      g.min_blocks_per_unit == 0) {
    fail("empty geometry");
  }
  if (g.logical_slots == 0) fail("no logical capacity");
  if (!(g.over_provisioning > 0)) fail("over-provisioning must be positive");
  if (g.gc_foreground_free_blocks < 2) fail("foreground threshold below 2 free blocks");
  if (g.gc_background_free_blocks < g.gc_foreground_free_blocks) {
    fail("background threshold below the foreground threshold");
  }
  if (g.max_slots == 0 || g.max_slots > std::numeric_limits<std::uint32_t>::max() - 1) {
    fail("max_slots outside 1 .. 2^32 - 2");
  }
  FtlLayout l;
  l.units = g.units;
  l.real_slots_per_block = g.slots_per_page * g.pages_per_block;
  const double ratio = 1.0 + g.over_provisioning;
  const auto physical = static_cast<std::uint64_t>(static_cast<double>(g.logical_slots) * ratio);
  // Per unit: the drive's physical slots, and what the model holds of them.
  const std::uint64_t per_unit_physical = physical / g.units;
  const std::uint64_t per_unit_model = std::min(per_unit_physical, g.max_slots / g.units);
  l.sampled = per_unit_model < per_unit_physical;
  if (per_unit_model / l.real_slots_per_block >= g.min_blocks_per_unit) {
    l.blocks_per_unit = static_cast<std::uint32_t>(per_unit_model / l.real_slots_per_block);
    l.slots_per_block = l.real_slots_per_block;
  } else {
    // Smaller blocks, so that the unit still has min_blocks_per_unit of
    // them: whole pages, so a block holds whole programs.
    const std::uint64_t pages = per_unit_model / g.min_blocks_per_unit / g.slots_per_page;
    if (pages > 0) {
      l.slots_per_block = static_cast<std::uint32_t>(pages * g.slots_per_page);
      l.blocks_per_unit = static_cast<std::uint32_t>(per_unit_model / l.slots_per_block);
    } else {
      l.blocks_per_unit = static_cast<std::uint32_t>(per_unit_model / g.slots_per_page);
      l.slots_per_block = g.slots_per_page;
    }
  }
  if (l.sampled) {
    const std::uint64_t modelled = std::uint64_t{l.units} * l.blocks_per_unit * l.slots_per_block;
    l.logical_slots = static_cast<std::uint64_t>(static_cast<double>(modelled) / ratio);
  } else {
    l.logical_slots = g.logical_slots;
  }
  // Each unit holds an equal share of the logical space and must keep the
  // foreground threshold's free blocks plus its open block beside it.
  const std::uint64_t per_unit_logical = (l.logical_slots + l.units - 1) / l.units;
  const std::uint64_t per_unit_slots = std::uint64_t{l.blocks_per_unit} * l.slots_per_block;
  const std::uint64_t reserve = std::uint64_t{g.gc_foreground_free_blocks + 1} * l.slots_per_block;
  if (l.blocks_per_unit == 0 || per_unit_slots < per_unit_logical + reserve) {
    fail("over-provisioning leaves " +
         std::to_string(per_unit_slots > per_unit_logical
                            ? (per_unit_slots - per_unit_logical) / l.slots_per_block
                            : 0) +
         " spare blocks per unit; garbage collection needs more than " +
         std::to_string(g.gc_foreground_free_blocks + 1));
  }
  return l;
}

Ftl::Ftl(const FtlGeometry& geometry) : geometry_(geometry), layout_(ftl_layout(geometry)) {}

void Ftl::allocate() {
  if (allocated()) return;
  map_.assign(layout_.logical_slots, kUnmapped);
  reverse_.assign(
      static_cast<std::size_t>(layout_.units) * layout_.blocks_per_unit * layout_.slots_per_block,
      kUnmapped);
  blocks_.assign(static_cast<std::size_t>(layout_.units) * layout_.blocks_per_unit, Block{});
  units_.assign(layout_.units, Unit{});
  for (Unit& u : units_) {
    u.free.reserve(layout_.blocks_per_unit);
    // Popped from the back: block 0 opens first.
    for (std::uint32_t b = layout_.blocks_per_unit; b-- > 1;) u.free.push_back(b);
    u.open = 0;
  }
}

std::uint32_t Ftl::lookup(std::uint64_t logical_slot) const {
  if (!allocated()) return kUnmapped;
  return map_[model_slot(logical_slot)];
}

std::uint32_t Ftl::valid_slots(std::uint32_t unit, std::uint32_t b) const {
  return allocated() ? block(unit, b).valid : 0;
}
std::uint32_t Ftl::erase_count(std::uint32_t unit, std::uint32_t b) const {
  return allocated() ? block(unit, b).erases : 0;
}
std::uint32_t Ftl::free_blocks(std::uint32_t unit) const {
  return allocated() ? static_cast<std::uint32_t>(units_[unit].free.size())
                     : layout_.blocks_per_unit - 1;
}

// Appends a slot to the unit's open block and maps it; opens the next free
// block once the open one is full.
std::uint32_t Ftl::append(std::uint32_t unit, std::uint32_t model_slot) {
  Unit& u = units_[unit];
  const std::uint32_t physical =
      (unit * layout_.blocks_per_unit + u.open) * layout_.slots_per_block + u.fill;
  reverse_[physical] = model_slot;
  map_[model_slot] = physical;
  Block& b = block(unit, u.open);
  ++b.valid;
  b.written_at = ++u.sequence;
  if (++u.fill == layout_.slots_per_block) {
    b.full = true;
    if (u.free.empty()) throw std::logic_error("ftl: a unit ran out of free blocks");
    u.open = u.free.back();
    u.free.pop_back();
    u.fill = 0;
  }
  return physical;
}

void Ftl::invalidate(std::uint32_t physical) {
  reverse_[physical] = kUnmapped;
  --block(unit_of(physical), block_of(physical)).valid;
}

std::uint32_t Ftl::choose_victim(std::uint32_t unit) const {
  std::uint32_t best = kUnmapped;
  if (geometry_.gc_policy == GcPolicy::greedy) {
    std::uint32_t fewest = std::numeric_limits<std::uint32_t>::max();
    for (std::uint32_t b = 0; b < layout_.blocks_per_unit; ++b) {
      const Block& blk = block(unit, b);
      if (blk.full && blk.valid < fewest) {
        fewest = blk.valid;
        best = b;
      }
    }
    return best;
  }
  // Cost-benefit (Rosenblum and Ousterhout's LFS cleaner, Kawaguchi et al.'s
  // flash file system): benefit / cost = (1 - u) * age / (2u), u the valid
  // share; age is the unit's writes since the block was last appended to.
  const std::uint64_t now = units_[unit].sequence;
  double top = -1.0;
  for (std::uint32_t b = 0; b < layout_.blocks_per_unit; ++b) {
    const Block& blk = block(unit, b);
    if (!blk.full) continue;
    if (blk.valid == 0) return b;
    const double u = static_cast<double>(blk.valid) / layout_.slots_per_block;
    const double age = static_cast<double>(now - blk.written_at);
    const double score = (1.0 - u) * age / (2.0 * u);
    if (score > top || (score == top && blk.valid < block(unit, best).valid)) {
      top = score;
      best = b;
    }
  }
  return best;
}

// Moves the victim's valid slots to the unit's frontier and erases it.
// Returns the slots moved.
std::uint32_t Ftl::collect(std::uint32_t unit) {
  const std::uint32_t victim = choose_victim(unit);
  if (victim == kUnmapped) throw std::logic_error("ftl: no full block to collect");
  Block& v = block(unit, victim);
  // Host writes are spread round robin while overwrites invalidate data
  // wherever it lies, so one unit's valid data can drift above its share
  // until every full block of it is valid. Collecting in place would then
  // free nothing; the victim's data moves to the unit with the most free
  // blocks instead (its time is still booked on the victim's unit).
  std::uint32_t destination = unit;
  if (v.valid == layout_.slots_per_block) {
    std::size_t most_free = 0;
    for (std::uint32_t other = 0; other < layout_.units; ++other) {
      if (other != unit && units_[other].free.size() > most_free) {
        most_free = units_[other].free.size();
        destination = other;
      }
    }
    // Moving one block's slots opens at most two blocks there.
    if (destination == unit || most_free < 2) {
      throw std::logic_error("ftl: every block is valid and no other unit has room");
    }
    ++stats_.gc_cross_unit_victims;
  }
  std::uint32_t moved = 0;
  const std::uint32_t base = (unit * layout_.blocks_per_unit + victim) * layout_.slots_per_block;
  for (std::uint32_t i = 0; i < layout_.slots_per_block && v.valid > 0; ++i) {
    const std::uint32_t logical = reverse_[base + i];
    if (logical == kUnmapped) continue;
    invalidate(base + i);
    append(destination, logical);
    ++moved;
  }
  v.full = false;
  ++v.erases;
  units_[unit].free.insert(units_[unit].free.begin(), victim);  // used last: wear spreads
  ++stats_.erases;
  ++stats_.gc_victims;
  stats_.gc_slots_moved += moved;
  return moved;
}

void Ftl::write(std::uint64_t logical_slot, std::uint32_t unit, bool unit_idle,
                std::vector<GcJob>& jobs) {
  allocate();
  const auto slot = static_cast<std::uint32_t>(model_slot(logical_slot));
  const std::uint32_t old = map_[slot];
  if (old != kUnmapped) invalidate(old);
  append(unit, slot);
  ++stats_.host_slots_written;
  Unit& u = units_[unit];
  while (u.free.size() < geometry_.gc_foreground_free_blocks) {
    ++stats_.foreground_gc;
    jobs.push_back(GcJob{unit, collect(unit), true});
  }
  if (unit_idle && u.free.size() < geometry_.gc_background_free_blocks) {
    ++stats_.background_gc;
    jobs.push_back(GcJob{unit, collect(unit), false});
  }
}

void Ftl::trim(std::uint64_t logical_slot) {
  allocate();
  const auto slot = static_cast<std::uint32_t>(model_slot(logical_slot));
  const std::uint32_t old = map_[slot];
  if (old == kUnmapped) return;
  invalidate(old);
  map_[slot] = kUnmapped;
  ++stats_.trimmed_slots;
}

void Ftl::precondition(bool random_overwrite) {
  allocate();
  std::vector<GcJob> jobs;
  std::uint32_t unit = 0;
  auto next_unit = [&] {
    const std::uint32_t u = unit;
    unit = (unit + 1) % layout_.units;
    return u;
  };
  for (std::uint64_t s = 0; s < layout_.logical_slots; ++s) {
    write(s, next_unit(), false, jobs);
    jobs.clear();
  }
  if (random_overwrite) {
    const std::uint64_t round = std::max<std::uint64_t>(1, layout_.logical_slots / 4);
    const std::uint64_t physical =
        std::uint64_t{layout_.units} * layout_.blocks_per_unit * layout_.slots_per_block;
    const std::uint64_t min_rounds = (physical + round - 1) / round;
    std::uint64_t rng = kPreconditionSeed;
    double previous = 0.0;
    for (int r = 0; r < kMaxPreconditionRounds; ++r) {
      const std::uint64_t host0 = stats_.host_slots_written;
      const std::uint64_t moved0 = stats_.gc_slots_moved;
      for (std::uint64_t i = 0; i < round; ++i) {
        write(splitmix64(rng) % layout_.logical_slots, next_unit(), false, jobs);
        jobs.clear();
      }
      const double wa =
          static_cast<double>(stats_.host_slots_written - host0 + stats_.gc_slots_moved - moved0) /
          static_cast<double>(stats_.host_slots_written - host0);
      precondition_wa_ = wa;
      if (static_cast<std::uint64_t>(r + 1) >= min_rounds &&
          std::abs(wa - previous) < 0.01 * previous) {
        break;
      }
      previous = wa;
    }
  }
  precondition_stats_ = stats_;
  stats_ = FtlStats{};
}

}  // namespace gpunvme::flash
