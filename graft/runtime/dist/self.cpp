// The communicator of a process alone: every collective copies its input (the result of one rank).
#include <cstring>

#include "graft/runtime/dist/mpi.h"
#include "graft/core/error.h"

namespace graft {

namespace {
class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string kind() const override { return "self"; }
  void allreduce(const void* in, void* out, int64_t count, DType d, ReduceOp) override { copy(in, out, count, d); }
  void allgather(const void* in, void* out, int64_t count, DType d) override { copy(in, out, count, d); }
  void reduce_scatter(const void* in, void* out, int64_t count, DType d, ReduceOp) override { copy(in, out, count, d); }
  void alltoall(const void* in, void* out, int64_t count, DType d) override { copy(in, out, count, d); }
  void sendrecv(const void* send, int dst, void* recv, int src, int64_t count, DType d) override {
    if ((dst != -1 && dst != 0) || (src != -1 && src != 0))
      fail<ValueError>("sendrecv: a communicator of one rank has only rank 0 (dst ", dst, ", src ", src, ")");
    if (src == 0) copy(send, recv, count, d);
  }
  void barrier() override {}
  std::shared_ptr<Communicator> split(int, int) override { return std::make_shared<SelfCommunicator>(); }

 private:
  static void copy(const void* in, void* out, int64_t count, DType d) {
    if (in != out) std::memmove(out, in, static_cast<size_t>(count) * itemsize(d));
  }
};
}  // namespace

std::shared_ptr<Communicator> self_communicator() { return std::make_shared<SelfCommunicator>(); }

}  // namespace graft
