// Parameter tables (sim/kernel/params/param_table.h) and enum name tables
// (sim/kernel/params/enum_names.h), on a table written for the test: the generated
// ComponentSpec entry of each declaration kind, the typed struct's values and
// unit conversions (worked by hand), and describe's kind prefix.
#include "sim/kernel/params/param_table.h"

#include <gtest/gtest.h>

namespace gpunvme {
namespace {

GPUNVME_ENUM(TestMode, auto_, on, off)

struct TestParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "tests/params/test_params.def"
#undef GPUNVME_PARAM
  static TestParams from(const ParamValues& values) {
    TestParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "tests/params/test_params.def"
#undef GPUNVME_PARAM
    return out;
  }
};

std::vector<ParamSpec> test_specs() {
  return {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "tests/params/test_params.def"
#undef GPUNVME_PARAM
  };
}

TEST(EnumNames, NamesFollowTheEnumeratorsWithoutTheKeywordUnderscore) {
  EXPECT_EQ(enum_choices<TestMode>(), (std::vector<std::string>{"auto", "on", "off"}));
  EXPECT_EQ(enum_name(TestMode::auto_), "auto");
  EXPECT_EQ(enum_name(TestMode::off), "off");
  EXPECT_EQ(enum_from_name<TestMode>("on"), TestMode::on);
  EXPECT_EQ(enum_from_name<TestMode>("auto"), TestMode::auto_);
  EXPECT_FALSE(enum_from_name<TestMode>("auto_").has_value());
  EXPECT_FALSE(enum_from_name<TestMode>("").has_value());
}

TEST(ParamTable, EachEntryBecomesTheSpecItDeclares) {
  const std::vector<ParamSpec> specs = test_specs();
  ASSERT_EQ(specs.size(), 12u);
  EXPECT_EQ(specs[0].name, "count");
  EXPECT_EQ(specs[0].type, ParamType::Integer);
  EXPECT_EQ(specs[0].default_value, 8);
  EXPECT_EQ(*specs[0].min, 1.0);
  EXPECT_EQ(*specs[0].max, 64.0);
  EXPECT_EQ(specs[1].allowed, (std::vector<std::int64_t>{1, 4, 16}));
  EXPECT_EQ(specs[1].unit, "lanes");
  EXPECT_EQ(specs[2].type, ParamType::Real);
  EXPECT_EQ(specs[2].unit, "GB/s");
  // Durations are declared (and described) in their unit.
  EXPECT_EQ(specs[3].type, ParamType::Real);
  EXPECT_EQ(specs[3].unit, "ns");
  EXPECT_EQ(specs[3].default_value, 1.5);
  EXPECT_EQ(specs[4].unit, "us");
  EXPECT_EQ(specs[5].type, ParamType::Boolean);
  EXPECT_EQ(specs[6].type, ParamType::String);
  // An enum's choices are its name table; the default is named.
  EXPECT_EQ(specs[7].type, ParamType::Enum);
  EXPECT_EQ(specs[7].choices, (std::vector<std::string>{"auto", "on", "off"}));
  EXPECT_EQ(specs[7].default_value, "auto");
  EXPECT_EQ(specs[8].choices, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(specs[9].type, ParamType::StringList);
  EXPECT_EQ(specs[9].kinds, (std::vector<std::string>{"alpha"}));
  EXPECT_TRUE(specs[9].condition.empty());
  EXPECT_EQ(specs[10].type, ParamType::RealList);
  EXPECT_EQ(specs[10].kinds, (std::vector<std::string>{"alpha", "beta"}));
  EXPECT_EQ(specs[10].condition, "mode = on");
  EXPECT_EQ(specs[11].type, ParamType::IntegerList);
  EXPECT_TRUE(specs[0].kinds.empty());
}

TEST(ParamTable, TheStructHoldsTypedValuesWithTimesInPicoseconds) {
  const TestParams p = TestParams::from(ParamValues(nlohmann::json{
      {"count", 3},
      {"width", 16},
      {"rate_gbps", 7.25},
      {"delay_ns", 0.0005},    // 0.5 ps rounds up to 1 ps
      {"timeout_us", 0.0012},  // 1.2 ns = 1200 ps
      {"enabled", false},
      {"label", "x"},
      {"mode", "off"},
      {"strategy", "a"},
      {"ids", {"p", "q"}},
      {"weights", {0.25, 1.0}},
      {"order", {3.0, 1.0}},
  }));
  EXPECT_EQ(p.count, 3);
  EXPECT_EQ(p.width, 16);
  EXPECT_EQ(p.rate_gbps, 7.25);
  EXPECT_EQ(p.delay_ns, Picoseconds{1});
  EXPECT_EQ(p.timeout_us, Picoseconds{1200});
  EXPECT_FALSE(p.enabled);
  EXPECT_EQ(p.label, "x");
  EXPECT_EQ(p.mode, TestMode::off);
  EXPECT_EQ(p.strategy, "a");
  EXPECT_EQ(p.ids, (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(p.weights, (std::vector<double>{0.25, 1.0}));
  EXPECT_EQ(p.order, (std::vector<std::int64_t>{3, 1}));
}

TEST(ParamTable, AFieldTheValuesDoNotHoldReadsAsItsDefault) {
  // A scenario keeps only its kind's fields; the others read as declared.
  const TestParams p = TestParams::from(ParamValues(nlohmann::json::object()));
  EXPECT_EQ(p.count, 8);
  EXPECT_EQ(p.delay_ns, Picoseconds{1500});
  EXPECT_EQ(p.timeout_us, Picoseconds{2'500'000});
  EXPECT_EQ(p.mode, TestMode::auto_);
  EXPECT_EQ(p.ids, (std::vector<std::string>{"x"}));
  EXPECT_TRUE(p.order.empty());
}

TEST(DescribedDoc, KindsAndConditionComeFirst) {
  const std::vector<ParamSpec> specs = test_specs();
  EXPECT_EQ(described_doc(specs[0]), "a count");
  EXPECT_EQ(described_doc(specs[9]), "(alpha) ids");
  // With several kinds the condition follows a semicolon, with one a comma.
  EXPECT_EQ(described_doc(specs[10]), "(alpha, beta; mode = on) weights");
  EXPECT_EQ(described_doc(specs[11]), "(beta, x > 1) an order");
}

}  // namespace
}  // namespace gpunvme
