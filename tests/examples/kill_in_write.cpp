// A test shim (LD_PRELOAD) that kills its process in the middle of a file write: with
// GRAFT_KILL_IN_WRITE="<substring>:<n>", the n-th write() to a file whose path contains <substring>
// writes half of its bytes and then the process receives SIGKILL. The main job's resume test uses it to
// crash a run while it saves a checkpoint.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
using WriteFn = ssize_t (*)(int, const void*, size_t);
WriteFn real_write = nullptr;
int seen = 0;
}  // namespace

extern "C" ssize_t write(int fd, const void* buf, size_t n) {
  if (!real_write) real_write = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
  const char* spec = getenv("GRAFT_KILL_IN_WRITE");
  if (spec && fd > 2) {
    char want[256], link[64], path[4096];
    const char* colon = strrchr(spec, ':');
    if (colon && static_cast<size_t>(colon - spec) < sizeof want) {
      memcpy(want, spec, static_cast<size_t>(colon - spec));
      want[colon - spec] = 0;
      snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      ssize_t len = readlink(link, path, sizeof path - 1);
      if (len > 0) {
        path[len] = 0;
        if (strstr(path, want) && ++seen == atoi(colon + 1)) {
          real_write(fd, buf, n / 2);
          kill(getpid(), SIGKILL);
          pause();
        }
      }
    }
  }
  return real_write(fd, buf, n);
}
