// A backend that forwards every call to another one: test doubles derive from it and override only what they
// change (prepare, run), so each double states its difference and nothing else.
#pragma once

#include <memory>
#include <string_view>

#include "backends/backend.hpp"

namespace tileforge::testing {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend* inner) : inner_(inner) {}
  std::string_view name() const override { return inner_->name(); }
  bool native() const override { return false; }
  std::string_view device_kind() const override { return inner_->device_kind(); }
  Support available() const override { return inner_->available(); }
  Support supports(const Problem& p, const Device& d) const override { return inner_->supports(p, d); }
  ParamSpace space(const Problem& p, const Device& d) const override { return inner_->space(p, d); }
  Expected<Config> heuristic(const Problem& p, const Device& d) const override { return inner_->heuristic(p, d); }
  Expected<std::unique_ptr<Kernel>> prepare(const Problem& p, const Config& c, const Device& d) override {
    return inner_->prepare(p, c, d);
  }
  Status run(const Kernel& k, const Problem& p, const GemmArgs& args) override { return inner_->run(k, p, args); }

 protected:
  Backend* inner() const { return inner_; }

 private:
  Backend* inner_;
};

}  // namespace tileforge::testing
