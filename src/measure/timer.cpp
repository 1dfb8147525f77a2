// The CPU rep timer, host operand memory, random operands placed where the device reads them, and the choice of
// timer per device kind.
#include "measure/timer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>

namespace tileforge::measure {
namespace {

// A 64-byte aligned host buffer, so that every backend sees operands aligned as a real caller's would be.
class HostBuffer final : public OperandBuffer {
 public:
  explicit HostBuffer(std::size_t bytes) : bytes_(bytes) {
    const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
    data_ = static_cast<unsigned char*>(std::aligned_alloc(64, rounded));
    if (!data_) throw std::bad_alloc();
  }
  ~HostBuffer() override { std::free(data_); }
  void* data() override { return data_; }
  std::size_t bytes() const override { return bytes_; }
  const void* host_view() const override { return data_; }
  // NOTE: an empty problem's operands are empty vectors whose data() is null, and memcpy with a null pointer is
  // undefined even for 0 bytes (UBSan reports it), so nothing is copied when there is nothing to copy.
  Status upload(const void* host) override {
    if (bytes_ != 0) std::memcpy(data_, host, bytes_);
    return {};
  }
  Status download(void* host) const override {
    if (bytes_ != 0) std::memcpy(host, data_, bytes_);
    return {};
  }
  Status copy_from(const OperandBuffer& other) override {
    if (other.bytes() != bytes_ || !other.host_view()) return invalid_argument("copy between buffers of another kind");
    if (bytes_ != 0) std::memcpy(data_, other.host_view(), bytes_);
    return {};
  }
  Status fill_bytes(unsigned char value) override {
    std::memset(data_, value, bytes_);
    return {};
  }

 private:
  unsigned char* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace

Expected<std::unique_ptr<OperandBuffer>> RepTimer::allocate(std::size_t bytes) {
  return std::unique_ptr<OperandBuffer>(std::make_unique<HostBuffer>(bytes));
}

const void* PlacedOperand::host() const {
  if (const void* view = buffer ? buffer->host_view() : nullptr) return view;
  return host_copy.empty() ? nullptr : host_copy.data();
}

Expected<PlacedOperand> random_operand(RepTimer& timer, DType type, int64_t count, uint64_t seed, bool keep_host_copy) {
  const std::size_t bytes = std::size_t(std::max<int64_t>(count, 0)) * size_of(type);
  auto buffer = timer.allocate(bytes);
  if (!buffer) return buffer.status();
  PlacedOperand op;
  op.buffer = std::move(*buffer);
  // NOTE: before issue 18 the operands were always generated in host vectors and then copied into the buffers, so
  // on the CPU every operand was held twice. A buffer whose host view is its data is host memory, writable here.
  if (op.buffer->host_view() != nullptr && op.buffer->host_view() == op.buffer->data()) {
    verify::fill_random(op.buffer->data(), type, count, seed);
    return op;
  }
  op.host_copy.resize(bytes);
  verify::fill_random(op.host_copy.data(), type, count, seed);
  if (Status s = op.buffer->upload(op.host_copy.data()); !s) return s;
  if (!keep_host_copy) std::vector<unsigned char>().swap(op.host_copy);
  return op;
}

Expected<verify::ErrorReport> RepTimer::verify_on_device(const Problem&, const OperandBuffer&, const OperandBuffer&,
                                                         const OperandBuffer&, const OperandBuffer&,
                                                         std::unique_ptr<KeptReference>*) {
  return unsupported("this device has no device-side reference");
}

Expected<double> CpuTimer::time(const std::function<Status()>& call) {
  const auto start = std::chrono::steady_clock::now();
  Status s = call();
  const auto stop = std::chrono::steady_clock::now();
  if (!s) return s;
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

Expected<std::unique_ptr<RepTimer>> make_timer(const Device& device) {
  if (device.kind == "cpu") return std::unique_ptr<RepTimer>(new CpuTimer());
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
  if (device.kind == "cuda") return make_cuda_timer(device);
#endif
  return not_available(fmt::format("no benchmark timer for device kind '{}' in this build (allowed: cpu{})", device.kind,
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
                                   ", cuda"
#else
                                   ""
#endif
                                   ));
}

}  // namespace tileforge::measure
