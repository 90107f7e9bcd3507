// Printing, hashing and equality of the structured primitive parameters (JAX's spellings).
#include <functional>

#include "graft/prims/lax.h"

namespace graft::lax {

namespace {
void tuple(std::ostream& os, const IntList& v) {
  os << '(';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
}
void list(std::ostream& os, const IntList& v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
}
size_t hash_lists(std::initializer_list<const IntList*> ls) {
  size_t h = 0;
  for (auto* l : ls) {
    h = h * 1000003u + l->size();
    for (auto x : *l) h = h * 31u + std::hash<int64_t>()(x);
  }
  return h;
}
}  // namespace

void DotDims::print(std::ostream& os) const {
  os << "((";
  list(os, lhs_contract);
  os << ", ";
  list(os, rhs_contract);
  os << "), (";
  list(os, lhs_batch);
  os << ", ";
  list(os, rhs_batch);
  os << "))";
}
size_t DotDims::hash() const { return hash_lists({&lhs_contract, &rhs_contract, &lhs_batch, &rhs_batch}); }
bool DotDims::equals(const ParamObject& o) const {
  auto* d = dynamic_cast<const DotDims*>(&o);
  return d && d->lhs_contract == lhs_contract && d->rhs_contract == rhs_contract && d->lhs_batch == lhs_batch &&
         d->rhs_batch == rhs_batch;
}

void GatherDims::print(std::ostream& os) const {
  os << "GatherDimensionNumbers(offset_dims=";
  tuple(os, offset_dims);
  os << ", collapsed_slice_dims=";
  tuple(os, collapsed_slice_dims);
  os << ", start_index_map=";
  tuple(os, start_index_map);
  os << ", operand_batching_dims=";
  tuple(os, operand_batching_dims);
  os << ", start_indices_batching_dims=";
  tuple(os, start_indices_batching_dims);
  os << ')';
}
size_t GatherDims::hash() const {
  return hash_lists(
      {&offset_dims, &collapsed_slice_dims, &start_index_map, &operand_batching_dims, &start_indices_batching_dims});
}
bool GatherDims::equals(const ParamObject& o) const {
  auto* d = dynamic_cast<const GatherDims*>(&o);
  return d && d->offset_dims == offset_dims && d->collapsed_slice_dims == collapsed_slice_dims &&
         d->start_index_map == start_index_map && d->operand_batching_dims == operand_batching_dims &&
         d->start_indices_batching_dims == start_indices_batching_dims;
}

void ScatterDims::print(std::ostream& os) const {
  os << "ScatterDimensionNumbers(update_window_dims=";
  tuple(os, update_window_dims);
  os << ", inserted_window_dims=";
  tuple(os, inserted_window_dims);
  os << ", scatter_dims_to_operand_dims=";
  tuple(os, scatter_dims_to_operand_dims);
  os << ", operand_batching_dims=";
  tuple(os, operand_batching_dims);
  os << ", scatter_indices_batching_dims=";
  tuple(os, scatter_indices_batching_dims);
  os << ')';
}
size_t ScatterDims::hash() const {
  return hash_lists({&update_window_dims, &inserted_window_dims, &scatter_dims_to_operand_dims,
                     &operand_batching_dims, &scatter_indices_batching_dims});
}
bool ScatterDims::equals(const ParamObject& o) const {
  auto* d = dynamic_cast<const ScatterDims*>(&o);
  return d && d->update_window_dims == update_window_dims && d->inserted_window_dims == inserted_window_dims &&
         d->scatter_dims_to_operand_dims == scatter_dims_to_operand_dims &&
         d->operand_batching_dims == operand_batching_dims &&
         d->scatter_indices_batching_dims == scatter_indices_batching_dims;
}

ConvDims ConvDims::nchw(size_t spatial) {
  IntList s;
  for (size_t i = 0; i < spatial + 2; ++i) s.push_back(static_cast<int64_t>(i));
  return ConvDims(s, s, s);
}
ConvDims ConvDims::nhwc(size_t spatial) {
  IntList l{0, static_cast<int64_t>(spatial) + 1}, r{static_cast<int64_t>(spatial) + 1, static_cast<int64_t>(spatial)};
  for (size_t i = 0; i < spatial; ++i) {
    l.push_back(static_cast<int64_t>(i) + 1);
    r.push_back(static_cast<int64_t>(i));
  }
  return ConvDims(l, r, l);
}
void ConvDims::print(std::ostream& os) const {
  os << "ConvDimensionNumbers(lhs_spec=";
  tuple(os, lhs_spec);
  os << ", rhs_spec=";
  tuple(os, rhs_spec);
  os << ", out_spec=";
  tuple(os, out_spec);
  os << ')';
}
size_t ConvDims::hash() const { return hash_lists({&lhs_spec, &rhs_spec, &out_spec}); }
bool ConvDims::equals(const ParamObject& o) const {
  auto* d = dynamic_cast<const ConvDims*>(&o);
  return d && d->lhs_spec == lhs_spec && d->rhs_spec == rhs_spec && d->out_spec == out_spec;
}

void IntTuples::print(std::ostream& os) const {
  os << '(';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) os << ", ";
    tuple(os, items[i]);
  }
  os << (items.size() == 1 ? ",)" : ")");
}
size_t IntTuples::hash() const {
  size_t h = items.size();
  for (auto& l : items) h = h * 1000003u + hash_lists({&l});
  return h;
}
bool IntTuples::equals(const ParamObject& o) const {
  auto* d = dynamic_cast<const IntTuples*>(&o);
  return d && d->items == items;
}

}  // namespace graft::lax
