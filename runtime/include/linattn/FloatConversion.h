//===- FloatConversion.h - bf16 / f16 <-> f32 -------------------*- C++ -*-===//
//
// Bit-exact conversions between float and the 16-bit formats, round to
// nearest even, NaN and infinities kept. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_FLOATCONVERSION_H
#define LINATTN_FLOATCONVERSION_H

#include <cstdint>

namespace linattn {

uint16_t floatToBF16(float x);
float bf16ToFloat(uint16_t bits);
uint16_t floatToF16(float x);
float f16ToFloat(uint16_t bits);

} // namespace linattn

#endif // LINATTN_FLOATCONVERSION_H
