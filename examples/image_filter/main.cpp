// Filters a picture on the GPU: makes a 64x64 RGBA image (a gradient with a
// bright square), runs a 3x3 box blur over it as a storage image, checks the
// result against the same blur on the host, and writes input and result as
// binary PPM files.
//
// Usage: kompute_image_filter [output directory]   (default: .)
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <kompute/Kompute.hpp>

static const char* kBlurShader = R"(
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, rgba8ui) uniform readonly uimage2D source;
layout(set = 0, binding = 1, rgba8ui) uniform writeonly uimage2D target;

void main()
{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(source);
    if (p.x >= size.x || p.y >= size.y) {
        return;
    }
    uvec4 sum = uvec4(0);
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            sum += imageLoad(source, clamp(p + ivec2(dx, dy), ivec2(0), size - 1));
        }
    }
    imageStore(target, p, sum / 9u);
}
)";

constexpr uint32_t kWidth = 64;
constexpr uint32_t kHeight = 64;
constexpr uint32_t kChannels = 4; // RGBA: 3-channel images are not storable

// A horizontal red and vertical green gradient with a white square.
static std::vector<uint8_t>
makePicture()
{
    std::vector<uint8_t> pixels(kWidth * kHeight * kChannels);
    for (uint32_t y = 0; y < kHeight; ++y) {
        for (uint32_t x = 0; x < kWidth; ++x) {
            uint8_t* p = &pixels[(y * kWidth + x) * kChannels];
            bool square = x >= 20 && x < 44 && y >= 20 && y < 44;
            p[0] = square ? 255 : static_cast<uint8_t>(x * 255 / (kWidth - 1));
            p[1] = square ? 255 : static_cast<uint8_t>(y * 255 / (kHeight - 1));
            p[2] = square ? 255 : 64;
            p[3] = 255;
        }
    }
    return pixels;
}

static std::vector<uint8_t>
blurOnHost(const std::vector<uint8_t>& pixels)
{
    std::vector<uint8_t> result(pixels.size());
    for (int y = 0; y < static_cast<int>(kHeight); ++y) {
        for (int x = 0; x < static_cast<int>(kWidth); ++x) {
            for (uint32_t c = 0; c < kChannels; ++c) {
                uint32_t sum = 0;
                for (int dy = -1; dy <= 1; ++dy) {
                    for (int dx = -1; dx <= 1; ++dx) {
                        int sx = std::clamp(x + dx, 0, static_cast<int>(kWidth) - 1);
                        int sy = std::clamp(y + dy, 0, static_cast<int>(kHeight) - 1);
                        sum += pixels[(sy * kWidth + sx) * kChannels + c];
                    }
                }
                result[(y * kWidth + x) * kChannels + c] = static_cast<uint8_t>(sum / 9);
            }
        }
    }
    return result;
}

// Binary PPM (P6): RGB only, so the alpha channel is dropped.
static bool
writePpm(const std::string& path, const std::vector<uint8_t>& rgba)
{
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << "P6\n" << kWidth << " " << kHeight << "\n255\n";
    for (size_t i = 0; i < rgba.size(); i += kChannels) {
        file.write(reinterpret_cast<const char*>(&rgba[i]), 3);
    }
    return static_cast<bool>(file);
}

int
main(int argc, char** argv)
{
    std::string directory = argc > 1 ? argv[1] : ".";
    kp::Manager mgr;
    std::cout << "Device: " << mgr.getDeviceProperties().deviceName.data() << "\n";

    std::vector<uint8_t> picture = makePicture();
    auto input = mgr.imageT<uint8_t>(picture, kWidth, kHeight, kChannels);
    auto output = mgr.imageT<uint8_t>(kWidth, kHeight, kChannels);

    auto algorithm = mgr.algorithm({ input, output },
                                   kp::Shader::compileSource(kBlurShader),
                                   { (kWidth + 7) / 8, (kHeight + 7) / 8, 1 });
    // Images always move host data with OpSyncDevice / OpSyncLocal.
    mgr.sequence()
      ->record<kp::OpSyncDevice>({ input })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ output })
      ->eval();

    std::vector<uint8_t> result = output->vector();
    std::vector<uint8_t> expected = blurOnHost(picture);
    size_t mismatches = 0;
    for (size_t i = 0; i < result.size(); ++i) {
        mismatches += result[i] != expected[i] ? 1 : 0;
    }

    std::string inputPath = directory + "/image_filter_input.ppm";
    std::string outputPath = directory + "/image_filter_blurred.ppm";
    if (!writePpm(inputPath, picture) || !writePpm(outputPath, result)) {
        std::cerr << "Cannot write the PPM files into " << directory << "\n";
        return 2;
    }
    std::cout << "Input:  " << inputPath << "\n";
    std::cout << "Output: " << outputPath << "\n";
    if (mismatches != 0) {
        std::cerr << mismatches << " of " << result.size()
                  << " values differ from the host's blur\n";
        return 1;
    }
    std::cout << "The GPU blur matches the host's.\n";
    return 0;
}
