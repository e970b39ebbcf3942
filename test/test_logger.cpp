// SPDX-License-Identifier: Apache-2.0
// The logger: level chosen at run time (KOMPUTE_LOG_LEVEL or setLogLevel),
// replaceable sink, "{}" formatting, and validation messages reaching it.
#include "TestSupport.hpp"

using namespace kp_test;
using kp::logger::Level;

namespace {

struct Received
{
    Level level;
    std::string message;
};

} // namespace

// Each test may change the level and the sink; TearDown puts back the
// suite's, whose sink counts validation errors.
class LoggerTest : public KomputeTest
{
  protected:
    void SetUp() override
    {
        KomputeTest::SetUp();
        mSavedLevel = kp::logger::getLogLevel();
    }

    void TearDown() override
    {
        kp::logger::setLogLevel(mSavedLevel);
        installTestLogSink();
        KomputeTest::TearDown();
    }

    /** Sends every message to `received` instead of the suite's sink. */
    void captureInto(std::vector<Received>& received)
    {
        kp::logger::setSink([&received](Level level, const std::string& message) {
            received.push_back({ level, message });
        });
    }

    Level mSavedLevel = Level::Warn;
};

TEST_F(LoggerTest, LevelIsChosenAtRunTime)
{
    std::vector<Received> received;
    captureInto(received);

    kp::logger::setLogLevel(Level::Debug);
    EXPECT_EQ(kp::logger::getLogLevel(), Level::Debug);
    KP_LOG_TRACE("trace {}", 0);
    KP_LOG_DEBUG("debug {}", 1);
    KP_LOG_INFO("info {}", 2);
    ASSERT_EQ(received.size(), 2u);
    EXPECT_EQ(received[0].level, Level::Debug);
    EXPECT_EQ(received[0].message, "debug 1");
    EXPECT_EQ(received[1].level, Level::Info);

    received.clear();
    kp::logger::setLogLevel(Level::Error);
    KP_LOG_INFO("hidden");
    KP_LOG_WARN("hidden");
    KP_LOG_ERROR("shown {}", "error");
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(received[0].level, Level::Error);
    EXPECT_EQ(received[0].message, "shown error");

    received.clear();
    kp::logger::setLogLevel(Level::Off);
    KP_LOG_ERROR("nothing at all");
    EXPECT_TRUE(received.empty());

    kp::logger::setLogLevel(Level::Trace);
    KP_LOG_TRACE("everything");
    EXPECT_EQ(received.size(), 1u);
}

TEST_F(LoggerTest, IsEnabledFollowsTheLevel)
{
    kp::logger::setLogLevel(Level::Warn);
    EXPECT_FALSE(kp::logger::isEnabled(Level::Info));
    EXPECT_TRUE(kp::logger::isEnabled(Level::Warn));
    EXPECT_TRUE(kp::logger::isEnabled(Level::Critical));
    // "Off" is a threshold, never a message level.
    EXPECT_FALSE(kp::logger::isEnabled(Level::Off));
    kp::logger::setLogLevel(Level::Off);
    EXPECT_FALSE(kp::logger::isEnabled(Level::Critical));
}

TEST_F(LoggerTest, FormatReplacesPlaceholdersInOrder)
{
    EXPECT_EQ(kp::logger::format("a {} b {} c", 1, "two"), "a 1 b two c");
    EXPECT_EQ(kp::logger::format("no placeholders"), "no placeholders");
    EXPECT_EQ(kp::logger::format("{{literal}} {}", 3), "{literal} 3");
    // Format specs are accepted and ignored.
    EXPECT_EQ(kp::logger::format("{:.2f} and {:>8}", 1.5, "x"), "1.5 and x");
    // Extra arguments are dropped; missing ones leave the rest as is.
    EXPECT_EQ(kp::logger::format("{}", 1, 2), "1");
    EXPECT_EQ(kp::logger::format("{} {}", 1), "1 {}");
}

TEST_F(LoggerTest, SinkReceivesFormattedMessagesAndCanBeReset)
{
    std::vector<Received> received;
    captureInto(received);
    kp::logger::setLogLevel(Level::Info);
    KP_LOG_WARN("value={} name={}", 42, std::string("x"));
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(received[0].level, Level::Warn);
    EXPECT_EQ(received[0].message, "value=42 name=x");

    // An empty sink restores the default, which writes to stderr.
    kp::logger::setSink({});
    ::testing::internal::CaptureStderr();
    KP_LOG_WARN("to stderr {}", 7);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("to stderr 7"), std::string::npos) << err;
    EXPECT_NE(err.find("warn"), std::string::npos) << err;
    EXPECT_EQ(received.size(), 1u);
}

TEST_F(LoggerTest, ParseLevelAcceptsEveryNameInAnyCase)
{
    EXPECT_EQ(kp::logger::parseLevel("trace"), Level::Trace);
    EXPECT_EQ(kp::logger::parseLevel("DEBUG"), Level::Debug);
    EXPECT_EQ(kp::logger::parseLevel("Info"), Level::Info);
    EXPECT_EQ(kp::logger::parseLevel("warn"), Level::Warn);
    EXPECT_EQ(kp::logger::parseLevel("warning"), Level::Warn);
    EXPECT_EQ(kp::logger::parseLevel("error"), Level::Error);
    EXPECT_EQ(kp::logger::parseLevel("CRITICAL"), Level::Critical);
    EXPECT_EQ(kp::logger::parseLevel("off"), Level::Off);
    EXPECT_THROW(kp::logger::parseLevel("verbose"), kp::Error);
    EXPECT_THROW(kp::logger::parseLevel(""), kp::Error);
    for (Level level : { Level::Trace,
                         Level::Debug,
                         Level::Info,
                         Level::Warn,
                         Level::Error,
                         Level::Critical,
                         Level::Off }) {
        EXPECT_EQ(kp::logger::parseLevel(kp::logger::levelName(level)), level);
    }
}

TEST_F(LoggerTest, EnvironmentVariableSetsTheLevel)
{
    {
        ScopedEnv env("KOMPUTE_LOG_LEVEL", "debug");
        kp::logger::setupLogger();
        EXPECT_EQ(kp::logger::getLogLevel(), Level::Debug);
    }
    {
        ScopedEnv env("KOMPUTE_LOG_LEVEL", "ERROR");
        kp::logger::setupLogger();
        EXPECT_EQ(kp::logger::getLogLevel(), Level::Error);
    }
    {
        // Unset or empty: the default, warn.
        ScopedEnv env("KOMPUTE_LOG_LEVEL", nullptr);
        kp::logger::setupLogger();
        EXPECT_EQ(kp::logger::getLogLevel(), Level::Warn);
        ScopedEnv empty("KOMPUTE_LOG_LEVEL", "");
        kp::logger::setupLogger();
        EXPECT_EQ(kp::logger::getLogLevel(), Level::Warn);
    }
    {
        // Not a level: warn, and a note on stderr saying so.
        ScopedEnv env("KOMPUTE_LOG_LEVEL", "loud");
        ::testing::internal::CaptureStderr();
        kp::logger::setupLogger();
        std::string err = ::testing::internal::GetCapturedStderr();
        EXPECT_EQ(kp::logger::getLogLevel(), Level::Warn);
        EXPECT_NE(err.find("loud"), std::string::npos) << err;
    }
}

TEST_F(LoggerTest, ValidationMessagesReachTheLogAtWarnLevel)
{
    // A Manager with the validation layer logs its messages with the
    // "[validation]" prefix: at Warn, the layer's warnings and errors show.
    std::vector<Received> received;
    captureInto(received);
    kp::logger::setLogLevel(Level::Trace);
    {
        kp::Manager manager;
    }
    bool sawValidation = false;
    for (const auto& message : received) {
        sawValidation = sawValidation || message.message.rfind("[validation]", 0) == 0;
    }
    // The layer's informational messages (loader, layer setup) come through
    // at Debug or Trace level, which proves the messenger is installed.
    EXPECT_TRUE(sawValidation) << "no [validation] message arrived: is "
                                  "VK_LAYER_KHRONOS_validation installed?";
    for (const auto& message : received) {
        if (message.message.rfind("[validation]", 0) == 0) {
            EXPECT_NE(message.level, Level::Error) << message.message;
        }
    }
}
