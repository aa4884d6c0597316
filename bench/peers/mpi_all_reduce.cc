// OpenMPI's peer of bench/cluster_all_reduce.cc: MPI_Allreduce of a float32 buffer in place,
// timed the same way; rank 0 prints one JSON line. Run under mpirun -np 2 (scripts/bench.sh
// says which transport).
//
//   mpirun -np 2 mpi_all_reduce [--bytes N] [--iterations N] [--label NAME]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long long bytes = 64LL << 20;
  int iterations = 20;
  const char* label = "openmpi";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--label") == 0) label = argv[i + 1];
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<float> data(bytes / 4);
  const int warmup = 3;
  std::vector<double> seconds;
  for (int i = 0; i < warmup + iterations; ++i) {
    std::fill(data.begin(), data.end(), static_cast<float>(rank + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (i >= warmup) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (data.front() != 3.0f || data.back() != 3.0f) {
      std::fprintf(stderr, "wrong sum %g\n", data.front());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (rank == 0) {
    std::sort(seconds.begin(), seconds.end());
    std::printf("{\"impl\": \"%s\", \"bytes\": %lld, \"median_s\": %.6f, \"min_s\": %.6f, \"max_s\": %.6f}\n", label,
                bytes, seconds[seconds.size() / 2], seconds.front(), seconds.back());
  }
  MPI_Finalize();
  return 0;
}
