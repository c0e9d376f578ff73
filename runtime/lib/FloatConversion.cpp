//===- FloatConversion.cpp - bf16 / f16 <-> f32 ---------------------------===//

#include "linattn/FloatConversion.h"

#include <cstring>

namespace linattn {

static uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

static float floatOf(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// bf16 is the top half of an IEEE float: round the low 16 bits to nearest
// even, keeping NaNs quiet.
uint16_t floatToBF16(float x) {
  uint32_t u = bitsOf(x);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16ToFloat(uint16_t bits) { return floatOf(uint32_t(bits) << 16); }

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
uint16_t floatToF16(float x) {
  uint32_t u = bitsOf(x);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t absBits = u & 0x7fffffffu;
  if (absBits > 0x7f800000u) // NaN
    return sign | 0x7e00u;
  if (absBits >= 0x477ff000u) // rounds to >= 65520: infinity
    return sign | 0x7c00u;
  if (absBits < 0x38800000u) { // below the smallest normal half (2^-14)
    // Scale into the subnormal range; the float adder rounds to nearest even.
    float magnitude = floatOf(absBits) * 16777216.0f; // * 2^24
    uint32_t rounded = static_cast<uint32_t>(magnitude);
    float rest = magnitude - static_cast<float>(rounded);
    if (rest > 0.5f || (rest == 0.5f && (rounded & 1u)))
      ++rounded;
    return sign | static_cast<uint16_t>(rounded);
  }
  // Normal: rebias the exponent and round 13 mantissa bits away.
  uint32_t mant = absBits + 0xfffu + ((absBits >> 13) & 1u);
  mant -= (127u - 15u) << 23;
  return sign | static_cast<uint16_t>(mant >> 13);
}

float f16ToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu, mant = bits & 0x3ffu;
  if (exp == 0) // zero or subnormal: mant * 2^-24
    return floatOf(sign) + (sign ? -1.0f : 1.0f) * float(mant) * 5.9604645e-8f;
  if (exp == 31)
    return floatOf(sign | 0x7f800000u | (mant << 13));
  return floatOf(sign | ((exp + 127u - 15u) << 23) | (mant << 13));
}

} // namespace linattn
