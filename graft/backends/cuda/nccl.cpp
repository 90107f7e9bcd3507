// NCCL communicators for GPU arrays: collectives across processes on device memory, queued on the
// device's stream like every kernel (graft/runtime/collectives.h, device_communicator).
//
// An NCCL communicator is made from a host communicator of the same ranks (MPI): rank 0's
// ncclGetUniqueId reaches the others through it, then every rank joins with ncclCommInitRank on its
// GPU. NCCL is loaded with dlopen on first use (libnccl.so.2, beside the CUDA toolkit's libraries),
// so graft links no NCCL and starts where there is none; a process that cannot load it, or a GPU it
// cannot join, runs its collectives through the host (device_communicator returns null).
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include "graft/backends/cuda/cuda.h"
#include "graft/backends/cuda/libraries.h"
#include "graft/backends/cuda/runtime.h"
#include "graft/core/error.h"
#include "graft/runtime/collectives.h"

namespace graft::cuda {

namespace {

// The NCCL functions graft calls, resolved from the library.
struct Nccl {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  std::string why;  // why it could not be loaded ("" when loaded)
};

const Nccl& nccl() {
  static const Nccl n = [] {
    Nccl r;
    void* h = nullptr;
    for (const char* name : {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!h) {
      r.why = std::string("cannot load libnccl.so.2: ") + dlerror();
      return r;
    }
    auto get = [&](auto& fn, const char* sym) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, sym));
      if (!fn && r.why.empty()) r.why = std::string("libnccl.so.2 lacks ") + sym;
    };
    get(r.get_unique_id, "ncclGetUniqueId");
    get(r.comm_init_rank, "ncclCommInitRank");
    get(r.comm_destroy, "ncclCommDestroy");
    get(r.all_reduce, "ncclAllReduce");
    get(r.all_gather, "ncclAllGather");
    get(r.reduce_scatter, "ncclReduceScatter");
    get(r.send, "ncclSend");
    get(r.recv, "ncclRecv");
    get(r.group_start, "ncclGroupStart");
    get(r.group_end, "ncclGroupEnd");
    get(r.error_string, "ncclGetErrorString");
    return r;
  }();
  return n;
}

void check_nccl(ncclResult_t r, const char* what, int device) {
  if (r != ncclSuccess)
    fail<Error>("NCCL ", what, " on cuda:", device, " failed: ", nccl().error_string ? nccl().error_string(r) : "?");
}

ncclDataType_t nccl_type(DType d, const char* what) {
  switch (d) {
    case DType::bool_:
    case DType::u8: return ncclUint8;
    case DType::i8: return ncclInt8;
    case DType::i32: return ncclInt32;
    case DType::u32: return ncclUint32;
    case DType::i64: return ncclInt64;
    case DType::u64: return ncclUint64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    default: fail<TypeError>("NCCL ", what, ": no NCCL type for ", short_name(d));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::sum ? ncclSum : op == ReduceOp::max ? ncclMax : ncclMin; }

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<Communicator> host, int device) : host_(std::move(host)), device_(device) {
    const Nccl& n = nccl();
    if (!n.why.empty()) fail<Error>("NCCL: ", n.why);
    ncclUniqueId id{};
    if (host_->rank() == 0) check_nccl(n.get_unique_id(&id), "ncclGetUniqueId", device);
    // rank 0's id to every rank: each contributes its bytes, all take block 0
    std::vector<char> all(sizeof id * static_cast<size_t>(host_->size()));
    host_->allgather(&id, all.data(), sizeof id, DType::u8);
    std::memcpy(&id, all.data(), sizeof id);
    check(lib::cudaSetDevice(device), "cudaSetDevice");
    check_nccl(n.comm_init_rank(&comm_, host_->size(), id, host_->rank()), "ncclCommInitRank", device);
  }
  ~NcclCommunicator() override {
    if (comm_) nccl().comm_destroy(comm_);
  }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string kind() const override { return "nccl"; }

  void allreduce(const void* in, void* out, int64_t count, DType d, ReduceOp op) override {
    timed(count, d, [&] {
      check_nccl(nccl().all_reduce(in, out, static_cast<size_t>(count), nccl_type(d, "allreduce"), nccl_op(op), comm_, s()),
                 "ncclAllReduce", device_);
    });
  }
  void allgather(const void* in, void* out, int64_t count, DType d) override {
    timed(count, d, [&] {
      check_nccl(nccl().all_gather(in, out, static_cast<size_t>(count), nccl_type(d, "allgather"), comm_, s()),
                 "ncclAllGather", device_);
    });
  }
  void reduce_scatter(const void* in, void* out, int64_t count, DType d, ReduceOp op) override {
    timed(count * size(), d, [&] {
      check_nccl(nccl().reduce_scatter(in, out, static_cast<size_t>(count), nccl_type(d, "reduce_scatter"), nccl_op(op),
                                       comm_, s()),
                 "ncclReduceScatter", device_);
    });
  }
  void alltoall(const void* in, void* out, int64_t count, DType d) override {
    ncclDataType_t t = nccl_type(d, "alltoall");
    size_t bytes = static_cast<size_t>(count) * itemsize(d);
    timed(count * size(), d, [&] {
      const Nccl& n = nccl();
      check_nccl(n.group_start(), "ncclGroupStart", device_);
      for (int r = 0; r < size(); ++r) {
        check_nccl(n.send(static_cast<const char*>(in) + bytes * static_cast<size_t>(r), static_cast<size_t>(count), t, r,
                          comm_, s()),
                   "ncclSend", device_);
        check_nccl(n.recv(static_cast<char*>(out) + bytes * static_cast<size_t>(r), static_cast<size_t>(count), t, r, comm_, s()),
                   "ncclRecv", device_);
      }
      check_nccl(n.group_end(), "ncclGroupEnd", device_);
    });
  }
  void sendrecv(const void* send, int dst, void* recv, int src, int64_t count, DType d) override {
    ncclDataType_t t = nccl_type(d, "sendrecv");
    timed(count, d, [&] {
      const Nccl& n = nccl();
      check_nccl(n.group_start(), "ncclGroupStart", device_);
      if (dst >= 0) check_nccl(n.send(send, static_cast<size_t>(count), t, dst, comm_, s()), "ncclSend", device_);
      if (src >= 0) check_nccl(n.recv(recv, static_cast<size_t>(count), t, src, comm_, s()), "ncclRecv", device_);
      check_nccl(n.group_end(), "ncclGroupEnd", device_);
    });
  }
  void barrier() override {
    synchronize(device_);
    host_->barrier();
  }
  std::shared_ptr<Communicator> split(int color, int key) override {
    return std::make_shared<NcclCommunicator>(host_->split(color, key), device_);
  }

 private:
  cudaStream_t s() const { return static_cast<cudaStream_t>(stream(device_)); }
  // queued on the stream: the time counted is the host's (the transfer runs on the device afterwards)
  template <class F>
  void timed(int64_t count, DType d, F&& f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    record_collective(static_cast<uint64_t>(count) * itemsize(d),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::shared_ptr<Communicator> host_;
  int device_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::shared_ptr<Communicator> make_nccl(const std::shared_ptr<Communicator>& host, Device d) {
  return std::make_shared<NcclCommunicator>(host, d.index);
}

std::shared_ptr<Communicator> nccl_communicator(const std::shared_ptr<Communicator>& host, int device) {
  return std::make_shared<NcclCommunicator>(host, device);
}

std::string nccl_unavailable_reason() { return nccl().why; }

}  // namespace graft::cuda
