#include "graft/parallel/device.h"

#include "graft/compiler/program_cache.h"

#include <mutex>

#include "graft/runtime/dist/mpi.h"
#include "graft/core/env.h"
#include "graft/core/error.h"

namespace graft {

namespace {
struct Job {
  std::once_flag once;
  bool initialized = false;
  int rank = 0, size = 1;
  std::shared_ptr<Communicator> world;
};
Job& job() {
  static Job j;
  return j;
}

int env_rank(const char* name) { return static_cast<int>(env::integer(name, -1, 0, 1 << 20)); }
}  // namespace

std::string GlobalDevice::str() const {
  std::string s = (local.is_cpu() ? std::string("cpu:") : local.str() + "/") + std::to_string(id);
  if (process_index != graft::process_index()) s += "@p" + std::to_string(process_index);
  return s;
}

int local_device_count() {
  static const int n = static_cast<int>(env::integer("GRAFT_CPU_DEVICES", 1, 1, 4096));
  return n;
}
int process_index() { return job().rank; }
int process_count() { return job().size; }

std::vector<GlobalDevice> devices() {
  std::vector<GlobalDevice> d;
  int l = local_device_count();
  for (int p = 0; p < process_count(); ++p)
    for (int k = 0; k < l; ++k) d.push_back(GlobalDevice{p * l + k, p, Device::cpu()});
  return d;
}

std::vector<GlobalDevice> local_devices() {
  std::vector<GlobalDevice> d;
  int l = local_device_count(), p = process_index();
  for (int k = 0; k < l; ++k) d.push_back(GlobalDevice{p * l + k, p, Device::cpu()});
  return d;
}

namespace distributed {

bool launched_by_mpi() { return env_rank("OMPI_COMM_WORLD_SIZE") > 1; }

void initialize() {
  Job& j = job();
  std::call_once(j.once, [&] {
    if (!launched_by_mpi()) {
      j.world = self_communicator();
      j.initialized = true;
      return;
    }
    int want_rank = env_rank("OMPI_COMM_WORLD_RANK"), want_size = env_rank("OMPI_COMM_WORLD_SIZE");
    std::shared_ptr<Communicator> w = mpi_world();
    if (w->rank() != want_rank || w->size() != want_size)
      fail<Error>("distributed::initialize: MPI says rank ", w->rank(), " of ", w->size(), ", the launcher's environment ",
                  want_rank, " of ", want_size, " (was the program started by another launcher's mpirun?)");
    // every process must expose as many devices (the global numbering assumes it)
    std::vector<int64_t> counts(static_cast<size_t>(w->size()));
    int64_t mine = local_device_count();
    w->allgather(&mine, counts.data(), 1, DType::i64);
    for (size_t p = 0; p < counts.size(); ++p)
      if (counts[p] != mine)
        fail<ValueError>("distributed::initialize: process ", p, " has GRAFT_CPU_DEVICES=", counts[p], ", this one ", mine,
                         "; every process must expose as many devices");
    j.rank = w->rank();
    j.size = w->size();
    // a program compiled here may hold this process's index (a folded axis_index): the ranks of a job
    // must not share their cached optimized programs
    compiler::set_program_cache_salt("rank " + std::to_string(j.rank) + " of " + std::to_string(j.size));
    j.world = std::move(w);
    j.initialized = true;
  });
}

bool is_initialized() { return job().initialized; }

std::shared_ptr<Communicator> world() {
  if (!is_initialized()) initialize();
  return job().world;
}

}  // namespace distributed
}  // namespace graft
