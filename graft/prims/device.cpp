// device_put: moves a value to a device and commits it there (JAX's device_put primitive).
//
// A primitive rather than a plain copy so that it composes: its derivative moves the tangent, vmap
// passes the batch through, and jit stages it into the program. It carries the kPlacement flag: the
// eager dispatcher hands it its operand wherever that lives, since choosing the device is its job.
#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

Device target(const Params& params) { return parse_device(params.get<std::string>("device")); }

Avals device_put_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  target(params);  // a malformed device is an error here, at trace time
  return {*in[0]};
}

Arrays device_put_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  Array y = transfer(in[0], target(params));
  if (y.node() == in[0].node()) {
    // already there: a new node, so that committing it does not change the operand
    ConcreteNode* c = in[0].concrete();
    y = c->buffer() ? Array(Ref<ArrayNode>(new ConcreteNode(in[0].aval(), c->buffer(),
                                                           static_cast<char*>(c->data()) -
                                                               static_cast<char*>(c->buffer()->data()))))
                    : Array::from_data(c->data(), in[0].shape(), in[0].dtype(), in[0].weak_type());
  }
  y.concrete()->set_committed(true);
  return {y};
}

// The cotangent stays where the computation ran (the operand's device is not recorded in the trace).
Arrays device_put_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params&) {
  return {cts[0]};
}

}  // namespace

const Primitive device_put_p{"device_put",          kPlacement,   &device_put_shape, &device_put_impl, &linear_jvp,
                             &device_put_transpose, &batch_unary};

}  // namespace graft::prims

namespace graft::lax {
Array device_put(const Array& x, Device d) { return bind1(prims::device_put_p, {x}, {{"device", d.str()}}); }
}  // namespace graft::lax
