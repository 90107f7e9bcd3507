// graft's settings from the environment (GRAFT_*), read and validated in one place: a value that is
// malformed or out of range raises graft::ValueError naming the variable, what it holds and what it
// takes, instead of being read as 0 or ignored.
//
//   int n = env::integer("GRAFT_NUM_THREADS", 0, 1, 4096);   // unset -> 0
//   bool on = env::flag("GRAFT_PROFILE");                     // 1/0, true/false, on/off, yes/no
//   std::string m = env::choice("GRAFT_STREAMING_STORES", {"on", "off", "auto"}, "auto");
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace graft::env {

/// The variable's value, or nullopt when it is unset or empty.
std::optional<std::string> get(const char* name);

/// An integer in [lo, hi]; `fallback` when unset. Accepts decimal digits with an optional sign and an
/// optional binary suffix k, M, G (2^10, 2^20, 2^30) for sizes.
int64_t integer(const char* name, int64_t fallback, int64_t lo, int64_t hi);

/// A switch: 1/true/on/yes or 0/false/off/no (any case); `fallback` when unset.
bool flag(const char* name, bool fallback = false);

/// One of `choices` (exactly as spelled); `fallback` when unset.
std::string choice(const char* name, std::initializer_list<const char*> choices, const std::string& fallback);

}  // namespace graft::env
