/* Frozen-CNN inference through the C API, as an embedder runs it: latency at batch 1 and
 * images/s at batch 128, this process's peak RSS and the size of the library it links.
 * Prints one JSON line; bench/c_api_vs_tf.py runs it beside TensorFlow's Session.
 *
 *   c_api_cnn MODEL.pb INPUT OUTPUT */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include <tessera/c_api.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* One step on `batch` images; the time it took in microseconds, or -1. */
static double step(tessera_session* session, const char* input, const char* output, int64_t batch,
                   tessera_status* s) {
  const int64_t dims[4] = {batch, 28, 28, 1};
  tessera_tensor* images = tessera_tensor_new(TESSERA_FLOAT, dims, 4, s);
  if (images == NULL) return -1;
  float* pixels = tessera_tensor_data(images);
  for (int64_t i = 0; i < batch * 784; ++i) pixels[i] = (float)(i % 255) / 255.0f;
  tessera_tensor* out[1];
  const double start = now_us();
  tessera_session_run(session, &input, &images, 1, &output, out, 1, NULL, 0, s);
  const double took = now_us() - start;
  tessera_tensor_delete(images);
  if (tessera_status_code(s) != TESSERA_OK) return -1;
  tessera_tensor_delete(out[0]);
  return took;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: c_api_cnn MODEL.pb INPUT OUTPUT\n");
    return 2;
  }
  tessera_status* s = tessera_status_new();
  tessera_graph* graph = tessera_graph_import_file(argv[1], s);
  tessera_session* session = graph == NULL ? NULL : tessera_session_new(graph, NULL, s);
  if (session == NULL) {
    fprintf(stderr, "c_api_cnn: %s\n", tessera_status_message(s));
    return 1;
  }
  enum { kWarmup = 20, kSingle = 500, kBatched = 30 };
  static double times[kSingle];
  for (int i = 0; i < kWarmup; ++i) step(session, argv[2], argv[3], 1, s);
  for (int i = 0; i < kSingle; ++i) {
    times[i] = step(session, argv[2], argv[3], 1, s);
    if (times[i] < 0) {
      fprintf(stderr, "c_api_cnn: %s\n", tessera_status_message(s));
      return 1;
    }
  }
  qsort(times, kSingle, sizeof times[0], compare);
  for (int i = 0; i < 3; ++i) step(session, argv[2], argv[3], 128, s);
  double batched = 0;
  for (int i = 0; i < kBatched; ++i) batched += step(session, argv[2], argv[3], 128, s);
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  Dl_info info;
  struct stat st;
  long long library_bytes = -1;
  if (dladdr((void*)tessera_version, &info) != 0 && stat(info.dli_fname, &st) == 0) library_bytes = st.st_size;
  printf("{\"peer\": \"tessera C API\", \"batch1_latency_us\": %.1f, \"batch128_images_per_s\": %.1f, "
         "\"peak_rss_mib\": %.1f, \"library_bytes\": %lld}\n",
         times[kSingle / 2], 128.0 * kBatched / (batched / 1e6), usage.ru_maxrss / 1024.0, library_bytes);
  tessera_session_delete(session);
  tessera_graph_delete(graph);
  tessera_status_delete(s);
  return 0;
}
