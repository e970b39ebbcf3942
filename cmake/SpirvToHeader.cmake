# Writes a SPIR-V binary as a C++ header: cmake -DINPUT=x.spv -DOUTPUT=x.hpp
# -DNAMESPACE=ns -DSYMBOL=NAME -P SpirvToHeader.cmake
file(READ "${INPUT}" content HEX)
string(LENGTH "${content}" hexLength)
math(EXPR wordCount "${hexLength} / 8")
# SPIR-V words are little-endian in the file: reverse each group of 4 bytes.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${content}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n    " words "${words}")
file(WRITE "${OUTPUT}"
"// Generated from ${INPUT} at build time; do not edit.
#pragma once

#include <array>
#include <cstdint>

namespace ${NAMESPACE} {

inline constexpr std::array<uint32_t, ${wordCount}> ${SYMBOL} = {
    ${words}
};

} // namespace ${NAMESPACE}
")
