//===- Signature.cpp - A compiled function's recorded signature -----------===//

#include "linattn/Signature.h"

namespace linattn {

std::string TensorSpec::text() const {
  std::string s = elem + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") +
         (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

/// One spec, "f32[?,8]", the whole of `item`.
static bool parseSpec(const std::string &item, TensorSpec &out) {
  size_t bracket = item.find('[');
  if (bracket == std::string::npos || item.back() != ']')
    return false;
  out.elem = item.substr(0, bracket);
  if (out.elem != "bf16" && out.elem != "f16" && out.elem != "f32")
    return false;
  std::string dims = item.substr(bracket + 1, item.size() - bracket - 2);
  out.shape.clear();
  if (dims.empty())
    return true; // rank 0
  size_t pos = 0;
  while (true) {
    size_t comma = dims.find(',', pos);
    std::string d = dims.substr(pos, comma == std::string::npos
                                         ? std::string::npos
                                         : comma - pos);
    if (d == "?") {
      out.shape.push_back(-1);
    } else {
      // 1 to 18 digits: what int64 holds.
      if (d.empty() || d.size() > 18 ||
          d.find_first_not_of("0123456789") != std::string::npos)
        return false;
      out.shape.push_back(std::stoll(d));
    }
    if (comma == std::string::npos)
      return true;
    pos = comma + 1;
  }
}

/// A comma-separated list of specs (commas inside brackets belong to the
/// spec), the whole of `list`.
static bool parseList(const std::string &list, std::vector<TensorSpec> &out) {
  out.clear();
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[' && ++depth > 1)
      return false;
    if (c == ']' && --depth < 0)
      return false;
    if (c != ',' || depth != 0)
      continue;
    if (i == start && list.empty())
      return true; // no specs at all
    TensorSpec spec;
    if (!parseSpec(list.substr(start, i - start), spec))
      return false;
    out.push_back(std::move(spec));
    start = i + 1;
  }
  return depth == 0;
}

bool parseSignature(const std::string &text, std::vector<TensorSpec> &args,
                    std::vector<TensorSpec> &results) {
  size_t open = text.find('('), arrow = text.find(")->(");
  if (open == std::string::npos || arrow == std::string::npos ||
      arrow < open || text.back() != ')')
    return false;
  std::string argList = text.substr(open + 1, arrow - open - 1);
  std::string resList = text.substr(arrow + 4, text.size() - arrow - 5);
  return parseList(argList, args) && parseList(resList, results);
}

} // namespace linattn
