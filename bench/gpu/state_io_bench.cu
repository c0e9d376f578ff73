// Ways of reading and writing a decode step's f32 state (heads of K x V =
// 128 x 128) once, at the recurrent kernel's block shape (128 threads, 64
// columns a block, two blocks a head, four blocks an SM), each timed as
// the mean of 20 launches in a CUDA graph (best of 10 replays), heads in
// {128, 512, 2048, 8192} (512: Qwen3-Next at B = 16):
//   lanes4          the recurrent kernel's layout: 4 lanes a column, 32
//                   consecutive keys a lane, 2 columns a thread, 4-byte
//                   loads and stores between global memory and registers
//   staged          the same, the block's tile through shared memory by
//                   16-byte cp.async in, 16-byte stores out
//   stagedLoadOnly  staged loads, 4-byte stores from registers
//   vec4            a thread holds 4 consecutive columns of 16 keys, float4
//                   straight from and to global memory
//   copy4           a grid-stride float4 copy-and-scale (the yardstick)
// On the GPU machine:
//   nvcc -arch=sm_90a -O3 -o /tmp/state_io bench/gpu/state_io_bench.cu && /tmp/state_io
// (bench/results/state_io_bench_h200.txt; bench/NOTES.md e12).
#include <cstdio>
#include <cuda_runtime.h>
constexpr int K = 128, V = 128, COLS = 64, THREADS = 128;
__device__ float sink;
// Today's layout: 4 lanes a column, 32 consecutive keys a lane, 2 column sets.
__global__ void __launch_bounds__(THREADS, 4) lanes4(const float* __restrict__ s0, float* __restrict__ s1, const float* __restrict__ kk) {
  int head = blockIdx.y, slice = threadIdx.x % 4, cj = threadIdx.x / 4;
  const float* src = s0 + (size_t)head * K * V; float* dst = s1 + (size_t)head * K * V;
  int c[2] = {int(blockIdx.x) * COLS + cj, int(blockIdx.x) * COLS + cj + 32};
  float r[2][32];
#pragma unroll
  for (int set = 0; set < 2; ++set)
#pragma unroll
    for (int m = 0; m < 32; ++m) r[set][m] = src[(slice * 32 + m) * V + c[set]];
#pragma unroll
  for (int set = 0; set < 2; ++set)
#pragma unroll
    for (int m = 0; m < 32; ++m) r[set][m] = fmaf(kk[slice * 32 + m], 0.5f, 0.99f * r[set][m]);
#pragma unroll
  for (int set = 0; set < 2; ++set)
#pragma unroll
    for (int m = 0; m < 32; ++m) dst[(slice * 32 + m) * V + c[set]] = r[set][m];
}
// The same layout, the block's tile staged through shared memory by
// 16-byte cp.async; written back by 16-byte stores from shared memory
// (kStagedStores) or by 4-byte stores from registers.
__device__ __forceinline__ void cp16(void* smem, const void* g) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(g));
}
constexpr int SLICE_FLOATS = 32 * COLS + 8;  // a slice's 32 rows, then 8 floats of skew
template <bool kStagedStores>
__global__ void __launch_bounds__(THREADS, 4) staged(const float* __restrict__ s0, float* __restrict__ s1, const float* __restrict__ kk) {
  extern __shared__ float tile[];
  int head = blockIdx.y, slice = threadIdx.x % 4, cj = threadIdx.x / 4;
  const float* src = s0 + (size_t)head * K * V + blockIdx.x * COLS; float* dst = s1 + (size_t)head * K * V + blockIdx.x * COLS;
  // 128 rows x 16 chunks of 16 bytes.
#pragma unroll
  for (int i = threadIdx.x; i < K * COLS / 4; i += THREADS) {
    int row = i / 16, ch = i % 16;
    cp16(&tile[(row / 32) * SLICE_FLOATS + (row % 32) * COLS + ch * 4], src + row * V + ch * 4);
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  float r[2][32];
  float* mine = tile + slice * SLICE_FLOATS;
#pragma unroll
  for (int set = 0; set < 2; ++set)
#pragma unroll
    for (int m = 0; m < 32; ++m) r[set][m] = mine[m * COLS + cj + 32 * set];
#pragma unroll
  for (int set = 0; set < 2; ++set)
#pragma unroll
    for (int m = 0; m < 32; ++m) r[set][m] = fmaf(kk[slice * 32 + m], 0.5f, 0.99f * r[set][m]);
  if constexpr (!kStagedStores) {
#pragma unroll
    for (int set = 0; set < 2; ++set)
#pragma unroll
      for (int m = 0; m < 32; ++m) dst[(slice * 32 + m) * V + cj + 32 * set] = r[set][m];
    return;
  }
#pragma unroll
  for (int set = 0; set < 2; ++set)
#pragma unroll
    for (int m = 0; m < 32; ++m) mine[m * COLS + cj + 32 * set] = r[set][m];
  __syncthreads();
#pragma unroll
  for (int i = threadIdx.x; i < K * COLS / 4; i += THREADS) {
    int row = i / 16, ch = i % 16;
    *(float4*)(dst + row * V + ch * 4) = *(float4*)&tile[(row / 32) * SLICE_FLOATS + (row % 32) * COLS + ch * 4];
  }
}
// 16 lanes a row: a thread holds 4 consecutive columns of 16 keys, read
// and written as float4 straight from and to global memory.
__global__ void __launch_bounds__(THREADS, 4) vec4(const float* __restrict__ s0, float* __restrict__ s1, const float* __restrict__ kk) {
  int head = blockIdx.y, cg = threadIdx.x % 16, ks = threadIdx.x / 16;
  const float* src = s0 + (size_t)head * K * V + blockIdx.x * COLS + cg * 4; float* dst = s1 + (size_t)head * K * V + blockIdx.x * COLS + cg * 4;
  float4 r[16];
#pragma unroll
  for (int m = 0; m < 16; ++m) r[m] = *(const float4*)(src + (ks * 16 + m) * V);
#pragma unroll
  for (int m = 0; m < 16; ++m) { float kv = kk[ks * 16 + m] * 0.5f; r[m].x = fmaf(0.99f, r[m].x, kv); r[m].y = fmaf(0.99f, r[m].y, kv); r[m].z = fmaf(0.99f, r[m].z, kv); r[m].w = fmaf(0.99f, r[m].w, kv); }
#pragma unroll
  for (int m = 0; m < 16; ++m) *(float4*)(dst + (ks * 16 + m) * V) = r[m];
}
// A plain copy-and-scale in float4 (the bandwidth yardstick).
__global__ void copy4(const float4* __restrict__ a, float4* __restrict__ o, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float4 x = a[i]; x.x *= 0.99f; x.y *= 0.99f; x.z *= 0.99f; x.w *= 0.99f; o[i] = x;
  }
}
int main() {
  int heads_list[] = {128, 512, 2048, 8192};
  float *kk; cudaMalloc(&kk, K * 4); cudaMemset(kk, 0, K * 4);
  int smem = 4 * SLICE_FLOATS * 4;
  cudaFuncSetAttribute(staged<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(staged<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  for (int heads : heads_list) {
    size_t n = (size_t)heads * K * V;
    float *a, *o; cudaMalloc(&a, n * 4); cudaMalloc(&o, n * 4); cudaMemset(a, 0, n * 4);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    auto time = [&](const char* name, auto launch) {
      cudaStream_t st; cudaStreamCreate(&st);
      cudaGraph_t g; cudaGraphExec_t ge;
      cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
      for (int i = 0; i < 20; ++i) launch(st);
      cudaStreamEndCapture(st, &g); cudaGraphInstantiate(&ge, g, 0);
      cudaGraphLaunch(ge, st); cudaStreamSynchronize(st);
      float best = 1e9;
      for (int rep = 0; rep < 10; ++rep) {
        cudaEventRecord(e0, st); cudaGraphLaunch(ge, st); cudaEventRecord(e1, st); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); best = ms / 20 < best ? ms / 20 : best;
      }
      printf("heads %5d %-15s %8.2f us  %.2f TB/s\n", heads, name, best * 1e3, 2.0 * n * 4 / (best * 1e-3) / 1e12);
      cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaStreamDestroy(st);
    };
    dim3 grid(V / COLS, heads);
    time("lanes4", [&](cudaStream_t st) { lanes4<<<grid, THREADS, 0, st>>>(a, o, kk); });
    time("staged", [&](cudaStream_t st) { staged<true><<<grid, THREADS, smem, st>>>(a, o, kk); });
    time("stagedLoadOnly", [&](cudaStream_t st) { staged<false><<<grid, THREADS, smem, st>>>(a, o, kk); });
    time("vec4", [&](cudaStream_t st) { vec4<<<grid, THREADS, 0, st>>>(a, o, kk); });
    time("copy4", [&](cudaStream_t st) { copy4<<<132 * 8, 256, 0, st>>>((float4*)a, (float4*)o, n / 4); });
    cudaError_t err = cudaGetLastError(); if (err) printf("error %s\n", cudaGetErrorString(err));
    cudaFree(a); cudaFree(o);
  }
}
