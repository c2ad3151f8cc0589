#include "runtime/job/command_placeholders.h"

#include <gtest/gtest.h>

#include <string>

namespace coupler::job {
namespace {

using Context = PlaceholderUse::Context;

// "name:context" per placeholder, for one-line expectations.
std::string Uses(std::string_view command) {
  std::string out;
  for (const PlaceholderUse& u : FindPlaceholders(command)) {
    if (!out.empty()) out += " ";
    out += u.name + ":" + std::string(ContextName(u.context));
  }
  return out;
}

TEST(CommandPlaceholdersTest, FindsIdentifiersInBracesOnly) {
  EXPECT_EQ(Uses("cp {input} {output}.tmp {shard}"),
            "input:unquoted output:unquoted shard:unquoted");
  EXPECT_EQ(Uses("awk '{print $1}' {x_1} {1x} {} { a} {a-b} {{input}} ${HOME}"),
            "x_1:unquoted input:unquoted HOME:unquoted");
  EXPECT_EQ(Uses("awk '{print}' {input}"), "print:inside single quotes input:unquoted");
}

TEST(CommandPlaceholdersTest, ReportsTheShellQuotingAroundEachPlaceholder) {
  EXPECT_EQ(Uses("cat \"{input}\" > '{output}'"),
            "input:inside double quotes output:inside single quotes");
  EXPECT_EQ(Uses("sh -c 'ls {input}' && echo \"a 'b'\" {output}"),
            "input:inside single quotes output:unquoted");
  // Escaped quotes do not open or close anything.
  EXPECT_EQ(Uses("echo \\\" {input} \"say \\\"hi\\\" {output}\" it\\'s {shard}"),
            "input:unquoted output:inside double quotes shard:unquoted");
  EXPECT_EQ(Uses("cat \\{input} \"\\{output}\""),
            "input:right after a backslash output:right after a backslash");
  EXPECT_EQ(Uses("cp {input} {output} # then {shard}\necho {shard} a#{input}"),
            "input:unquoted output:unquoted shard:inside a shell comment shard:unquoted "
            "input:unquoted");
}

TEST(CommandPlaceholdersTest, GivesEachPlaceholdersOffset) {
  const auto uses = FindPlaceholders("ab {input} {output}");
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0].offset, 3u);
  EXPECT_EQ(uses[1].offset, 11u);
  EXPECT_EQ(uses[1].context, Context::kPlain);
}

// Input that makes a backtracking matcher recurse once per character.
TEST(CommandPlaceholdersTest, ReadsMegabytesOfPlaceholderLikeText) {
  const std::string name(1 << 20, 'a');
  const auto closed = FindPlaceholders("{" + name + "}");
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].name.size(), name.size());
  EXPECT_TRUE(FindPlaceholders("{" + name).empty());
  EXPECT_EQ(FindPlaceholders(std::string(1 << 20, '{') + "{input}").size(), 1u);
}

TEST(SubstituteSpecDirTest, ReplacesOnlySpecDirAndQuotesTheFolder) {
  EXPECT_EQ(SubstituteSpecDir("sh {spec_dir}/a.sh {input} {spec_dir}", "/s p/it's"),
            "sh '/s p/it'\\''s'/a.sh {input} '/s p/it'\\''s'");
  EXPECT_EQ(SubstituteSpecDir("no placeholder {{}}", "/x"), "no placeholder {{}}");
  EXPECT_EQ(ShellQuote("a'b"), "'a'\\''b'");
}

}  // namespace
}  // namespace coupler::job
