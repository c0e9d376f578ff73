//===- InputCheck.h - The inputs a recurrence cannot take --------*- C++ -*-===//
//
// --check-inputs (linattn-run, linattn-gpu-run, and a library compiled with
// linattn-compile --check-inputs): before running, the first element of an
// input that would make the recurrence's outputs silently wrong (NaN from a
// positive log gate, a beta that makes the transition expand) is reported
// with its index.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_INPUTCHECK_H
#define LINATTN_INPUTCHECK_H

#include "linattn/Npy.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace linattn {

/// What an argument of a spec function is to the recurrence it feeds (the
/// recurrence's operand name: q, k, v, gate, beta, initial_state; anything
/// else, or "", is checked for finiteness only).
/// Returns "" if every one of the `shape`'s elements (`values`, row-major)
/// is one the recurrence takes, else one line:
///   "argument #I (ROLE) element [i, j, ...] = X: why"
/// for the first element that is not finite, a log gate above 0, or a beta
/// outside [0, 1]. (Every kind's beta lies in [0, 1]: negeig_delta's
/// transition I - 2 beta k k^T has its eigenvalues in [-1, 1] exactly then;
/// fla's allow_neg_eigval passes the 2 beta instead.)
std::string checkInputValues(const std::vector<int64_t> &shape,
                             const double *values, size_t index,
                             const std::string &role);

/// checkInputValues on an array read from an .npy file.
inline std::string checkInput(const NpyArray &array, size_t index,
                              const std::string &role) {
  return checkInputValues(array.shape, array.data.data(), index, role);
}

} // namespace linattn

#endif // LINATTN_INPUTCHECK_H
