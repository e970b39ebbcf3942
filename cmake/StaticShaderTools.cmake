# Static linking of SPIRV-Tools (validation, always) and of shaderc + glslang
# (the in-process GLSL compiler, optional) from Debian's packages.
#
# Debian's libshaderc_combined.a holds only shaderc itself, so glslang's and
# SPIRV-Tools' static libraries follow it on the link line; they reference
# each other, so they are linked as one group that the linker rescans.

function(kompute_link_shader_tools target with_compiler)
    find_path(KOMPUTE_SPIRV_TOOLS_INCLUDE spirv-tools/libspirv.hpp REQUIRED)
    find_path(KOMPUTE_SPIRV_HEADERS_INCLUDE spirv/unified1/spirv.hpp REQUIRED)
    set(names "")
    if(with_compiler)
        find_path(KOMPUTE_SHADERC_INCLUDE shaderc/shaderc.hpp)
        if(NOT KOMPUTE_SHADERC_INCLUDE)
            message(FATAL_ERROR "KOMPUTE_OPT_SHADER_COMPILER is ON but shaderc was not found: "
                "install libshaderc-dev, or configure with -DKOMPUTE_OPT_SHADER_COMPILER=OFF")
        endif()
        target_include_directories(${target} PRIVATE ${KOMPUTE_SHADERC_INCLUDE})
        target_compile_definitions(${target} PRIVATE KOMPUTE_SHADER_COMPILER)
        list(APPEND names shaderc_combined glslang MachineIndependent OSDependent
            GenericCodeGen OGLCompiler SPIRV glslang-default-resource-limits)
    endif()
    list(APPEND names SPIRV-Tools-opt SPIRV-Tools)
    set(libs "")
    foreach(name ${names})
        string(MAKE_C_IDENTIFIER "KOMPUTE_LIB_${name}" var)
        find_library(${var} NAMES lib${name}.a REQUIRED)
        list(APPEND libs "${${var}}")
    endforeach()
    target_include_directories(${target} PRIVATE
        ${KOMPUTE_SPIRV_TOOLS_INCLUDE} ${KOMPUTE_SPIRV_HEADERS_INCLUDE})
    find_package(Threads REQUIRED)

    get_target_property(type ${target} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")
        # A static library's consumers link its dependencies themselves, in
        # the build tree and once installed.
        list(JOIN libs "," grouped)
        target_link_libraries(${target} INTERFACE
            "$<LINK_GROUP:RESCAN,${grouped}>" Threads::Threads)
        set(KOMPUTE_STATIC_LINK_LIBS "-Wl,--start-group;${libs};-Wl,--end-group;-lpthread" PARENT_SCOPE)
    else()
        list(JOIN libs "," grouped)
        target_link_libraries(${target} PRIVATE "$<LINK_GROUP:RESCAN,${grouped}>" Threads::Threads)
        # Keep the static tools' symbols out of libkompute.so's interface.
        target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL)
        set(KOMPUTE_STATIC_LINK_LIBS "" PARENT_SCOPE)
    endif()
endfunction()
