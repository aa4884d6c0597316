// A SavedModel's signature served by Tessera, as bench/saved_model_peers.py times TensorFlow
// and ONNX Runtime on the same model: the time from process start to the first answer, then
// the median of repeated runs on one random batch. Prints one JSON line.
//
//   saved_model_bench DIR --batch B --threads T [--min-time SECONDS] [--signature KEY]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "saved_model/saved_model.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The process's start, from /proc, so that the dynamic loader's work counts as TensorFlow's
// `import` does on the other side.
double SecondsSinceProcessStart() {
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (f == nullptr) return 0;
  char buffer[1024];
  const size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
  std::fclose(f);
  buffer[n] = 0;
  // Field 22 (starttime, in clock ticks since boot) counts from after the command name,
  // which ends at the last ')'.
  const char* p = std::strrchr(buffer, ')');
  if (p == nullptr) return 0;
  unsigned long long start_ticks = 0;
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &start_ticks) != 1)
    return 0;
  timespec boot;
  clock_gettime(CLOCK_BOOTTIME, &boot);
  return boot.tv_sec + boot.tv_nsec / 1e9 - static_cast<double>(start_ticks) / sysconf(_SC_CLK_TCK);
}

// VmHWM: getrusage's ru_maxrss would carry over the parent's peak across fork and exec.
double PeakRssMegabytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024;
  }
  return 0;
}

// One batch for `input`: unknown dimensions become `batch` (the first) or 1; floats standard
// normal, integers (token ids) in [0, 10).
StatusOr<Tensor> RandomInput(const SignatureTensor& input, int64_t batch) {
  std::vector<int64_t> dims;
  for (int i = 0; i < input.shape.rank(); ++i) {
    const int64_t d = input.shape.dim(i);
    dims.push_back(d >= 0 ? d : (i == 0 ? batch : 1));
  }
  Tensor t(input.dtype, TensorShape(dims));
  std::mt19937 rng(1);
  if (input.dtype == DataType::kFloat) {
    std::normal_distribution<float> normal;
    for (float& v : t.flat<float>()) v = normal(rng);
  } else if (input.dtype == DataType::kInt32) {
    for (int32_t& v : t.flat<int32_t>()) v = static_cast<int32_t>(rng() % 10);
  } else if (input.dtype == DataType::kInt64) {
    for (int64_t& v : t.flat<int64_t>()) v = static_cast<int64_t>(rng() % 10);
  } else {
    return errors::Unimplemented("input ", input.key, ": no random values for ", DataTypeName(input.dtype));
  }
  return t;
}

Status Main(int argc, char** argv) {
  if (argc < 2) return errors::InvalidArgument("usage: saved_model_bench DIR --batch B --threads T [--min-time S] [--signature K]");
  const std::string dir = argv[1];
  int64_t batch = 1;
  int threads = 1;
  double min_time = 2;
  std::string signature = "serving_default";
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--batch") batch = std::atoll(value.c_str());
    else if (flag == "--threads") threads = std::atoi(value.c_str());
    else if (flag == "--min-time") min_time = std::atof(value.c_str());
    else if (flag == "--signature") signature = value;
    else return errors::InvalidArgument("unknown flag ", flag);
  }
  SessionConfig config;
  config.inter_op_parallelism_threads = threads;
  config.intra_op_parallelism_threads = threads;
  ASSIGN_OR_RETURN(auto model, LoadSavedModel(dir, {"serve"}, config));
  ASSIGN_OR_RETURN(const SignatureInfo* info, model->Signature(signature));
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (const SignatureTensor& input : info->inputs) {
    ASSIGN_OR_RETURN(Tensor t, RandomInput(input, batch));
    inputs.emplace_back(input.key, std::move(t));
  }
  std::vector<Tensor> outputs;
  RETURN_IF_ERROR(model->Run(signature, inputs, {}, &outputs));
  const double first_answer = SecondsSinceProcessStart();
  // Runs until min_time has passed and at least five have run; the median of them.
  std::vector<double> times;
  const auto begin = Clock::now();
  while (times.size() < 5 || Since(begin) < min_time) {
    const auto start = Clock::now();
    RETURN_IF_ERROR(model->Run(signature, inputs, {}, &outputs));
    times.push_back(Since(start));
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  std::printf(
      "{\"engine\": \"tessera\", \"batch\": %lld, \"threads\": %d, \"first_answer_s\": %.4f, \"median_s\": %.6f, "
      "\"runs\": %zu, \"peak_rss_mb\": %.1f}\n",
      static_cast<long long>(batch), threads, first_answer, times[times.size() / 2], times.size(),
      PeakRssMegabytes());
  return Status();
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  const tessera::Status status = tessera::Main(argc, argv);
  if (!status.ok()) {
    std::fprintf(stderr, "saved_model_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
