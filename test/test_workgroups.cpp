// SPDX-License-Identifier: Apache-2.0
// Workgroups: 1D, 2D and 3D dispatches checked element by element, upstream's
// defaults (x = 0 means the first tensor's size, y/z = 0 mean 1), changing the
// workgroup without a rebuild, and counts beyond the device's limits.
#include "DispatchTestHelpers.hpp"

using namespace kp_test;

namespace {

// Each invocation writes, at its linear index in the whole grid, an encoding
// of its global ID, and one of its workgroup and local IDs.
const char* kGridShader = R"(
#version 450
layout(local_size_x = LX, local_size_y = LY, local_size_z = LZ) in;
layout(set = 0, binding = 0) writeonly buffer Global { uint globalIds[]; };
layout(set = 0, binding = 1) writeonly buffer Group { uint groupIds[]; };
void main()
{
    uvec3 size = gl_NumWorkGroups * gl_WorkGroupSize;
    uvec3 id = gl_GlobalInvocationID;
    uint index = id.x + size.x * (id.y + size.y * id.z);
    globalIds[index] = 1u + id.x + 1000u * id.y + 1000000u * id.z;
    uvec3 group = gl_WorkGroupID;
    uint groupIndex = group.x + gl_NumWorkGroups.x * (group.y + gl_NumWorkGroups.y * group.z);
    groupIds[index] = 1u + gl_LocalInvocationIndex + 1000u * groupIndex;
}
)";

using Size3 = std::array<uint32_t, 3>;

std::vector<uint32_t>
gridShader(const Size3& local)
{
    return compile(kGridShader,
                   { { "LX", std::to_string(local[0]) },
                     { "LY", std::to_string(local[1]) },
                     { "LZ", std::to_string(local[2]) } });
}

// What kGridShader writes for a dispatch of `groups` workgroups of `local`
// invocations, in a buffer of `length` elements (0 where nothing is written).
void
expectedGrid(const Size3& local,
             const Size3& groups,
             size_t length,
             std::vector<uint32_t>* globalIds,
             std::vector<uint32_t>* groupIds)
{
    globalIds->assign(length, 0);
    groupIds->assign(length, 0);
    Size3 size = { local[0] * groups[0], local[1] * groups[1], local[2] * groups[2] };
    for (uint32_t z = 0; z < size[2]; ++z) {
        for (uint32_t y = 0; y < size[1]; ++y) {
            for (uint32_t x = 0; x < size[0]; ++x) {
                size_t index = x + size[0] * (y + size[1] * static_cast<size_t>(z));
                if (index >= length) {
                    continue;
                }
                (*globalIds)[index] = 1u + x + 1000u * y + 1000000u * z;
                Size3 group = { x / local[0], y / local[1], z / local[2] };
                uint32_t localIndex = (x % local[0]) + local[0] * ((y % local[1]) + local[1] * (z % local[2]));
                uint32_t groupIndex = group[0] + groups[0] * (group[1] + groups[1] * group[2]);
                (*groupIds)[index] = 1u + localIndex + 1000u * groupIndex;
            }
        }
    }
}

struct Grid
{
    std::shared_ptr<kp::TensorT<uint32_t>> globalIds;
    std::shared_ptr<kp::TensorT<uint32_t>> groupIds;
    std::shared_ptr<kp::Algorithm> algorithm;
};

Grid
makeGrid(kp::Manager& mgr, const Size3& local, const kp::Workgroup& workgroup, size_t length)
{
    Grid grid;
    grid.globalIds = mgr.tensorT<uint32_t>(std::vector<uint32_t>(length, 0));
    grid.groupIds = mgr.tensorT<uint32_t>(std::vector<uint32_t>(length, 0));
    grid.algorithm = mgr.algorithm({ grid.globalIds, grid.groupIds }, gridShader(local), workgroup);
    return grid;
}

void
run(kp::Manager& mgr, const Grid& grid)
{
    mgr.sequence()
      ->record<kp::OpSyncDevice>({ grid.globalIds, grid.groupIds })
      ->record<kp::OpAlgoDispatch>(grid.algorithm)
      ->record<kp::OpSyncLocal>({ grid.globalIds, grid.groupIds })
      ->eval();
}

void
expectGrid(const Grid& grid, const Size3& local, const Size3& groups)
{
    std::vector<uint32_t> globalIds, groupIds;
    expectedGrid(local, groups, grid.globalIds->size(), &globalIds, &groupIds);
    EXPECT_TRUE(sameElements(grid.globalIds->vector(), globalIds)) << "global IDs";
    EXPECT_TRUE(sameElements(grid.groupIds->vector(), groupIds)) << "workgroup and local IDs";
}

} // namespace

class WorkgroupTest : public KomputeTest
{};

TEST_F(WorkgroupTest, OneDimensional)
{
    Size3 local = { 4, 1, 1 };
    Size3 groups = { 5, 1, 1 };
    auto grid = makeGrid(mgr(), local, groups, 20);
    EXPECT_EQ(grid.algorithm->getWorkgroup(), groups);
    run(mgr(), grid);
    expectGrid(grid, local, groups);
}

TEST_F(WorkgroupTest, TwoDimensional)
{
    Size3 local = { 4, 2, 1 };
    Size3 groups = { 3, 5, 1 };
    auto grid = makeGrid(mgr(), local, groups, 4 * 3 * 2 * 5);
    run(mgr(), grid);
    expectGrid(grid, local, groups);
}

TEST_F(WorkgroupTest, ThreeDimensional)
{
    Size3 local = { 2, 2, 2 };
    Size3 groups = { 3, 2, 4 };
    auto grid = makeGrid(mgr(), local, groups, 8 * 3 * 2 * 4);
    EXPECT_EQ(grid.algorithm->getWorkgroup(), groups);
    run(mgr(), grid);
    expectGrid(grid, local, groups);
}


using WorkgroupDefaultsTest = KomputeTest;

TEST_F(WorkgroupDefaultsTest, ZeroXMeansTheFirstTensorsSize)
{
    Size3 local = { 1, 1, 1 };
    for (const kp::Workgroup& given : { kp::Workgroup{ 0, 0, 0 }, kp::Workgroup{}, kp::Workgroup{ 0, 1, 1 } }) {
        auto grid = makeGrid(mgr(), local, given, 13);
        // As upstream: (size of memObjects[0], 1, 1).
        EXPECT_EQ(grid.algorithm->getWorkgroup(), (kp::Workgroup{ 13, 1, 1 }));
        run(mgr(), grid);
        expectGrid(grid, local, { 13, 1, 1 });
    }
}

TEST_F(WorkgroupDefaultsTest, ZeroXWithALargerYOrZThrows)
{
    Size3 local = { 1, 1, 1 };
    for (const kp::Workgroup& given :
         { kp::Workgroup{ 0, 4, 1 }, kp::Workgroup{ 0, 1, 2 }, kp::Workgroup{ 0, 7, 9 } }) {
        try {
            makeGrid(mgr(), local, given, 13);
            ADD_FAILURE() << "no error for (" << given[0] << ", " << given[1] << ", " << given[2]
                          << ")";
        } catch (const kp::Error& error) {
            std::string message = error.what();
            EXPECT_NE(message.find("x = 0"), std::string::npos) << message;
            EXPECT_NE(message.find("ignore y and z"), std::string::npos) << message;
        }
    }
}

TEST_F(WorkgroupDefaultsTest, ZeroYAndZBecomeOne)
{
    Size3 local = { 2, 1, 1 };
    auto grid = makeGrid(mgr(), local, { 3, 0, 0 }, 12);
    EXPECT_EQ(grid.algorithm->getWorkgroup(), (kp::Workgroup{ 3, 1, 1 }));
    run(mgr(), grid);
    expectGrid(grid, local, { 3, 1, 1 });

    auto grid2 = makeGrid(mgr(), local, { 2, 3, 0 }, 12);
    EXPECT_EQ(grid2.algorithm->getWorkgroup(), (kp::Workgroup{ 2, 3, 1 }));
    run(mgr(), grid2);
    expectGrid(grid2, local, { 2, 3, 1 });

    // Upstream's short form kp::Workgroup({ n }).
    auto grid3 = makeGrid(mgr(), local, kp::Workgroup({ 4 }), 12);
    EXPECT_EQ(grid3.algorithm->getWorkgroup(), (kp::Workgroup{ 4, 1, 1 }));
}

TEST_F(WorkgroupDefaultsTest, SetWorkgroupFollowsTheSameRules)
{
    Size3 local = { 1, 1, 1 };
    auto grid = makeGrid(mgr(), local, { 2, 2, 2 }, 64);
    auto algorithm = grid.algorithm;
    algorithm->setWorkgroup({ 5, 0, 0 });
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 5, 1, 1 }));
    algorithm->setWorkgroup({ 0, 1, 1 }, 9);
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 9, 1, 1 }));
    // x = 0 with y or z above 1 would drop them: refused, nothing changed.
    EXPECT_THROW(algorithm->setWorkgroup({ 0, 4, 4 }, 9), kp::Error);
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 9, 1, 1 }));
    algorithm->setWorkgroup({ 0, 0, 0 });
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 1, 1, 1 }));
    algorithm->setWorkgroup({ 4, 2, 3 });
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 4, 2, 3 }));
    run(mgr(), grid);
    expectGrid(grid, local, { 4, 2, 3 });
}

TEST_F(WorkgroupDefaultsTest, SetWorkgroupNeedsNoRebuild)
{
    Size3 local = { 4, 1, 1 };
    auto grid = makeGrid(mgr(), local, { 2, 1, 1 }, 32);
    vk::Pipeline pipeline = grid.algorithm->getPipeline();
    vk::DescriptorSet set = grid.algorithm->getDescriptorSet();
    run(mgr(), grid);
    expectGrid(grid, local, { 2, 1, 1 });

    grid.algorithm->setWorkgroup({ 8, 1, 1 });
    EXPECT_EQ(grid.algorithm->getPipeline(), pipeline);
    EXPECT_EQ(grid.algorithm->getDescriptorSet(), set);
    run(mgr(), grid);
    expectGrid(grid, local, { 8, 1, 1 });
}

TEST_F(WorkgroupDefaultsTest, CountsAtTheDeviceLimitAreAccepted)
{
    auto limits = mgr().getDeviceProperties().limits;
    auto out = mgr().tensorT<uint32_t>(std::vector<uint32_t>(4, 0));
    // Counts the last invocation along each axis, and the first one.
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Out { uint hits[]; };
void main()
{
    uvec3 id = gl_GlobalInvocationID;
    if (id.y == 0u && id.z == 0u && id.x == gl_NumWorkGroups.x - 1u) atomicAdd(hits[0], 1u);
    if (id.x == 0u && id.z == 0u && id.y == gl_NumWorkGroups.y - 1u) atomicAdd(hits[1], 1u);
    if (id.x == 0u && id.y == 0u && id.z == gl_NumWorkGroups.z - 1u) atomicAdd(hits[2], 1u);
    if (id == uvec3(0u)) atomicAdd(hits[3], 1u);
}
)");
    uint32_t maxX = limits.maxComputeWorkGroupCount[0];
    if (maxX > (1u << 20)) {
        // Discrete GPUs allow 2^31 - 1 groups: too many for a unit test.
        GTEST_SKIP() << "maxComputeWorkGroupCount[0] = " << maxX << " is too large to dispatch here";
    }
    auto algorithm = mgr().algorithm({ out }, spirv, { maxX, 1, 1 });
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ maxX, 1, 1 }));
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ out })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    // The last invocation along x ran, once (y and z have one group each).
    EXPECT_EQ(out->vector(), (std::vector<uint32_t>{ 1, 1, 1, 1 }));
}

TEST_F(WorkgroupDefaultsTest, CountsBeyondTheDeviceLimitThrowNamingTheLimit)
{
    auto limits = mgr().getDeviceProperties().limits;
    Size3 local = { 1, 1, 1 };
    auto out = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    auto out2 = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    auto spirv = gridShader(local);
    for (int axis = 0; axis < 3; ++axis) {
        SCOPED_TRACE(axis);
        uint32_t limit = limits.maxComputeWorkGroupCount[axis];
        if (limit == UINT32_MAX) {
            continue; // nothing is beyond it
        }
        kp::Workgroup tooMany = { 1, 1, 1 };
        tooMany[axis] = limit + 1;
        std::string name = "maxComputeWorkGroupCount[" + std::to_string(axis) + "] of " + std::to_string(limit);
        std::string count = std::to_string(limit + 1);
        EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out, out2 }, spirv, tooMany); }, { name, count }));

        auto algorithm = mgr().algorithm({ out, out2 }, spirv, { 1, 1, 1 });
        EXPECT_TRUE(throwsWith([&] { algorithm->setWorkgroup(tooMany); }, { name, count }));
        // A refused change leaves the workgroup as it was.
        EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 1, 1, 1 }));
    }
    // x = 0 with a tensor longer than the limit (when such a tensor is small).
    uint32_t limitX = limits.maxComputeWorkGroupCount[0];
    if (limitX < (1u << 24)) {
        auto longTensor = mgr().tensorT<uint32_t>(static_cast<size_t>(limitX) + 1);
        EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ longTensor, out2 }, spirv); },
                               { "maxComputeWorkGroupCount[0]", std::to_string(limitX + 1) }));
    }
    if (limitX == UINT32_MAX) {
        return;
    }
    auto algorithm = mgr().algorithm({ out, out2 }, spirv);
    EXPECT_TRUE(throwsWith([&] { algorithm->setWorkgroup({ 0, 1, 1 }, limitX + 1); },
                           { "maxComputeWorkGroupCount[0]" }));
}

TEST_F(WorkgroupDefaultsTest, LocalSizeBeyondTheDeviceLimitThrowsNamingTheLimit)
{
    auto limits = mgr().getDeviceProperties().limits;
    auto out = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    auto out2 = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    // Within each axis' limit, but more invocations than a workgroup may have.
    uint32_t x = limits.maxComputeWorkGroupSize[0];
    uint32_t y = limits.maxComputeWorkGroupInvocations / x + 1;
    ASSERT_LE(y, limits.maxComputeWorkGroupSize[1]);
    auto spirv = gridShader({ x, y, 1 });
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out, out2 }, spirv, { 1, 1, 1 }); },
                           { "maxComputeWorkGroupInvocations of " +
                             std::to_string(limits.maxComputeWorkGroupInvocations) }));
}
