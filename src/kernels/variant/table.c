/* The table of this copy of the kernels (kernels/variants.h), named after
 * its instruction set: ted_kernels_avx512, ted_kernels_avx2 or
 * ted_kernels_portable. */
#include "kernels/simd.h"
#include "kernels/variants.h"

#define TED_STRINGIFY(name) #name
#define TED_VARIANT_STRING(name) TED_STRINGIFY(name)

const ted_kernel_table TED_VARIANT_NAME(ted_kernels) = {
    .name = TED_VARIANT_STRING(TED_VARIANT),
    .matmul_panels = TED_VARIANT_NAME(ted_matmul_panels),
    .tile_panels = TED_TILE_PANELS,
    .matmul_i8_columns = TED_VARIANT_NAME(ted_matmul_i8_columns),
    .quantize_rows = TED_VARIANT_NAME(ted_quantize_rows),
    .quantize_rows_with = TED_VARIANT_NAME(ted_quantize_rows_with),
    .max_magnitude = TED_VARIANT_NAME(ted_max_magnitude),
    .pack_i8 = TED_VARIANT_NAME(ted_pack_i8),
    .matmul_i8_packed = TED_VARIANT_NAME(ted_matmul_i8_packed),
    .matmul_i4_columns = TED_VARIANT_NAME(ted_matmul_i4_columns),
    .matmul_bf16_columns = TED_VARIANT_NAME(ted_matmul_bf16_columns),
    .split_bf16_rows = TED_VARIANT_NAME(ted_split_bf16_rows),
    .matmul_bf16_panels = TED_VARIANT_NAME(ted_matmul_bf16_panels),
    .scaled_dots = TED_VARIANT_NAME(ted_scaled_dots),
    .weighted_sum = TED_VARIANT_NAME(ted_weighted_sum),
    .max = TED_VARIANT_NAME(ted_max),
    .index_of_max = TED_VARIANT_NAME(ted_index_of_max),
    .exp_shifted = TED_VARIANT_NAME(ted_exp_shifted),
    .sum_exp_shifted = TED_VARIANT_NAME(ted_sum_exp_shifted),
    .sum_exp_shifted_at = TED_VARIANT_NAME(ted_sum_exp_shifted_at),
    .scale = TED_VARIANT_NAME(ted_scale),
    .zero_negatives = TED_VARIANT_NAME(ted_zero_negatives),
    .times_sigmoid = TED_VARIANT_NAME(ted_times_sigmoid),
    .times_normal_cdf = TED_VARIANT_NAME(ted_times_normal_cdf),
    .times_normal_cdf_tanh = TED_VARIANT_NAME(ted_times_normal_cdf_tanh),
    .all_finite = TED_VARIANT_NAME(ted_all_finite),
    .normalize_rows = TED_VARIANT_NAME(ted_normalize_rows),
};
