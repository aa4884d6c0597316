#include "devices/device.h"

#include <mutex>
#include <random>

#include "devices/step_recording.h"

namespace tessera {
namespace {

// Random and never 0, so a device re-created in a restarted process never matches
// rendezvous keys meant for its earlier self.
uint64_t NewIncarnation() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  uint64_t v = 0;
  while (v == 0) v = rng();
  return v;
}

}  // namespace

Device::Device(DeviceName name, std::shared_ptr<Allocator> allocator, std::shared_ptr<Allocator> host_allocator,
               ThreadPool* intra_op_pool, DeviceAttributes attributes)
    : parsed_(std::move(name)),
      name_(parsed_.ToString()),
      allocator_(std::move(allocator)),
      host_allocator_(std::move(host_allocator)),
      intra_op_pool_(intra_op_pool),
      incarnation_(NewIncarnation()),
      attributes_(std::move(attributes)) {}

StatusOr<std::unique_ptr<StepRecording>> Device::NewStepRecording() {
  return errors::Unimplemented("A ", device_type(), " device cannot record steps");
}

}  // namespace tessera
