// memwall.warpgroup_accumulate adds two f32 warpgroup accumulators of one type.
// RUN: memwall-opt %s --split-input-file --verify-diagnostics

func.func @f16(%a: !nvgpu.warpgroup.accumulator<fragmented = vector<64x16xf16>>) {
  // expected-error @+1 {{'memwall.warpgroup_accumulate' op adds f32 accumulators only, got 'f16'}}
  %0 = memwall.warpgroup_accumulate %a, %a : !nvgpu.warpgroup.accumulator<fragmented = vector<64x16xf16>>
  return
}

// -----

func.func @shapes(%a: !nvgpu.warpgroup.accumulator<fragmented = vector<64x16xf32>>,
                  %b: !nvgpu.warpgroup.accumulator<fragmented = vector<64x32xf32>>) {
  // expected-error @+1 {{'memwall.warpgroup_accumulate' op requires the same type for all operands and results}}
  %0 = "memwall.warpgroup_accumulate"(%a, %b) : (!nvgpu.warpgroup.accumulator<fragmented = vector<64x16xf32>>, !nvgpu.warpgroup.accumulator<fragmented = vector<64x32xf32>>) -> !nvgpu.warpgroup.accumulator<fragmented = vector<64x16xf32>>
  return
}

// -----

func.func @scalar(%a: f32) {
  // expected-error @+1 {{'memwall.warpgroup_accumulate' op operand #0 must be warpgroup MMA accumulator, but got 'f32'}}
  %0 = "memwall.warpgroup_accumulate"(%a, %a) : (f32, f32) -> f32
  return
}
