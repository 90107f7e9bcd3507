// The graft exception family. Every error names the operation, and where it applies the shapes and
// dtypes involved, so that a user can find the offending line without a debugger.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace graft {

/// Root of every exception graft throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

/// Operands whose shapes do not fit the operation (e.g. `add` of f32[3] and f32[4]).
class ShapeError : public Error {
  using Error::Error;
};

/// Operands whose dtypes do not fit the operation (e.g. `sin` of an i32 array).
class TypeError : public Error {
  using Error::Error;
};

/// An argument value out of its domain (bad axis, negative size, out-of-range index).
class ValueError : public Error {
  using Error::Error;
};

/// A traced (abstract) value was used where a concrete one is needed, e.g. `if (x > 0)` under jit.
class ConcretizationError : public Error {
  using Error::Error;
};

/// A tracer escaped the transformation that created it and was used after it ended.
class TracerLeakError : public Error {
  using Error::Error;
};

/// A file that cannot be read or written, or whose contents are malformed (corrupt, truncated).
class IOError : public Error {
  using Error::Error;
};

/// Tracing nested too deeply: a function that calls itself through cond, while_loop, scan or jit is
/// traced forever (both branches of a cond are traced); write it as graft::Recursive instead.
class RecursionError : public Error {
  using Error::Error;
};

/// A NaN or infinity where GRAFT_DEBUG_NANS / GRAFT_DEBUG_INFS asked that there be none (names the
/// primitive that produced it).
class FloatingPointError : public Error {
  using Error::Error;
};

/// Memory could not be allocated (the request is named, with its size).
class MemoryError : public Error {
  using Error::Error;
};

/// A feature that exists in the design but is not available in this build or context.
class NotImplementedError : public Error {
  using Error::Error;
};

namespace detail {
template <class... A>
std::string cat(A&&... a) {
  std::ostringstream os;
  (os << ... << std::forward<A>(a));
  return os.str();
}
}  // namespace detail

/// Throws E with the streamed message: `fail<ShapeError>("add: shapes ", a, " and ", b)`.
template <class E = Error, class... A>
[[noreturn]] void fail(A&&... a) {
  throw E(detail::cat(std::forward<A>(a)...));
}

/// Checks a condition and throws E with the streamed message when it does not hold.
#define GRAFT_CHECK(cond, E, ...)            \
  do {                                       \
    if (!(cond)) ::graft::fail<E>(__VA_ARGS__); \
  } while (0)

}  // namespace graft
