# Writes the kernels' built-in tuning tables (src/kernels/tuning/*.json) as
# a C++ source, their text in hexadecimal bytes so that no character of the
# JSON needs escaping: cmake -DOUTPUT=x.cpp -DTABLES="a.json;b.json"
# -P TuningTables.cmake. kernels/MatMulTuning.hpp declares kBuiltinTuningTexts.
set(body "")
set(entries "")
set(index 0)
foreach(table IN LISTS TABLES)
    file(READ "${table}" content HEX)
    string(REGEX REPLACE "(..)" "'\\\\x\\1'," bytes "${content}")
    string(REGEX REPLACE "(('\\\\x..',){16})" "\\1\n    " bytes "${bytes}")
    get_filename_component(name "${table}" NAME)
    string(APPEND body "const char kTable${index}[] = {\n    ${bytes}'\\0'\n};\n")
    string(APPEND entries "    { \"${name}\", kTable${index} },\n")
    math(EXPR index "${index} + 1")
endforeach()
file(WRITE "${OUTPUT}.tmp"
"// Generated from src/kernels/tuning/*.json at build time; do not edit.
#include \"kernels/MatMulTuning.hpp\"

namespace kp {
namespace kernels {
namespace matmul {

namespace {
${body}} // namespace

extern const BuiltinTuningText kBuiltinTuningTexts[] = {
${entries}    { nullptr, nullptr },
};

} // namespace matmul
} // namespace kernels
} // namespace kp
")
# Only a changed table rewrites the source (and rebuilds it).
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
