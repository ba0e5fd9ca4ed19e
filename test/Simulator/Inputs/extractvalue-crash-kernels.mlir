// A hostile kernels.mlir: upstream MLIR's parser segfaults on this position.
module {
  llvm.func @f(%s: !llvm.struct<(i32, i32)>) -> i32 {
    %0 = llvm.extractvalue %s[1099511627776] : !llvm.struct<(i32, i32)>
    llvm.return %0 : i32
  }
}
