// mlp_classifier.cpp: a multi-layer perceptron for Fashion-MNIST.
//
// Shapes (B = batch): images (B,784) float in [0,1], labels (B) int64 in 0..9.
//   h_0 = images; h_i = relu(Linear(h_{i-1}))  for each hidden width
//   logits = Linear(h_last, 10)                 (B,10)
//   loss = cross_entropy(logits, labels)
// Each Linear layer is one unit for telemetry (Forward span per layer).
#include "model/model.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

namespace dt {
namespace {

namespace nn = torch::nn;

class MlpClassifier final : public TrainableModel, public nn::Module {
  public:
    explicit MlpClassifier(const ModelConfig& c) {
        int in = 784;
        for (size_t i = 0; i < c.hidden.size(); ++i) {
            layers.push_back(register_module("fc" + std::to_string(i), nn::Linear(in, c.hidden[i])));
            in = c.hidden[i];
        }
        layers.push_back(register_module("out", nn::Linear(in, 10)));
    }

    std::vector<NamedParameter> trainableParameters() const override {
        std::vector<NamedParameter> out;
        for (const auto& item : named_parameters(true))
            out.push_back({item.key(), item.value()});
        return out;
    }

    at::Tensor loss(const at::Tensor& images, const at::Tensor& labels, const UnitTimer& timer) override {
        auto h = images;
        for (size_t i = 0; i < layers.size(); ++i) {
            const int unit = int(i);
            markForward(timer, unit, true);
            auto input = h;
            h = layers[i]->forward(input);
            if (i + 1 < layers.size())
                h = at::relu(h);
            markForward(timer, unit, false);
            markBackwardWithHooks(timer, unit, input, h);
        }
        markForward(timer, -1, true);
        auto loss = at::cross_entropy_loss(h, labels);
        markForward(timer, -1, false);
        markRootBackwardBegins(timer, loss);
        return loss;
    }

    std::vector<int> parameterUnits() const override {
        std::vector<int> units;
        for (const auto& item : named_parameters(true)) {
            const std::string& name = item.key(); // "fc<i>.weight" or "out.bias"
            units.push_back(name.rfind("out.", 0) == 0 ? int(layers.size()) - 1 : std::stoi(name.substr(2)));
        }
        return units;
    }

    void setActivationCheckpointing(bool on) override {
        if (on)
            throw UsageError(
                "activation checkpointing needs the tiny_gpt model (its blocks are the units recomputed)");
    }

    std::string describe() const override {
        int64_t n = 0;
        for (const auto& p : trainableParameters())
            n += p.tensor.numel();
        return "MLP classifier, " + std::to_string(layers.size()) + " layers: " + std::to_string(n) +
               " parameters";
    }

  private:
    std::vector<nn::Linear> layers;
};

} // namespace

std::unique_ptr<TrainableModel> makeMlpClassifier(const ModelConfig& config) {
    return std::make_unique<MlpClassifier>(config);
}

} // namespace dt
