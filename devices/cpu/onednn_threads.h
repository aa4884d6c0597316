// oneDNN on the engine's own threads. oneDNN parallelises with OpenMP; inside a task of the
// intra-op pool a call must run on that thread alone, or OpenMP's threads would compete
// with the pool's for the same cores. The engine's pools alone decide how many cores a
// step uses.
#pragma once

// From libgomp, which oneDNN runs on; declared here so no OpenMP compile flags are needed.
extern "C" void omp_set_num_threads(int);

namespace tessera::cpu {

// Makes this thread's following oneDNN calls single-threaded.
inline void OneDnnOnThisThreadOnly() { omp_set_num_threads(1); }

}  // namespace tessera::cpu
