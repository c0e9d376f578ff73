//===- EmitSignatures.cpp - Function signatures as data in the object -----===//

#include "LinAttn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNEMITSIGNATURES
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// "bf16[?,?,8,128]"; empty when `type` is not a shaped float type.
std::string describeShaped(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasRank())
    return "";
  Type elem = shaped.getElementType();
  std::string s = elem.isBF16() ? "bf16" : elem.isF16() ? "f16"
                : elem.isF32()  ? "f32"
                                : "";
  if (s.empty())
    return "";
  s += "[";
  for (auto [i, d] : llvm::enumerate(shaped.getShape()))
    s += (i ? "," : "") +
         (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return s + "]";
}

struct LinAttnEmitSignatures
    : impl::LinAttnEmitSignaturesBase<LinAttnEmitSignatures> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func.isPublic() || func.isExternal())
        continue;
      std::string text = func.getSymName().str() + "(";
      bool ok = true;
      auto list = [&](TypeRange types) {
        for (auto [i, t] : llvm::enumerate(types)) {
          std::string d = describeShaped(t);
          ok &= !d.empty();
          text += (i ? "," : "") + d;
        }
      };
      list(func.getArgumentTypes());
      text += ")->(";
      list(func.getResultTypes());
      text += ")";
      if (!ok)
        continue; // Not a runnable spec function: nothing to record.
      auto record = [&](StringRef prefix, std::string value) {
        value.push_back('\0');
        auto type = LLVM::LLVMArrayType::get(b.getI8Type(), value.size());
        LLVM::GlobalOp::create(b, func.getLoc(), type, /*isConstant=*/true,
                               LLVM::Linkage::External,
                               (prefix + func.getSymName()).str(),
                               b.getStringAttr(value));
      };
      record("__linattn_signature_", text);
      std::string roles;
      bool anyRole = false;
      for (unsigned i = 0; i < func.getNumArguments(); ++i) {
        auto role = func.getArgAttrOfType<StringAttr>(i, kRoleAttrName);
        anyRole |= bool(role);
        roles += (i ? "," : "") + (role ? role.str() : std::string());
        func.removeArgAttr(i, kRoleAttrName); // recorded: not the ABI's
      }
      if (anyRole)
        record("__linattn_roles_", roles);
    }
  }
};

} // namespace
} // namespace mlir::linattn
