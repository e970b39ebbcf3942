# Compiling GLSL compute shaders into C++ headers at build time.
#
# vulkan_compile_shader(INFILE shader.comp OUTFILE Shader.hpp NAMESPACE ns)
#   Compiles INFILE with glslangValidator (from glslang-tools) and writes
#   OUTFILE (relative paths are taken in the current binary directory) with
#   `inline constexpr std::array<uint32_t, N> NAME` in namespace NAMESPACE,
#   where NAME is the .spv file name upper-cased (shader.comp ->
#   SHADER_COMP_SPV), as upstream Kompute's helper names it.
#
# Optional (ours): SYMBOL overrides NAME, DEFINES passes preprocessor
# definitions (NAME or NAME=VALUE, as glslangValidator's -D), so that one
# source compiles into several variants, and DEPENDS lists files the shader
# #includes (GL_GOOGLE_include_directive, resolved beside INFILE).

set(KOMPUTE_SHADER_TO_HEADER_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/SpirvToHeader.cmake")

function(vulkan_compile_shader)
    cmake_parse_arguments(SHADER "" "INFILE;OUTFILE;NAMESPACE;SYMBOL" "DEFINES;DEPENDS" ${ARGN})
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
    if(SHADER_SYMBOL)
        set(symbol "${SHADER_SYMBOL}")
        set(spv "${output}.spv") # variants of one source must not share a file
    else()
        set(spv "${CMAKE_CURRENT_BINARY_DIR}/${name}.spv")
        string(TOUPPER "${name}_SPV" symbol)
        string(REGEX REPLACE "[^A-Z0-9_]" "_" symbol "${symbol}")
    endif()
    set(defines "")
    foreach(define IN LISTS SHADER_DEFINES)
        list(APPEND defines "-D${define}")
    endforeach()
    set(depends "")
    foreach(dependency IN LISTS SHADER_DEPENDS)
        get_filename_component(dependency "${dependency}" ABSOLUTE)
        list(APPEND depends "${dependency}")
    endforeach()
    get_filename_component(spvDir "${spv}" DIRECTORY)
    add_custom_command(
        OUTPUT "${output}"
        # Ninja makes the output's folder, Make does not.
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${spvDir}"
        COMMAND "${GLSLANG_VALIDATOR}" -V --target-env vulkan1.1 ${defines} -o "${spv}" "${input}"
        COMMAND "${CMAKE_COMMAND}" -DINPUT=${spv} -DOUTPUT=${output}
                -DNAMESPACE=${SHADER_NAMESPACE} -DSYMBOL=${symbol}
                -P "${KOMPUTE_SHADER_TO_HEADER_SCRIPT}"
        DEPENDS "${input}" "${KOMPUTE_SHADER_TO_HEADER_SCRIPT}" ${depends}
        COMMENT "Compiling shader ${name}"
        VERBATIM)
endfunction()
