// Devices and processes: what a mesh is made of.
//
// A process exposes GRAFT_CPU_DEVICES CPU devices (default 1; like XLA's forced host device count), so
// that programs over several devices run, and are tested, in one process. Launched by mpirun, each
// process calls distributed::initialize() (JAX's multi-controller model): every process's devices join
// one global list, numbered process by process, and collectives between processes run over MPI.
//
//   graft::distributed::initialize();            // reads OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK
//   graft::Mesh mesh(graft::devices(), {"data"});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/runtime/collectives.h"
#include "graft/core/device.h"

namespace graft {

/// A device of the job: its global number, its process, and what it is on that process.
struct GlobalDevice {
  int id = 0;             ///< global index (process p's devices are p * local_device_count() + k)
  int process_index = 0;  ///< the process that holds it
  Device local = Device::cpu();
  /// "cpu:3" (or "cpu:3@p1" for another process's device)
  std::string str() const;
  bool operator==(const GlobalDevice& o) const { return id == o.id; }
};

/// Every process's devices, in id order.
std::vector<GlobalDevice> devices();
/// This process's devices.
std::vector<GlobalDevice> local_devices();
/// How many devices each process exposes (GRAFT_CPU_DEVICES, default 1).
int local_device_count();
int process_index();
int process_count();

namespace distributed {
/// Joins the job that launched this process: with mpirun's environment (OMPI_COMM_WORLD_SIZE, _RANK,
/// _LOCAL_RANK) it initializes MPI and checks that the ranks agree (the same graft build and device
/// count); without it, the process runs alone (process_count() == 1). Idempotent.
void initialize();
bool is_initialized();
/// The communicator of all processes (a single-rank one when alone).
std::shared_ptr<Communicator> world();
/// Whether the launcher's environment names a job of several processes (OMPI_COMM_WORLD_SIZE > 1).
bool launched_by_mpi();
}  // namespace distributed

}  // namespace graft
