// A data-parallel job in which one rank misbehaves, for tests/distributed/faults.sh: every fault must
// end the whole job with a non-zero exit and a message that names what went wrong, never a hang.
//   faults kill      rank 1 is killed (SIGKILL) before a collective
//   faults exit      rank 1 leaves normally (exit(0)) while rank 0 waits in a collective
//   faults sleep     the last rank sleeps past GRAFT_COLLECTIVE_TIMEOUT before the collective
//   faults mismatch  rank 1 all-reduces a different size (run with GRAFT_DEBUG_COLLECTIVES=1)
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <graft/graft.h>

using namespace graft;

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  try {
    distributed::initialize();
    int me = process_index(), last = process_count() - 1;
    Mesh mesh(devices(), {"data"});
    auto allsum = shard_map([](const Array& b) { return psum(b, "data"); }, mesh, {P()}, {P()});
    // one collective that every rank completes
    float first = allsum(ones({4})).to_vector<float>()[0];
    std::printf("rank %d: first psum %.0f\n", me, first);
    std::fflush(stdout);
    int64_t n = 4;
    if (mode == "kill" && me == 1) std::raise(SIGKILL);
    if (mode == "exit" && me == 1) std::exit(0);
    if (mode == "sleep" && me == last) std::this_thread::sleep_for(std::chrono::seconds(40));
    if (mode == "mismatch" && me == 1) n = 5;
    float second = allsum(ones({n})).to_vector<float>()[0];
    std::printf("rank %d: second psum %.0f\n", me, second);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", process_index(), e.what());
    return 1;
  }
}
