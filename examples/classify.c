/* Classifies Fashion-MNIST's test images with a frozen model through Tessera's C API: a
 * TensorFlow GraphDef (.pb, .pbtxt) such as a Keras model frozen by
 * convert_variables_to_constants, or the frozen JSON graph `tessera train --frozen-graph`
 * writes. The input is float32 [N, 28, 28, 1] in [0, 1]; the output is either logits
 * [N, 10] (the class is their argmax) or classes [N] (int32 or int64).
 *
 *   classify_c MODEL INPUT OUTPUT [IMAGES]     e.g. classify_c cnn.pb images Identity 10000
 *
 * The images are read from Debian's dataset-fashion-mnist ($FASHION_MNIST_DIR overrides). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <tessera/c_api.h>

enum { kPixels = 28 * 28, kBatch = 1000 };

static const char* const kClasses[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                         "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/* Reads the IDX file's header and up to `wanted` items of `item_bytes` each; NULL on error. */
static unsigned char* read_idx(const char* path, int dims, long item_bytes, long wanted, long* count) {
  gzFile f = gzopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "classify_c: cannot open %s\n", path);
    return NULL;
  }
  unsigned char header[16];
  const int header_bytes = 4 + 4 * dims;
  if (gzread(f, header, header_bytes) != header_bytes || header[2] != 0x08 || header[3] != dims) {
    fprintf(stderr, "classify_c: %s is not an IDX file of %d-dimensional uint8 data\n", path, dims);
    gzclose(f);
    return NULL;
  }
  long n = ((long)header[4] << 24) | ((long)header[5] << 16) | ((long)header[6] << 8) | header[7];
  if (n > wanted) n = wanted;
  unsigned char* data = malloc((size_t)(n * item_bytes) + 1);
  if (data == NULL || gzread(f, data, (unsigned)(n * item_bytes)) != (int)(n * item_bytes)) {
    fprintf(stderr, "classify_c: %s ends early\n", path);
    free(data);
    gzclose(f);
    return NULL;
  }
  gzclose(f);
  *count = n;
  return data;
}

static int fail(tessera_status* s) {
  fprintf(stderr, "classify_c: %s\n", tessera_status_message(s));
  return 1;
}

/* The class of row `i` of the model's output. */
static long predicted_class(const tessera_tensor* out, long i) {
  const void* data = tessera_tensor_data(out);
  switch (tessera_tensor_dtype(out)) {
    case TESSERA_INT32: return ((const int32_t*)data)[i];
    case TESSERA_INT64: return (long)((const int64_t*)data)[i];
    case TESSERA_FLOAT: {
      const int64_t k = tessera_tensor_dim(out, 1);
      const float* row = (const float*)data + i * k;
      long best = 0;
      for (long c = 1; c < k; ++c) {
        if (row[c] > row[best]) best = c;
      }
      return best;
    }
    default: return -1;
  }
}

static void free_buffer(void* data, size_t length, void* arg) {
  (void)length;
  (void)arg;
  free(data);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: classify_c MODEL INPUT OUTPUT [IMAGES]\n");
    return 2;
  }
  long wanted = argc > 4 ? strtol(argv[4], NULL, 10) : 10000;
  if (wanted < 1) {
    fprintf(stderr, "classify_c: IMAGES must be a positive integer, got '%s'\n", argv[4]);
    return 2;
  }
  const char* dir = getenv("FASHION_MNIST_DIR");
  if (dir == NULL) dir = "/usr/share/datasets/fashion-mnist";
  char path[4096];
  long num_images = 0, num_labels = 0;
  snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", dir);
  unsigned char* pixels = read_idx(path, 3, kPixels, wanted, &num_images);
  snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", dir);
  unsigned char* labels = pixels == NULL ? NULL : read_idx(path, 1, 1, wanted, &num_labels);
  if (labels == NULL) {
    free(pixels);
    return 1;
  }
  const long total = num_images < num_labels ? num_images : num_labels;

  tessera_status* s = tessera_status_new();
  tessera_graph* graph = tessera_graph_import_file(argv[1], s);
  if (graph == NULL) return fail(s);
  tessera_session* session = tessera_session_new(graph, NULL, s);
  tessera_graph_delete(graph);
  if (session == NULL) return fail(s);

  long correct = 0;
  for (long start = 0; start < total; start += kBatch) {
    const long n = total - start < kBatch ? total - start : kBatch;
    float* batch = malloc(sizeof(float) * (size_t)(n * kPixels));
    if (batch == NULL) return 1;
    for (long i = 0; i < n * kPixels; ++i) batch[i] = pixels[start * kPixels + i] / 255.0f;
    const int64_t dims[4] = {n, 28, 28, 1};
    tessera_tensor* images = tessera_tensor_from_buffer(TESSERA_FLOAT, dims, 4, batch, sizeof(float) * (size_t)(n * kPixels),
                                                        free_buffer, NULL, s);
    if (images == NULL) return fail(s);
    const char* feed_names[1] = {argv[2]};
    const char* fetch_names[1] = {argv[3]};
    tessera_tensor* out[1];
    tessera_session_run(session, feed_names, &images, 1, fetch_names, out, 1, NULL, 0, s);
    tessera_tensor_delete(images);
    if (tessera_status_code(s) != TESSERA_OK) return fail(s);
    for (long i = 0; i < n; ++i) {
      const long predicted = predicted_class(out[0], i), actual = labels[start + i];
      correct += predicted == actual;
      if (start + i < 3) {
        printf("image %ld: %s (label: %s)\n", start + i, predicted >= 0 && predicted < 10 ? kClasses[predicted] : "?",
               kClasses[actual % 10]);
      }
    }
    tessera_tensor_delete(out[0]);
  }
  printf("accuracy on %ld test images: %.4f\n", total, (double)correct / (double)total);
  tessera_session_delete(session);
  tessera_status_delete(s);
  free(pixels);
  free(labels);
  return 0;
}
