# Compiling GLSL compute shaders into C++ headers at build time.
#
# vulkan_compile_shader(INFILE shader.comp OUTFILE Shader.hpp NAMESPACE ns)
#   Compiles INFILE with glslangValidator (from glslang-tools) and writes
#   OUTFILE (relative paths are taken in the current binary directory) with
#   `inline constexpr std::array<uint32_t, N> NAME` in namespace NAMESPACE,
#   where NAME is the .spv file name upper-cased (shader.comp ->
#   SHADER_COMP_SPV), as upstream Kompute's helper names it.

set(KOMPUTE_SHADER_TO_HEADER_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/SpirvToHeader.cmake")

function(vulkan_compile_shader)
    cmake_parse_arguments(SHADER "" "INFILE;OUTFILE;NAMESPACE" "" ${ARGN})
    if(NOT SHADER_INFILE OR NOT SHADER_OUTFILE)
        message(FATAL_ERROR "vulkan_compile_shader needs INFILE and OUTFILE")
    endif()
    if(NOT SHADER_NAMESPACE)
        set(SHADER_NAMESPACE kp)
    endif()
    find_program(GLSLANG_VALIDATOR glslangValidator REQUIRED)
    get_filename_component(input "${SHADER_INFILE}" ABSOLUTE)
    get_filename_component(output "${SHADER_OUTFILE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
    get_filename_component(name "${SHADER_INFILE}" NAME)
    set(spv "${CMAKE_CURRENT_BINARY_DIR}/${name}.spv")
    string(TOUPPER "${name}_SPV" symbol)
    string(REGEX REPLACE "[^A-Z0-9_]" "_" symbol "${symbol}")
    add_custom_command(
        OUTPUT "${output}"
        COMMAND "${GLSLANG_VALIDATOR}" -V --target-env vulkan1.1 -o "${spv}" "${input}"
        COMMAND "${CMAKE_COMMAND}" -DINPUT=${spv} -DOUTPUT=${output}
                -DNAMESPACE=${SHADER_NAMESPACE} -DSYMBOL=${symbol}
                -P "${KOMPUTE_SHADER_TO_HEADER_SCRIPT}"
        DEPENDS "${input}" "${KOMPUTE_SHADER_TO_HEADER_SCRIPT}"
        COMMENT "Compiling shader ${name}"
        VERBATIM)
endfunction()
