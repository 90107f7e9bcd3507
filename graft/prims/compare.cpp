// Comparison primitives: elementwise, boolean result, no derivative (tangents are symbolic zeros).
#include "graft/prims/elementwise.h"

namespace graft::prims {

namespace {
#define GRAFT_CMP(Name, op)                   \
  struct Name {                               \
    template <class C>                        \
    static bool apply(C a, C b) {             \
      return a op b;                          \
    }                                         \
  };
GRAFT_CMP(Eq, ==)
GRAFT_CMP(Ne, !=)
GRAFT_CMP(Lt, <)
GRAFT_CMP(Le, <=)
GRAFT_CMP(Gt, >)
GRAFT_CMP(Ge, >=)
#undef GRAFT_CMP

#define CMP_INFO_M(id, F, M) const BinaryInfo id##_info{M, true, binary_kernels<F, M>(), binary_tiles<F, M>(), nullptr};
#define CMP_INFO(id, F) CMP_INFO_M(id, F, kMaskAll)
// complex numbers are equal or not; they have no order (as in NumPy's == and XLA's EQ / NE)
CMP_INFO_M(eq, Eq, kMaskAny)
CMP_INFO_M(ne, Ne, kMaskAny)
CMP_INFO(lt, Lt)
CMP_INFO(le, Le)
CMP_INFO(gt, Gt)
CMP_INFO(ge, Ge)
#undef CMP_INFO
#undef CMP_INFO_M

}  // namespace

#define CMP_PRIM(id, name)                                                                               \
  const Primitive id##_p{name,                kElementwise | kNotDifferentiable, &binary_shape, &binary_impl, \
                         &zero_jvp,        nullptr,                           &batch_elementwise, nullptr, \
                         &id##_info,       &binary_tile_rule};
CMP_PRIM(eq, "eq")
CMP_PRIM(ne, "ne")
CMP_PRIM(lt, "lt")
CMP_PRIM(le, "le")
CMP_PRIM(gt, "gt")
CMP_PRIM(ge, "ge")
#undef CMP_PRIM

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;
Array eq(const Array& a, const Array& b) { return bind1(eq_p, {a, b}); }
Array ne(const Array& a, const Array& b) { return bind1(ne_p, {a, b}); }
Array lt(const Array& a, const Array& b) { return bind1(lt_p, {a, b}); }
Array le(const Array& a, const Array& b) { return bind1(le_p, {a, b}); }
Array gt(const Array& a, const Array& b) { return bind1(gt_p, {a, b}); }
Array ge(const Array& a, const Array& b) { return bind1(ge_p, {a, b}); }
}  // namespace graft::lax
