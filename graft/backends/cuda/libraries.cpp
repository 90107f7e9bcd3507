#include "graft/backends/cuda/libraries.h"

#include <dlfcn.h>

#include <array>
#include <mutex>

#include "graft/core/error.h"

// The toolkit's library folder at build time (CMakeLists.txt), tried after the loader's own search
#ifndef GRAFT_CUDA_LIBRARY_DIR
#define GRAFT_CUDA_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif
#ifndef GRAFT_CUDA_MAJOR
#define GRAFT_CUDA_MAJOR "13"
#endif

namespace graft::cuda::lib {

namespace {

const char* base_name(Library l) {
  switch (l) {
    case Library::cudart: return "libcudart.so";
    case Library::nvrtc: return "libnvrtc.so";
    case Library::cublas: return "libcublas.so";
    case Library::cublasLt: return "libcublasLt.so";
  }
  return "?";
}

struct Opened {
  void* handle = nullptr;
  std::string why;
};

const Opened& opened(Library l) {
  static std::array<Opened, 4> libs;
  static std::array<std::once_flag, 4> once;
  auto i = static_cast<size_t>(l);
  std::call_once(once[i], [&] {
    // the soname first (LD_LIBRARY_PATH, the loader's cache), then the toolkit's usual folders
    std::string so = std::string(base_name(l)) + "." GRAFT_CUDA_MAJOR;
    std::string first_error;
    for (std::string dir : {std::string(), std::string(GRAFT_CUDA_LIBRARY_DIR) + "/",
                            std::string("/usr/local/cuda/lib64/"), std::string("/usr/local/cuda/lib/")}) {
      // RTLD_GLOBAL: cuBLAS finds the cuBLASLt opened here
      if ((libs[i].handle = dlopen((dir + so).c_str(), RTLD_NOW | RTLD_GLOBAL))) return;
      if (first_error.empty()) first_error = dlerror();
    }
    libs[i].why = "cannot load " + so + " (CUDA " GRAFT_CUDA_MAJOR "'s libraries: add their folder to " +
                  "LD_LIBRARY_PATH): " + first_error;
  });
  return libs[i];
}

}  // namespace

std::string unavailable(Library l) { return opened(l).why; }

void* symbol(Library l, const char* name) {
  const Opened& o = opened(l);
  if (!o.handle) fail<Error>("cuda: ", o.why);
  void* p = dlsym(o.handle, name);
  if (!p) fail<Error>("cuda: ", base_name(l), "." GRAFT_CUDA_MAJOR " has no function ", name);
  return p;
}

}  // namespace graft::cuda::lib

namespace graft::cuda {

std::string missing_library_functions() {
  using namespace lib;
  std::string out;
  auto look = [&](Library l, const char* library, const char* name) {
    const Opened& o = opened(l);
    if (!o.handle || !dlsym(o.handle, name)) out += (out.empty() ? "" : " ") + std::string(library) + ":" + name;
  };
#define GRAFT_CUDA_LOOK(library, fn) look(Library::library, #library, GRAFT_CUDA_NAME(fn));
#define GRAFT_CUDA_LOOK_TYPED(library, fn, Type) GRAFT_CUDA_LOOK(library, fn)
  GRAFT_CUDA_FUNCTIONS(GRAFT_CUDA_LOOK)
  GRAFT_CUDA_TYPED_FUNCTIONS(GRAFT_CUDA_LOOK_TYPED)
#undef GRAFT_CUDA_LOOK_TYPED
#undef GRAFT_CUDA_LOOK
  return out;
}

}  // namespace graft::cuda
