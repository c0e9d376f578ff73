//===- InputCheck.h - The inputs a recurrence cannot take --------*- C++ -*-===//
//
// linattn-run and linattn-gpu-run --check-inputs: before running, the first
// element of an input that would make the recurrence's outputs silently
// wrong (NaN from a positive log gate, a beta that makes the transition
// expand) is reported with its index.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_INPUTCHECK_H
#define LINATTN_INPUTCHECK_H

#include "linattn/Npy.h"

#include <string>

namespace linattn {

/// What an argument of a spec function is to the recurrence it feeds (the
/// recurrence's operand name: q, k, v, gate, beta, initial_state; anything
/// else, or "", is checked for finiteness only).
/// Returns "" if every element of `array` is one the recurrence takes, else
/// one line: "argument #I (ROLE) element [i, j, ...] = X: why", for the
/// first element that is not finite, a log gate above 0, or a beta outside
/// [0, 1].
std::string checkInput(const NpyArray &array, size_t index,
                       const std::string &role);

} // namespace linattn

#endif // LINATTN_INPUTCHECK_H
