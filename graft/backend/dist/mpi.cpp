// The MPI communicator. Every operation is MPI's own collective (no transport of graft's): the
// nonblocking form, waited on with a deadline, so that a lost peer becomes an error instead of a hang.
#include "graft/backend/dist/mpi.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "graft/core/env.h"
#include "graft/core/error.h"

#ifdef GRAFT_HAVE_MPI
#include <mpi.h>
#endif

namespace graft {

#ifndef GRAFT_HAVE_MPI

bool have_mpi() { return false; }
std::shared_ptr<Communicator> mpi_world() {
  fail<NotImplementedError>("graft was built without MPI: install OpenMPI (apt-get install openmpi-bin "
                            "libopenmpi-dev) and configure again to run across processes");
}

#else

bool have_mpi() { return true; }

namespace {

const char* op_name(ReduceOp op) { return op == ReduceOp::sum ? "sum" : op == ReduceOp::max ? "max" : "min"; }

MPI_Datatype mpi_type(DType d, const char* what) {
  switch (d) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i8: return MPI_INT8_T;
    case DType::i16: return MPI_INT16_T;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::u8: return MPI_UINT8_T;
    case DType::u16: return MPI_UINT16_T;
    case DType::u32: return MPI_UINT32_T;
    case DType::u64: return MPI_UINT64_T;
    case DType::bool_: return MPI_C_BOOL;
    default: break;
  }
  fail<TypeError>(what, ": MPI has no type for ", d, " (reduce f16 / bf16 values in f32)");
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::sum ? MPI_SUM : op == ReduceOp::max ? MPI_MAX : MPI_MIN; }

int mpi_count(int64_t count, const char* what) {
  if (count < 0 || count > INT_MAX)
    fail<ValueError>(what, ": ", count, " elements exceed what one MPI call carries (", INT_MAX, ")");
  return static_cast<int>(count);
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fail<Error>(what, " failed: ", std::string(msg, static_cast<size_t>(len)));
}

// MPI is initialized once per process and finalized at exit (after every communicator is gone: the
// world object lives in a static that is destroyed first).
struct MpiRuntime {
  bool we_initialized = false;
  MpiRuntime() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      we_initialized = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (we_initialized && !finalized) MPI_Finalize();
  }
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    timeout_s_ = static_cast<double>(env::integer("GRAFT_COLLECTIVE_TIMEOUT", 600, 0, 7 * 24 * 3600));
    debug_ = env::flag("GRAFT_DEBUG_COLLECTIVES");
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "mpi"; }

  void allreduce(const void* in, void* out, int64_t count, DType d, ReduceOp op) override {
    std::lock_guard<std::mutex> lock(mu_);
    begin("MPI_Allreduce", count, d, static_cast<int>(op));
    MPI_Datatype t = mpi_type(d, "MPI_Allreduce");
    // in place when in == out (MPI forbids aliased buffers otherwise)
    const void* src = in == out ? MPI_IN_PLACE : in;
    wait(issue([&](MPI_Request* r) {
           return MPI_Iallreduce(src, out, mpi_count(count, "MPI_Allreduce"), t, mpi_op(op), comm_, r);
         }),
         "MPI_Allreduce", op_name(op));
  }
  void allgather(const void* in, void* out, int64_t count, DType d) override {
    std::lock_guard<std::mutex> lock(mu_);
    begin("MPI_Allgather", count, d, 0);
    MPI_Datatype t = mpi_type(d, "MPI_Allgather");
    int c = mpi_count(count, "MPI_Allgather");
    wait(issue([&](MPI_Request* r) { return MPI_Iallgather(in, c, t, out, c, t, comm_, r); }), "MPI_Allgather", "");
  }
  void reduce_scatter(const void* in, void* out, int64_t count, DType d, ReduceOp op) override {
    std::lock_guard<std::mutex> lock(mu_);
    begin("MPI_Reduce_scatter_block", count, d, static_cast<int>(op));
    MPI_Datatype t = mpi_type(d, "MPI_Reduce_scatter_block");
    int c = mpi_count(count, "MPI_Reduce_scatter_block");
    (void)mpi_count(count * size_, "MPI_Reduce_scatter_block");
    wait(issue([&](MPI_Request* r) { return MPI_Ireduce_scatter_block(in, out, c, t, mpi_op(op), comm_, r); }),
         "MPI_Reduce_scatter_block", op_name(op));
  }
  void alltoall(const void* in, void* out, int64_t count, DType d) override {
    std::lock_guard<std::mutex> lock(mu_);
    begin("MPI_Alltoall", count, d, 0);
    MPI_Datatype t = mpi_type(d, "MPI_Alltoall");
    int c = mpi_count(count, "MPI_Alltoall");
    wait(issue([&](MPI_Request* r) { return MPI_Ialltoall(in, c, t, out, c, t, comm_, r); }), "MPI_Alltoall", "");
  }
  void sendrecv(const void* send, int dst, void* recv, int src, int64_t count, DType d) override {
    std::lock_guard<std::mutex> lock(mu_);
    // the ranks of a ppermute send and receive different pairs: no signature to compare
    if (debug_) log("MPI_Sendrecv", count, d);
    for (int peer : {dst, src})
      if (peer < -1 || peer >= size_) fail<ValueError>("MPI_Sendrecv: rank ", peer, " is not in a group of ", size_);
    MPI_Datatype t = mpi_type(d, "MPI_Sendrecv");
    int c = mpi_count(count, "MPI_Sendrecv");
    constexpr int kTag = 7411;
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (src >= 0) check(MPI_Irecv(recv, c, t, src, kTag, comm_, &reqs[0]), "MPI_Irecv");
    if (dst >= 0) check(MPI_Isend(send, c, t, dst, kTag, comm_, &reqs[1]), "MPI_Isend");
    wait(reqs[0], "MPI_Sendrecv (receive)", "");
    wait(reqs[1], "MPI_Sendrecv (send)", "");
  }
  void barrier() override {
    std::lock_guard<std::mutex> lock(mu_);
    begin("MPI_Barrier", 0, DType::u8, 0);
    wait(issue([&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); }), "MPI_Barrier", "");
  }
  std::shared_ptr<Communicator> split(int color, int key) override {
    std::lock_guard<std::mutex> lock(mu_);
    MPI_Comm sub;
    check(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
    return std::make_shared<MpiCommunicator>(sub, true);
  }

 private:
  template <class F>
  MPI_Request issue(F&& f) {
    MPI_Request r = MPI_REQUEST_NULL;
    check(f(&r), "starting an MPI collective");
    return r;
  }

  // Waits for r, spinning briefly and then sleeping (a collective's peers may be seconds behind), up to
  // the timeout.
  void wait(MPI_Request r, const char* what, const char* op) {
    if (r == MPI_REQUEST_NULL) return;
    auto start = std::chrono::steady_clock::now();
    int spins = 0;
    for (;;) {
      int done = 0;
      check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      if (++spins < 2000) continue;
      double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (timeout_s_ > 0 && waited > timeout_s_)
        fail<Error>(what, *op ? std::string(" (") + op + ")" : std::string(), ": rank ", rank_, " of ", size_,
                           " waited ", static_cast<int64_t>(waited), " s for its peers (GRAFT_COLLECTIVE_TIMEOUT=",
                           static_cast<int64_t>(timeout_s_), "): a process has stopped, or the ranks called ",
                           "different collectives (GRAFT_DEBUG_COLLECTIVES=1 checks that they agree)");
      std::this_thread::sleep_for(std::chrono::microseconds(spins < 20000 ? 20 : 500));
    }
  }

  void log(const char* what, int64_t count, DType d) const {
    std::fprintf(stderr, "[graft collectives] rank %d/%d #%llu %s %lld x %s\n", rank_, size_,
                 static_cast<unsigned long long>(calls_), what, static_cast<long long>(count),
                 std::string(short_name(d)).c_str());
  }

  // With GRAFT_DEBUG_COLLECTIVES: logs the call and checks that every rank makes the same one (the
  // same operation, size and type as the n-th collective), comparing the ranks' signatures by a min
  // and a max reduction.
  void begin(const char* what, int64_t count, DType d, int op) {
    ++calls_;
    if (!debug_) return;
    log(what, count, d);
    uint64_t sig = std::hash<std::string>{}(what);
    sig = sig * 1000003u ^ static_cast<uint64_t>(count);
    sig = sig * 1000003u ^ static_cast<uint64_t>(d);
    sig = sig * 1000003u ^ static_cast<uint64_t>(op);
    uint64_t lo = 0, hi = 0;
    check(MPI_Allreduce(&sig, &lo, 1, MPI_UINT64_T, MPI_MIN, comm_), "MPI_Allreduce (debug check)");
    check(MPI_Allreduce(&sig, &hi, 1, MPI_UINT64_T, MPI_MAX, comm_), "MPI_Allreduce (debug check)");
    if (lo != hi)
      fail<Error>("collective #", calls_, ": the ranks disagree: rank ", rank_, " calls ", what, " of ", count,
                         " x ", d, ", another rank a different collective (a rank took another path)");
  }

  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
  double timeout_s_ = 600;
  bool debug_ = false;
  uint64_t calls_ = 0;
  std::mutex mu_;
};

}  // namespace

std::shared_ptr<Communicator> mpi_world() {
  static MpiRuntime runtime;
  static std::shared_ptr<Communicator> world = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD, false);
  return world;
}

#endif

}  // namespace graft
