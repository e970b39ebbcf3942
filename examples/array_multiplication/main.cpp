// The seed's example: two arrays multiplied on the GPU, with a
// specialization constant and push constants that change between runs.
//
// Expected output: {4, 8, 12} after the first run (2*2*1 + 0, ...), and
// {10, 10, 10} after the second.
#include <iostream>
#include <vector>

#include <kompute/Kompute.hpp>

static const std::string kShader = R"(
#version 450

layout (local_size_x = 1) in;

// The input tensors bind index is relative to index in parameter passed
layout(set = 0, binding = 0) buffer buf_in_a { float in_a[]; };
layout(set = 0, binding = 1) buffer buf_in_b { float in_b[]; };
layout(set = 0, binding = 2) buffer buf_out_a { uint out_a[]; };
layout(set = 0, binding = 3) buffer buf_out_b { uint out_b[]; };

// Kompute supports push constants updated on dispatch
layout(push_constant) uniform PushConstants {
    float val;
} push_const;

// Kompute also supports spec constants on initalization
layout(constant_id = 0) const float const_one = 0;

void main() {
    uint index = gl_GlobalInvocationID.x;
    out_a[index] += uint( in_a[index] * in_b[index] );
    out_b[index] += uint( const_one * push_const.val );
}
)";

template<typename T>
static void
print(const char* name, const std::vector<T>& values)
{
    std::cout << name << ": {";
    for (size_t i = 0; i < values.size(); ++i) {
        std::cout << (i ? ", " : " ") << values[i];
    }
    std::cout << " }\n";
}

int
main()
{
    // 1. Create Kompute Manager with default settings (device 0, first queue
    //    and no extensions)
    kp::Manager mgr;
    std::cout << "Device: " << mgr.getDeviceProperties().deviceName.data() << "\n";

    // 2. Create and initialise Kompute Tensors through manager
    auto tensorInA = mgr.tensor({ 2., 2., 2. });
    auto tensorInB = mgr.tensor({ 1., 2., 3. });
    auto tensorOutA = mgr.tensorT<uint32_t>({ 0, 0, 0 });
    auto tensorOutB = mgr.tensorT<uint32_t>({ 0, 0, 0 });

    std::vector<std::shared_ptr<kp::Memory>> params = { tensorInA, tensorInB, tensorOutA, tensorOutB };

    // 3. Create algorithm based on shader (supports buffers & push/spec
    //    constants)
    kp::Workgroup workgroup({ 3, 1, 1 });
    std::vector<float> specConsts({ 2 });
    std::vector<float> pushConstsA({ 2.0 });
    std::vector<float> pushConstsB({ 3.0 });

    auto algorithm = mgr.algorithm(
      params, kp::Shader::compileSource(kShader), workgroup, specConsts, pushConstsA);

    // 4. Run operation synchronously using sequence
    mgr.sequence()
      ->record<kp::OpSyncDevice>(params)
      ->record<kp::OpAlgoDispatch>(algorithm) // Binds default push consts
      ->eval()                                // Evaluates the two recorded operations
      ->record<kp::OpAlgoDispatch>(algorithm, pushConstsB) // Overrides push consts
      ->eval();                               // Evaluates only last recorded operation

    // 5. Sync results from the GPU asynchronously
    auto sq = mgr.sequence();
    sq->evalAsync<kp::OpSyncLocal>(params);
    sq->evalAwait();

    // Prints the first output which is: { 4, 8, 12 }
    print("Output A", tensorOutA->vector());
    // Prints the second output which is: { 10, 10, 10 }
    print("Output B", tensorOutB->vector());

    bool correct = tensorOutA->vector() == std::vector<uint32_t>{ 4, 8, 12 } &&
                   tensorOutB->vector() == std::vector<uint32_t>{ 10, 10, 10 };
    std::cout << (correct ? "Results match the expected values\n" : "UNEXPECTED RESULTS\n");
    return correct ? 0 : 1;
}
