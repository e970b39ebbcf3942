# The Vulkan headers (with Vulkan-Hpp): all of Vulkan that Kompute needs to
# build. The loader is opened at run time (src/internal/VulkanLoader.cpp), so
# libkompute links no libvulkan. Vulkan-Headers' own CMake package comes first
# (Debian's libvulkan-dev has it; an SDK or a cross-compiling sysroot may have
# only the headers), then FindVulkan, whose Vulkan::Headers needs the loader
# library too. Used by Kompute's build and by its installed package.
if(NOT TARGET Vulkan::Headers)
    find_package(VulkanHeaders 1.1 CONFIG QUIET)
endif()
if(NOT TARGET Vulkan::Headers)
    find_package(Vulkan 1.1 REQUIRED)
endif()
# The loader, where there is one, only for the programs that use Kompute and
# call Vulkan themselves (kompute::kompute gives it to them, linked as
# needed); Kompute itself never links it.
if(NOT TARGET Vulkan::Vulkan)
    find_package(Vulkan 1.1 QUIET)
endif()
