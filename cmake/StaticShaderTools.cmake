# Static linking of SPIRV-Tools (validation) and shaderc + glslang (the GLSL
# compiler) from Debian's packages.
#
# Debian's libshaderc_combined.a holds only shaderc itself, so glslang's and
# SPIRV-Tools' static libraries follow it on the link line. Imported targets
# are defined here (and again by the installed package config) so that a
# static libkompute.a carries the same link line to its consumers.

function(kompute_find_static_library out name)
    find_library(${out} NAMES lib${name}.a REQUIRED)
endfunction()

macro(kompute_define_shader_tool_targets)
    if(NOT TARGET kompute_spirv_tools)
        find_path(KOMPUTE_SPIRV_TOOLS_INCLUDE spirv-tools/libspirv.hpp REQUIRED)
        find_path(KOMPUTE_SPIRV_HEADERS_INCLUDE spirv/unified1/spirv.hpp REQUIRED)
        kompute_find_static_library(KOMPUTE_SPIRV_TOOLS_OPT_LIB SPIRV-Tools-opt)
        kompute_find_static_library(KOMPUTE_SPIRV_TOOLS_LIB SPIRV-Tools)
        add_library(kompute_spirv_tools INTERFACE IMPORTED)
        set_target_properties(kompute_spirv_tools PROPERTIES
            INTERFACE_INCLUDE_DIRECTORIES "${KOMPUTE_SPIRV_TOOLS_INCLUDE};${KOMPUTE_SPIRV_HEADERS_INCLUDE}"
            INTERFACE_LINK_LIBRARIES "${KOMPUTE_SPIRV_TOOLS_OPT_LIB};${KOMPUTE_SPIRV_TOOLS_LIB}")
    endif()
    if(NOT TARGET kompute_shaderc)
        find_path(KOMPUTE_SHADERC_INCLUDE shaderc/shaderc.hpp)
        if(KOMPUTE_SHADERC_INCLUDE)
            set(kompute_shaderc_libs "")
            foreach(name shaderc_combined glslang MachineIndependent OSDependent GenericCodeGen
                         OGLCompiler SPIRV glslang-default-resource-limits)
                string(MAKE_C_IDENTIFIER "KOMPUTE_LIB_${name}" var)
                kompute_find_static_library(${var} ${name})
                list(APPEND kompute_shaderc_libs "${${var}}")
            endforeach()
            find_package(Threads REQUIRED)
            add_library(kompute_shaderc INTERFACE IMPORTED)
            set_target_properties(kompute_shaderc PROPERTIES
                INTERFACE_INCLUDE_DIRECTORIES "${KOMPUTE_SHADERC_INCLUDE}"
                INTERFACE_LINK_LIBRARIES "${kompute_shaderc_libs};kompute_spirv_tools;Threads::Threads")
        endif()
    endif()
endmacro()

function(kompute_link_shader_tools target with_compiler)
    kompute_define_shader_tool_targets()
    if(with_compiler)
        if(NOT TARGET kompute_shaderc)
            message(FATAL_ERROR "KOMPUTE_OPT_SHADER_COMPILER is ON but shaderc was not found: "
                "install libshaderc-dev, or configure with -DKOMPUTE_OPT_SHADER_COMPILER=OFF")
        endif()
        target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:kompute_shaderc>)
        target_compile_definitions(${target} PRIVATE KOMPUTE_SHADER_COMPILER)
    endif()
    target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:kompute_spirv_tools>)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")
        # A static library's consumers link its dependencies themselves.
        set(libs ${KOMPUTE_SPIRV_TOOLS_OPT_LIB} ${KOMPUTE_SPIRV_TOOLS_LIB})
        if(with_compiler)
            get_target_property(shaderc_libs kompute_shaderc INTERFACE_LINK_LIBRARIES)
            list(FILTER shaderc_libs EXCLUDE REGEX "^(kompute_spirv_tools|Threads::Threads)$")
            set(libs ${shaderc_libs} ${libs} -lpthread)
        endif()
        set(KOMPUTE_STATIC_LINK_LIBS ${libs} PARENT_SCOPE)
        target_link_libraries(${target} INTERFACE $<INSTALL_INTERFACE:${libs}>)
    else()
        # Keep the static tools' symbols out of libkompute.so's interface.
        target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL)
        set(KOMPUTE_STATIC_LINK_LIBS "" PARENT_SCOPE)
    endif()
endfunction()
