// mpi_communicator.hpp: the Communicator over Open MPI (CPU tensors).
//
// Used for backend "mpi" when the ranks were started by mpirun. On one host
// Open MPI moves messages through shared memory (the vader BTL), which is much
// faster than Gloo's loopback TCP for small and medium messages.
//
// MPI aborts the whole job when a rank dies, so this backend serves the fixed
// (not fault-tolerant) process groups only; a replica dimension under the
// quorum keeps Gloo (scenario validation says so).
//
// Built when CMake finds MPI (DTLAB_HAVE_MPI); otherwise mpiAvailable() is
// false and makeMpiCommunicator throws a UsageError that says why.
#pragma once

#include "comm/communicator.hpp"

#include <memory>
#include <string>

namespace dt {

// True when dtlab was built with MPI.
[[nodiscard]] bool mpiAvailable();

// Why MPI cannot be used in this process ("" when it can): not built with MPI,
// or not started by mpirun (no OMPI_COMM_WORLD_RANK in the environment).
[[nodiscard]] std::string mpiUnavailableReason();

// MPI_Finalize, if MPI was initialised and is not finalised yet. Call it
// after every MPI communicator is destroyed, before a quick exit (_Exit skips
// the atexit handler that would otherwise do it): mpirun counts a rank that
// exits without finalising as an abnormal termination.
void finalizeMpi();

// The mpirun on PATH, "" when there is none (openmpi-bin not installed).
[[nodiscard]] std::string mpirunPath();

// A communicator over the ranks of MPI_COMM_WORLD whose `color` is equal
// (MPI_Comm_split; rank order = world rank order). Every rank of the world
// must call it, in the same order, with its own color: a collective call.
// The first call initialises MPI (MPI_THREAD_MULTIPLE: collectives run on the
// communicator's thread, posted messages on the caller's); MPI is finalised
// at process exit. `expected_rank` / `expected_size` are checked against the
// split communicator (a mismatch is a UsageError: the launcher and the
// scenario disagree).
[[nodiscard]] std::unique_ptr<Communicator> makeMpiCommunicator(int color, int expected_rank,
                                                                int expected_size, EventSink* sink);

} // namespace dt
