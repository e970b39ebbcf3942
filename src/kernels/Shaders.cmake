# The kernel library's shaders: each variant of a source in
# src/kernels/shaders/ is compiled at build time (vulkan_compile_shader)
# into a header of its own, and kernels/BuiltinShaders.hpp lists them all by
# name for the operations to look up (see src/kernels/BuiltinShaders.hpp).
#
# kompute_kernel_shader(NAME SOURCE DEFINE...) adds variant NAME of SOURCE.

set(KOMPUTE_KERNEL_SHADER_DIR ${KOMPUTE_GENERATED_DIR}/kernels/shaders)
set(KOMPUTE_KERNEL_SHADER_HEADERS "")
set(KOMPUTE_KERNEL_SHADER_NAMES "")
file(GLOB KOMPUTE_KERNEL_SHADER_INCLUDES ${PROJECT_SOURCE_DIR}/src/kernels/shaders/*.glsl)

macro(kompute_kernel_shader name source)
    string(TOUPPER "${name}" _kernel_symbol)
    vulkan_compile_shader(
        INFILE ${PROJECT_SOURCE_DIR}/src/kernels/shaders/${source}
        OUTFILE ${KOMPUTE_KERNEL_SHADER_DIR}/${name}.hpp
        NAMESPACE kp::kernels::shaders
        SYMBOL ${_kernel_symbol}
        DEFINES ${ARGN}
        DEPENDS ${KOMPUTE_KERNEL_SHADER_INCLUDES})
    list(APPEND KOMPUTE_KERNEL_SHADER_HEADERS ${KOMPUTE_KERNEL_SHADER_DIR}/${name}.hpp)
    list(APPEND KOMPUTE_KERNEL_SHADER_NAMES ${name})
endmacro()

# Type codes of the *_TYPE defines (Common.glsl).
set(_kernel_types f32 f16 bf16)
set(_kernel_type_f32 0)
set(_kernel_type_f16 1)
set(_kernel_type_bf16 2)

foreach(x IN LISTS _kernel_types)
    foreach(y IN LISTS _kernel_types)
        kompute_kernel_shader(unary_${x}_${y} Unary.comp X_TYPE=${_kernel_type_${x}} Y_TYPE=${_kernel_type_${y}})
        # Operands of type x, the result of type y.
        kompute_kernel_shader(binary_${x}_${y} Binary.comp TYPE=${_kernel_type_${x}} Y_TYPE=${_kernel_type_${y}})
        kompute_kernel_shader(fma_${x}_${y} Binary.comp TYPE=${_kernel_type_${x}} Y_TYPE=${_kernel_type_${y}} TERNARY)
    endforeach()
endforeach()

# Row kernels, each with subgroup reductions (_sg) and without (_sh).
foreach(t IN LISTS _kernel_types)
    foreach(reduction sg sh)
        set(_sg "")
        if(reduction STREQUAL "sg")
            set(_sg SUBGROUP)
        endif()
        kompute_kernel_shader(reduce_${t}_${reduction} Reduce.comp X_TYPE=${_kernel_type_${t}} ${_sg})
        kompute_kernel_shader(argmax_${t}_${reduction} Reduce.comp X_TYPE=${_kernel_type_${t}} ARGMAX ${_sg})
        kompute_kernel_shader(argmax_split_${t}_${reduction} Reduce.comp X_TYPE=${_kernel_type_${t}} ARGMAX SPLIT ${_sg})
        kompute_kernel_shader(softmax_${t}_${reduction} Softmax.comp TYPE=${_kernel_type_${t}} ${_sg})
        # The norms: x of type t, y of type y.
        foreach(y IN LISTS _kernel_types)
            kompute_kernel_shader(rmsnorm_${t}_${y}_${reduction} Norm.comp
                TYPE=${_kernel_type_${t}} Y_TYPE=${_kernel_type_${y}} ${_sg})
            kompute_kernel_shader(layernorm_${t}_${y}_${reduction} Norm.comp
                TYPE=${_kernel_type_${t}} Y_TYPE=${_kernel_type_${y}} LAYER ${_sg})
        endforeach()
    endforeach()
endforeach()

# RoPE, the KV-cache write and attention.
foreach(t f32 f16)
    kompute_kernel_shader(rope_${t} RoPE.comp TYPE=${_kernel_type_${t}})
    foreach(d IN LISTS _kernel_types)
        kompute_kernel_shader(rope_cache_${t}_${d} RoPE.comp TYPE=${_kernel_type_${t}} CACHE_TYPE=${_kernel_type_${d}} CACHE)
        kompute_kernel_shader(setrows_${t}_${d} SetRows.comp SRC_TYPE=${_kernel_type_${t}} DST_TYPE=${_kernel_type_${d}})
    endforeach()
    # Decode: subgroup shuffles (_sg) or not (_sh), vector loads (_v4) where
    # the cache's rows start at multiples of 4 elements.
    foreach(v "" _v4)
        set(_v "")
        if(v STREQUAL "_v4")
            set(_v VECTOR_LOADS)
        endif()
        kompute_kernel_shader(attention_split_${t}_sg${v} AttentionSplit.comp KV_TYPE=${_kernel_type_${t}} SUBGROUP ${_v})
        kompute_kernel_shader(attention_split_${t}_sh${v} AttentionSplit.comp KV_TYPE=${_kernel_type_${t}} ${_v})
    endforeach()
    # Decode on subgroups: 4 scalar loads, 4 values (_v4) or 8 f16 values
    # (_v8, 16 bytes) at once.
    kompute_kernel_shader(attention_decode_${t} AttentionDecode.comp KV_TYPE=${_kernel_type_${t}})
    kompute_kernel_shader(attention_decode_${t}_v4 AttentionDecode.comp KV_TYPE=${_kernel_type_${t}} VECTOR_LOADS)
    if(t STREQUAL "f16")
        kompute_kernel_shader(attention_decode_f16_v8 AttentionDecode.comp KV_TYPE=1 WIDE_LOADS)
    endif()
    kompute_kernel_shader(attention_prefill_${t} AttentionPrefill.comp KV_TYPE=${_kernel_type_${t}})
endforeach()
# Prefill on cooperative matrices (f16 caches) per head size and cache
# positions per tile: the fragments of a subgroup.
foreach(d 64 128)
    foreach(c 32 64)
        kompute_kernel_shader(attention_coopmat_d${d}_c${c} AttentionCoopmat.comp HEAD_DIM=${d} BC=${c})
    endforeach()
endforeach()

# The matrix kernels: one module each, its element types chosen by
# specialization constants (MatMulCommon.glsl).
kompute_kernel_shader(matmul_tiled MatMulTiled.comp)
# The cooperative-matrix GEMM per FM x FN fragments of a subgroup.
foreach(frags 2x2 2x4 2x8 4x2 4x4 4x8)
    string(REPLACE "x" ";" _frags "${frags}")
    list(GET _frags 0 _fm)
    list(GET _frags 1 _fn)
    kompute_kernel_shader(matmul_coopmat_${frags} MatMulCoopmat.comp FM=${_fm} FN=${_fn})
endforeach()
kompute_kernel_shader(matvec MatVec.comp)
kompute_kernel_shader(matvec_int_dot MatVec.comp INT_DOT)
# MatMulParams::ropeC: OpRoPECache's work as the mat-vec writes its row.
kompute_kernel_shader(matvec_rope MatVec.comp ROPE_EPILOGUE)
kompute_kernel_shader(matvec_int_dot_rope MatVec.comp INT_DOT ROPE_EPILOGUE)
# MatMulParams::attentionC: with ropeC, the decode attention of the row in
# the same dispatch (AttentionTail.glsl).
kompute_kernel_shader(matvec_rope_attn MatVec.comp ROPE_EPILOGUE ATTN_TAIL)
kompute_kernel_shader(matvec_int_dot_rope_attn MatVec.comp INT_DOT ROPE_EPILOGUE ATTN_TAIL)
# MatMulParams::swigluC (and quantizeC) on the int-dot mat-vec, and
# swigluC on the float row mode: the SwiGLU of a gate row and an up row as
# the mat-vec writes them.
kompute_kernel_shader(matvec_int_dot_glu MatVec.comp INT_DOT GLU_OUT)
kompute_kernel_shader(matvec_glu MatVec.comp GLU_OUT)
# MatMulParams::chained: each of the four ordered by the shader after the
# dispatch before it (Chain.glsl).
kompute_kernel_shader(matvec_chain MatVec.comp CHAIN)
kompute_kernel_shader(matvec_int_dot_chain MatVec.comp INT_DOT CHAIN)
kompute_kernel_shader(matvec_rope_chain MatVec.comp ROPE_EPILOGUE CHAIN)
kompute_kernel_shader(matvec_int_dot_rope_chain MatVec.comp INT_DOT ROPE_EPILOGUE CHAIN)
kompute_kernel_shader(getrows GetRows.comp)

# The list of every variant by name.
set(_kernel_table "")
set(_kernel_includes "")
foreach(name IN LISTS KOMPUTE_KERNEL_SHADER_NAMES)
    string(TOUPPER "${name}" _kernel_symbol)
    string(APPEND _kernel_includes "#include \"kernels/shaders/${name}.hpp\"\n")
    string(APPEND _kernel_table "    { \"${name}\", shaders::${_kernel_symbol}.data(), shaders::${_kernel_symbol}.size() },\n")
endforeach()
set(KOMPUTE_KERNEL_SHADER_TABLE ${KOMPUTE_GENERATED_DIR}/kernels/BuiltinShaderTable.hpp)
file(CONFIGURE OUTPUT ${KOMPUTE_KERNEL_SHADER_TABLE} CONTENT
"// Generated by src/kernels/Shaders.cmake; do not edit.
#pragma once

#include <cstddef>
#include <cstdint>

${_kernel_includes}
namespace kp {
namespace kernels {

struct BuiltinShader
{
    const char* name;
    const uint32_t* words;
    size_t count;
};

inline constexpr BuiltinShader kBuiltinShaders[] = {
${_kernel_table}};

} // namespace kernels
} // namespace kp
")
