# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "memwall"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "check_report.py", "check_svg.py", "summarize_bundle.py", "run_doc_blocks.py", "external-project", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.memwall_obj_root, "test")

config.substitutions.append(("%memwall_src", config.memwall_src_root))
config.substitutions.append(("%PYTHON", config.python_executable))
# Embedding (test/Embedding): the upstream mlir-opt plugin, the same plugin
# acting as one built for another LLVM release, and the build tree.
config.substitutions.append(("%memwall_wrong_release_plugin", os.path.join(
    config.memwall_obj_root, "lib", "MemWallPluginWrongRelease.so")))
config.substitutions.append(("%memwall_plugin", os.path.join(
    config.memwall_obj_root, "lib", "MemWallPlugin.so")))
config.substitutions.append(("%memwall_obj", config.memwall_obj_root))
# An ASan-instrumented plugin cannot load into the uninstrumented mlir-opt.
if config.memwall_sanitizers.upper() not in ("ON", "TRUE", "1", "YES"):
    config.available_features.add("memwall-plugin")

# Pass statistics count only where LLVM was built with statistics (with
# assertions, or LLVM_FORCE_ENABLE_STATS); a release LLVM reports none.
import subprocess
def pass_statistics_enabled():
    two_equal_adds = ("func.func @f(%a: i32) -> (i32, i32) {\n"
                      "  %0 = arith.addi %a, %a : i32\n"
                      "  %1 = arith.addi %a, %a : i32\n"
                      "  return %0, %1 : i32, i32\n}\n")
    try:
        result = subprocess.run(
            [os.path.join(config.memwall_tools_dir, "memwall-opt"), "--cse",
             "-mlir-pass-statistics", "-o", os.devnull],
            input=two_equal_adds, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return "num-cse'd" in result.stderr
if pass_statistics_enabled():
    config.available_features.add("pass-statistics")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.memwall_tools_dir, append_path=True)

tools = ["memwall-opt", "memwall-gen", "memwall-compile", "memwall-run", "memwall-simulate", "mlir-opt", "FileCheck", "not", "count"]
llvm_config.add_tool_substitutions(
    tools, [config.memwall_tools_dir, config.llvm_tools_dir]
)

# memwall-compile links libdevice from the CUDA toolkit into the PTX it emits,
# and ptxas validates every PTX; CI has the toolkit at /usr/local/cuda.
import shutil
cuda_root = os.environ.get("CUDA_HOME", "/usr/local/cuda")
if os.path.exists(os.path.join(cuda_root, "nvvm", "libdevice")):
    config.available_features.add("cuda")
for var in ("CUDA_HOME",):
    if var in os.environ:
        config.environment[var] = os.environ[var]
ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
