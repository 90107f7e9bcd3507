// Communication between devices and processes: the Communicator interface that collectives run on
// across processes (MPI for CPUs; NCCL plugs in for GPUs), and the axis environment — which named axes
// the code running now is mapped over, how large they are, and which communicator (if any) carries
// each one.
//
// A collective (psum(x, "i"), all_gather, ...) inside vmap(axis_name = "i") is computed by vmap's
// batching rule over its lanes; inside shard_map / pmap on this process's devices likewise; across
// processes, the axis's frame holds a communicator and the collective's kernel calls it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "graft/core/device.h"
#include "graft/core/dtype.h"

namespace graft {

enum class ReduceOp { sum, max, min };

/// A group of processes (ranks 0..size-1) that run collectives together. Buffers are host memory (a
/// device communicator's: that device's memory, see device_communicator); counts are elements of `d`. Every rank of the group must call the same operation with the same
/// sizes, in the same order. Failures (a peer gone, a timeout) raise graft::Error.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "mpi", "self", ...
  virtual std::string kind() const = 0;
  /// out = op over ranks of in (out may be in), `count` elements on every rank.
  virtual void allreduce(const void* in, void* out, int64_t count, DType d, ReduceOp op) = 0;
  /// out = every rank's `count` elements of in, concatenated in rank order.
  virtual void allgather(const void* in, void* out, int64_t count, DType d) = 0;
  /// out (count elements) = op over ranks of block `rank` of in (size * count elements).
  virtual void reduce_scatter(const void* in, void* out, int64_t count, DType d, ReduceOp op) = 0;
  /// Block r of in (count elements) goes to rank r; out holds block s from rank s.
  virtual void alltoall(const void* in, void* out, int64_t count, DType d) = 0;
  /// Sends `count` elements of `send` to rank `dst` and receives as many from rank `src` into `recv`
  /// (dst / src of -1: nothing to send / receive).
  virtual void sendrecv(const void* send, int dst, void* recv, int src, int64_t count, DType d) = 0;
  virtual void barrier() = 0;
  /// A sub-group: the ranks with the same `color` (ordered by `key`), as MPI_Comm_split.
  virtual std::shared_ptr<Communicator> split(int color, int key) = 0;
};

/// Communicators whose buffers live on a device (NCCL's on a GPU) are made from a host communicator of
/// the same ranks (MPI carries NCCL's unique id), one per (communicator, device), by the factory the
/// device type registered. It raises graft::Error when it cannot make one (no NCCL, no GPU).
using DeviceCommunicatorFactory = std::shared_ptr<Communicator> (*)(const std::shared_ptr<Communicator>& host, Device d);
void register_device_communicator(int16_t device_type, DeviceCommunicatorFactory f);
/// The communicator of host's ranks for buffers on `d`, made on first use and kept; null when the
/// device type registered none, GRAFT_DEVICE_COLLECTIVES=0, or making it failed (then the collectives
/// go through the host, and GRAFT_LOG_FALLBACKS=1 says why once).
std::shared_ptr<Communicator> device_communicator(const std::shared_ptr<Communicator>& host, Device d);

/// What this process's collectives across processes cost since the last reset: the calls, the bytes
/// this rank contributed, and the seconds spent in them (issuing and waiting, so a slow peer's delay
/// counts here too). Lets a training loop report the fraction of its step spent communicating.
struct CollectiveStats {
  uint64_t calls = 0;
  uint64_t bytes = 0;
  double seconds = 0;
};
CollectiveStats collective_stats();
void reset_collective_stats();
/// Adds one collective to the statistics (called by Communicator implementations).
void record_collective(uint64_t bytes, double seconds);

/// One named axis the current code is mapped over.
struct AxisFrame {
  std::string name;
  int64_t size = 0;
  /// Carries the axis across processes (null: the axis is handled on this process, by vmap's rules).
  std::shared_ptr<Communicator> comm;
};

/// Binds a named axis for the scope (vmap with an axis_name, shard_map, pmap push one). Per thread.
class AxisScope {
 public:
  explicit AxisScope(AxisFrame f);
  ~AxisScope();
  AxisScope(const AxisScope&) = delete;
  AxisScope& operator=(const AxisScope&) = delete;
};

/// The innermost frame binding `name`, or null.
const AxisFrame* find_axis(std::string_view name);
/// The size of axis `name`; a ValueError naming `op` when no enclosing map binds it.
int64_t axis_size(std::string_view name, const char* op);

}  // namespace graft
