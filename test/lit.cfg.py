# -*- Python -*-
# lit configuration of the LinAttn tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "LINATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".c"]
config.excludes = ["lib", "Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.linattn_obj_root, "test")

llvm_config.with_system_environment(["HOME", "TMPDIR"])
# `not`, FileCheck and count at the start of a RUN line are looked up on PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.use_default_substitutions()

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%linattn_src", config.linattn_src_root))
config.substitutions.append(("%testlib", os.path.join(config.linattn_src_root, "test", "lib")))
config.substitutions.append(("%examples", os.path.join(config.linattn_src_root, "examples")))
# Embedding tests (test/Embedding, test/Docs): the build tree they install or
# read, the plugin, stock mlir-opt (linked to libMLIR.so), and the toolchain
# that configures the consumer example the way this build was configured.
config.substitutions.append(("%linattn_obj", config.linattn_obj_root))
config.substitutions.append(("%linattn_plugin", os.path.join(config.linattn_lib_dir, "LinAttnPlugin.so")))
config.substitutions.append(("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%ninja", config.make_program))
config.substitutions.append(("%cxx", config.cxx_compiler))
# numpy-capable interpreter for the fp64 oracle (Debian's /usr/bin/python3).
# Inserted first: lit's default %python (its own interpreter) must not win.
config.substitutions.insert(0, ("%python", config.python_executable))

tool_dirs = [config.linattn_tools_dir, config.llvm_tools_dir]
tools = ["linattn-opt", "linattn-run", "linattn-capi-test", "linattn-compile", "llvm-nm"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# libFuzzer (clang, with compiler-rt's fuzzer library): the runtime's fuzz
# targets run where it builds a target (scripts/fuzz.sh; setup.sh installs it).
import shutil
import subprocess
import tempfile
if shutil.which("clang++"):
    with tempfile.TemporaryDirectory() as _dir:
        _src = os.path.join(_dir, "t.cpp")
        with open(_src, "w") as _f:
            _f.write('#include <cstddef>\n#include <cstdint>\nextern "C" int '
                     'LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }\n')
        if subprocess.run(["clang++", "-fsanitize=fuzzer", _src, "-o",
                           os.path.join(_dir, "t")],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            config.available_features.add("libfuzzer")
config.substitutions.append(("%src_root", config.linattn_src_root))
