// Probe: wgmma m64n32k16 bf16 with no-swizzle descriptors over block layouts
// [X/8][rows][8] (16-byte chunks of the contiguous dim outermost).
#include <cstdio>
#include <cstdint>
#include <cuda_bf16.h>
#include <cmath>
#include <cstdlib>

__device__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= (uint64_t)((addr & 0x3FFFF) >> 4);
  d |= (uint64_t)((lbo & 0x3FFFF) >> 4) << 16;
  d |= (uint64_t)((sbo & 0x3FFFF) >> 4) << 32;
  return d;
}

// mode 0: A K-major (A[m][k] stored at ((k/8)*64 + m)*8 + k%8), lbo = 1024, sbo = 128
// mode 1: A M-major (A[m][k] stored at ((m/8)*KR + k)*8 + m%8, KR = 16 rows), sbo = KR*16, lbo = 128
// B always N-major: B[k][n] at ((n/8)*16 + k)*8 + n%8: sbo = 16*16 = 256, lbo = 128
template <int TA>
__global__ void probe(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *D, float negA) {
  __shared__ __align__(128) __nv_bfloat16 sa[64 * 16];
  __shared__ __align__(128) __nv_bfloat16 sb[16 * 32];
  int t = threadIdx.x;
  for (int i = t; i < 64 * 16; i += 128) {
    int m = i / 16, k = i % 16;
    int off = TA == 0 ? ((k / 8) * 64 + m) * 8 + k % 8 : ((m / 8) * 16 + k) * 8 + m % 8;
    sa[off] = A[i];
  }
  for (int i = t; i < 16 * 32; i += 128) {
    int k = i / 32, n = i % 32;
    sb[((n / 8) * 16 + k) * 8 + n % 8] = B[i];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  uint32_t aAddr = (uint32_t)__cvta_generic_to_shared(sa);
  uint32_t bAddr = (uint32_t)__cvta_generic_to_shared(sb);
  uint64_t da = TA == 0 ? desc(aAddr, 1024, 128) : desc(aAddr, 128, 256);
  uint64_t db = desc(bAddr, 128, 256);
  float d[16];
  for (int i = 0; i < 16; ++i) d[i] = 1.0f; // accumulate onto ones
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  if (negA < 0) {
    asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %19, 0;\n wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, -1, 1, %18, 1;\n}\n"
      : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),
        "+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15])
      : "l"(da), "l"(db), "n"(TA), "r"(1));
  } else {
    asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %19, 0;\n wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, %18, 1;\n}\n"
      : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),
        "+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15])
      : "l"(da), "l"(db), "n"(TA), "r"(1));
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  int w = t / 32, l = t % 32;
  for (int j = 0; j < 4; ++j)
    for (int r = 0; r < 4; ++r) {
      int row = 16 * w + l / 4 + 8 * (r / 2), col = 8 * j + 2 * (l % 4) + r % 2;
      D[row * 32 + col] = d[4 * j + r];
    }
}

int main() {
  __nv_bfloat16 hA[64 * 16], hB[16 * 32];
  float fA[64 * 16], fB[16 * 32];
  srand(1);
  for (int i = 0; i < 64 * 16; ++i) { fA[i] = (rand() % 17 - 8) / 8.0f; hA[i] = __float2bfloat16(fA[i]); }
  for (int i = 0; i < 16 * 32; ++i) { fB[i] = (rand() % 17 - 8) / 8.0f; hB[i] = __float2bfloat16(fB[i]); }
  __nv_bfloat16 *dA, *dB; float *dD;
  cudaMalloc(&dA, sizeof hA); cudaMalloc(&dB, sizeof hB); cudaMalloc(&dD, 64 * 32 * 4);
  cudaMemcpy(dA, hA, sizeof hA, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, hB, sizeof hB, cudaMemcpyHostToDevice);
  for (int mode = 0; mode < 2; ++mode)
    for (int neg = 0; neg < 2; ++neg) {
      cudaMemset(dD, 0, 64 * 32 * 4);
      float s = neg ? -1.f : 1.f;
      if (mode == 0) probe<0><<<1, 128>>>(dA, dB, dD, s); else probe<1><<<1, 128>>>(dA, dB, dD, s);
      cudaError_t e = cudaDeviceSynchronize();
      float hD[64 * 32];
      cudaMemcpy(hD, dD, sizeof hD, cudaMemcpyDeviceToHost);
      double err = 0;
      for (int m = 0; m < 64; ++m)
        for (int n = 0; n < 32; ++n) {
          double ref = 1.0;
          for (int k = 0; k < 16; ++k) ref += s * fA[m * 16 + k] * fB[k * 32 + n];
          err = fmax(err, fabs(ref - hD[m * 32 + n]));
        }
      printf("mode %d (A %s-major) neg %d: %s, max err %g\n", mode, mode ? "M" : "K", neg,
             cudaGetErrorString(e), err);
    }
  return 0;
}
