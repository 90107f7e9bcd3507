// graft::Array: an immutable n-dimensional array handle.
//
// An Array is a cheap value (one counted pointer). It refers either to a concrete array (a Buffer on a
// Device) or, while a transformation runs, to a Tracer that stands for a value of that transformation.
// The same user code therefore runs eagerly, under grad, under vmap and under jit.
//
//   graft::Array x = graft::array({1.0f, 2.0f, 3.0f});   // f32[3]
//   x.shape();            // (3)
//   x.to_vector<float>(); // {1, 2, 3}
//   graft::Array s = 2.0; // a weakly typed scalar: `x * s` stays f32
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "graft/core/buffer.h"
#include "graft/core/error.h"
#include "graft/core/ref.h"
#include "graft/core/shape.h"

namespace graft {

class Array;
class Trace;

/// What every array handle points at: a concrete array or a tracer. Holds the aval.
class ArrayNode : public RefCounted {
 public:
  explicit ArrayNode(Aval a, bool tracer) : aval_(std::move(a)), is_tracer_(tracer) {}
  const Aval& aval() const { return aval_; }
  bool is_tracer() const { return is_tracer_; }

 protected:
  Aval aval_;
  bool is_tracer_;
};

/// A concrete array: contiguous row-major data on a device. Arrays of up to 16 bytes keep their
/// data inline, so a scalar costs one allocation.
class ConcreteNode final : public ArrayNode {
 public:
  static constexpr size_t kInlineBytes = 16;
  /// Uninitialized storage for `aval` on the CPU.
  explicit ConcreteNode(Aval a);
  /// Views `buf` (at byte `offset`) as an array of `aval` (used for zero-copy reshape).
  ConcreteNode(Aval a, Ref<Buffer> buf, size_t offset);
  void* data() const { return data_; }
  Device device() const { return buffer_ ? buffer_->device() : Device::cpu(); }
  /// The underlying buffer; null for inline (small) arrays.
  const Ref<Buffer>& buffer() const { return buffer_; }
  /// Whether this array gave its storage away (donated to a jitted function): using it is an error.
  bool deleted() const { return data_ == nullptr; }
  /// Whether the storage is this node's alone: a buffer of its own, not shared with a view.
  bool owns_storage() const {
    return buffer_ && buffer_->use_count() == 1 && data_ == buffer_->data() && buffer_->reusable();
  }
  /// Moves the storage into a new node and marks this one deleted, when owns_storage(); otherwise
  /// returns null and changes nothing.
  Ref<ConcreteNode> take_storage();
  /// Whether the array is committed to its device (JAX's notion): placed there by device_put, or
  /// computed from committed operands. Operations run where their committed operands live (operands
  /// committed to two devices are an error); uncommitted operands move to them freely.
  bool committed() const { return committed_; }
  void set_committed(bool c) { committed_ = c; }

 private:
  Ref<Buffer> buffer_;
  void* data_;
  bool committed_ = false;
  alignas(16) unsigned char inline_[kInlineBytes];
};

/// Base of every transformation's tracer. A tracer belongs to exactly one Trace (interpreter).
class Tracer : public ArrayNode {
 public:
  Tracer(Aval a, Ref<Trace> t);
  ~Tracer() override;
  Trace* trace() const { return trace_.get(); }
  /// The concrete value this tracer stands for, if its transformation knows it (jvp and grad do,
  /// so Python-style control flow works under them; vmap and jit do not).
  virtual std::optional<Array> concrete_value() const;

 private:
  Ref<Trace> trace_;
};

struct IndexItem;

/// Customization points of Array's method sugar. graft/ops/ops.h defines ArrayOps<void> (astype,
/// reshape, transpose, index, at); graft/transforms/tape.h defines ArrayTape<void> (requires_grad,
/// backward, grad, zero_grad).
template <class>
struct ArrayOps;
template <class>
struct ArrayTape;

class Array {
 public:
  /// The null array: no value (used e.g. for symbolic zero tangents). Most operations reject it.
  Array() = default;
  explicit Array(Ref<ArrayNode> n) : node_(std::move(n)) {}
  /// C++ scalars convert to weakly typed rank-0 arrays: `x * 2.0` keeps x's dtype.
  Array(double v);    // NOLINT  weak f64
  Array(float v);     // NOLINT  weak f32
  Array(int v);       // NOLINT  weak i64
  Array(int64_t v);   // NOLINT  weak i64
  Array(bool v);      // NOLINT  strong bool
  Array(uint32_t v);  // NOLINT  weak u32

  bool valid() const { return static_cast<bool>(node_); }
  const Aval& aval() const { return node_->aval(); }
  const Shape& shape() const { return node_->aval().shape; }
  int64_t shape(int64_t axis) const;
  DType dtype() const { return node_->aval().dtype; }
  bool weak_type() const { return node_->aval().weak_type; }
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size() const { return numel(shape()); }
  size_t nbytes() const { return node_->aval().nbytes(); }
  bool is_tracer() const { return node_ && node_->is_tracer(); }
  bool is_concrete() const { return node_ && !node_->is_tracer(); }
  Tracer* tracer() const { return is_tracer() ? static_cast<Tracer*>(node_.get()) : nullptr; }
  ConcreteNode* concrete() const { return is_concrete() ? static_cast<ConcreteNode*>(node_.get()) : nullptr; }
  ArrayNode* node() const { return node_.get(); }
  const Ref<ArrayNode>& node_ref() const { return node_; }
  Device device() const;

  /// Blocks until the array's value has been computed (work on an accelerator is queued and runs
  /// asynchronously); raises the errors that work produced. JAX's block_until_ready. Returns *this.
  const Array& block_until_ready() const;

  /// Raw pointer to the data of a concrete array on the CPU (throws ConcretizationError for tracers,
  /// ValueError for arrays donated to a jitted function and for arrays on another device).
  const void* raw_data() const;
  template <class T>
  const T* data() const {
    check_dtype(dtype_v<T>, "data");
    return static_cast<const T*>(raw_data());
  }
  /// Copies the elements out, converting to T.
  template <class T>
  std::vector<T> to_vector() const;
  /// The single element of a size-1 array, converted to T.
  template <class T>
  T item() const;
  /// The truth value of a size-1 array. Under jit or vmap this raises ConcretizationError.
  explicit operator bool() const { return item<bool>(); }
  /// A concrete array with the same value (resolves tracers that know their value).
  Array concretize(const char* what) const;

  // ---- method sugar, implemented by higher layers -------------------------------------------------
  // The core neither declares nor links the functions these call: each forwards to a customization
  // point (ArrayOps, ArrayTape below) that the layer implementing it defines, looked up where the
  // method is used (D only defers that lookup). Code that calls them includes graft/ops/ops.h or
  // graft/transforms/tape.h (graft/graft.h includes both); without it the call does not compile.
  template <class D = void>
  Array astype(DType d) const;
  template <class D = void>
  Array reshape(Shape s) const;
  template <class D = void>
  Array T() const;  ///< transpose (reverses the axes)
  template <class D = void>
  Array operator[](const IndexItem& i) const;
  template <class D = void>
  Array operator[](std::initializer_list<IndexItem> idx) const;
  /// Functional updates: `x.at({0, slice(1, none)}).set(v)` returns a new array (graft/ops: AtRef).
  template <class D = void>
  auto at(std::initializer_list<IndexItem> idx) const;
  template <class D = void>
  auto at(const IndexItem& i) const;

  // reverse mode in the PyTorch style (graft/transforms/tape.h)
  /// Makes this array a leaf of this thread's default tape: later operations on it are recorded.
  template <class D = void>
  Array& requires_grad_();
  /// Reverse mode from this one-element array: adds its derivative with respect to every
  /// requires_grad_() leaf it depends on to that leaf's grad().
  template <class D = void>
  void backward() const;
  /// The gradient accumulated by backward() (null before the first backward()).
  template <class D = void>
  Array grad() const;
  /// Clears the accumulated gradient.
  template <class D = void>
  void zero_grad_() const;

  /// Uninitialized CPU array.
  static Array empty(const Aval& a);
  /// Uninitialized array on device `d`.
  static Array empty_on(const Aval& a, Device d);
  /// CPU array copied from `data` (which holds numel(shape) elements of `d`).
  static Array from_data(const void* data, Shape shape, DType d, bool weak = false);
  /// A rank-0 array holding v converted to d.
  static Array scalar(double v, DType d, bool weak = false);

 private:
  void check_dtype(DType d, const char* what) const;
  Ref<ArrayNode> node_;
};

/// Prints like NumPy/JAX: `Array([1., 2., 3.], dtype=float32)`; tracers print their aval.
std::ostream& operator<<(std::ostream& os, const Array& a);
std::string to_string(const Array& a);

/// A concrete x's value on device `d` (x itself when it is there already), keeping x's commitment.
/// The transfer under device_put and the dispatcher's moves of uncommitted operands.
Array transfer(const Array& x, Device d);

/// Throws ValueError naming `what` when x was donated to a jitted function (its storage is gone).
void check_not_deleted(const Array& x, const char* what);

/// Copies the elements of a concrete array into `out` converted to `to` (n = a.size()).
void convert_elements(const void* in, DType from, void* out, DType to, int64_t n);

template <class T>
std::vector<T> Array::to_vector() const {
  Array c = concretize("to_vector()");
  std::vector<T> out(static_cast<size_t>(c.size()));
  convert_elements(c.raw_data(), c.dtype(), out.data(), dtype_v<T>, c.size());
  return out;
}

template <class T>
T Array::item() const {
  Array c = concretize("item()");
  if (c.size() != 1)
    fail<ValueError>("item(): only arrays with one element can be converted to a scalar, got ", c.aval().str());
  T out;
  convert_elements(c.raw_data(), c.dtype(), &out, dtype_v<T>, 1);
  return out;
}

// ---- indexing vocabulary -------------------------------------------------------------------------
/// A NumPy slice `start:stop:step`; unset ends mean "from the beginning / to the end".
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};
/// `slice(1, none)` is `1:`, `slice(none, none, -1)` is `::-1`, `slice()` is `:`.
inline Slice slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
                   int64_t step = 1) {
  return Slice{start, stop, step};
}
inline constexpr std::nullopt_t none = std::nullopt;
struct NewAxis {};
struct EllipsisT {};
inline constexpr NewAxis newaxis{};
inline constexpr EllipsisT ellipsis{};

/// One entry of an index expression: an integer, a slice, newaxis, ellipsis, or an integer array.
struct IndexItem {
  std::variant<int64_t, Slice, NewAxis, EllipsisT, Array> v;
  IndexItem(int i) : v(int64_t(i)) {}                 // NOLINT
  IndexItem(int64_t i) : v(i) {}                      // NOLINT
  IndexItem(Slice s) : v(s) {}                        // NOLINT
  IndexItem(NewAxis n) : v(n) {}                      // NOLINT
  IndexItem(EllipsisT e) : v(e) {}                    // NOLINT
  IndexItem(Array a) : v(std::move(a)) {}             // NOLINT
};
using Index = std::vector<IndexItem>;

// ---- the sugar's forwarding (see Array) -----------------------------------------------------------
template <class D>
Array Array::astype(DType d) const { return ArrayOps<D>::astype(*this, d); }
template <class D>
Array Array::reshape(Shape s) const { return ArrayOps<D>::reshape(*this, std::move(s)); }
template <class D>
Array Array::T() const { return ArrayOps<D>::transpose(*this); }
template <class D>
Array Array::operator[](const IndexItem& i) const { return ArrayOps<D>::index(*this, Index{i}); }
template <class D>
Array Array::operator[](std::initializer_list<IndexItem> idx) const { return ArrayOps<D>::index(*this, Index(idx)); }
template <class D>
auto Array::at(std::initializer_list<IndexItem> idx) const { return ArrayOps<D>::at(*this, Index(idx)); }
template <class D>
auto Array::at(const IndexItem& i) const { return ArrayOps<D>::at(*this, Index{i}); }
template <class D>
Array& Array::requires_grad_() { return ArrayTape<D>::requires_grad(*this); }
template <class D>
void Array::backward() const { ArrayTape<D>::backward(*this); }
template <class D>
Array Array::grad() const { return ArrayTape<D>::grad(*this); }
template <class D>
void Array::zero_grad_() const { ArrayTape<D>::zero_grad(*this); }

}  // namespace graft
