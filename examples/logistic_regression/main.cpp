// Logistic regression trained on the GPU.
//
// The dataset is made here: points in the unit square, labelled 1 when
// x + y > 1. Each training step runs the built-in shader
// kp::SHADERLOGISTICREGRESSION_COMP_SPV (one invocation per sample computes
// its share of the gradient and of the loss); the host sums the shares and
// updates the weights. The sequence is recorded once and evaluated for
// every step.
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include <kompute/Kompute.hpp>

int
main()
{
    constexpr uint32_t kSamples = 256;
    constexpr int kSteps = 300;
    constexpr float kLearningRate = 2.0f;

    std::mt19937 random(7);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float> featureI(kSamples), featureJ(kSamples), labels(kSamples);
    for (uint32_t i = 0; i < kSamples; ++i) {
        featureI[i] = uniform(random);
        featureJ[i] = uniform(random);
        labels[i] = featureI[i] + featureJ[i] > 1.0f ? 1.0f : 0.0f;
    }

    kp::Manager mgr;
    std::cout << "Device: " << mgr.getDeviceProperties().deviceName.data() << "\n";

    auto xI = mgr.tensor(featureI);
    auto xJ = mgr.tensor(featureJ);
    auto y = mgr.tensor(labels);
    auto weights = mgr.tensor({ 0.0f, 0.0f });
    auto gradientI = mgr.tensor(std::vector<float>(kSamples, 0.0f));
    auto gradientJ = mgr.tensor(std::vector<float>(kSamples, 0.0f));
    auto bias = mgr.tensor({ 0.0f });
    auto gradientBias = mgr.tensor(std::vector<float>(kSamples, 0.0f));
    auto loss = mgr.tensor(std::vector<float>(kSamples, 0.0f));

    std::vector<std::shared_ptr<kp::Memory>> params = { xI, xJ, y, weights, gradientI,
                                                        gradientJ, bias, gradientBias, loss };
    std::vector<uint32_t> spirv(kp::SHADERLOGISTICREGRESSION_COMP_SPV.begin(),
                                kp::SHADERLOGISTICREGRESSION_COMP_SPV.end());
    // One workgroup per sample; the spec constant is the sample count.
    auto algorithm =
      mgr.algorithm(params, spirv, kp::Workgroup{ kSamples, 1, 1 }, std::vector<float>{ float(kSamples) }, {});

    mgr.sequence()->eval<kp::OpSyncDevice>({ xI, xJ, y });
    auto step = mgr.sequence();
    step->record<kp::OpSyncDevice>({ weights, bias })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ gradientI, gradientJ, gradientBias, loss });

    float firstLoss = 0.0f;
    float lastLoss = 0.0f;
    for (int iteration = 0; iteration < kSteps; ++iteration) {
        step->eval();
        float gI = 0, gJ = 0, gB = 0, total = 0;
        for (uint32_t i = 0; i < kSamples; ++i) {
            gI += gradientI->data()[i];
            gJ += gradientJ->data()[i];
            gB += gradientBias->data()[i];
            total += loss->data()[i];
        }
        weights->data()[0] -= kLearningRate * gI;
        weights->data()[1] -= kLearningRate * gJ;
        bias->data()[0] -= kLearningRate * gB;
        if (iteration == 0) {
            firstLoss = total;
        }
        lastLoss = total;
    }

    float w0 = weights->data()[0], w1 = weights->data()[1], b = bias->data()[0];
    uint32_t correct = 0;
    for (uint32_t i = 0; i < kSamples; ++i) {
        float p = 1.0f / (1.0f + std::exp(-(w0 * featureI[i] + w1 * featureJ[i] + b)));
        correct += (p > 0.5f) == (labels[i] > 0.5f) ? 1 : 0;
    }
    double accuracy = 100.0 * correct / kSamples;
    std::cout << "Learned weights: w = (" << w0 << ", " << w1 << "), b = " << b << "\n";
    std::cout << "Loss: " << firstLoss << " -> " << lastLoss << " after " << kSteps << " steps\n";
    std::cout << "Accuracy on the training set: " << accuracy << "%\n";
    return (lastLoss < firstLoss && accuracy >= 95.0) ? 0 : 1;
}
