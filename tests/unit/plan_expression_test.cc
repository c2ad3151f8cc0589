// `coupler plan` on a spec whose filter names a misspelt column: the error is the spec's
// file:line, the field and the place inside the expression, and the exit status is non-zero;
// the same spec spelt right plans.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/run_command.h"

namespace coupler {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(PlanExpressionTest, MisspeltColumnInWhereFailsThePlanWithFileAndLine) {
  const fs::path dir = fs::temp_directory_path() / ("coupler-plan-expr-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "data.csv") << "x0,x1,label\n1,2,0\n";
  auto write_spec = [&](const std::string& where) {
    std::ofstream(dir / "spec.yaml") << "name: plan-expr\n"
                                        "nodes:\n"
                                        "  - id: import\n"
                                        "    op: import_csv\n"
                                        "    inputs: [data.csv]\n"
                                        "    params: {label_column: label}\n"
                                        "  - id: keep\n"
                                        "    op: filter\n"
                                        "    inputs: [import]\n"
                                        "    params:\n"
                                        "      where: \"" << where << "\"\n";
  };
  const std::string spec = (dir / "spec.yaml").string();
  write_spec("x0 > 0 and x9 < 5");
  testing::CommandResult r = testing::RunCoupler({"plan", spec});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err + r.out, HasSubstr(spec + ":11:14: error: node 'keep': field 'params.where': "
                                       "unknown column 'x9' at 1:12 (did you mean 'x0'?)"));
  write_spec("x0 > 0 and x1 < 5");
  r = testing::RunCoupler({"plan", spec});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace coupler
