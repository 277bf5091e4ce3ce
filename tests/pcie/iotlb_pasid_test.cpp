// IOTLB entries tagged by PASID (per-tenant IOMMU domains on one device): the same page in two
// domains is two entries, and the domains share the IOTLB's capacity. Hand-worked LRU cases.
#include <gtest/gtest.h>

#include "models/pcie/iotlb.h"

namespace gpunvme::pcie {
namespace {

TEST(IotlbPasid, OnePageInTwoDomainsIsTwoEntries) {
  Iotlb tlb(4, 4096);
  EXPECT_EQ(tlb.translate(7, 0, 4096, 1), 1u);  // PASID 1: miss
  EXPECT_EQ(tlb.translate(7, 0, 4096, 2), 1u);  // PASID 2, same requester and page: miss
  EXPECT_EQ(tlb.translate(7, 0, 4096, 1), 0u);  // PASID 1 again: hit
  EXPECT_EQ(tlb.translate(7, 0, 4096, 0), 1u);  // no PASID: the requester's own context
  EXPECT_EQ(tlb.lookups(), 4u);
  EXPECT_EQ(tlb.misses(), 3u);
}

TEST(IotlbPasid, DomainsShareTheCapacity) {
  // 4 entries. PASID 1 touches pages 0-3 (4 misses, full); PASID 2 touches pages 0-1 (2 misses,
  // evicting PASID 1's pages 0 and 1). PASID 1 then touches 0-3 again: 0 misses and evicts
  // its own page 2, 1 misses and evicts its page 3, then 2 and 3 miss and evict PASID 2's
  // entries: 4 misses. 10 in all.
  Iotlb tlb(4, 4096);
  EXPECT_EQ(tlb.translate(3, 0, 4 * 4096, 1), 4u);
  EXPECT_EQ(tlb.translate(3, 0, 2 * 4096, 2), 2u);
  EXPECT_EQ(tlb.translate(3, 0, 4 * 4096, 1), 4u);
  EXPECT_EQ(tlb.misses(), 10u);
  // Alone, PASID 1's second pass would have hit every page.
  Iotlb alone(4, 4096);
  alone.translate(3, 0, 4 * 4096, 1);
  EXPECT_EQ(alone.translate(3, 0, 4 * 4096, 1), 0u);
}

}  // namespace
}  // namespace gpunvme::pcie
