// SPDX-License-Identifier: Apache-2.0
// kp::Image and kp::ImageT<T>: creation in every memory type, data type and
// channel count, host <-> device round trips, copies between images and
// tensors, storage images in shaders (alone and beside tensors),
// re-evaluation, use from several sequences, and bad inputs.
#include <algorithm>

#include "DispatchTestHelpers.hpp"

using namespace kp_test;

namespace {

// An odd width, so that a driver row pitch larger than the packed row
// would show up as shifted pixels.
constexpr uint32_t kWidth = 5;
constexpr uint32_t kHeight = 3;

const std::vector<uint32_t> kChannelCounts = { 1, 2, 4 };

// Element types an image can hold.
using ImageElementTypes =
  std::tuple<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, float, kp::float16_t>;

template<typename F>
void
forEachImageElementType(F&& f)
{
    std::apply([&](auto... values) { (f(TypeTag<decltype(values)>{}), ...); },
               ImageElementTypes{});
}

std::string
memoryTypeName(const ::testing::TestParamInfo<MemoryTypes>& info)
{
    return kp::Memory::toString(info.param);
}

bool
hostVisible(MemoryTypes memoryType)
{
    return memoryType == MemoryTypes::eHost || memoryType == MemoryTypes::eDeviceAndHost;
}

// The tilings an image of this memory type may have.
std::vector<vk::ImageTiling>
tilingsFor(MemoryTypes memoryType)
{
    if (hostVisible(memoryType)) {
        return { vk::ImageTiling::eLinear };
    }
    return { vk::ImageTiling::eOptimal, vk::ImageTiling::eLinear };
}

/** The device data of an image, read without its host view: OpCopy into a
 * fresh eDevice tensor (whose host view OpCopy updates). */
template<typename T>
std::vector<T>
imageDeviceValues(kp::Manager& mgr, const std::shared_ptr<kp::Image>& image)
{
    auto readBack = mgr.tensorT<T>(image->size(), MemoryTypes::eDevice);
    mgr.sequence()->eval<kp::OpCopy>({ image, readBack });
    return readBack->vector();
}

class ImageTest : public KomputeParamTest<MemoryTypes>
{};

INSTANTIATE_TEST_SUITE_P(AllMemoryTypes,
                         ImageTest,
                         ::testing::Values(MemoryTypes::eDevice,
                                           MemoryTypes::eHost,
                                           MemoryTypes::eStorage,
                                           MemoryTypes::eDeviceAndHost),
                         memoryTypeName);

TEST_P(ImageTest, PropertiesDescribeTheImage)
{
    auto image = mgr().imageT<uint8_t>(kWidth, kHeight, 4, GetParam());
    EXPECT_EQ(image->type(), kp::Memory::Type::eImage);
    EXPECT_EQ(image->getDescriptorType(), vk::DescriptorType::eStorageImage);
    EXPECT_EQ(image->getX(), kWidth);
    EXPECT_EQ(image->getY(), kHeight);
    EXPECT_EQ(image->getNumChannels(), 4u);
    EXPECT_EQ(image->size(), kWidth * kHeight * 4);
    EXPECT_EQ(image->memorySize(), kWidth * kHeight * 4);
    EXPECT_EQ(image->dataType(), DataTypes::eUnsignedChar);
    EXPECT_EQ(image->memoryType(), GetParam());
    EXPECT_EQ(image->getFormat(), vk::Format::eR8G8B8A8Uint);
    EXPECT_EQ(image->getPrimaryImageLayout(), vk::ImageLayout::eGeneral);
    EXPECT_TRUE(image->isInit());
    EXPECT_TRUE(image->getPrimaryImage());
    EXPECT_FALSE(image->isHostViewDirect());
    EXPECT_EQ(image->getStagingBuffer() == nullptr, GetParam() == MemoryTypes::eStorage);
    if (hostVisible(GetParam())) {
        EXPECT_EQ(image->getTiling(), vk::ImageTiling::eLinear);
    } else {
        EXPECT_EQ(image->getTiling(), vk::ImageTiling::eOptimal);
    }
}

// Every data type, channel count and tiling: the creation data reaches the
// host view and the device; setData + OpSyncDevice replaces the device
// data; OpSyncLocal brings it back into a cleared host view.
TEST_P(ImageTest, RoundTripsEveryFormat)
{
    MemoryTypes memoryType = GetParam();
    forEachImageElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        for (uint32_t channels : kChannelCounts) {
            for (vk::ImageTiling tiling : tilingsFor(memoryType)) {
                SCOPED_TRACE(typeName<T>() + " x" + std::to_string(channels) + " " +
                             vk::to_string(tiling));
                uint32_t count = kWidth * kHeight * channels;
                std::vector<T> first = sampleValues<T>(count, 1);
                std::vector<T> second = sampleValues<T>(count, 2);
                auto image = mgr().imageT<T>(first, kWidth, kHeight, channels, tiling, memoryType);
                EXPECT_EQ(image->getTiling(), tiling);
                EXPECT_EQ(image->getFormat(),
                          kp::Image::formatFor(kp::Memory::dataType<T>(), channels));
                EXPECT_TRUE(sameElements(imageDeviceValues<T>(mgr(), image), first));
                if (memoryType == MemoryTypes::eStorage) {
                    EXPECT_THROW(image->vector(), kp::Error);
                    continue;
                }
                EXPECT_TRUE(sameElements(image->vector(), first));

                image->setData(second);
                mgr().sequence()->eval<kp::OpSyncDevice>({ image });
                EXPECT_TRUE(sameElements(imageDeviceValues<T>(mgr(), image), second));

                image->setData(std::vector<T>(count, T(0)));
                mgr().sequence()->eval<kp::OpSyncLocal>({ image });
                EXPECT_TRUE(sameElements(image->vector(), second));
            }
        }
    });
}

TEST_P(ImageTest, ImageWithoutDataIsUsable)
{
    auto image = mgr().image(kWidth, kHeight, 2, DataTypes::eInt, GetParam());
    std::vector<int32_t> values = sampleValues<int32_t>(image->size(), 3);
    auto source = mgr().tensorT<int32_t>(values);
    mgr().sequence()->record<kp::OpSyncDevice>({ source })->record<kp::OpCopy>({ source, image })->eval();
    EXPECT_TRUE(sameElements(imageDeviceValues<int32_t>(mgr(), image), values));
    if (GetParam() != MemoryTypes::eStorage) {
        // OpCopy also updates the destination's host view.
        EXPECT_TRUE(sameElements(image->vector<int32_t>(), values));
    }
}

TEST_P(ImageTest, CopiesInEveryDirection)
{
    MemoryTypes memoryType = GetParam();
    std::vector<float> values = sampleValues<float>(kWidth * kHeight * 4, 4);
    auto source = mgr().image(values, kWidth, kHeight, 4, memoryType);

    // image -> image, image -> tensor, in one operation
    auto imageCopy = mgr().image(kWidth, kHeight, 4, MemoryTypes::eDevice);
    auto tensorCopy = mgr().tensorT<float>(values.size(), memoryType);
    mgr().sequence()->eval<kp::OpCopy>({ source, imageCopy, tensorCopy });
    EXPECT_TRUE(sameElements(imageCopy->vector(), values));
    EXPECT_TRUE(sameElements(imageDeviceValues<float>(mgr(), imageCopy), values));
    EXPECT_TRUE(sameElements(deviceValues<float>(mgr(), tensorCopy), values));

    // tensor -> image
    std::vector<float> other = sampleValues<float>(values.size(), 5);
    auto tensor = mgr().tensorT<float>(other, memoryType);
    auto target = mgr().image(kWidth, kHeight, 4, memoryType);
    mgr().sequence()->record<kp::OpSyncDevice>({ tensor })->record<kp::OpCopy>({ tensor, target })->eval();
    EXPECT_TRUE(sameElements(imageDeviceValues<float>(mgr(), target), other));

    // image -> image between the memory types, both tilings
    for (vk::ImageTiling tiling : tilingsFor(memoryType)) {
        auto u8 = sampleValues<uint8_t>(kWidth * kHeight, 6);
        auto from = mgr().imageT<uint8_t>(u8, kWidth, kHeight, 1, tiling, memoryType);
        auto to = mgr().imageT<uint8_t>(kWidth, kHeight, 1, MemoryTypes::eStorage);
        auto back = mgr().imageT<uint8_t>(kWidth, kHeight, 1, MemoryTypes::eHost);
        mgr().sequence()->record<kp::OpCopy>({ from, to })->record<kp::OpCopy>({ to, back })->eval();
        EXPECT_TRUE(sameElements(back->vector(), u8));
    }
}

// Host view layout: element (x, y, c) is at (y * width + x) * channels + c,
// both in the host view and in a tensor the image is copied into; a shader
// sees the same pixel at (x, y).
TEST_F(KomputeTest, ImagePixelsAreRowMajor)
{
    std::vector<uint32_t> values(kWidth * kHeight * 2);
    for (uint32_t y = 0; y < kHeight; ++y) {
        for (uint32_t x = 0; x < kWidth; ++x) {
            values[(y * kWidth + x) * 2] = x;
            values[(y * kWidth + x) * 2 + 1] = y;
        }
    }
    auto image = mgr().imageT<uint32_t>(values, kWidth, kHeight, 2);
    auto out = mgr().tensorT<uint32_t>(values.size());
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, rg32ui) uniform readonly uimage2D image;
layout(set = 0, binding = 1) writeonly buffer Out { uint o[]; };
void main()
{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    uint i = uint(p.y * imageSize(image).x + p.x);
    uvec4 v = imageLoad(image, p);
    o[2 * i] = v.x;
    o[2 * i + 1] = v.y;
}
)");
    auto algorithm = mgr().algorithm({ image, out }, spirv, kp::Workgroup{ kWidth, kHeight, 1 });
    mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ out })->eval();
    EXPECT_TRUE(sameElements(out->vector(), values));
}

const char* kInvertShader = R"(
#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0, rgba8ui) uniform readonly uimage2D source;
layout(set = 0, binding = 1, rgba8ui) uniform writeonly uimage2D target;
void main()
{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(source);
    if (p.x >= size.x || p.y >= size.y) {
        return;
    }
    imageStore(target, p, uvec4(255) - imageLoad(source, p));
}
)";

const char* kInvertInPlaceShader = R"(
#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0, rgba8ui) uniform uimage2D image;
void main()
{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(image);
    if (p.x >= size.x || p.y >= size.y) {
        return;
    }
    imageStore(image, p, uvec4(255) - imageLoad(image, p));
}
)";

std::vector<uint8_t>
inverted(const std::vector<uint8_t>& values)
{
    std::vector<uint8_t> result(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        result[i] = static_cast<uint8_t>(255 - values[i]);
    }
    return result;
}

TEST_P(ImageTest, ShaderInvertsAnImage)
{
    const uint32_t width = 9, height = 7;
    std::vector<uint8_t> pixels = sampleValues<uint8_t>(width * height * 4, 7);
    auto source = mgr().imageT<uint8_t>(pixels, width, height, 4, GetParam());
    auto target = mgr().imageT<uint8_t>(width, height, 4, GetParam());
    auto algorithm = mgr().algorithm(
      { source, target }, compile(kInvertShader), kp::Workgroup{ (width + 3) / 4, (height + 3) / 4, 1 });
    auto sequence = mgr().sequence()->record<kp::OpSyncDevice>({ source })->record<kp::OpAlgoDispatch>(algorithm);
    if (GetParam() != MemoryTypes::eStorage) {
        sequence->record<kp::OpSyncLocal>({ target });
    }
    sequence->eval();
    if (GetParam() != MemoryTypes::eStorage) {
        EXPECT_TRUE(sameElements(target->vector(), inverted(pixels)));
    }
    EXPECT_TRUE(sameElements(imageDeviceValues<uint8_t>(mgr(), target), inverted(pixels)));
}

// A 3x3 box blur of a one-channel float image, edges clamped.
TEST_F(KomputeTest, ShaderBlursAnImage)
{
    const uint32_t width = 13, height = 6;
    std::vector<float> pixels(width * height);
    for (uint32_t i = 0; i < pixels.size(); ++i) {
        pixels[i] = static_cast<float>((i * 37) % 101) * 0.25f;
    }
    auto source = mgr().image(pixels, width, height, 1);
    auto target = mgr().image(width, height, 1);
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, r32f) uniform readonly image2D source;
layout(set = 0, binding = 1, r32f) uniform writeonly image2D target;
void main()
{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(source);
    if (p.x >= size.x || p.y >= size.y) {
        return;
    }
    float sum = 0.0;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            sum += imageLoad(source, clamp(p + ivec2(dx, dy), ivec2(0), size - 1)).r;
        }
    }
    imageStore(target, p, vec4(sum / 9.0));
}
)");
    auto algorithm =
      mgr().algorithm({ source, target }, spirv, kp::Workgroup{ (width + 7) / 8, (height + 7) / 8, 1 });
    mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ target })->eval();
    std::vector<float> result = target->vector();
    ASSERT_EQ(result.size(), pixels.size());
    for (int y = 0; y < static_cast<int>(height); ++y) {
        for (int x = 0; x < static_cast<int>(width); ++x) {
            float sum = 0;
            for (int dy = -1; dy <= 1; ++dy) {
                for (int dx = -1; dx <= 1; ++dx) {
                    int sx = std::clamp(x + dx, 0, static_cast<int>(width) - 1);
                    int sy = std::clamp(y + dy, 0, static_cast<int>(height) - 1);
                    sum += pixels[sy * width + sx];
                }
            }
            EXPECT_NEAR(result[y * width + x], sum / 9.0f, 1e-4f) << "at " << x << ", " << y;
        }
    }
}

// One algorithm binding a tensor, an image and another tensor.
TEST_F(KomputeTest, ImageAndTensorsInOneAlgorithm)
{
    const uint32_t width = 4, height = 4;
    std::vector<float> pixels(width * height);
    std::vector<float> scale(width * height);
    for (uint32_t i = 0; i < pixels.size(); ++i) {
        pixels[i] = static_cast<float>(i);
        scale[i] = 0.5f * static_cast<float>(i % 3);
    }
    auto scales = mgr().tensor(scale);
    auto image = mgr().image(pixels, width, height, 1);
    auto out = mgr().tensor(std::vector<float>(pixels.size(), 0.0f));
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer Scale { float s[]; };
layout(set = 0, binding = 1, r32f) uniform image2D image;
layout(set = 0, binding = 2) writeonly buffer Out { float o[]; };
void main()
{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    uint i = uint(p.y * 4 + p.x);
    float v = imageLoad(image, p).r * s[i];
    o[i] = v;
    imageStore(image, p, vec4(v + 1.0));
}
)");
    auto algorithm =
      mgr().algorithm({ scales, image, out }, spirv, kp::Workgroup{ width, height, 1 });
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ scales, image })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out, image })
      ->eval();
    std::vector<float> expected(pixels.size()), expectedImage(pixels.size());
    for (size_t i = 0; i < pixels.size(); ++i) {
        expected[i] = pixels[i] * scale[i];
        expectedImage[i] = expected[i] + 1.0f;
    }
    EXPECT_TRUE(sameElements(out->vector(), expected));
    EXPECT_TRUE(sameElements(image->vector(), expectedImage));
}

// A recorded sequence evaluated again and again, and one image used by two
// sequences in turn: the layout stays right (no validation errors) and every
// evaluation inverts the image once more.
TEST_F(KomputeTest, ReEvaluationAndTwoSequences)
{
    const uint32_t width = 6, height = 5;
    std::vector<uint8_t> pixels = sampleValues<uint8_t>(width * height * 4, 8);
    auto image = mgr().imageT<uint8_t>(pixels, width, height, 4);
    auto algorithm = mgr().algorithm(
      { image }, compile(kInvertInPlaceShader), kp::Workgroup{ (width + 3) / 4, (height + 3) / 4, 1 });
    auto invert = mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm);
    auto read = mgr().sequence()->record<kp::OpSyncLocal>({ image });
    for (int round = 1; round <= 5; ++round) {
        SCOPED_TRACE(round);
        invert->eval();
        read->eval();
        EXPECT_TRUE(sameElements(image->vector(), round % 2 == 1 ? inverted(pixels) : pixels));
    }
    // A third sequence that syncs, dispatches and reads back in one batch,
    // evaluated twice: each evaluation uploads the host view again.
    image->setData(pixels);
    auto all = mgr()
                 .sequence()
                 ->record<kp::OpSyncDevice>({ image })
                 ->record<kp::OpAlgoDispatch>(algorithm)
                 ->record<kp::OpSyncLocal>({ image });
    all->eval();
    EXPECT_TRUE(sameElements(image->vector(), inverted(pixels)));
    all->eval();
    EXPECT_TRUE(sameElements(image->vector(), pixels));
}

TEST_F(KomputeTest, MemoryBarrierOnImages)
{
    std::vector<uint8_t> pixels = sampleValues<uint8_t>(4 * 4 * 4, 9);
    auto image = mgr().imageT<uint8_t>(pixels, 4, 4, 4);
    auto target = mgr().imageT<uint8_t>(4, 4, 4);
    auto algorithm = mgr().algorithm({ image, target }, compile(kInvertShader), kp::Workgroup{ 1, 1, 1 });
    mgr()
      .sequence()
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpMemoryBarrier>(std::vector<std::shared_ptr<kp::Memory>>{ target },
                                    vk::AccessFlagBits::eShaderWrite,
                                    vk::AccessFlagBits::eTransferRead,
                                    vk::PipelineStageFlagBits::eComputeShader,
                                    vk::PipelineStageFlagBits::eTransfer)
      ->record<kp::OpMemoryBarrier>(std::vector<std::shared_ptr<kp::Memory>>{ target },
                                    vk::AccessFlagBits::eTransferWrite,
                                    vk::AccessFlagBits::eHostRead,
                                    vk::PipelineStageFlagBits::eTransfer,
                                    vk::PipelineStageFlagBits::eHost,
                                    false)
      ->record<kp::OpSyncLocal>({ target })
      ->eval();
    EXPECT_TRUE(sameElements(target->vector(), inverted(pixels)));
}

// The raw forms: void* data with an element count and a data type.
TEST_F(KomputeTest, RawImageFactories)
{
    std::vector<int16_t> values = sampleValues<int16_t>(kWidth * kHeight * 2, 10);
    auto image = mgr().image(values.data(), values.size(), kWidth, kHeight, 2, DataTypes::eShort);
    EXPECT_EQ(image->dataType(), DataTypes::eShort);
    EXPECT_TRUE(sameElements(image->vector<int16_t>(), values));
    EXPECT_TRUE(sameElements(imageDeviceValues<int16_t>(mgr(), image), values));

    auto linear = mgr().image(values.data(),
                              values.size(),
                              kWidth,
                              kHeight,
                              2,
                              DataTypes::eShort,
                              vk::ImageTiling::eLinear,
                              MemoryTypes::eDevice);
    EXPECT_EQ(linear->getTiling(), vk::ImageTiling::eLinear);
    EXPECT_TRUE(sameElements(imageDeviceValues<int16_t>(mgr(), linear), values));

    auto empty = mgr().image(kWidth, kHeight, 1, DataTypes::eHalf, vk::ImageTiling::eOptimal);
    EXPECT_EQ(empty->getFormat(), vk::Format::eR16Sfloat);

    auto floats = mgr().image(std::vector<float>{ 1, 2, 3, 4 }, 2, 2, 1, vk::ImageTiling::eOptimal);
    EXPECT_EQ(floats->vector(), (std::vector<float>{ 1, 2, 3, 4 }));
    (*floats)[2] = 7.0f;
    EXPECT_EQ(floats->vector(), (std::vector<float>{ 1, 2, 7, 4 }));
}

// Upstream's public constructors, on a Manager's device: the image joins
// the Manager and is made inert by its destroy().
TEST_F(KomputeTest, PublicConstructorsOnAManagersDevice)
{
    std::vector<float> values = { 1, 2, 3, 4, 5, 6, 7, 8 };
    auto image = std::make_shared<kp::ImageT<float>>(
      mgr().getVkPhysicalDevice(), mgr().getVkDevice(), values, 4, 2, 1);
    auto raw = std::make_shared<kp::Image>(mgr().getVkPhysicalDevice(),
                                           mgr().getVkDevice(),
                                           4,
                                           2,
                                           1,
                                           DataTypes::eFloat,
                                           vk::ImageTiling::eOptimal);
    mgr().sequence()->eval<kp::OpCopy>({ image, raw });
    EXPECT_EQ(raw->vector<float>(), values);
    mgr().destroy();
    EXPECT_FALSE(image->isInit());
    EXPECT_FALSE(raw->isInit());
    EXPECT_THROW(image->vector(), kp::DestroyedError);
    EXPECT_THROW(image->getPrimaryImage(), kp::DestroyedError);
}

// On an application's own device, unknown to any Manager, Kompute has no
// queue for the creation-time layout change: a clear error, not a crash.
TEST_F(KomputeTest, ImageOnABareDeviceThrowsClearly)
{
    RawVulkanDevice raw;
    EXPECT_TRUE(throwsWith(
      [&] { kp::Image(raw.physicalDevice, raw.device, 4, 4, 1, DataTypes::eFloat); },
      { "needs a queue", "kp::Manager" }));
}

TEST_F(KomputeTest, ImageDataLargerThanTheImageIsCutWithAWarningAsUpstream)
{
    // Upstream's TestImage.LargeVectorSize and
    // TestOpCopyImage.CopyDeviceToDeviceImage2DMismatchedSizes.
    std::vector<float> values(256);
    for (size_t i = 0; i < values.size(); ++i) {
        values[i] = float(i);
    }
    std::vector<float> first(values.begin(), values.begin() + 16);
    LogCapture log;
    auto image = mgr().image(values, 16, 1, 1);
    EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "the first 16 are used"));
    EXPECT_EQ(image->vector(), first);
    image->setData(std::vector<float>(16, 0.f));
    mgr().sequence()->eval<kp::OpSyncLocal>({ image }); // the device got them too
    EXPECT_EQ(image->vector(), first);
    auto transposed = mgr().image(std::vector<float>(256, 0.f), 1, 16, 1);
    EXPECT_THROW(mgr().sequence()->eval<kp::OpCopy>({ image, transposed }), std::runtime_error);
}

TEST_F(KomputeTest, BadImageInputsThrowClearErrors)
{
    auto& m = mgr();
    EXPECT_TRUE(throwsWith([&] { m.imageT<uint8_t>(4, 4, 3); }, { "1, 2 or 4 channels", "3" }));
    EXPECT_TRUE(throwsWith([&] { m.image(4, 4, 0); }, { "1, 2 or 4 channels" }));
    EXPECT_TRUE(throwsWith([&] { m.imageT<bool>(4, 4, 1); }, { "eBool" }));
    EXPECT_TRUE(throwsWith([&] { m.imageT<double>(4, 4, 1); }, { "eDouble" }));
    EXPECT_TRUE(throwsWith([&] { m.imageT<int64_t>(4, 4, 1); }, { "eLong" }));
    EXPECT_TRUE(throwsWith([&] { m.image(4, 4, 1, DataTypes::eCustom); }, { "eCustom" }));
    EXPECT_TRUE(throwsWith([&] { m.image(0, 4, 1); }, { "0 x 4", "at least 1" }));
    EXPECT_TRUE(throwsWith([&] { m.image(4, 0, 1); }, { "4 x 0" }));
    EXPECT_TRUE(throwsWith([&] { m.image(std::vector<float>(15), 4, 4, 1); },
                           { "16 elements", "15 were given" }));
    std::vector<uint8_t> bytes(15);
    EXPECT_TRUE(throwsWith(
      [&] { m.image(bytes.data(), 15, 4, 4, 1, DataTypes::eUnsignedChar); }, { "16 elements", "15" }));
    // Upstream's wording first, then ours.
    EXPECT_TRUE(throwsWith(
      [&] { m.image(4, 4, 1, DataTypes::eFloat, vk::ImageTiling::eOptimal, MemoryTypes::eHost); },
      { "optimal tiling is only supported for", "eHost", "linear" }));

    // Copies of mismatched sizes, types or shapes.
    auto image = m.image(4, 4, 1);
    auto small = m.tensorT<float>(8);
    auto ints = m.tensorT<int32_t>(16);
    auto transposed = m.image(2, 8, 1);
    auto twoChannels = m.image(4, 2, 2);
    EXPECT_TRUE(throwsWith([&] { m.sequence()->eval<kp::OpCopy>({ image, small }); },
                           { "sizes differ" }));
    EXPECT_TRUE(throwsWith([&] { m.sequence()->eval<kp::OpCopy>({ small, image }); },
                           { "sizes differ" }));
    EXPECT_TRUE(throwsWith([&] { m.sequence()->eval<kp::OpCopy>({ ints, image }); },
                           { "data types differ" }));
    EXPECT_TRUE(throwsWith([&] { m.sequence()->eval<kp::OpCopy>({ image, transposed }); },
                           { "width, height and channels must match" }));
    EXPECT_TRUE(throwsWith([&] { m.sequence()->eval<kp::OpCopy>({ twoChannels, image }); },
                           { "width, height and channels must match" }));
    // The range forms of the sync operations are for tensors.
    EXPECT_TRUE(throwsWith([&] { kp::OpSyncDevice({ image }, 0, 4); }, { "tensors only" }));
    EXPECT_TRUE(throwsWith([&] { image->setData(std::vector<float>(3)); }, { "bytes" }));
    // A tensor where the shader declares an image.
    auto spirv = compile(kInvertInPlaceShader);
    auto tensor = m.tensorT<uint8_t>(64);
    EXPECT_TRUE(throwsWith([&] { m.algorithm({ tensor }, spirv); }, { "storage image", "tensor" }));
}

} // namespace
