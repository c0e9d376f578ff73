// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu=explain=true -split-input-file -verify-diagnostics -o /dev/null

// convert-linattn-chunked-to-gpu{explain}: each state pass's kernel (and
// the backward's reverse pass's), as planned (StatePassPlan::describe,
// ReversePassPlan::describe): its blocks, warps and who issues the copies,
// stages, staged outputs, shared memory and blocks an SM.

// The gated delta rule's pass at K = V = 128: 32-column blocks of four
// compute warps and two producer warps; D' rounded once for the update (the
// decay damps its rounding); both outputs staged.
func.func @wy_form(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xbf16>, %w: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_state_pass: 4 blocks of 32 state columns a value head and sequence, 4 compute warps and 2 producer warps issuing the copies, 192 threads; 4 input stages; the update takes D' rounded once; chunk states and new values leave through shared memory; 207952 bytes of shared memory, sized for 1 block an SM}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// Without a decay (the delta rule's pass: D' = D, f32 new values) D'
// enters the update split: rounded, o's error on nearly parallel keys grows
// toward the bound.
func.func @wy_form_ungated(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x128xbf16>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  // expected-remark @+1 {{3 input stages; the update takes D' split (hi + lo);}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// Wide blocks (64 columns, eight compute warps) take the producer warps
// with W rounded once and row gates...
func.func @wy_form_wide(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xbf16>, %w: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  // expected-remark @+1 {{2 blocks of 64 state columns a value head and sequence, 8 compute warps and 2 producer warps issuing the copies, 320 threads; 3 input stages}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// ... and not without W (their steps are short), nor above K = 128 (ten
// warps would spill).
func.func @without_w_wide(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  // expected-remark @+1 {{8 compute warps issuing their own copies (a wide block without a W rounded once and row gates or none loses with them), 256 threads}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%g) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

func.func @wy_form_wide_k192(%k: tensor<?x?x2x192xbf16>, %u: tensor<?x?x2x128xbf16>, %w: tensor<?x?x2x192xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x192x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x192x128xbf16>, tensor<?x2x192x128xf32>) {
  // expected-remark @+1 {{8 compute warps issuing their own copies (a wide block above K = 128 would spill with them), 256 threads}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2xf32>, tensor<?x2x192x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x192x128xbf16>, tensor<?x2x192x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x192x128xbf16>, tensor<?x2x192x128xf32>
}

// -----

// The dense segments: the maps' kernel spans K + V = 256 columns, and the
// entered pass starts each segment from its own state; both sized for two
// blocks an SM.
func.func @segments(%k: tensor<?x?x8x128xbf16>, %u: tensor<?x?x8x128xbf16>, %w: tensor<?x?x8x128xbf16>, %g: tensor<?x?x8xf32>, %s0: tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128x128xbf16>, tensor<?x8x128x128xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.segment_maps: 8 blocks of 32 state columns a value head and segment (segments of 16 chunks), 4 compute warps and 2 producer warps issuing the copies, 192 threads; 2 input stages; the update takes D' rounded once; 96816 bytes of shared memory, sized for 2 blocks an SM}}
  %m = linattn.segment_maps k(%k) u(%u) w(%w) gates(%g) {chunk_size = 64 : i64, segment_chunks = 16 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>) -> tensor<?x?x8x128x256xf32>
  %e, %final = linattn.segment_entries maps(%m) state(%s0)
      : (tensor<?x?x8x128x256xf32>, tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128x128xf32>, tensor<?x8x128x128xf32>)
  // expected-remark @+1 {{4 blocks of 32 state columns a value head and segment (segments of 16 chunks, each from its own entry state)}}
  %d, %states, %ends = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%e) {chunk_size = 64 : i64, segment_chunks = 16 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128x128xbf16>, tensor<?x?x8x128x128xf32>)
  return %d, %states, %final : tensor<?x?x8x128xbf16>, tensor<?x?x8x128x128xbf16>, tensor<?x8x128x128xf32>
}

// -----

// The backward's reverse pass (row gates: the chunk's scores formed in the
// pass; per-key gates take them from a kernel ahead).
func.func @reverse_pass(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %w: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %do: tensor<?x?x4x128xbf16>, %ds: tensor<?x4x128x128xf32>) -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_state_pass_grad: 4 blocks of 32 state columns a value head and sequence, 4 warps (128 threads); 3 input stages; the chunk's scores formed in the pass; 207616 bytes of shared memory}}
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) w(%w) gates(%g) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>)
      -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>
}

// -----

// negeig's split W at K = V = 256 (W's two parts 66560 bytes a stage, the
// keys 33792): two input stages do not fit a block, so as the last resort
// the producer warps fill one, in turn with the step that reads it.
func.func @one_stage(%k: tensor<?x?x2x256xbf16>, %u: tensor<?x?x2x256xf32>, %w: tensor<?x?x2x2x256xbf16>, %s0: tensor<?x2x256x256xf32>) -> tensor<?x2x256x256xf32> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_state_pass: 8 blocks of 32 state columns a value head and sequence, 4 compute warps and 2 producer warps issuing the copies, 192 threads; 1 input stage; the update takes D' split (hi + lo); chunk states and new values leave through shared memory; 177184 bytes of shared memory, sized for 1 block an SM}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x256xbf16>, tensor<?x?x2x256xf32>, tensor<?x?x2x2x256xbf16>, tensor<?x2x256x256xf32>) -> (tensor<?x?x2x256xbf16>, tensor<?x?x2x256x256xbf16>, tensor<?x2x256x256xf32>)
  return %final : tensor<?x2x256x256xf32>
}
