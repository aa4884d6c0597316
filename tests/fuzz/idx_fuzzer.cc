// Feeds arbitrary bytes, as a file, to both IDX readers: every input must read or give a
// Status, never crash, trip a sanitizer or allocate more than the file holds, and the
// record reader must agree with the whole-file reader.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/data/idx_file.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tessera::fuzz::WriteInputFile(data, size);
  tessera::StatusOr<tessera::Tensor> whole = tessera::ReadIdxFile(path);
  if (whole.ok() && whole->dtype() != tessera::DataType::kUInt8) std::abort();

  auto reader = tessera::IdxRecordReader::Open(path);
  if (!reader.ok()) {
    if (whole.ok()) std::abort();
    return 0;
  }
  const int64_t record_bytes = (*reader)->record_shape().num_elements();
  // Billions of empty records are a valid file, but not one worth walking.
  if (record_bytes == 0) return 0;
  for (int64_t i = 0;; ++i) {
    tessera::Tensor record;
    bool end = false;
    tessera::Status s = (*reader)->ReadRecord(tessera::CpuAllocator(), &record, &end);
    if (!s.ok()) {
      if (whole.ok() || s.code() != tessera::Code::kDataLoss) std::abort();
      return 0;
    }
    if (end) {
      if (!whole.ok() || i != whole->dim(0)) std::abort();
      return 0;
    }
    if (whole.ok() && std::memcmp(record.data<uint8_t>(), whole->data<uint8_t>() + i * record_bytes,
                                  static_cast<size_t>(record_bytes)) != 0) {
      std::abort();
    }
  }
}
