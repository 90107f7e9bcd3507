// BatchTrace: vmap. A tracer carries (value, batch dim); values without a batch dim are constants
// to the trace and stay unbatched.
#pragma once

#include <utility>

#include "graft/core/trace.h"

namespace graft {

class BatchTracer final : public Tracer {
 public:
  BatchTracer(Aval a, Ref<Trace> t, Array val, int64_t bdim)
      : Tracer(std::move(a), std::move(t)), val(std::move(val)), bdim(bdim) {}
  Array val;
  int64_t bdim;
};

class BatchTrace final : public Trace {
 public:
  BatchTrace(Ref<Trace> parent, BatchInfo axis);
  Arrays process(const Primitive& p, std::span<const Array> in, const Params& params) override;
  std::string describe() const override;

  /// Wraps val with batch dim `bdim` (kNotMapped returns val itself).
  Array make(const Array& val, int64_t bdim);
  std::pair<Array, int64_t> unpack(const Array& x) const;
  const BatchInfo& axis() const { return axis_; }

 private:
  BatchInfo axis_;
};

}  // namespace graft
