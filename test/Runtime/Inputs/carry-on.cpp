// A host application that loads a compiled LinAttn library (examples/
// deltanet.mlir, built by linattn-compile) and calls it twice, then once
// with v one token longer than q (a shape check fails), reading the
// library's status (linattnCudaGetFirstError) after loading and after each
// call, and carrying on whatever failed; then it unloads the library and
// says it is still running. usage: carry-on LIB.so [--bad-inputs]
//
// @deltanet(q, k, v: bf16[?,?,8,128], beta: f32[?,?,8],
//           s0: f32[?,8,128,128]) -> (bf16[?,?,8,128], f32[?,8,128,128]),
// called at B = T = 1 with host buffers for its arguments: the fake driver's
// device memory is host memory, and a real driver never gets this far in
// the scenarios the test runs.
//
// With --bad-inputs, two more calls follow the third: one with beta 1.5 at
// [0, 0, 5], one with a NaN in k at [0, 0, 2, 7] (what a library compiled
// with --check-inputs reports, and one without computes silently).

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

/// A rank-R memref descriptor {allocated, aligned, offset, sizes, strides}
/// over `data` of the given sizes (row-major).
std::vector<int64_t> descriptor(void *data, std::vector<int64_t> sizes) {
  auto p = reinterpret_cast<int64_t>(data);
  std::vector<int64_t> d = {p, p, 0};
  d.insert(d.end(), sizes.begin(), sizes.end());
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int i = int(sizes.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * sizes[i + 1];
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
}

} // namespace

int main(int argc, char **argv) {
  bool badInputs = argc == 3 && std::string(argv[2]) == "--bad-inputs";
  if (argc != 2 && !badInputs) {
    std::fprintf(stderr, "usage: carry-on LIB.so [--bad-inputs]\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IONBF, 0);
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::printf("dlopen failed: %s\n", dlerror());
    return 2;
  }
  auto firstError = reinterpret_cast<const char *(*)()>(
      dlsym(lib, "linattnCudaGetFirstError"));
  auto clearError =
      reinterpret_cast<void (*)()>(dlsym(lib, "linattnCudaClearError"));
  using Entry = void (*)(void *, void *, void *, void *, void *, void *);
  auto entry = reinterpret_cast<Entry>(dlsym(lib, "_mlir_ciface_deltanet"));
  if (!firstError || !clearError || !entry) {
    std::printf("missing symbols\n");
    return 2;
  }
  std::printf("loaded: %s\n", firstError() ? firstError() : "ok");
  clearError();

  std::vector<uint16_t> q(8 * 128), k(8 * 128), v(8 * 128);
  std::vector<float> beta(8), s0(8 * 128 * 128);
  auto dq = descriptor(q.data(), {1, 1, 8, 128});
  auto dk = descriptor(k.data(), {1, 1, 8, 128});
  auto dv = descriptor(v.data(), {1, 1, 8, 128});
  auto db = descriptor(beta.data(), {1, 1, 8});
  auto ds = descriptor(s0.data(), {1, 8, 128, 128});
  for (int call = 1; call <= 2; ++call) {
    std::vector<int64_t> results(2 * 11, 0);
    entry(results.data(), dq.data(), dk.data(), dv.data(), db.data(),
          ds.data());
    std::printf("call %d: %s\n", call, firstError() ? firstError() : "ok");
    clearError();
  }
  std::vector<uint16_t> v2(2 * 8 * 128);
  auto dv2 = descriptor(v2.data(), {1, 2, 8, 128});
  std::vector<int64_t> results(2 * 11, 0);
  entry(results.data(), dq.data(), dk.data(), dv2.data(), db.data(), ds.data());
  std::printf("call 3: %s\n", firstError() ? firstError() : "ok");
  clearError();
  if (badInputs) {
    beta[5] = 1.5f;
    entry(results.data(), dq.data(), dk.data(), dv.data(), db.data(),
          ds.data());
    std::printf("call 4: %s\n", firstError() ? firstError() : "ok");
    clearError();
    beta[5] = 0.5f;
    k[2 * 128 + 7] = 0x7fc0; // bf16 NaN
    entry(results.data(), dq.data(), dk.data(), dv.data(), db.data(),
          ds.data());
    std::printf("call 5: %s\n", firstError() ? firstError() : "ok");
    clearError();
  }
  dlclose(lib);
  std::printf("still running\n");
  return 0;
}
