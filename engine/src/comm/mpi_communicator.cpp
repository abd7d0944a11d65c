// mpi_communicator.cpp: Communicator backend on Open MPI (see the header).
//
// Each operation maps one to one to an MPI call on float32 CPU tensors, N =
// group size, S = bytes of x:
//   allReduce(x)          MPI_Allreduce(MPI_IN_PLACE, x, SUM)        2(N-1)/N S on the wire (ring)
//   allGather(out, x)     MPI_Allgather(x -> out)                    (N-1) S
//   reduceScatter(out, x) MPI_Reduce_scatter_block(x -> out, SUM)    (N-1)/N S
//   broadcast(x, root)    MPI_Bcast(x)                               S from the root
//   send / recv           MPI_Send / MPI_Recv, tag 0
//   postSend / postRecv   MPI_Isend / MPI_Irecv with the caller's tag; the
//                         returned function is MPI_Wait
//   barrier               MPI_Barrier
// (the bytes are the cost model's, communicator.cpp; Open MPI picks its own
// algorithm per size.)
//
// Errors: MPI_ERRORS_RETURN is set on each communicator, so a failed call
// returns an error code, which becomes a CommError with MPI's own message.
// In practice Open MPI aborts the job when a peer dies (that is why this
// backend is for fixed groups only).
#include "comm/mpi_communicator.hpp"

#include "dtlab/errors.hpp"

#include <cstdlib>
#include <mutex>
#include <unistd.h>

#ifdef DTLAB_HAVE_MPI
#include <mpi.h>
#endif

namespace dt {

bool mpiAvailable() {
#ifdef DTLAB_HAVE_MPI
    return true;
#else
    return false;
#endif
}

std::string mpiUnavailableReason() {
    if (!mpiAvailable())
        return "this dtlab was built without MPI (CMake did not find it: install libopenmpi-dev and "
               "reconfigure)";
    if (!std::getenv("OMPI_COMM_WORLD_RANK"))
        return "the ranks were not started by mpirun (no OMPI_COMM_WORLD_RANK in the environment)";
    return "";
}

std::string mpirunPath() {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos)
            end = dirs.size();
        const std::string candidate = (end > start ? dirs.substr(start, end - start) : ".") + "/mpirun";
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        start = end + 1;
    }
    return "";
}

#ifdef DTLAB_HAVE_MPI
namespace {

std::string mpiErrorText(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    return std::string(text, size_t(length));
}

void check(int code, const char* op) {
    if (code != MPI_SUCCESS)
        throw CommError(CommErrorKind::Other, std::string("MPI ") + op + " failed: " + mpiErrorText(code));
}

void requireFloat(const at::Tensor& x, const char* op) {
    if (x.scalar_type() != at::kFloat || !x.is_contiguous() || !x.device().is_cpu())
        throw CommError(CommErrorKind::Other,
                        std::string("MPI ") + op + ": needs a contiguous float32 CPU tensor");
}

int count(const at::Tensor& x) {
    return int(x.numel());
}

// MPI is initialised once per process, by the first communicator, and
// finalised at exit (after every communicator is gone: the worker destroys
// its groups before returning from main).
void ensureMpiInitialised() {
    static std::once_flag once;
    std::call_once(once, [] {
        int initialised = 0;
        MPI_Initialized(&initialised);
        if (initialised)
            return;
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "init");
        if (provided < MPI_THREAD_MULTIPLE)
            throw UsageError(
                "Open MPI was built without MPI_THREAD_MULTIPLE, which dtlab's MPI backend needs");
        std::atexit([] {
            int finalised = 0;
            MPI_Finalized(&finalised);
            if (!finalised)
                MPI_Finalize();
        });
    });
}

class MpiCommunicator final : public Communicator {
  public:
    MpiCommunicator(MPI_Comm comm, int rank, int size, EventSink* sink)
        : Communicator(rank, size, sink), m_comm(comm) {}
    ~MpiCommunicator() override {
        shutdown();
        int finalised = 0;
        MPI_Finalized(&finalised);
        if (!finalised)
            MPI_Comm_free(&m_comm);
    }
    CommBackend backend() const override { return CommBackend::Mpi; }

  protected:
    void doAllReduce(at::Tensor& x) override {
        requireFloat(x, "all-reduce");
        check(MPI_Allreduce(MPI_IN_PLACE, x.data_ptr<float>(), count(x), MPI_FLOAT, MPI_SUM, m_comm),
              "all-reduce");
    }
    void doAllGather(at::Tensor& out, at::Tensor& x) override {
        requireFloat(x, "all-gather");
        requireFloat(out, "all-gather");
        check(MPI_Allgather(x.data_ptr<float>(), count(x), MPI_FLOAT, out.data_ptr<float>(), count(x),
                            MPI_FLOAT, m_comm),
              "all-gather");
    }
    void doReduceScatter(at::Tensor& out, at::Tensor& x) override {
        requireFloat(x, "reduce-scatter");
        requireFloat(out, "reduce-scatter");
        check(MPI_Reduce_scatter_block(x.data_ptr<float>(), out.data_ptr<float>(), count(out), MPI_FLOAT,
                                       MPI_SUM, m_comm),
              "reduce-scatter");
    }
    void doBroadcast(at::Tensor& x, int root) override {
        requireFloat(x, "broadcast");
        check(MPI_Bcast(x.data_ptr<float>(), count(x), MPI_FLOAT, root, m_comm), "broadcast");
    }
    void doSend(at::Tensor& x, int peer) override {
        requireFloat(x, "send");
        check(MPI_Send(x.data_ptr<float>(), count(x), MPI_FLOAT, peer, 0, m_comm), "send");
    }
    void doRecv(at::Tensor& x, int peer) override {
        requireFloat(x, "recv");
        check(MPI_Recv(x.data_ptr<float>(), count(x), MPI_FLOAT, peer, 0, m_comm, MPI_STATUS_IGNORE), "recv");
    }
    std::function<void()> doPostSend(at::Tensor& x, int peer, int tag) override {
        requireFloat(x, "send");
        auto request = std::make_shared<MPI_Request>();
        // Tags 0.. are the caller's; queued send/recv use tag 0 on the same
        // communicator, so posted tags are shifted past it.
        check(MPI_Isend(x.data_ptr<float>(), count(x), MPI_FLOAT, peer, tag + 1, m_comm, request.get()),
              "send");
        return [request, keep = x] { check(MPI_Wait(request.get(), MPI_STATUS_IGNORE), "send"); };
    }
    std::function<void()> doPostRecv(at::Tensor& x, int peer, int tag) override {
        requireFloat(x, "recv");
        auto request = std::make_shared<MPI_Request>();
        check(MPI_Irecv(x.data_ptr<float>(), count(x), MPI_FLOAT, peer, tag + 1, m_comm, request.get()),
              "recv");
        return [request, keep = x] { check(MPI_Wait(request.get(), MPI_STATUS_IGNORE), "recv"); };
    }
    void doBarrier() override { check(MPI_Barrier(m_comm), "barrier"); }

  private:
    MPI_Comm m_comm;
};

} // namespace

std::unique_ptr<Communicator> makeMpiCommunicator(int color, int expected_rank, int expected_size,
                                                  EventSink* sink) {
    if (const std::string why = mpiUnavailableReason(); !why.empty())
        throw UsageError("backend \"mpi\": " + why);
    ensureMpiInitialised();
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm comm = MPI_COMM_NULL;
    check(MPI_Comm_split(MPI_COMM_WORLD, color, world_rank, &comm), "comm split");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank != expected_rank || size != expected_size) {
        MPI_Comm_free(&comm);
        throw UsageError("backend \"mpi\": mpirun made this process rank " + std::to_string(rank) + " of " +
                         std::to_string(size) + " in its group, but the scenario expects rank " +
                         std::to_string(expected_rank) + " of " + std::to_string(expected_size) +
                         " (start as many ranks with mpirun -np as [topology] ranks says)");
    }
    return std::make_unique<MpiCommunicator>(comm, rank, size, sink);
}

#else

std::unique_ptr<Communicator> makeMpiCommunicator(int, int, int, EventSink*) {
    throw UsageError("backend \"mpi\": " + mpiUnavailableReason());
}

#endif

void finalizeMpi() {
#ifdef DTLAB_HAVE_MPI
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    if (initialised && !finalised)
        MPI_Finalize();
#endif
}

} // namespace dt
