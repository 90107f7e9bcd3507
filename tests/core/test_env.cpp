// GRAFT_* environment settings: parsed strictly, with errors that name the variable.
#include <cstdlib>

#include "testing.h"
#include "graft/core/env.h"

namespace graft {
namespace {
using namespace graft::testing;

struct EnvVar {
  const char* name;
  EnvVar(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~EnvVar() { unsetenv(name); }
};

TEST(Env, IntegersAreParsedStrictly) {
  EXPECT_EQ(env::integer("GRAFT_TEST_INT", 7, 0, 100), 7);  // unset
  {
    EnvVar v("GRAFT_TEST_INT", "42");
    EXPECT_EQ(env::integer("GRAFT_TEST_INT", 7, 0, 100), 42);
  }
  {
    EnvVar v("GRAFT_TEST_INT", "4k");
    EXPECT_EQ(env::integer("GRAFT_TEST_INT", 0, 0, 1 << 20), 4096);
  }
  {
    EnvVar v("GRAFT_TEST_INT", "-3");
    EXPECT_EQ(env::integer("GRAFT_TEST_INT", 0, -5, 5), -3);
  }
  for (const char* bad : {"abc", "12abc", "1.5", " 3", "3 ", "101", "-1", "99999999999999999999", "8Z", "4kk", "+"}) {
    EnvVar v("GRAFT_TEST_INT", bad);
    expect_throws<ValueError>([] { env::integer("GRAFT_TEST_INT", 0, 0, 100); }, "GRAFT_TEST_INT='");
  }
  EnvVar big("GRAFT_TEST_INT", "9000000000000G");  // overflows when scaled
  expect_throws<ValueError>([] { env::integer("GRAFT_TEST_INT", 0, 0, INT64_MAX); }, "not an integer");
}

TEST(Env, FlagsAndChoices) {
  EXPECT_TRUE(env::flag("GRAFT_TEST_FLAG", true));
  for (const char* on : {"1", "true", "ON", "yes"}) {
    EnvVar v("GRAFT_TEST_FLAG", on);
    EXPECT_TRUE(env::flag("GRAFT_TEST_FLAG"));
  }
  for (const char* off : {"0", "False", "off", "no"}) {
    EnvVar v("GRAFT_TEST_FLAG", off);
    EXPECT_FALSE(env::flag("GRAFT_TEST_FLAG", true));
  }
  {
    EnvVar v("GRAFT_TEST_FLAG", "2");
    expect_throws<ValueError>([] { env::flag("GRAFT_TEST_FLAG"); }, "is not a switch");
  }
  EnvVar v("GRAFT_TEST_CHOICE", "sideways");
  expect_throws<ValueError>([] { env::choice("GRAFT_TEST_CHOICE", {"on", "off"}, "on"); }, "not one of: on, off");
}

TEST(Env, GraftSettingsAreValidated) {
  // a malformed setting raises an error naming it where it is read, instead of being taken as 0
  EnvVar v("GRAFT_LOG_COMPILES", "maybe");
  expect_throws<ValueError>([] { jit([](const Array& x) { return x * 3.0; })(array({1.0f})); }, "GRAFT_LOG_COMPILES");
}

}  // namespace
}  // namespace graft
