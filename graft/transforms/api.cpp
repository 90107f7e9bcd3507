#include "graft/transforms/api.h"

namespace graft::detail {

void check_grad_output(const std::vector<Array>& outs, bool has_aux) {
  if (outs.empty()) fail<TypeError>("grad: the function returned no arrays");
  if (!has_aux && outs.size() != 1)
    fail<TypeError>("grad: the function must return a single scalar array (it returned ", outs.size(),
                    " arrays); use has_aux for auxiliary outputs, or vjp/jacrev for vector outputs");
  const Array& y = outs[0];
  if (y.ndim() != 0)
    fail<TypeError>("Gradient only defined for scalar-output functions. Output had shape: (", shape_str(y.shape()),
                    ")");
  if (!is_floating(y.dtype()))
    fail<TypeError>("grad requires real-valued outputs (output dtype that is floating-point), but got ", y.dtype());
}

Array basis(const Shape& shape, DType d) {
  int64_t n = numel(shape);
  Array eye = lax::convert_element_type(lax::eq(lax::iota(DType::i32, {n, n}, 0), lax::iota(DType::i32, {n, n}, 1)), d);
  Shape s{n};
  for (auto x : shape) s.push_back(x);
  return lax::reshape(eye, s);
}

Shape concat_shapes(const Shape& a, const Shape& b) {
  Shape s = a;
  for (auto x : b) s.push_back(x);
  return s;
}

}  // namespace graft::detail
