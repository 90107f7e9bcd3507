// The MPI communicator. Every operation is MPI's own collective (no transport of graft's): the
// nonblocking form, waited on with a deadline, so that a lost peer becomes an error instead of a hang.
#include "graft/runtime/dist/mpi.h"

#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

// Data that is only moved (gathered, exchanged, sent) goes as raw elements of its width: f16 / bf16,
// which MPI has no type for, too.
MPI_Datatype mpi_move_type(DType d) {
  switch (itemsize(d)) {
    case 1: return MPI_UINT8_T;
    case 2: return MPI_UINT16_T;
    case 4: return MPI_UINT32_T;
    case 8: return MPI_UINT64_T;
    case 16: return MPI_C_DOUBLE_COMPLEX;  // c128
    default: break;
  }
  fail<TypeError>("MPI: no ", itemsize(d), "-byte element type to move ", d);
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

// Process-wide MPI state: MPI initialized once (finalized at exit, after every communicator is gone:
// mpi_world()'s communicator lives in a static made after this one, so it is destroyed first), and a
// duplicate of the world communicator on which the ranks talk about failures:
//  - a rank that waits in a collective answers "where are you?" with the collective it waits in, so a
//    rank that times out can name the ranks that did not arrive;
//  - a rank that exits normally says goodbye, so a peer still waiting in a collective fails within
//    seconds instead of at the timeout (MPI_Finalize would otherwise wait for that peer, and the peer
//    for it);
//  - after a timeout or a lost peer the job cannot go on (the ranks are out of step): the process
//    exits through MPI_Abort, which makes mpirun end every rank.
class MpiRuntime {
 public:
  MpiRuntime() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      we_initialized_ = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &diag_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(diag_, MPI_ERRORS_RETURN);
    departed_.assign(static_cast<size_t>(size_), 0);
  }
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (broken_) {
      std::fflush(stdout);
      std::fprintf(stderr, "[graft] rank %d: ending the MPI job after a failed collective\n", rank_);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    goodbye();
    if (we_initialized_) MPI_Finalize();
  }

  int rank() const { return rank_; }
  void mark_broken() { broken_ = true; }

  /// What this process waits in ("" when it waits in no collective); answered to peers that ask.
  void set_waiting(std::string w) { waiting_ = std::move(w); }

  /// Answers the peers' questions and notes their goodbyes (called while waiting).
  void serve() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kAsk, diag_, &flag, &st) != MPI_SUCCESS || !flag) break;
      int dummy = 0;
      MPI_Recv(&dummy, 1, MPI_INT, st.MPI_SOURCE, kAsk, diag_, MPI_STATUS_IGNORE);
      char reply[kReplyLen] = {};
      std::snprintf(reply, sizeof reply, "%s", waiting_.c_str());
      MPI_Send(reply, kReplyLen, MPI_CHAR, st.MPI_SOURCE, kReply, diag_);
    }
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kBye, diag_, &flag, &st) != MPI_SUCCESS || !flag) break;
      int dummy = 0;
      MPI_Recv(&dummy, 1, MPI_INT, st.MPI_SOURCE, kBye, diag_, MPI_STATUS_IGNORE);
      departed_[static_cast<size_t>(st.MPI_SOURCE)] = 1;
    }
  }

  /// The first of `world_ranks` that said goodbye, or -1.
  int departed(const std::vector<int>& world_ranks) const {
    for (int r : world_ranks)
      if (departed_[static_cast<size_t>(r)]) return r;
    return -1;
  }

  /// Asks each of `world_ranks` what it waits in, for up to `grace_s` seconds; the ranks that are not
  /// waiting in `where` are described, one per line.
  std::string absent(const std::vector<int>& world_ranks, const std::string& where, double grace_s) {
    size_t n = world_ranks.size();
    std::vector<std::array<char, kReplyLen>> replies(n);
    std::vector<MPI_Request> recv(n, MPI_REQUEST_NULL), send(n, MPI_REQUEST_NULL);
    std::vector<int> ask(n, 0), got(n, 0);
    for (size_t k = 0; k < n; ++k) {
      int p = world_ranks[k];
      if (p == rank_) continue;
      MPI_Irecv(replies[k].data(), kReplyLen, MPI_CHAR, p, kReply, diag_, &recv[k]);
      MPI_Isend(&ask[k], 1, MPI_INT, p, kAsk, diag_, &send[k]);
    }
    auto start = std::chrono::steady_clock::now();
    for (;;) {
      serve();
      bool all = true;
      for (size_t k = 0; k < n; ++k) {
        if (recv[k] == MPI_REQUEST_NULL) continue;
        int done = 0;
        MPI_Test(&recv[k], &done, MPI_STATUS_IGNORE);
        if (done) got[k] = 1;
        else all = false;
      }
      if (all || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > grace_s) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::string out;
    for (size_t k = 0; k < n; ++k) {
      int p = world_ranks[k];
      if (p == rank_) continue;
      std::string say;
      if (!got[k]) {
        say = departed_[static_cast<size_t>(p)] ? "has exited" : "did not arrive (it does not answer: busy outside "
                                                                 "graft's collectives, stopped or gone)";
        MPI_Cancel(&recv[k]);
        MPI_Request_free(&recv[k]);
      } else if (replies[k][0] == 0) {
        say = "did not arrive (it waits in no collective)";
      } else if (where != replies[k].data()) {
        say = std::string("did not arrive: it waits in ") + replies[k].data();
      }
      if (send[k] != MPI_REQUEST_NULL) MPI_Request_free(&send[k]);
      if (!say.empty()) out += "\n  rank " + std::to_string(p) + " " + say;
    }
    return out;
  }

 private:
  static constexpr int kAsk = 1, kReply = 2, kBye = 3, kReplyLen = 160;

  // Tells every peer that this process is leaving (small messages: MPI sends them at once).
  void goodbye() {
    std::vector<MPI_Request> reqs;
    int dummy = 0;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      reqs.emplace_back(MPI_REQUEST_NULL);
      MPI_Isend(&dummy, 1, MPI_INT, p, kBye, diag_, &reqs.back());
    }
    auto start = std::chrono::steady_clock::now();
    for (;;) {
      int done = 0;
      MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
      if (done || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > 1.0) break;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    for (MPI_Request& r : reqs)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  }

  bool we_initialized_ = false;
  std::atomic<bool> broken_{false};
  int rank_ = 0, size_ = 1;
  MPI_Comm diag_ = MPI_COMM_NULL;
  std::string waiting_;
  std::vector<char> departed_;
};

MpiRuntime& runtime() {
  static MpiRuntime r;
  return r;
}

// What the ranks compare under GRAFT_DEBUG_COLLECTIVES: the n-th collective's operation, size and type.
struct Signature {
  uint64_t seq = 0;
  int64_t count = 0;
  int32_t dtype = 0, op = 0;
  char what[40] = {};
  bool operator==(const Signature& o) const {
    return seq == o.seq && count == o.count && dtype == o.dtype && op == o.op && std::strcmp(what, o.what) == 0;
  }
  std::string str() const {
    std::string s = what;
    if (std::strcmp(what, "MPI_Allreduce") == 0 || std::strcmp(what, "MPI_Reduce_scatter_block") == 0)
      s += std::string("(") + op_name(static_cast<ReduceOp>(op)) + ")";
    return s + " of " + std::to_string(count) + " x " + std::string(short_name(static_cast<DType>(dtype)));
  }
};

// Records one collective's bytes and time in collective_stats() when it ends (or fails).
class Timed {
 public:
  explicit Timed(uint64_t bytes) : bytes_(bytes), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    record_collective(bytes_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  uint64_t bytes_;
  std::chrono::steady_clock::time_point start_;
};

uint64_t bytes_of(int64_t count, DType d) { return static_cast<uint64_t>(count) * itemsize(d); }

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, bool owned, std::string label) : comm_(comm), owned_(owned), label_(std::move(label)) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    // the members' ranks in MPI_COMM_WORLD, the numbers the user knows (mpirun's ranks)
    MPI_Group mine, world;
    MPI_Comm_group(comm_, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> local(static_cast<size_t>(size_));
    for (int k = 0; k < size_; ++k) local[static_cast<size_t>(k)] = k;
    world_ranks_.resize(local.size());
    MPI_Group_translate_ranks(mine, size_, local.data(), world, world_ranks_.data());
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
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
    Timed timed(bytes_of(count, d));
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
    Timed timed(bytes_of(count, d));
    begin("MPI_Allgather", count, d, 0);
    MPI_Datatype t = mpi_move_type(d);
    int c = mpi_count(count, "MPI_Allgather");
    wait(issue([&](MPI_Request* r) { return MPI_Iallgather(in, c, t, out, c, t, comm_, r); }), "MPI_Allgather", "");
  }
  void reduce_scatter(const void* in, void* out, int64_t count, DType d, ReduceOp op) override {
    std::lock_guard<std::mutex> lock(mu_);
    Timed timed(bytes_of(count * size_, d));
    begin("MPI_Reduce_scatter_block", count, d, static_cast<int>(op));
    MPI_Datatype t = mpi_type(d, "MPI_Reduce_scatter_block");
    int c = mpi_count(count, "MPI_Reduce_scatter_block");
    (void)mpi_count(count * size_, "MPI_Reduce_scatter_block");
    wait(issue([&](MPI_Request* r) { return MPI_Ireduce_scatter_block(in, out, c, t, mpi_op(op), comm_, r); }),
         "MPI_Reduce_scatter_block", op_name(op));
  }
  void alltoall(const void* in, void* out, int64_t count, DType d) override {
    std::lock_guard<std::mutex> lock(mu_);
    Timed timed(bytes_of(count * size_, d));
    begin("MPI_Alltoall", count, d, 0);
    MPI_Datatype t = mpi_move_type(d);
    int c = mpi_count(count, "MPI_Alltoall");
    wait(issue([&](MPI_Request* r) { return MPI_Ialltoall(in, c, t, out, c, t, comm_, r); }), "MPI_Alltoall", "");
  }
  void sendrecv(const void* send, int dst, void* recv, int src, int64_t count, DType d) override {
    std::lock_guard<std::mutex> lock(mu_);
    Timed timed(bytes_of(dst >= 0 ? count : 0, d));
    ++calls_;
    // the ranks of a ppermute send and receive different pairs: no signature to compare
    if (debug_) log("MPI_Sendrecv", count, d);
    for (int peer : {dst, src})
      if (peer < -1 || peer >= size_) fail<ValueError>("MPI_Sendrecv: rank ", peer, " is not in a group of ", size_);
    MPI_Datatype t = mpi_move_type(d);
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
    return std::make_shared<MpiCommunicator>(sub, true, label_ + "/" + std::to_string(color));
  }

 private:
  template <class F>
  MPI_Request issue(F&& f) {
    MPI_Request r = MPI_REQUEST_NULL;
    check(f(&r), "starting an MPI collective");
    return r;
  }

  // Waits for r. OpenMPI moves a nonblocking collective's data only inside MPI calls, so the wait
  // polls without sleeping (yielding the core to any other runnable thread every 64 polls) for
  // GRAFT_COLLECTIVE_SPIN_MS (default 2000) — long
  // enough for the largest transfer once every rank has arrived — and then sleeps between polls (a
  // peer may be minutes behind). Every millisecond it answers the peers' questions; a member that has
  // exited, or the timeout, ends the wait with an error that names the collective and the ranks that
  // did not arrive.
  void wait(MPI_Request r, const char* what, const char* op) {
    if (r == MPI_REQUEST_NULL) return;
    static const double kSpinSeconds = env::integer("GRAFT_COLLECTIVE_SPIN_MS", 2000, 0, 3600000) * 1e-3;
    MpiRuntime& rt = runtime();
    std::string where = label_ + " #" + std::to_string(calls_) + " " + what + (*op ? std::string("(") + op + ")" : "");
    auto start = std::chrono::steady_clock::now();
    double gone_at = -1, served = 0;  // when a member's goodbye was seen; when peers were last answered
    bool waiting = false;
    for (uint64_t polls = 1;; ++polls) {
      int done = 0;
      check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), what);
      if (done) break;
      double waited = (polls & 63) == 0 || polls > 100000
                          ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                          : -1;
      if (waited < 0) continue;
      if (waited - served >= 1e-3) {
        served = waited;
        if (!waiting) rt.set_waiting(where);
        waiting = true;
        rt.serve();
        int gone = rt.departed(world_ranks_);
        // a member that finished normally may leave while this rank still receives its last bytes:
        // allow the collective a moment to complete before calling it lost
        if (gone >= 0 && gone_at < 0) gone_at = waited;
        if (gone >= 0 && waited - gone_at > 2.0) {
          rt.set_waiting("");
          rt.mark_broken();
          fail<Error>(what, *op ? std::string(" (") + op + ")" : std::string(), ", collective #", calls_, ": rank ",
                      gone, " exited while rank ", rt.rank(), " waits for it (a rank left the job mid-step)");
        }
        if (timeout_s_ > 0 && waited > timeout_s_) {
          std::string missing = rt.absent(world_ranks_, where, std::max(2.0, std::min(5.0, timeout_s_ / 4)));
          rt.set_waiting("");
          rt.mark_broken();
          fail<Error>(what, *op ? std::string(" (") + op + ")" : std::string(), ", collective #", calls_, " on ",
                      label_, ": rank ", rt.rank(), " waited ", static_cast<int64_t>(waited),
                      " s for its peers (GRAFT_COLLECTIVE_TIMEOUT=", static_cast<int64_t>(timeout_s_), "):",
                      missing.empty() ? std::string("\n  every rank is in it, yet it did not complete") : missing,
                      "\n(GRAFT_DEBUG_COLLECTIVES=1 checks that the ranks call the same collectives)");
        }
      }
      if (waited < kSpinSeconds) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    if (waiting) rt.set_waiting("");
  }

  void log(const char* what, int64_t count, DType d) const {
    std::fprintf(stderr, "[graft collectives] rank %d/%d #%llu %s %lld x %s\n", rank_, size_,
                 static_cast<unsigned long long>(calls_), what, static_cast<long long>(count),
                 std::string(short_name(d)).c_str());
  }

  // Counts the call; with GRAFT_DEBUG_COLLECTIVES also logs it and checks that every rank makes the
  // same one (the same operation, size and type as its n-th collective) by gathering the ranks'
  // signatures, naming the first rank that differs. The check runs before the collective, so a
  // mismatch leaves the ranks in step (each raises the same error).
  void begin(const char* what, int64_t count, DType d, int op) {
    ++calls_;
    if (!debug_) return;
    log(what, count, d);
    Signature mine;
    mine.seq = calls_;
    mine.count = count;
    mine.dtype = static_cast<int32_t>(d);
    mine.op = op;
    std::snprintf(mine.what, sizeof mine.what, "%s", what);
    std::vector<Signature> all(static_cast<size_t>(size_));
    wait(issue([&](MPI_Request* r) {
           return MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm_, r);
         }),
         "MPI_Allgather (GRAFT_DEBUG_COLLECTIVES check)", "");
    for (int k = 1; k < size_; ++k)
      if (!(all[static_cast<size_t>(k)] == all[0]))
        fail<Error>("collective #", calls_, " differs between the ranks: rank ", world_ranks_[0], " calls ",
                    all[0].str(), " (its #", all[0].seq, "), rank ", world_ranks_[static_cast<size_t>(k)],
                    " calls ", all[static_cast<size_t>(k)].str(), " (its #", all[static_cast<size_t>(k)].seq,
                    "): a rank took another path");
  }

  MPI_Comm comm_;
  bool owned_;
  std::string label_;
  std::vector<int> world_ranks_;
  int rank_ = 0, size_ = 1;
  double timeout_s_ = 600;
  bool debug_ = false;
  uint64_t calls_ = 0;
  std::mutex mu_;
};

}  // namespace

std::shared_ptr<Communicator> mpi_world() {
  runtime();
  static std::shared_ptr<Communicator> world = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD, false, "world");
  return world;
}

#endif

}  // namespace graft
