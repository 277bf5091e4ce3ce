#include "models/nvme/batch_notifier.h"

#include <algorithm>
#include <utility>

#include "sim/core/protocol/nvme_batch_completion.h"

namespace gpunvme::nvme {

BatchNotifier::BatchNotifier(std::uint32_t max_completions, Picoseconds window, BatchHooks hooks)
    : max_completions_(std::max<std::uint32_t>(max_completions, 1)),
      window_(window),
      hooks_(std::move(hooks)) {}

void BatchNotifier::open(std::uint16_t cqid, std::uint64_t bitmap, std::uint32_t words) {
  Area area;
  area.bitmap = bitmap;
  area.words.assign(words, 0u);
  area.open_id = next_id_++;
  areas_[cqid] = std::move(area);
}

void BatchNotifier::close(std::uint16_t cqid) { areas_.erase(cqid); }

void BatchNotifier::reset() { areas_.clear(); }

void BatchNotifier::complete(std::uint16_t cqid, const CompletionEntry& entry) {
  auto found = areas_.find(cqid);
  const std::uint32_t word = batch_bitmap_word(entry.cid);
  if (found == areas_.end() || !entry.ok() || word >= found->second.words.size()) {
    hooks_.post_entry(cqid, entry);
    return;
  }
  Area& area = found->second;
  area.words[word] ^= batch_bitmap_bit(entry.cid);
  ++bitmap_completions_;
  if (area.pending == 0) {
    area.low = area.high = word;
  } else {
    area.low = std::min(area.low, word);
    area.high = std::max(area.high, word);
  }
  ++area.pending;
  if (area.pending >= max_completions_ || window_ == 0) {
    post_batch(cqid, area);
    return;
  }
  if (area.pending == 1) {
    // The batch's window opens with its first completion.
    const std::uint64_t window_id = next_id_++;
    area.window_id = window_id;
    hooks_.schedule_at(hooks_.now() + window_, [this, cqid, window_id] {
      auto it = areas_.find(cqid);
      if (it == areas_.end() || it->second.window_id != window_id || it->second.pending == 0) {
        return;
      }
      post_batch(cqid, it->second);
    });
  }
}

void BatchNotifier::post_batch(std::uint16_t cqid, Area& area) {
  area.writes.push_back(
      Area::Write{area.low, std::vector<std::uint32_t>(area.words.begin() + area.low,
                                                       area.words.begin() + area.high + 1)});
  area.pending = 0;
  area.window_id = 0;  // a window timer still running finds nothing to post
  ++batches_;
  // Later batches of the CQ never land before earlier ones: a word they
  // share must end with the newer value.
  const Picoseconds done = std::max(hooks_.book_firmware(hooks_.now()), area.last_write_at);
  area.last_write_at = done;
  const std::uint64_t open_id = area.open_id;
  hooks_.schedule_at(done, [this, cqid, open_id] { write_oldest(cqid, open_id); });
}

void BatchNotifier::write_oldest(std::uint16_t cqid, std::uint64_t open_id) {
  auto it = areas_.find(cqid);
  if (it == areas_.end() || it->second.open_id != open_id || it->second.writes.empty()) return;
  Area& area = it->second;
  const Area::Write write = std::move(area.writes.front());
  area.writes.pop_front();
  const auto bytes = static_cast<std::uint32_t>(write.words.size() * kBatchBitmapWordBytes);
  bitmap_bytes_ += bytes;
  hooks_.write(area.bitmap + std::uint64_t{write.low} * kBatchBitmapWordBytes, bytes,
               write.words.data());
}

}  // namespace gpunvme::nvme
