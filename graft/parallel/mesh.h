// Meshes of devices with named axes, and how an array is laid out over them.
//
//   graft::Mesh mesh(graft::devices(), {"data"});            // 1-D: every device along "data"
//   graft::Mesh mesh2(graft::devices(), {"data", "model"}, {2, 2});
//   graft::P("data")            // dimension 0 split over "data", the rest whole
//   graft::P(std::nullopt, "model")
//   graft::P(graft::SpecDim{"data", "model"})  // dimension 0 split over both axes ("data" major)
//   graft::P()                  // replicated
#pragma once

#include <optional>
#include <string>
#include <initializer_list>
#include <vector>

#include "graft/core/shape.h"
#include "graft/parallel/device.h"

namespace graft {

/// One dimension of a PartitionSpec: the mesh axes it is split over, major first (JAX's P(('data',
/// 'model'))): the block index along it is the devices' position over those axes, row-major. No axes:
/// the dimension is whole.
struct SpecDim {
  std::vector<std::string> axes;
  SpecDim() = default;
  SpecDim(std::nullopt_t) {}
  SpecDim(const char* a) : axes{a} {}
  SpecDim(std::string a) : axes{std::move(a)} {}
  SpecDim(std::optional<std::string> a) {
    if (a) axes.push_back(std::move(*a));
  }
  SpecDim(std::initializer_list<std::string> a) : axes(a) {}
  SpecDim(std::vector<std::string> a) : axes(std::move(a)) {}
  /// Whether the dimension is split.
  explicit operator bool() const { return !axes.empty(); }
  /// 'data', ('data', 'model') or None.
  std::string str() const;
  bool operator==(const SpecDim& o) const { return axes == o.axes; }
};

/// For each dimension of an array, the mesh axes it is split over. Dimensions past the listed ones are
/// not split. `P("data", std::nullopt)`; `P(SpecDim{"data", "model"})` splits one dimension over two axes
/// (a bare braced list would be ambiguous with the copy constructor).
struct PartitionSpec {
  std::vector<SpecDim> dims;
  PartitionSpec() = default;
  explicit PartitionSpec(SpecDim a) : dims{std::move(a)} {}
  explicit PartitionSpec(SpecDim a, SpecDim b) : dims{std::move(a), std::move(b)} {}
  explicit PartitionSpec(SpecDim a, SpecDim b, SpecDim c) : dims{std::move(a), std::move(b), std::move(c)} {}
  explicit PartitionSpec(SpecDim a, SpecDim b, SpecDim c, SpecDim d) : dims{std::move(a), std::move(b), std::move(c), std::move(d)} {}
  explicit PartitionSpec(SpecDim a, SpecDim b, SpecDim c, SpecDim d, SpecDim e)
      : dims{std::move(a), std::move(b), std::move(c), std::move(d), std::move(e)} {}
  /// P('data', None, ('data', 'model'))
  std::string str() const;
  bool operator==(const PartitionSpec& o) const { return dims == o.dims; }
};
using P = PartitionSpec;

class Mesh {
 public:
  /// The devices laid out row-major over axes of the given sizes (default: one axis of all devices).
  Mesh(std::vector<GlobalDevice> devices, std::vector<std::string> axis_names, Shape shape = {});
  const std::vector<GlobalDevice>& devices() const { return devices_; }
  const std::vector<std::string>& axis_names() const { return names_; }
  const Shape& shape() const { return shape_; }
  int64_t size() const { return static_cast<int64_t>(devices_.size()); }
  /// The number of devices along `name` (a ValueError naming the mesh if it has no such axis).
  int64_t axis_size(const std::string& name) const;
  /// The number of devices a dimension split as `d` is split over: the product of its axes' sizes.
  int64_t split_size(const SpecDim& d) const;
  /// The position of a device (its coordinates `coords`) along a dimension split as `d`.
  int64_t block_index(const SpecDim& d, const std::vector<int64_t>& coords) const;
  /// The position of axis `name`, or -1.
  int axis_index(const std::string& name) const;
  /// The device's coordinates along the axes.
  std::vector<int64_t> coords(size_t device_position) const;
  /// Mesh('data': 4, 'model': 2)
  std::string str() const;
  /// Whether every device belongs to this process.
  bool is_local() const;

 private:
  std::vector<GlobalDevice> devices_;
  std::vector<std::string> names_;
  Shape shape_;
};

/// An array laid out over a mesh by a PartitionSpec.
struct NamedSharding {
  Mesh mesh;
  PartitionSpec spec;
  /// The shape of one device's block of an array of `global` shape (a ValueError when a split dimension
  /// does not divide over its axis).
  Shape shard_shape(const Shape& global) const;
};

}  // namespace graft
