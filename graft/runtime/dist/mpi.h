// Communicators on real engines: MPI (OpenMPI, through its C API) for processes, and the single-rank
// "self" communicator for a process that runs alone.
//
// MPI is optional at build time (GRAFT_HAVE_MPI): without it, mpi_world() raises a graft::Error that
// says how to get it. Collectives run as MPI's nonblocking collectives (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ireduce_scatter_block, MPI_Ialltoall, MPI_Isend/MPI_Irecv) that the calling thread waits on, so
// that a peer that is gone or took another path is reported after GRAFT_COLLECTIVE_TIMEOUT seconds
// (default 600; 0 waits forever, and the error names the ranks that did not arrive) instead of hanging
// the job; a peer that exits normally while others wait for it is reported within seconds.
// GRAFT_DEBUG_COLLECTIVES=1 logs every collective (rank, operation, size, type) to stderr and checks
// that all ranks call the same one, naming the first that differs. After a timeout or a lost peer the
// process ends through MPI_Abort at exit, so that mpirun stops the whole job.
#pragma once

#include <memory>

#include "graft/runtime/collectives.h"

namespace graft {

/// True when graft was built with MPI.
bool have_mpi();
/// MPI_COMM_WORLD, initializing MPI on first use (MPI_Init_thread, MPI_THREAD_SERIALIZED; finalized at
/// exit). Raises graft::Error without MPI.
std::shared_ptr<Communicator> mpi_world();
/// A communicator of one rank (every collective is the identity).
std::shared_ptr<Communicator> self_communicator();

}  // namespace graft
