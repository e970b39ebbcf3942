#version 450
// One step of logistic regression with two features, one invocation per
// sample: each invocation writes its sample's share of the gradient (already
// divided by the sample count m) and its cross-entropy loss. The host sums
// the shares and updates the weights. Exposed as
// kp::SHADERLOGISTICREGRESSION_COMP_SPV with the binding layout upstream
// Kompute's logistic regression shader has.
layout(constant_id = 0) const float m = 0;
layout(local_size_x = 1) in;

layout(set = 0, binding = 0) readonly buffer FeatureI { float featureI[]; };
layout(set = 0, binding = 1) readonly buffer FeatureJ { float featureJ[]; };
layout(set = 0, binding = 2) readonly buffer Labels { float label[]; };
layout(set = 0, binding = 3) readonly buffer WeightsIn { float weights[]; };
layout(set = 0, binding = 4) writeonly buffer GradientI { float gradientI[]; };
layout(set = 0, binding = 5) writeonly buffer GradientJ { float gradientJ[]; };
layout(set = 0, binding = 6) readonly buffer BiasIn { float bias[]; };
layout(set = 0, binding = 7) writeonly buffer GradientBias { float gradientBias[]; };
layout(set = 0, binding = 8) writeonly buffer Loss { float loss[]; };

void main()
{
    uint sample_ = gl_GlobalInvocationID.x;
    vec2 x = vec2(featureI[sample_], featureJ[sample_]);
    float z = dot(vec2(weights[0], weights[1]), x) + bias[0];
    float prediction = 1.0 / (1.0 + exp(-z));
    float error = prediction - label[sample_];

    gradientI[sample_] = error * x.x / m;
    gradientJ[sample_] = error * x.y / m;
    gradientBias[sample_] = error / m;

    // Clamped so that a confident wrong prediction gives a large loss, not inf.
    float p = clamp(prediction, 1e-7, 1.0 - 1e-7);
    float y = label[sample_];
    loss[sample_] = -(y * log(p) + (1.0 - y) * log(1.0 - p)) / m;
}
